"""report_diff: the check that a campaign on several GPUs, or a faster engine, decides what it decides on one."""

import json
from pathlib import Path

from harness.engine.report import OWN_KEY
from harness.report_diff import KillerDifference, StatusDifference, killer_differences, killers, main, status_differences


def report(**outcomes):
    """A campaign report of pad_const_b4's mutants: id=status, or id=(status, detail)."""
    return {OWN_KEY: {"substrates": {"pad_const_b4": {"outcomes": {
        mutant_id: {"status": given[0], "detail": given[1], "seconds": 0.1} if isinstance(given, tuple)
        else {"status": given, "detail": "", "seconds": 0.1} for mutant_id, given in outcomes.items()}}}}}


def test_same_statuses_have_no_differences():
    assert status_differences(report(a="killed", b="survived"), report(b="survived", a="killed")) == []


def test_a_changed_status_and_a_missing_mutant_are_each_named():
    assert status_differences(report(a="killed", b="survived"), report(a="killed", b="duplicate", c="killed")) == [
        StatusDifference("pad_const_b4", "b", "survived", "duplicate"),
        StatusDifference("pad_const_b4", "c", "absent", "killed"),
    ]


def test_cli_exit_status_and_message(tmp_path, capsys):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(report(a="killed", b="survived")))
    two.write_text(json.dumps(report(a="killed", b="survived")))
    assert main([str(one), str(two)]) == 0
    assert capsys.readouterr().out.endswith(
        "2 of 2 mutants have the same status in both reports; 1 of the 1 detected in both by the same trial\n")
    two.write_text(json.dumps(report(a="timeout", b="survived")))
    assert main([str(one), str(two)]) == 1
    assert capsys.readouterr().out.startswith(f"a: killed in {one}, timeout in {two}\n")


def test_a_file_that_is_not_a_report_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main([str(bad), str(bad)]) == 2
    assert capsys.readouterr().err == f"report_diff: error: not a campaign report: no {OWN_KEY}.substrates\n"


def test_comparing_reports_needs_no_torch():
    # A report may be compared where the harness's dependencies are not installed (a reviewer's laptop).
    import subprocess
    import sys

    program = "import sys, harness.report_diff; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", program], cwd=Path(__file__).resolve().parent.parent).returncode == 0


MISALIGNED = "misaligned trial 6: output_matches: 204 of 210 elements differ"
REFLECT = "reflect_limit trial 3: output_matches: 672 of 864 elements differ"
FAULT = "wide_pads trial 4: kernel run: CUDA error 700 CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
OUTSIDE = ("T0_original trial 0: kernel run: CUDA error 700 CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was "
           "encountered (foreseen by the address check: a 4-byte access at 0x7f00, outside every allocation of the "
           "process, and 511 more; not made)")
MISALIGNED_FAULT = ("misaligned trial 2: kernel run: CUDA error 716 CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address "
                    "(foreseen by the address check: a 4-byte access at 0x7f02, not aligned to its size; not made)")


def test_the_killer_is_the_trial_that_detected_the_mutant():
    # Killed, a runtime error and a timeout each name their trial; a survivor has none, nor a fault while loading.
    given = report(a=("killed", MISALIGNED), b=("runtime_error", FAULT), c=("survived", "passed all 24 trials"),
                   d=("runtime_error", "loading the mutant: CUDA error 218"), e=("timeout", "probe trial 1: no end"),
                   # A worker lost names the step it was in.
                   f=("runtime_error", "the worker process died during pad_const_b4:L22C25:arithmetic_swap:0 "
                                       "misaligned trial 6 (killed by signal SIGFPE) (the first mutant of a fresh worker)"),
                   g=("timeout", "timed out after 3 s during pad_const_b4:L7C5:guard_deletion:0 wide_pads trial 2 (the "
                                 "worker was killed)"))
    assert killers(given) == {("pad_const_b4", "a"): "misaligned trial 6", ("pad_const_b4", "b"): "wide_pads trial 4",
                              ("pad_const_b4", "d"): "", ("pad_const_b4", "e"): "probe trial 1",
                              ("pad_const_b4", "f"): "misaligned trial 6", ("pad_const_b4", "g"): "wide_pads trial 2"}


def test_a_mutant_detected_by_another_trial_is_named_and_is_exit_1(tmp_path, capsys):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(report(a=("killed", MISALIGNED), b=("killed", MISALIGNED), c="survived")))
    two.write_text(json.dumps(report(a=("killed", REFLECT), b=("killed", MISALIGNED), c="survived")))
    assert killer_differences(json.loads(one.read_text()), json.loads(two.read_text())) == [
        KillerDifference("pad_const_b4", "a", "killed", "misaligned trial 6", "reflect_limit trial 3")]
    assert main([str(one), str(two)]) == 1
    assert capsys.readouterr().out == (
        f"a: killed by misaligned trial 6 in {one}, by reflect_limit trial 3 in {two}\n"
        "3 of 3 mutants have the same status in both reports; 1 of the 2 detected in both by the same trial\n")
    # The statuses alone agree.
    assert main([str(one), str(two), "--statuses-only"]) == 0
    assert capsys.readouterr().out == "3 of 3 mutants have the same status in both reports\n"


def test_a_changed_status_is_not_also_counted_as_a_changed_killer(tmp_path, capsys):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(report(a=("killed", MISALIGNED))))
    two.write_text(json.dumps(report(a=("runtime_error", MISALIGNED_FAULT))))
    assert main([str(one), str(two), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "mutants": 1, "differences": [{"substrate": "pad_const_b4", "mutant_id": "a", "first": "killed",
                                       "second": "runtime_error", "by_memory": False}],
        "detected_in_both": 0, "killer_differences": []}


def test_an_access_outside_every_allocation_that_faults_in_one_report_only_is_told_apart_by_memory(tmp_path, capsys):
    # Whether it faults depends on what lies there (trials kept on the device or parked in host memory): a detection
    # either way, listed and not counted. A misaligned access faults wherever memory lies: a real difference.
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(report(a=("runtime_error", OUTSIDE), b=("runtime_error", OUTSIDE), c="survived")))
    two.write_text(json.dumps(report(a=("killed", "T0_original trial 0: output_matches: 8 of 9 elements differ"),
                                     b=("runtime_error", OUTSIDE.replace("T0_original trial 0", "probe trial 1")),
                                     c="survived")))
    assert status_differences(json.loads(one.read_text()), json.loads(two.read_text())) == [
        StatusDifference("pad_const_b4", "a", "runtime_error", "killed", by_memory=True)]
    assert main([str(one), str(two)]) == 0
    assert capsys.readouterr().out == (
        f"a: runtime_error in {one}, killed in {two} (told apart by memory: an access outside every allocation)\n"
        f"b: runtime_error by T0_original trial 0 in {one}, by probe trial 1 in {two} (told apart by memory: an access "
        f"outside every allocation)\n"
        "2 of 3 mutants have the same status in both reports; 0 of the 1 detected in both by the same trial; 2 told "
        "apart by memory alone (whether an access outside every allocation faults depends on what lies there: a "
        "detection either way)\n")
    one.write_text(json.dumps(report(a=("runtime_error", MISALIGNED_FAULT), c="survived")))
    two.write_text(json.dumps(report(a=("killed", MISALIGNED), c=("runtime_error", OUTSIDE))))
    assert main([str(one), str(two)]) == 1
    assert capsys.readouterr().out.startswith(f"a: runtime_error in {one}, killed in {two}\nc: survived in {one}, "
                                              f"runtime_error in {two}\n")


def matrix_report(rows: dict, statuses: dict, row_ends: dict | None = None, checkers: dict | None = None) -> dict:
    """A --matrix report of pad_const_b4: rows maps a mutant id to (trials that ran it, trials that killed it), each
    trial "suite/trial"; statuses a mutant id to its status (or (status, detail)); checkers goes under OWN_KEY."""
    def test(trial: str) -> str:
        return f"pad_const_b4/{trial}"

    own = report(**statuses)
    own[OWN_KEY]["substrates"]["pad_const_b4"]["file"] = "pad_const_b4.cu"
    own[OWN_KEY]["matrix"] = {"rowEnds": {"pad_const_b4": row_ends or {}}}
    if checkers is not None:
        own[OWN_KEY]["checkers"] = checkers
    own["files"] = {"pad_const_b4.cu": {"mutants": [
        {"id": m, "coveredBy": [*map(test, ran), "checker:t0"], "killedBy": [*map(test, killed), "checker:t0"]}
        for m, (ran, killed) in rows.items()]}}
    return own


ROW = (["T0_original/0", "T0_original/1", "misaligned/0"], ["T0_original/1"])


def test_a_matrix_row_killed_by_other_trials_is_named_with_the_trials_each_report_alone_has(tmp_path, capsys):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(matrix_report({"a": ROW, "b": ROW}, {"a": ("killed", REFLECT), "b": "killed"})))
    two.write_text(json.dumps(matrix_report({"a": ROW, "b": (ROW[0], ["T0_original/1", "misaligned/0"])},
                                            {"a": ("killed", REFLECT), "b": "killed"})))
    assert main([str(one), str(two)]) == 1
    assert capsys.readouterr().out == (
        f"b: matrix row killed by 1 of 3 trials in {one}, 2 of 3 in {two}; only in {two}: misaligned trial 0\n"
        "2 of 2 mutants have the same status in both reports; 2 of the 2 detected in both by the same trial; 1 of 2 "
        "matrix rows the same\n")
    assert main([str(one), str(two), "--statuses-only"]) == 0


def test_a_matrix_row_a_fault_outside_every_allocation_ended_in_one_report_is_told_apart_by_memory(tmp_path, capsys):
    # Parked trials against kept ones: the access that faulted in one report read a neighbour in the other and the row
    # ran on. A row a misaligned access ended is ended so wherever memory lies: a real difference.
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    short = (ROW[0][:2], ROW[1])
    one.write_text(json.dumps(matrix_report({"a": short}, {"a": "killed"},
                                            {"a": "T0_original trial 1: fault: " + OUTSIDE.split(": ", 1)[1]})))
    two.write_text(json.dumps(matrix_report({"a": ROW}, {"a": "killed"})))
    assert main([str(one), str(two)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"a: matrix row killed by 1 of 2 trials in {one}, 1 of 3 in {two} (told apart by memory: an access outside "
        "every allocation)",
        "1 of 1 mutants have the same status in both reports; 1 of the 1 detected in both by the same trial; 0 of 1 "
        "matrix rows the same; 1 told apart by memory alone (whether an access outside every allocation faults depends "
        "on what lies there: a detection either way)"]
    one.write_text(json.dumps(matrix_report({"a": short}, {"a": "killed"},
                                            {"a": "T0_original trial 1: fault: " + MISALIGNED_FAULT.split(": ", 1)[1]})))
    assert main([str(one), str(two)]) == 1


def checkers(accepted=(), rejected=(), unjudged=(), sound=True, uncounted=()) -> dict:
    return {"sound": sound, "accepted": list(accepted), "rejected": list(rejected), "unjudged": list(unjudged),
            "uncounted": list(uncounted)}


def test_a_checkers_changed_verdict_and_soundness_are_each_named_and_a_checker_one_report_lacks_is_said(
        tmp_path, capsys):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    statuses = {"a": "killed", "b": "killed", "c": "killed"}
    one.write_text(json.dumps(matrix_report({}, statuses, checkers={
        "kernelbench": checkers(["a"], ["b", "c"]), "t0": checkers(rejected=["a", "b", "c"]),
        "mine": checkers(["a", "b", "c"])})))
    two.write_text(json.dumps(matrix_report({}, statuses, checkers={
        "kernelbench": checkers(["a", "b"], [], ["c"]), "t0": checkers(rejected=["a", "b", "c"], sound=False)})))
    assert main([str(one), str(two)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"b: checker kernelbench rejected it in {one}, accepted in {two}",
        f"c: checker kernelbench rejected it in {one}, not judged in {two}",
        f"checker t0: sound in {one}, unsound in {two}",
        "checker mine: in the first report only, not compared",
        "3 of 3 mutants have the same status in both reports; 3 of the 3 detected in both by the same trial; "
        "checker kernelbench: 1 of 3 verdicts the same; checker t0: 3 of 3 verdicts the same"]
    # A checker only one report ran is no disagreement.
    two.write_text(json.dumps(matrix_report({}, statuses, checkers={
        "kernelbench": checkers(["a"], ["b", "c"]), "t0": checkers(rejected=["a", "b", "c"])})))
    assert main([str(one), str(two), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["checkers_compared"], found["checker_differences"], found["not_compared"]) == (
        {"kernelbench": 3, "t0": 3}, [], ["checker mine: in the first report only, not compared"])
    # Where a checker rejects a substrate's unmutated kernel its verdicts there are not counted: a verdict of its own.
    two.write_text(json.dumps(matrix_report({}, statuses, checkers={
        "kernelbench": checkers(["a"], ["b"], uncounted=["c"], sound=False), "t0": checkers(rejected=["a", "b", "c"])})))
    assert main([str(one), str(two)]) == 1
    assert capsys.readouterr().out.splitlines()[:2] == [
        f"checker kernelbench: sound in {one}, unsound in {two}",
        f"c: checker kernelbench rejected it in {one}, not counted in {two}"]


def test_a_checkers_verdict_on_a_mutant_that_faulted_outside_every_allocation_is_told_apart_by_memory(tmp_path, capsys):
    # What the checker's run of that kernel read where the suites' run faulted is whatever lay there.
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    statuses = {"a": ("runtime_error", OUTSIDE)}
    one.write_text(json.dumps(matrix_report({}, statuses, checkers={"kernelbench": checkers(["a"])})))
    two.write_text(json.dumps(matrix_report({}, statuses, checkers={"kernelbench": checkers(rejected=["a"])})))
    assert main([str(one), str(two)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"a: checker kernelbench accepted it in {one}, rejected in {two} (told apart by memory: an access outside "
        "every allocation)")
