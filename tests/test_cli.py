"""gate.py's command line: listing, usage errors and their exit codes, the summary and the JSON report."""

import json

import pytest

from harness.backends import gpu_visible
from harness.cli import format_summary, main
from harness.records import CheckName, CheckResult, CheckStatus, GateReport, SubstrateReport, SuiteResult


def test_help_exits_zero(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert "--backend {auto,cuda,cpu}" in capsys.readouterr().out


def test_list_shows_every_registered_substrate_and_its_admission(tmp_path, capsys):
    assert main(["--list", "--record", str(tmp_path / "none.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["substrate", "file", "kb_file", "admission"]
    rows = {line.split()[0]: line for line in lines[1:]}
    for width in (1, 2, 4, 8):
        assert rows[f"pad_const_b{width}"].split()[1:3] == ["candidate_pad_const.py", f"pad_const_b{width}.py"]
        assert rows[f"pad_const_b{width}"].endswith("never gated")


def test_an_unknown_name_is_a_usage_error(capsys):
    from tests.conftest import registered_entries

    assert main(["no_such_substrate", "--no-record"]) == 2
    names = ", ".join(sorted(e.name for e in registered_entries()))
    assert capsys.readouterr().err == f"gate.py: error: unknown substrate 'no_such_substrate'; registered: {names}\n"


def test_an_unreadable_file_is_a_usage_error(capsys):
    assert main(["missing/candidate_x.py"]) == 2
    assert capsys.readouterr().err == "gate.py: error: cannot read candidate file missing/candidate_x.py\n"


def test_a_broken_admission_record_is_a_usage_error(tmp_path, capsys):
    record = tmp_path / "admissions.json"
    record.write_text("{")
    assert main(["--list", "--record", str(record)]) == 2
    assert f"gate.py: error: {record}: not valid JSON" in capsys.readouterr().err


@pytest.mark.skipif(gpu_visible(), reason="a GPU is visible here")
def test_without_a_gpu_the_cuda_backend_says_why(capsys):
    assert main(["pad_const_b1", "--backend", "cuda", "--no-record"]) == 2
    assert capsys.readouterr().err == (
        "gate.py: error: backend cuda: no GPU is visible (the CUDA driver is missing or sees no device)\n")


def test_a_missing_cpu_compiler_is_a_usage_error(monkeypatch, capsys):
    from harness.backends import cpu

    monkeypatch.setattr(cpu, "CXX", "/nonexistent/g++")
    cpu.compiler_version.cache_clear()
    try:
        assert main(["pad_const_b1", "--backend", "cpu", "--no-record"]) == 2
    finally:
        cpu.compiler_version.cache_clear()
    assert capsys.readouterr().err.startswith(
        "gate.py: error: backend cpu: the CPU backend needs a C++17 compiler (/nonexistent/g++): ")


def _report():
    admitted = SubstrateReport(name="good", file="c.py", seconds=1.25,
                               checks=[CheckResult(c, CheckStatus.PASSED, "fine") for c in CheckName],
                               suites=[SuiteResult("probe", 2, 2), SuiteResult("T0_original", 5, 5)])
    rejected = SubstrateReport(
        name="bad", file="c.py", seconds=0.5,
        checks=[CheckResult(CheckName.IMPORT_SAFE, CheckStatus.PASSED, "fine"),
                CheckResult(CheckName.COMPILE, CheckStatus.FAILED, "bad.cu:3: error: expected a ;"),
                CheckResult(CheckName.OUTPUT_MATCHES, CheckStatus.NOT_RUN, "not run: the kernel did not compile")])
    return GateReport(backend="cuda", device="NVIDIA H200", substrates=[admitted, rejected])


def test_summary_has_a_line_per_substrate_and_every_reason():
    assert format_summary(_report(), 3.0).splitlines() == [
        "substrate  verdict   seconds  suites (trials passed)",
        "good       admitted      1.2  probe 2/2 · T0_original 5/5",
        "bad        rejected      0.5  no suite ran",
        "             in c.py",
        "             - compile: bad.cu:3: error: expected a ;",
        "1 admitted, 1 rejected in 3.0 s (backend cuda, NVIDIA H200)",
    ]


def test_json_report_has_the_documented_fields_and_round_trips():
    data = json.loads(json.dumps(_report().to_json()))
    assert {"backend", "device", "substrates"} <= set(data)
    good, bad = data["substrates"]
    assert {"name", "admitted", "checks", "suites", "seconds"} <= set(good)
    assert good["admitted"] is True and bad["admitted"] is False
    assert bad["checks"][1] == {"check": "compile", "ok": False, "status": "failed",
                                "detail": "bad.cu:3: error: expected a ;"}
    assert bad["checks"][2]["ok"] is None
    assert {"name", "trials", "passed", "mismatched_elements", "worst_abs_error"} <= set(good["suites"][0])
    assert SubstrateReport.from_json(bad).to_json() == bad
