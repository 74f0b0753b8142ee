"""End-to-end gate runs: each planted fault is rejected for its own reason, on every backend here.

The CPU backend runs everywhere; the cuda one where a GPU is visible (marked `gpu`).
"""

import json

import pytest

from harness.backends import gpu_visible
from harness.gate.command import main
from tests.conftest import TEST_CANDIDATES

# substrate -> (the check that must fail, words its detail must contain), where both backends agree
PLANTED = {
    "broken_wrong_value": ("output_matches", "elements differ"),
    "broken_unwritten": ("output_fully_written", "never written"),
    "broken_out_of_bounds": ("writes_in_bounds", "guard band after out"),
    "broken_changes_input": ("inputs_unchanged", "input 0 changed by run 1: "),
    "broken_hangs": ("runs_to_completion", "timed out after 20 s during probe trial 0"),
    "broken_compile_error": ("compile", "out_shap"),
    "broken_wrong_arguments": ("launch_arguments", "argument 2: launch passes c_int (integer, 4 bytes) but kernel "
                                                   "parameter 2 is an integer of 8 bytes"),
    "broken_dangling_pointer": ("launch_arguments", "argument 0 (0x"),
    "broken_ref": ("ref_matches_official", "1 of"),
    "broken_unknown_problem": ("official_reference", "kb_file 'pad_const_b3.py': no such problem file"),
    "broken_missing_key": ("registration", "broken_missing_key: missing key(s) probe"),
    "broken_builder": ("suites_build", "misaligned trial 1: building inputs raised IndexError: no trial 1"),
}
# Where the backends differ: a wild write faults on the GPU, and on the CPU the shim catches its signal.
PER_BACKEND = {
    "cuda": {"broken_illegal_address": ("runs_to_completion", "CUDA_ERROR_ILLEGAL_ADDRESS")},
    # 4 TiB past out, which lies between fences mapped high: past the address space, whose address x86 does not give
    "cpu": {"broken_illegal_address": ("runs_to_completion", "probe trial 0: CPU backend: memory fault: SIGSEGV (an "
                                                             "address outside the address space, not reported) at "
                                                             "address (nil)")},
}
# Where the machines differ: CUDA work at import succeeds (and is caught) where a GPU is visible,
# and fails the import where none is, so the file never names its substrate and the report
# uses the file's name.
if gpu_visible():
    PER_MACHINE = {"broken_cuda_at_import": ("import_safe",
                                             "importing the file did CUDA work: torch.cuda was initialized")}
else:
    PER_MACHINE = {"candidate_cuda_at_import": ("import_safe", "candidate_cuda_at_import.py: import failed")}
BACKENDS = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.fixture(scope="module", params=BACKENDS)
def gated(request, tmp_path_factory):
    backend = request.param
    out = tmp_path_factory.mktemp(f"gate-{backend}") / "report.json"
    code = main([str(TEST_CANDIDATES / "candidate_broken_pad.py"), str(TEST_CANDIDATES / "candidate_cuda_at_import.py"),
                 "--backend", backend, "--json", str(out), "--timeout", "20", "--jobs", "2", "--no-record",
                 "--no-progress"])
    assert code == 1
    data = json.loads(out.read_text())
    assert data["backend"] == backend
    return backend, {s["name"]: s for s in data["substrates"]}


@pytest.mark.parametrize("name", sorted(PLANTED) + ["broken_illegal_address", "cuda_at_import"])
def test_planted_fault_is_rejected_for_its_reason(gated, name):
    backend, report = gated
    expected = {**PLANTED, **PER_BACKEND[backend], **PER_MACHINE}
    name = next(n for n in expected if n.endswith(name))
    check, words = expected[name]
    substrate = report[name]
    failed = {c["check"]: c["detail"] for c in substrate["checks"] if c["ok"] is False}
    assert not substrate["admitted"]
    assert check in failed, f"{name} failed {sorted(failed)}, not {check}"
    assert words in failed[check]


def test_every_planted_fault_is_tested(gated):
    backend, report = gated
    assert set(report) == set(PLANTED) | set(PER_BACKEND[backend]) | set(PER_MACHINE)


def test_compile_error_quotes_the_source_line(gated):
    _backend, report = gated
    detail = {c["check"]: c["detail"] for c in report["broken_compile_error"]["checks"]}["compile"]
    assert "rest = rest / g.out_shap[d];" in detail
    assert "broken_compile_error.cu:" in detail


# ------------------------------------------------------------------ candidates written from the spec alone

FORMS = TEST_CANDIDATES / "candidate_row_sum_forms.py"


@pytest.fixture(scope="module", params=BACKENDS)
def forms(request, tmp_path_factory):
    backend = request.param
    out = tmp_path_factory.mktemp(f"forms-{backend}") / "report.json"
    code = main([str(FORMS), "--backend", backend, "--json", str(out), "--timeout", "60", "--jobs", "2",
                 "--no-record", "--no-progress"])
    assert code == 1
    return backend, {s["name"]: s for s in json.loads(out.read_text())["substrates"]}


def _checks(substrate) -> dict:
    return {c["check"]: (c["status"], c["detail"]) for c in substrate["checks"]}


def test_builder_t_same_distribution_t0_and_launch_zeroed_atomic_out_are_admitted(forms):
    _backend, report = forms
    substrate = report["forms_row_sum"]
    checks = _checks(substrate)
    assert substrate["admitted"], [c for c in substrate["checks"] if c["ok"] is not True]
    assert checks["suites_build"][1] == ("every trial built; builders called as builder(t) (T0_original, "
                                         "positive_rows, misaligned)")
    assert checks["suite_rules"][1].startswith(
        "T0_original has get_inputs()'s shapes and dtypes in all 5 trials, its values drawn from get_inputs()'s "
        "distribution (each tensor tested against get_inputs() under its seed, false rejection at most 1e-6 per "
        "tensor): trial 0 input 0: two-sample Kolmogorov-Smirnov test: statistic ")
    assert checks["fits_device_memory"] == ("passed", "all 13 trials fit the device's memory")
    assert checks["output_fully_written"][1].startswith(
        "not applicable: launch initialises out itself (two launch calls over differently poisoned memory gave "
        "it the same bytes)")


def test_a_kernel_writing_nothing_into_an_empty_out_is_rejected_as_unwritten(forms):
    _backend, report = forms
    checks = _checks(report["forms_empty_out"])
    assert checks["output_fully_written"][0] == "failed"
    assert checks["output_fully_written"][1].startswith("probe trial 0: 4 of 4 output elements never written")


def test_a_t0_from_another_distribution_is_rejected_with_the_evidence(forms):
    _backend, report = forms
    status, detail = _checks(report["forms_wrong_distribution"])["suite_rules"]
    assert status == "failed"
    assert ("T0_original trial 0 input 0 has get_inputs()'s shape and dtype but neither its values under "
            "torch.manual_seed(1000) nor its distribution: two-sample Kolmogorov-Smirnov test: statistic ") in detail
    assert "the two-sample Kolmogorov-Smirnov test rejects it (p < 2e-07)" in detail


def test_a_missing_key_is_reported_beside_every_other_broken_rule(forms):
    _backend, report = forms
    checks = _checks(report["forms_missing_probe"])
    failed = {name for name, (status, _detail) in checks.items() if status == "failed"}
    assert failed == {"registration", "official_reference", "suite_rules"}
    assert checks["registration"][1].endswith("forms_missing_probe: missing key(s) probe")
    assert checks["official_reference"][1].startswith("kb_file 'row_sum_of_nothing.py': no such problem file")
    assert "T0_original has 3 trial(s); the spec asks for exactly 5" in checks["suite_rules"][1]
    assert checks["probe_rules"] == ("not_run", "not run: the entry has no valid probe")
    # Nothing is claimed of suites no official output was computed for.
    assert checks["suites_can_fail"] == ("not_run", "not run: the official reference did not load")
    assert checks["no_false_kill"] == ("not_run", "not run: the official reference did not load")
    assert checks["fits_device_memory"] == ("not_run", "not run: the official reference did not load")
    assert checks["cuda_source"][0] == "passed" and checks["compile"][0] == "passed"


def test_a_worker_killed_late_keeps_the_failures_and_says_the_out_of_memory_killer_did_not_do_it(forms):
    _backend, report = forms
    checks = _checks(report["forms_killed_late"])
    assert checks["output_matches"][0] == "failed"
    assert "misaligned trial 0 (atol=0.01, rtol=0.01): 3 of 3 elements differ" in checks["output_matches"][1]
    assert checks["runs_to_completion"] == ("failed", "the worker process died during misaligned trial 2 (killed by "
                                            "signal SIGKILL) (not the host's out-of-memory killer: /proc/vmstat's "
                                            "oom_kill count did not change)")
    assert checks["fits_host_memory"][0] == "not_run"


def test_a_worker_the_out_of_memory_killer_ends_fails_fits_host_memory_not_the_kernel(monkeypatch):
    """The same SIGKILL while /proc/vmstat's oom_kill count rises: the host's doing, under a check of its own."""
    from harness.gate import worker
    from harness.gate.worker import GateJob, run_gate_job

    counts = iter([41, 42])
    monkeypatch.setattr(worker, "oom_kills", lambda: next(counts))
    report = run_gate_job(GateJob(file=str(FORMS), name="forms_killed_late", backend="cpu"), 60)
    checks = {c.check.value: (c.status.value, c.detail) for c in report.checks}
    assert not report.admitted
    status, detail = checks["fits_host_memory"]
    assert status == "failed"
    assert detail.startswith("the worker process died during misaligned trial 2 (killed by signal SIGKILL): the host's "
                             "out-of-memory killer ended it (/proc/vmstat oom_kill rose by 1 meanwhile; ")
    assert detail.endswith(" GiB of host memory available afterwards): a limit of this machine, not a fault of the "
                           "kernel")
    assert checks["runs_to_completion"] == ("not_run", f"not run: {detail}")
    assert checks["output_matches"][0] == "failed"  # found before the death, kept


def test_a_crash_at_a_late_trial_keeps_the_failures_found_before_it(forms):
    backend, report = forms
    substrate = report["forms_crash_late"]
    checks = _checks(substrate)
    assert checks["output_matches"][0] == "failed"
    assert "misaligned trial 0 (atol=0.01, rtol=0.01): 3 of 3 elements differ" in checks["output_matches"][1]
    crash = ("the worker process died during misaligned trial 2 (killed by signal SIGABRT)" if backend == "cpu"
             else "misaligned trial 2: kernel run: CUDA error 700 CUDA_ERROR_ILLEGAL_ADDRESS")
    assert checks["runs_to_completion"][0] == "failed" and crash in checks["runs_to_completion"][1]
    assert {s["name"]: (s["trials"], s["passed"]) for s in substrate["suites"]}["T0_original"] == (5, 5)
    assert checks["suites_can_fail"][0] == "not_run"
