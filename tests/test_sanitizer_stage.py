"""The gate's sanitizer stage: which substrates wait for the gate's verdict before the tools run them."""

import argparse
import json
from pathlib import Path

from harness.gate import admissions
from harness.gate.command import RecordBook, SanitizerStage
from harness.gate.records import CheckName, CheckResult, CheckStatus, SubstrateReport
from harness.gate.worker import EntrySummary
from harness.oracles.sanitizer import read_verdict

SHA, CHANGED = "a" * 64, "b" * 64


def _stage(tmp_path: Path, recorded: dict) -> SanitizerStage:
    """A stage over three substrates of one file; `recorded`: the record's entries (name -> (admitted, sha))."""
    file = str(tmp_path / "candidate_x.py")
    record = {"schema": admissions.SCHEMA, "substrates": {
        name: {"cuda": {"admitted": admitted, "source_sha256": sha, "device": "H200", "date": "", "reasons": []}}
        for name, (admitted, sha) in recorded.items()}}
    (tmp_path / "admissions.json").write_text(json.dumps(record))
    names = ["known", "changed", "new"]
    entries = {file: [EntrySummary(name=n, file=file, kernel_name="k", source_sha256=SHA, cuda="//") for n in names]}
    args = argparse.Namespace(sanitizer=tmp_path / "compute-sanitizer", no_sanitize=False, kb_root=None,
                              cache_dir=None, timeout=120.0, sanitize_processes=1)
    return SanitizerStage(args, "cuda", ("memcheck",), [(file, n) for n in names], entries, {},
                          records=RecordBook(None))


def test_only_substrates_admitted_before_at_their_source_run_beside_their_jobs_and_first(tmp_path):
    stage = _stage(tmp_path, {"known": (True, SHA), "changed": (True, CHANGED), "new": (False, SHA)})
    assert [(t.name, t.awaits_verdict) for t in stage.targets] == [("known", False), ("changed", True),
                                                                   ("new", True)]


def test_the_gates_verdicts_are_told_to_the_waiting_tools_and_the_rest_released_at_the_end(tmp_path):
    stage = _stage(tmp_path, {"known": (True, SHA)})
    stage.verdicts = tmp_path / "verdicts"
    stage.verdicts.mkdir()
    admitted = SubstrateReport(name="changed", file="f", checks=[CheckResult(CheckName.COMPILE, CheckStatus.PASSED)])
    rejected = SubstrateReport(name="known", file="f", checks=[CheckResult(CheckName.COMPILE, CheckStatus.FAILED)])
    stage.decided(admitted)
    stage.decided(rejected)  # not awaited: ran beside its job; nothing to tell
    assert read_verdict(stage.verdicts, "changed") == "go"
    assert read_verdict(stage.verdicts, "known") is None and read_verdict(stage.verdicts, "new") is None
    stage.undecided_left()
    assert read_verdict(stage.verdicts, "new") == "skip: its gate job ended without a verdict"


def test_a_rejected_substrate_is_told_not_to_run_and_why(tmp_path):
    stage = _stage(tmp_path, {})
    stage.verdicts = tmp_path / "verdicts"
    stage.verdicts.mkdir()
    stage.decided(SubstrateReport(name="new", file="f", checks=[CheckResult(CheckName.COMPILE, CheckStatus.FAILED)]))
    assert read_verdict(stage.verdicts, "new") == ("skip: the gate rejected it before it ran under the tool, and no "
                                                   "finding could change that verdict")


def test_verdicts_left_after_the_tools_run_ended_and_took_their_folder_are_dropped_not_raised(tmp_path):
    # Ctrl-C on cuda: the tools' thread ends first and removes the folder; the gate then released the undecided
    # substrates into it, and FileNotFoundError ended the interrupted gate with a traceback (exit 1, not 130).
    stage = _stage(tmp_path, {})
    stage.verdicts = tmp_path / "verdicts"  # never made, as if removed
    stage.decided(SubstrateReport(name="new", file="f", checks=[CheckResult(CheckName.COMPILE, CheckStatus.PASSED)]))
    stage.undecided_left()
    assert not stage.verdicts.exists()


def test_while_the_gate_runs_its_json_holds_no_substrate_admitted_before_the_tools_judged_it(tmp_path):
    stage = _stage(tmp_path, {})
    stage._future = object()  # the tools are running
    gated = SubstrateReport(name="new", file="f", checks=[CheckResult(CheckName.COMPILE, CheckStatus.PASSED)])
    pending = stage.pending(gated)
    assert not pending.admitted and pending.reasons() == [
        "memcheck: pending: the sanitizers judge it before the gate ends"]
    assert gated.admitted and [c.check for c in gated.checks] == [CheckName.COMPILE]  # the kept report unchanged
    stage._future = None  # no tool runs (none found, or --no-sanitize): nothing to wait for
    assert stage.pending(gated) is gated
