"""harness.benchmarks.compile: batches must class mutants as compiling them alone does."""

import shutil

from harness.benchmarks.compile import classes, main


def test_classes_follow_the_order_a_worker_meets_the_mutants_in():
    assert classes("o", ["a", "o", "a", None, "b"]) == ["run", "equivalent", "duplicate", "run", "run"]


def test_a_substrate_is_classed_alike_both_ways(tmp_path, capsys):
    shutil.copy("tests/candidates/candidate_unsafe_row_sum.py", tmp_path)
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\nunsafe_row_sum " in out
    assert out.splitlines()[-1].endswith("classed differently: 0")
