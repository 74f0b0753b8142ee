"""report_diff: the check that a campaign on several GPUs decides what it decides on one."""

import json
from pathlib import Path

from harness.engine.report import OWN_KEY
from harness.report_diff import StatusDifference, main, status_differences


def report(**outcomes):
    return {OWN_KEY: {"substrates": {"pad_const_b4": {"outcomes": {
        mutant_id: {"status": status, "detail": "", "seconds": 0.1} for mutant_id, status in outcomes.items()}}}}}


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
    assert capsys.readouterr().out.endswith("2 of 2 mutants have the same status in both reports\n")
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
