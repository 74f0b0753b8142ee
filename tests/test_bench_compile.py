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


def test_a_folder_that_is_not_there_or_holds_no_candidates_and_a_batch_of_none_are_usage_errors(tmp_path, capsys):
    import pytest

    for argv, said in (([str(tmp_path / "nope")], f"{tmp_path / 'nope'}: not a folder"),
                       ([str(tmp_path)], f"{tmp_path}: no candidate_*.py files there"),
                       (["--batch-size", "0", "substrates"], "--batch-size must be at least 1, not 0")):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2 and said in capsys.readouterr().err
