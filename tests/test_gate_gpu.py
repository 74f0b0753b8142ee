"""End-to-end gate runs on a GPU: each planted fault is rejected for its own reason."""

import json

import pytest

from harness.cli import main
from tests.conftest import TEST_CANDIDATES

pytestmark = pytest.mark.gpu

# substrate -> (the check that must fail, words its detail must contain)
PLANTED = {
    "broken_wrong_value": ("output_matches", "elements differ"),
    "broken_unwritten": ("output_fully_written", "never written"),
    "broken_out_of_bounds": ("writes_in_bounds", "guard band after out"),
    "broken_changes_input": ("inputs_unchanged", "input 0 changed by run 1: "),
    "broken_illegal_address": ("runs_to_completion", "CUDA_ERROR_ILLEGAL_ADDRESS"),
    "broken_hangs": ("runs_to_completion", "timed out after 20 s during probe trial 0"),
    "broken_compile_error": ("compile", "out_shap"),
    "broken_wrong_arguments": ("launch_arguments", "argument 2: launch passes c_int (integer, 4 bytes) but kernel "
                                                   "parameter 2 is an integer of 8 bytes"),
    "broken_dangling_pointer": ("launch_arguments", "argument 0 (0x"),
    "broken_ref": ("ref_matches_official", "1 of"),
    "broken_cuda_at_import": ("import_safe", "importing the file did CUDA work"),
    "broken_unknown_problem": ("official_reference", "kb_file 'pad_const_b3.py': no such problem file"),
    "broken_missing_key": ("registration", "broken_missing_key: missing key(s) probe"),
    "broken_builder": ("suites_build", "misaligned trial 1: building inputs raised IndexError: no trial 1"),
}


@pytest.fixture(scope="module")
def broken_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate") / "report.json"
    code = main([str(TEST_CANDIDATES / "candidate_broken_pad.py"), str(TEST_CANDIDATES / "candidate_cuda_at_import.py"),
                 "--json", str(out), "--timeout", "20", "--no-record", "--no-progress"])
    assert code == 1
    return {s["name"]: s for s in json.loads(out.read_text())["substrates"]}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_fault_is_rejected_for_its_reason(broken_report, name):
    check, words = PLANTED[name]
    substrate = broken_report[name]
    failed = {c["check"]: c["detail"] for c in substrate["checks"] if c["ok"] is False}
    assert not substrate["admitted"]
    assert check in failed, f"{name} failed {sorted(failed)}, not {check}"
    assert words in failed[check]


def test_every_planted_fault_is_tested(broken_report):
    assert set(broken_report) == set(PLANTED)


def test_compile_error_quotes_the_source_line(broken_report):
    detail = {c["check"]: c["detail"] for c in broken_report["broken_compile_error"]["checks"]}["compile"]
    assert "rest = rest / g.out_shap[d];" in detail
    assert "broken_compile_error.cu:" in detail
