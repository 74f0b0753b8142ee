"""gate.py's command line: listing, usage errors and their exit codes, the summary and the JSON report."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.backends import gpu_visible
from harness.gate.command import format_summary, main
from harness.gate.records import CheckName, CheckResult, CheckStatus, GateReport, SubstrateReport, SuiteResult
from harness.gate.scheduling import auto_jobs


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


def test_list_says_a_corpus_substrate_gated_against_a_checkout_reads_as_changed_without_its_kb_root(capsys):
    # Its record was made against a KernelBench checkout; here the stand-in problem is found, whose hash differs.
    assert main(["--list", "examples/kernelbench/candidate_kb_relu.py"]) == 0
    lines = capsys.readouterr().out.splitlines()
    relu = next(line for line in lines if line.startswith("kb_relu "))
    assert relu.split()[1:3] == ["candidate_kb_relu.py", "19_ReLU.py"]
    assert "source or problem file changed since it was admitted (cuda, " in relu
    assert lines[-1] == ("(source or problem file changed: the recorded hash covers the candidate and its problem file; "
                         "a substrate gated against a KernelBench checkout reads as changed unless --kb-root names that "
                         "checkout)")


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


def test_the_gates_own_process_checks_the_cpu_compiler_without_importing_torch():
    # torch costs the gate's process seconds to import, and only its workers use it.
    done = subprocess.run([sys.executable, "-c", "import sys; import harness.gate.command; from harness.backends import "
                           "cpu_compiler; cpu_compiler.compiler_version(); print('torch' in sys.modules)"],
                          capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parent.parent)
    assert done.stdout == "False\n"


def test_a_missing_cpu_compiler_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setenv("CXX", "/nonexistent/g++")
    assert main(["pad_const_b1", "--backend", "cpu", "--no-record"]) == 2
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


FORMS = Path(__file__).resolve().parent / "candidates" / "candidate_row_sum_forms.py"


def _sanitizer_checks(report_path: Path) -> dict:
    (substrate,) = [s for s in json.loads(report_path.read_text())["substrates"] if s["name"] == "forms_row_sum"]
    return {c["check"]: (c["status"], c["detail"]) for c in substrate["checks"] if c["check"].endswith("check")}


def test_on_the_cpu_backend_the_sanitizers_are_skipped_and_say_why_without_barring_admission(tmp_path, capsys):
    report = tmp_path / "report.json"
    assert main([str(FORMS), "forms_row_sum", "--backend", "cpu", "--no-record", "--no-progress",
                 "--json", str(report)]) == 1  # the file's other substrates are broken on purpose
    why = "skipped: CPU backend (compute-sanitizer checks CUDA kernels)"
    assert _sanitizer_checks(report) == {t: ("skipped", why) for t in ("memcheck", "racecheck", "synccheck",
                                                                        "initcheck")}
    out = capsys.readouterr().out
    assert "sanitizers: skipped (CPU backend (compute-sanitizer checks CUDA kernels))" in out
    assert [line.split()[:2] for line in out.splitlines() if line.startswith("forms_row_sum")] == [
        ["forms_row_sum", "admitted"]]
    # Where the wall time went, with the substrates' own seconds summed from the report.
    (timeline,) = [line for line in out.splitlines() if line.startswith("timeline: ")]
    work = sum(s["seconds"] for s in json.loads(report.read_text())["substrates"])
    found = re.fullmatch(r"timeline: discovery \d+\.\d s \(its worker ready after \d+\.\d s\), then the jobs (\d+\.\d) s \((\d+\.\d) s of substrate work "
                         r"after (\d+\.\d) s of (\d+) worker(?:'s|s') start \(candidate imported (\d+\.\d), T0's "
                         r"helpers started (\d+\.\d), backend (\d+\.\d), the rest (\d+\.\d)\), (\d+) at once\), then "
                         r"0\.0 s waiting for the sanitizers", timeline)
    assert found and abs(float(found.group(2)) - work) <= 0.1, (timeline, work)  # the report's seconds are rounded
    # The file's six substrates, two slots: a worker serves its file's substrates one after another, and only
    # the two that die (forms_crash_late, forms_killed_late) can make a slot start another.
    at_once = auto_jobs("cpu", os.cpu_count() or 1)  # --jobs auto
    assert int(found.group(9)) == at_once and at_once <= int(found.group(4)) <= at_once + 2, timeline
    # The workers' starts, side by side, fall inside the slots' time; their parts add up to them (each rounded).
    assert 0 <= float(found.group(3)) <= float(found.group(1)) * at_once + 0.1, timeline
    assert abs(sum(float(found.group(i)) for i in (5, 6, 7, 8)) - float(found.group(3))) <= 0.25, timeline


def test_the_timeline_splits_the_workers_start_only_where_they_measured_it():
    from harness.gate.command import Timeline

    timeline = Timeline(discovery=3.4, worker_ready=3.3, jobs=7.5, work=30.8, worker_starts=15.4, workers=14)
    assert timeline.describe(8) == (
        "timeline: discovery 3.4 s (its worker ready after 3.3 s), then the jobs 7.5 s (30.8 s of substrate work "
        "after 15.4 s of 14 workers' start, 8 at once), then 0.0 s waiting for the sanitizers")
    timeline.start_parts = {"candidate imported": 0.7, "T0's helpers started": 0.5, "backend (its CUDA context)": 13.9}
    assert "after 15.4 s of 14 workers' start (candidate imported 0.7, T0's helpers started 0.5, backend (its CUDA " \
           "context) 13.9, the rest 0.3), 8 at once)" in timeline.describe(8)


def test_the_timeline_says_how_many_workers_started_beside_discovery_a_job_took():
    from harness.gate.command import Timeline

    timeline = Timeline(discovery=3.4, worker_ready=2.1, jobs=6.5, work=30.8, worker_starts=5.4, workers=6, ahead=7,
                        ahead_used=6)
    assert timeline.describe(8).startswith(
        "timeline: discovery 3.4 s (its worker ready after 2.1 s, 7 worker(s) started beside it, 6 of them used), "
        "then the jobs 6.5 s (30.8 s of substrate work after 5.4 s of 6 workers' start, 8 at once)")
    timeline = Timeline(discovery=6.0, worker_ready=5.9, jobs=161.4, work=262.3, worker_starts=45.3, workers=20,
                        ahead=8, ahead_used=0, ahead_unneeded=8)
    assert timeline.describe(8).startswith(
        "timeline: discovery 6.0 s (its worker ready after 5.9 s, 8 worker(s) started beside it, 0 of them used, 8 "
        "stopped after it (their files' T0s are drawn by helpers)), then the jobs 161.4 s")


def test_discovery_foresees_the_official_outputs_only_for_a_gate_on_cuda(monkeypatch):
    # The float64 route runs ahead of the official output on a GPU only; on the CPU backend the meta run of each
    # Model (torch._dynamo's import, in discovery's worker) would buy nothing.
    from harness.gate import command as cli

    monkeypatch.setattr(cli, "resolve_backend_name", lambda name: "cuda" if name in ("auto", "cuda") else name)
    parse = cli.build_parser().parse_args
    assert [cli._foresees_outputs(parse(argv)) for argv in ([], ["--backend", "cuda"], ["--backend", "cpu"],
                                                            ["--list"])] == [True, True, False, False]


def test_workers_start_beside_discovery_for_the_first_files_only_where_a_gpu_gates_files_known_before_it(
        monkeypatch, tmp_path):
    from harness.gate import command as cli

    started = []
    monkeypatch.setattr(cli, "WorkersAhead", lambda files, backend, cache_dir: started.append(
        (files, backend, cache_dir)) or "ahead")
    monkeypatch.setattr(cli, "gpu_visible", lambda: True)
    monkeypatch.setattr(cli, "resolve_backend_name", lambda name: "cuda" if name in ("auto", "cuda") else name)
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 16)
    parse = cli.build_parser().parse_args
    files = [tmp_path / f"candidate_{i}.py" for i in range(10)]
    for path in files:
        path.write_text("")
    for argv in (["--list"], ["--backend", "cpu"], ["--scheduler", "local"], ["pad_const_b1"],
                 [str(files[0]), "pad_const_b1"]):  # a substrate named by name: its file is known only after discovery
        assert cli._workers_ahead(parse(argv), files) is None, argv
    assert started == []
    assert cli._workers_ahead(parse([]), files) == "ahead"
    assert cli._workers_ahead(parse(["--jobs", "3", "--cache-dir", str(tmp_path)]), files) == "ahead"
    assert cli._workers_ahead(parse([str(files[4]), str(files[2]), str(files[4])]), files) == "ahead"
    assert started == [([str(f) for f in files[:8]], "cuda", None),  # auto: 8 slots on 16 cores
                       ([str(f) for f in files[:3]], "cuda", str(tmp_path)),
                       ([str(files[4].resolve()), str(files[2].resolve())], "cuda", None)]
    monkeypatch.setattr(cli, "gpu_visible", lambda: False)
    assert cli._workers_ahead(parse([]), files) is None


def test_no_sanitize_and_the_tools_chosen_are_said_in_the_report(tmp_path, capsys):
    report = tmp_path / "report.json"
    main([str(FORMS), "--backend", "cpu", "--no-record", "--no-progress", "--no-sanitize",
          "--sanitize-tools", "racecheck,memcheck", "--json", str(report)])
    assert _sanitizer_checks(report) == {"memcheck": ("skipped", "skipped: --no-sanitize"),
                                         "racecheck": ("skipped", "skipped: --no-sanitize")}


def test_an_unknown_sanitizer_tool_or_path_is_a_usage_error(capsys):
    assert main(["pad_const_b1", "--no-record", "--sanitize-tools", "racecheck,leakcheck"]) == 2
    assert "--sanitize-tools: unknown tool 'leakcheck' (choose from memcheck, racecheck, synccheck, initcheck)" in (
        capsys.readouterr().err)
    assert main(["pad_const_b1", "--no-record", "--sanitizer", "/no/such/compute-sanitizer"]) == 2
    assert "--sanitizer: no such file /no/such/compute-sanitizer" in capsys.readouterr().err
    assert main(["pad_const_b1", "--no-record", "--sanitize-processes", "0"]) == 2
    assert "--sanitize-processes must be at least 1, not 0" in capsys.readouterr().err


def test_skipped_checks_do_not_bar_admission_but_a_check_not_run_does_and_is_the_reason():
    passed = CheckResult(CheckName.OUTPUT_MATCHES, CheckStatus.PASSED, "held in 5 trials")
    skipped = CheckResult(CheckName.RACECHECK, CheckStatus.SKIPPED, "skipped: --no-sanitize")
    not_run = CheckResult(CheckName.MEMCHECK, CheckStatus.NOT_RUN, "not run: timed out under memcheck after 300 s")
    assert SubstrateReport("a", "f", checks=[passed, skipped]).admitted
    assert not SubstrateReport("a", "f", checks=[skipped]).admitted  # nothing ran: no verdict of admission
    held_back = SubstrateReport("a", "f", checks=[passed, skipped, not_run])
    assert not held_back.admitted
    assert held_back.reasons() == ["memcheck: not run: timed out under memcheck after 300 s"]


def test_each_gate_job_is_told_how_many_jobs_share_the_host(monkeypatch, capsys):
    import harness.gate.command as cli

    told = []

    def fake_gate_job(job, timeout, on_message, keeper=None, stop=lambda: False):
        told.append(job.jobs_at_once)
        return SubstrateReport(name=job.name, file=job.file)

    monkeypatch.setattr(cli, "run_gate_job", fake_gate_job)
    main(["pad_const_b1", "pad_const_b2", "pad_const_b4", "--backend", "cpu", "--no-record", "--no-progress",
          "--jobs", "8"])
    assert told == [3, 3, 3]  # --jobs 8, but three substrates: three at once


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5"])
def test_jobs_other_than_a_positive_whole_number_or_auto_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["pad_const_b1", "--no-record", "--jobs", value])
    assert exited.value.code == 2
    assert f"argument --jobs: a whole number of at least 1, or auto; not '{value}'" in capsys.readouterr().err


@pytest.mark.parametrize("backend, cores, expected", [("cuda", 16, 8), ("cuda", 64, 8), ("cuda", 6, 3), ("cuda", 1, 1),
                                                      ("cpu", 16, 2), ("cpu", 2, 2), ("cpu", 1, 1)])
def test_auto_jobs_are_half_the_cores_on_a_gpu_at_most_eight_and_two_on_the_cpu(backend, cores, expected):
    assert auto_jobs(backend, cores) == expected


def test_jobs_default_to_auto_resolved_for_the_backend(monkeypatch):
    import harness.gate.command as cli

    told = []
    monkeypatch.setattr(cli, "run_gate_job", lambda job, timeout, on_message, keeper=None, stop=None: told.append(job.jobs_at_once)
                        or SubstrateReport(name=job.name, file=job.file))
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 16)
    main(["pad_const_b1", "pad_const_b2", "pad_const_b4", "--backend", "cpu", "--no-record", "--no-progress"])
    assert told == [2, 2, 2]  # auto on the CPU backend: two at a time


def test_the_sanitizers_start_beside_discovery_only_where_they_will_run_on_this_hosts_gpu(monkeypatch, tmp_path):
    from harness.gate import command as cli
    from harness.oracles import sanitizer

    fake = Path(__file__).resolve().parent / "fake_sanitizer.py"
    monkeypatch.setattr(cli, "gpu_visible", lambda: True)
    started = []
    monkeypatch.setattr(sanitizer, "prestart", lambda tools, path, backend, cache, processes: started.append(
        (tools, path, backend, cache, processes)) or {"memcheck": []})
    parse = cli.build_parser().parse_args
    tools = ("memcheck", "racecheck")
    for argv in (["--no-sanitize"], ["--list"], ["--backend", "cpu"], ["--scheduler", "local"]):
        assert cli._prestart_sanitizers(parse(argv + ["--sanitizer", str(fake)]), tools) == {}, argv
    assert cli._prestart_sanitizers(parse(["--sanitizer", str(fake)]), ()) == {}  # no tools chosen
    assert started == []
    assert cli._prestart_sanitizers(parse(["--sanitizer", str(fake), "--sanitize-processes", "2",
                                           "--cache-dir", str(tmp_path)]), tools) == {"memcheck": []}
    assert started == [(tools, fake, "cuda", str(tmp_path), 2)]
    monkeypatch.setattr(cli, "gpu_visible", lambda: False)
    assert cli._prestart_sanitizers(parse(["--sanitizer", str(fake)]), tools) == {}
