"""Every rule of the spec, enforced end to end: one candidate per rule breaks only that rule and is
rejected naming it; a candidate breaking several is rejected for all of them. On the CPU
backend everywhere, and on cuda where a GPU is visible (marked `gpu`).

The candidates are written from one compliant template (tests/rule_candidates.py), which must
itself be admitted, so each rejection is owed to the rule its variant breaks.
"""

import json

import pytest

from harness.backends import gpu_visible
from harness.gate.command import main
from tests import rule_candidates
from tests.conftest import TEST_CANDIDATES
from tests.rule_candidates import SEVERAL, VARIANTS

# Variants whose break also stops the compile (a kernel name that is no __global__; on the CPU
# backend, a header the shim does not provide): the rule is still named, next to the compile failure.
ALSO_FAIL_COMPILE = {"cpu": {"rule_include", "rule_kernel_not_global"}, "cuda": {"rule_kernel_not_global"}}
# CUDA work at import is caught where a GPU is visible; elsewhere it fails the import itself.
CUDA_AT_IMPORT = ("importing the file did CUDA work: torch.cuda was initialized" if gpu_visible()
                  else "candidate_rule_cuda_at_import.py: import failed: ")
BACKENDS = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)]
# A register() of the wrong signature cannot be called, so the registration fails with it, and the
# report is named after the file.
CANNOT_REGISTER = {"rule_register_signature": "candidate_rule_register_signature"}


@pytest.fixture(scope="module", params=BACKENDS)
def gated(request, tmp_path_factory):
    backend = request.param
    root = tmp_path_factory.mktemp(f"rules-{backend}")
    files = rule_candidates.write_candidates(root, sorted(VARIANTS))
    out = root / "report.json"
    code = main([*map(str, files), str(TEST_CANDIDATES / "candidate_unsafe_row_sum.py"), "--backend", backend,
                 "--json", str(out), "--timeout", "60", "--jobs", "2" if backend == "cpu" else "4", "--no-record",
                 "--no-progress"])
    assert code == 1
    report = json.loads(out.read_text())
    assert report["backend"] == backend
    return backend, {s["name"]: s for s in report["substrates"]}


def _failed(substrate) -> dict:
    return {c["check"]: c["detail"] for c in substrate["checks"] if c["status"] == "failed"}


def test_the_template_follows_every_rule(gated):
    compliant = gated[1]["rule_compliant"]
    assert compliant["admitted"], _failed(compliant)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_candidate_breaking_one_rule_is_rejected_for_that_rule_alone(gated, variant):
    backend, report = gated
    check, words, _replacements = VARIANTS[variant]
    substrate = report.get(CANNOT_REGISTER.get(variant, variant)) or report[f"candidate_{variant}"]
    failed = _failed(substrate)
    assert not substrate["admitted"]
    assert (words or CUDA_AT_IMPORT) in failed.get(check, ""), failed
    expected = {check} | ({"compile"} if variant in ALSO_FAIL_COMPILE[backend] else set())
    if variant in CANNOT_REGISTER:
        expected.add("registration")
        assert failed["registration"].endswith("register() failed: TypeError: register() takes 2 positional "
                                               "arguments but 3 were given")
    assert set(failed) == expected, failed


def test_a_candidate_breaking_several_rules_is_rejected_for_all_of_them(gated):
    failed = _failed(gated[1][SEVERAL[0]])
    for part in SEVERAL[1]:
        check, words, _replacements = VARIANTS[part]
        if part == "rule_file_name":
            words = "not 'candidate_RuleSeveral.py'"
        assert words in failed.get(check, ""), (part, failed)
    assert set(failed) == {VARIANTS[part][0] for part in SEVERAL[1]}


def test_a_suite_that_could_reject_a_correct_kernel_makes_the_candidate_unsafe(gated):
    failed = _failed(gated[1]["unsafe_row_sum"])
    detail = failed["no_false_kill"]
    assert detail.startswith("cancelling trial 0: the official Model in float64 disagrees with it beyond the "
                             "tolerance (atol=0.01, rtol=0.01): 32 of 32 elements differ")
    assert "two correct implementations can differ here, so this suite would reject a correct kernel" in detail
    assert "T0_original" not in detail and "misaligned" not in detail


def test_suites_that_cannot_fail_name_each_kernel_they_let_through(gated):
    detail = _failed(gated[1]["rule_suites_cannot_fail"])["suites_can_fail"]
    assert detail.startswith("a kernel that writes zeros passes every trial of every suite (atol=0.01, rtol=0.01), "
                             "so the suites cannot tell it from a correct kernel; add a suite whose reference outputs "
                             "are not all (nearly) zero; a kernel that writes the constant ")
    assert "copies input 0" not in detail  # 1e-3 * x is far from x: the copy is caught
