"""harness.benchmarks.gate: the gate beside a KernelBench-style check, on the CPU backend, and its table."""

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.benchmarks.gate import GIB, BaselineResult, Row, format_table, main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SILU = EXAMPLES / "substrates" / "candidate_example_silu.py"


def _rows(out: str) -> dict[str, list[str]]:
    """The table's rows by substrate, each split into its cells (two spaces or more apart)."""
    import re

    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("substrate "))
    rows = {}
    for line in lines[header + 1:]:
        if line.startswith(("columns:", "medians over")):
            break
        if not line.startswith(" "):
            cells = re.split(r"\s{2,}", line.strip())
            rows[cells[0]] = cells
    return rows


def test_silu_is_admitted_by_the_gate_and_passes_the_baseline(tmp_path, capsys):
    report = tmp_path / "bench.json"
    code = main(["--backend", "cpu", "--cache-dir", str(tmp_path / "cache"), "--json", str(report), str(SILU)])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    row = _rows(captured.out)["example_silu"]
    assert row[1] == "admitted"
    assert row[4] == "n/a" and row[7] == "n/a"  # no device memory on the CPU backend
    assert row[8] == "passed 5/5"
    assert row[9].endswith("x") and row[10].endswith("x") and row[11] == "n/a"
    # A fresh cache: the baseline (first by default) compiles, and the gate finds its kernel.
    assert "    compile: baseline compiled, gate from the cache" in captured.out
    assert "columns: gate = verdict of harness.gate.worker.run_gate_job" in captured.out
    assert "example_silu: baseline passed 5/5 in" in captured.err
    assert "example_silu: gate admitted in" in captured.err

    data = json.loads(report.read_text())
    assert data["backend"] == "cpu" and data["device"].startswith("CPU: ")
    assert {"date", "commit", "worktree_dirty", "tolerance", "trials", "seed", "order", "precision"} <= set(data)
    assert data["tolerance"] == 0.01 and data["trials"] == 5 and data["order"] == "baseline-first"
    (only,) = data["rows"]
    assert only["substrate"] == "example_silu" and only["file"] == str(SILU)
    assert only["gate_verdict"] == "admitted" and only["gate_reasons"] == []
    assert only["gate_wall_seconds"] >= only["gate_pipeline_seconds"] > 0
    # The worker's start, before the pipeline, by part: what the wall time holds beside the pipeline's.
    assert 0 < only["gate_start_seconds"] < only["gate_wall_seconds"]
    assert {"candidate imported", "T0's helpers started", "backend"} <= set(only["gate_start_parts"])
    assert re.search(r"^    gate worker's start \d+\.\d s", captured.out, re.M)
    assert only["gate_peak_reserved_bytes"] is None and only["memory_ratio"] is None
    baseline = only["baseline"]
    assert baseline["passed"] and baseline["trials_passed"] == baseline["trials_run"] == 5
    assert baseline["wall_seconds"] > baseline["check_seconds"] >= baseline["setup_seconds"] > 0
    assert baseline["peak_reserved_bytes"] is None and baseline["peak_allocated_bytes"] is None
    # eval.py's trial seeds: torch.manual_seed(42), then one randint(0, 2**32 - 1) per trial.
    import torch

    torch.manual_seed(42)
    assert baseline["trial_seeds"] == [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(5)]
    assert only["wall_ratio"] == pytest.approx(only["gate_wall_seconds"] / baseline["wall_seconds"])
    assert only["inner_ratio"] == pytest.approx(only["gate_pipeline_seconds"] / baseline["check_seconds"])
    assert only["gate_phase_trace"] == []  # kept with --trace only


def test_trace_keeps_every_timed_call_of_the_gate_in_the_json(tmp_path, capsys):
    report = tmp_path / "bench.json"
    assert main(["--backend", "cpu", "--no-baseline", "--trace", "--json", str(report), str(SILU)]) == 0
    (only,) = json.loads(report.read_text())["rows"]
    trace = only["gate_phase_trace"]
    # Every call of every phase, summing to the phase's seconds; the second references' thread among them.
    for phase, seconds in only["gate_phase_seconds"].items():
        calls = [call for call in trace if call["phase"] == phase]
        assert len(calls) == only["gate_phase_calls"][phase]["calls"]
        assert sum(call["seconds"] for call in calls) == pytest.approx(seconds, abs=1e-3)
    assert {"MainThread"} < {call["thread"] for call in trace}
    # The report keeps the pipeline's seconds to the millisecond (a call may start in its last half-millisecond).
    assert all(0 <= call["start"] <= only["gate_pipeline_seconds"] + 0.0005 for call in trace)


def _silu_copy(tmp_path, old: str, new: str) -> Path:
    """examples' SiLU candidate with `old` replaced by `new`, beside a copy of its problem."""
    (tmp_path / "cands").mkdir(parents=True)
    (tmp_path / "problems").mkdir()
    shutil.copy(EXAMPLES / "problems" / "example_silu.py", tmp_path / "problems")
    source = SILU.read_text()
    assert old in source
    changed = tmp_path / "cands" / SILU.name
    changed.write_text(source.replace(old, new, 1))
    return changed


def test_a_baseline_silent_past_the_timeout_or_dead_fails_saying_at_which_step(tmp_path):
    from harness.benchmarks.gate import BaselineJob, run_baseline

    launch = "    def launch(inputs, torch):\n"
    hangs = _silu_copy(tmp_path, launch, launch + "        import time; time.sleep(60)\n")
    result = run_baseline(BaselineJob(file=str(hangs), name="example_silu", backend="cpu"), step_timeout=3)
    assert not result.passed and result.wall_seconds < 30
    assert result.first_failure == ("the baseline process: timed out after 3 s during trial 0 (the worker was "
                                    "killed)")
    dies = _silu_copy(tmp_path / "dies", launch, launch + "        import os; os._exit(7)\n")
    result = run_baseline(BaselineJob(file=str(dies), name="example_silu", backend="cpu"), step_timeout=30)
    assert result.first_failure == "the baseline process: the worker process died during trial 0 (exit code 7)"


def test_a_wrong_kernel_fails_the_baseline(tmp_path, capsys):
    broken = _silu_copy(tmp_path, "out[i] = v / (1.0f + expf(-v));", "out[i] = v / (2.0f + expf(-v));")
    report = tmp_path / "bench.json"
    code = main(["--backend", "cpu", "--no-gate", "--json", str(report), str(broken)])
    out = capsys.readouterr().out
    assert code == 1
    row = _rows(out)["example_silu"]
    assert row[1] == "not run" and row[8] == "FAILED 0/5"
    assert "    baseline: trial 0: output mismatch (max difference " in out
    baseline = json.loads(report.read_text())["rows"][0]["baseline"]
    assert not baseline["passed"] and baseline["trials_run"] == 5 and baseline["trials_passed"] == 0


@pytest.mark.parametrize("argv, message", [
    (["--no-gate", "--no-baseline", str(SILU)], "--no-gate and --no-baseline leave nothing to run"),
    (["missing/candidate_x.py"], "cannot read candidate file missing/candidate_x.py"),
    (["--trials", "0", str(SILU)], "--trials and --repeat must be at least 1"),
    (["--repeat", "0", str(SILU)], "--trials and --repeat must be at least 1"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    assert main(["--backend", "cpu", *argv]) == 2
    assert message in capsys.readouterr().err


def _baseline(**fields) -> BaselineResult:
    values = dict(passed=True, trials=5, trials_run=5, trials_passed=5, check_seconds=2.0, wall_seconds=4.0)
    values.update(fields)
    return BaselineResult(**values)


def test_the_table_gives_ratios_and_n_a():
    gpu = Row("on_gpu", "f.py", gate_verdict="admitted", gate_wall_seconds=12.0, gate_pipeline_seconds=5.0,
              gate_peak_reserved_bytes=3 * GIB, gate_compile_from_cache=True, gate_start_seconds=2.5,
              gate_start_parts={"candidate imported": 0.01, "backend (its CUDA context)": 1.94},
              baseline=_baseline(peak_reserved_bytes=2 * GIB, compile_from_cache=False))
    cpu = Row("on_cpu", "f.py", gate_verdict="admitted", gate_wall_seconds=3.0, gate_pipeline_seconds=1.0,
              baseline=_baseline(check_seconds=0.5, wall_seconds=2.0))
    failed = Row("early_end", "f.py", gate_verdict="rejected", gate_wall_seconds=3.0, gate_pipeline_seconds=1.0,
                 gate_peak_reserved_bytes=GIB, gate_reasons=["output_matches: trial 0", "b", "c", "d"],
                 baseline=_baseline(passed=False, trials_run=1, trials_passed=0, peak_reserved_bytes=GIB,
                                    first_failure="trial 0: output shape mismatch: expected (), got (1,)"))
    gate_only = Row("gate_only", "f.py", gate_verdict="admitted", gate_wall_seconds=3.0, gate_pipeline_seconds=1.0)
    assert (gpu.wall_ratio, gpu.inner_ratio, gpu.memory_ratio) == (3.0, 2.5, 1.5)
    assert (cpu.wall_ratio, cpu.inner_ratio, cpu.memory_ratio) == (1.5, 2.0, None)
    assert (failed.wall_ratio, failed.inner_ratio, failed.memory_ratio) == (None, None, None)
    assert not failed.baseline_ok and not failed.gate_ok and gate_only.baseline_ok

    lines = format_table([gpu, cpu, failed, gate_only]).splitlines()
    assert lines[0].split("  ")[0] == "substrate"
    assert _rows("\n".join(lines)) == {
        "on_gpu": ["on_gpu", "admitted", "12.0", "5.0", "3.0", "4.0", "2.0", "2.0", "passed 5/5",
                   "3.00x", "2.50x", "1.50x"],
        "on_cpu": ["on_cpu", "admitted", "3.0", "1.0", "n/a", "2.0", "0.5", "n/a", "passed 5/5",
                   "1.50x", "2.00x", "n/a"],
        "early_end": ["early_end", "rejected", "3.0", "1.0", "1.0", "4.0", "2.0", "1.0", "FAILED 0/5",
                      "n/a", "n/a", "n/a"],
        "gate_only": ["gate_only", "admitted", "3.0", "1.0", "n/a", "-", "-", "-", "not run", "n/a", "n/a", "n/a"],
    }
    assert "    compile: baseline compiled, gate from the cache" in lines
    assert "    gate worker's start 2.5 s, backend (its CUDA context) 1.9" in lines
    assert "    baseline: trial 0: output shape mismatch: expected (), got (1,)" in lines
    assert "    gate: output_matches: trial 0" in lines and "    gate: (and 1 more)" in lines
    # Every row's cells line up under the header's columns.
    assert len({line.index("admitted") for line in lines if "admitted" in line}) == 1


def test_a_phase_one_call_of_which_took_a_tenth_or_more_says_so():
    # A cost paid once (the first float64 matmul's kernels loaded, say) is told apart from one paid on every trial.
    row = Row("mm", "f.py", gate_verdict="admitted", gate_wall_seconds=3.0, gate_pipeline_seconds=2.5,
              gate_phase_seconds={"official Model in float64, ahead": 0.9, "kernel: runs": 0.6, "inputs built": 0.2},
              gate_phase_calls={"official Model in float64, ahead": {"calls": 18, "longest": 0.78},
                                "kernel: runs": {"calls": 40, "longest": 0.02},
                                "inputs built": {"calls": 1, "longest": 0.2}})
    assert ("    gate phases (s): official Model in float64, ahead 0.9 (18 calls, longest 0.78), kernel: runs 0.6, "
            "inputs built 0.2") in format_table([row]).splitlines()


def test_rounds_are_tabled_one_by_one_and_summed_up_as_medians_of_their_own_ratios():
    from harness.benchmarks.gate import Medians, format_medians

    rounds = [Row("mm", "f.py", round=i, gate_verdict="admitted", gate_wall_seconds=gate, gate_pipeline_seconds=1.0,
                  gate_peak_reserved_bytes=GIB, baseline=_baseline(wall_seconds=base, peak_reserved_bytes=GIB))
              for i, (gate, base) in enumerate([(3.0, 2.0), (2.0, 2.5), (2.4, 2.0)], 1)]
    medians = Medians.of(rounds)
    # The rounds' own ratios are 1.5, 0.8 and 1.2: their median, not a ratio of medians (2.4 / 2.0).
    assert (medians.rounds, medians.wall_ratio, medians.wall_ratios) == (3, 1.2, [1.5, 0.8, 1.2])
    assert (medians.gate_wall_seconds, medians.baseline_wall_seconds, medians.memory_ratio) == (2.4, 2.0, 1.0)
    assert sorted(_rows(format_table(rounds))) == ["mm #1", "mm #2", "mm #3"]
    assert format_medians([medians]).splitlines()[1] == (
        "  mm: 3 rounds, gate admitted; gate wall 2.4 s, base wall 2.0 s; wall x 1.20x (rounds: 1.50, 0.80, 1.20), "
        "inner x 0.50x, mem x 1.00x")


def test_repeat_runs_the_baseline_and_the_gate_again_and_writes_the_medians(tmp_path, capsys):
    report = tmp_path / "bench.json"
    code = main(["--backend", "cpu", "--cache-dir", str(tmp_path / "cache"), "--json", str(report), "--repeat", "2",
                 str(SILU)])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert sorted(_rows(captured.out)) == ["example_silu #1", "example_silu #2"]
    assert "[1/1] round 2/2 example_silu: gate admitted in" in captured.err
    data = json.loads(report.read_text())
    assert [r["round"] for r in data["rows"]] == [1, 2]
    (medians,) = data["medians"]
    assert medians["rounds"] == 2 and medians["verdicts"] == ["admitted", "admitted"]
    assert medians["wall_ratio"] == pytest.approx(sum(r["wall_ratio"] for r in data["rows"]) / 2)
    assert "medians over the rounds" in captured.out


def test_the_gate_gets_get_inputs_signature_from_discovery_as_gate_py_gives_it(tmp_path, capsys, monkeypatch):
    # Without it the gate's worker builds get_inputs() on the meta device itself, whose first decomposition imports
    # torch._dynamo: seconds gate.py never spends there, measured as the gate's.
    import harness.gate.worker

    jobs = []
    real = harness.gate.worker.run_gate_job

    def recording(job, *args, **kwargs):
        jobs.append(job)
        return real(job, *args, **kwargs)

    monkeypatch.setattr(harness.gate.worker, "run_gate_job", recording)
    code = main(["--backend", "cpu", "--no-baseline", "--cache-dir", str(tmp_path / "cache"), str(SILU)])
    assert code == 0, capsys.readouterr().out
    (job,) = jobs
    assert job.official_inputs == (("tensor", "float32", (16, 16384)),)
    assert job.official_output is None  # foreseen for the float64 route on a GPU only
