"""End-to-end gate runs: each planted fault is rejected for its own reason, on every backend here.

The CPU backend runs everywhere; the cuda one where a GPU is visible (marked `gpu`).
"""

import json

import pytest

from harness.backends import gpu_visible
from harness.cli import main
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
# Where the backends differ: a wild write faults on the GPU and kills the process on the CPU.
PER_BACKEND = {
    "cuda": {"broken_illegal_address": ("runs_to_completion", "CUDA_ERROR_ILLEGAL_ADDRESS")},
    "cpu": {"broken_illegal_address": ("runs_to_completion", "the worker process died during probe trial 0 "
                                                             "(killed by signal SIGSEGV)")},
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
