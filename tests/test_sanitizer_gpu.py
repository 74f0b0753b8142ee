"""compute-sanitizer's tools for real, on the GPU: a deleted barrier is a race, a read past the input an
out-of-bounds access, and correct kernels give no report (no false alarms on the examples)."""

from pathlib import Path

import pytest

from harness.candidates import import_candidate, register_candidate
from harness.gate.records import CheckName, CheckStatus
from harness.oracles.sanitizer import TOOLS, SanitizerTarget, find_sanitizer, sanitize

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parent.parent
SOFTMAX = REPO / "examples" / "substrates" / "candidate_example_softmax_rows.py"
FORMS = REPO / "tests" / "candidates" / "candidate_row_sum_forms.py"
SANITIZER = find_sanitizer()
needs_sanitizer = pytest.mark.skipif(SANITIZER is None, reason="compute-sanitizer not found")


def _targets(file: Path) -> list[SanitizerTarget]:
    return [SanitizerTarget(str(file), name, raw["kernel_name"], 0, raw["cuda"])
            for name, raw in register_candidate(import_candidate(file), file).items()]


@needs_sanitizer
def test_every_example_passes_every_tool():
    targets = [t for f in sorted((REPO / "examples" / "substrates").glob("candidate_*.py")) for t in _targets(f)]
    checks = sanitize(targets, TOOLS, SANITIZER)
    for name, results in checks.items():
        for result in results:
            if result.check is CheckName.RACECHECK and name in ("example_argmax_dim1", "example_silu"):
                # No shared memory in their kernels: nothing for racecheck to watch, and the check says so.
                assert result.status is CheckStatus.SKIPPED, f"{name}: {result.detail}"
                assert "declares and addresses no shared memory" in result.detail
            else:
                assert result.status is CheckStatus.PASSED, f"{name}: {result.check.value}: {result.detail}"


@needs_sanitizer
def test_the_softmax_without_its_barrier_before_the_sum_is_a_race_at_the_line_after_it(tmp_path):
    racy = tmp_path / SOFTMAX.name
    racy.write_text(SOFTMAX.read_text().replace("__syncthreads();  // sync-before-sum-reuse", ""))
    (target,) = _targets(racy)
    ((racecheck,),) = sanitize([target], ("racecheck",), SANITIZER).values()
    assert racecheck.check is CheckName.RACECHECK and racecheck.status is CheckStatus.FAILED, racecheck.detail
    assert f"{target.name}.cu:" in racecheck.detail and "Race reported" in racecheck.detail


@needs_sanitizer
def test_a_read_four_terabytes_past_the_input_is_reported_by_memcheck(tmp_path):
    crashing = tmp_path / FORMS.name
    crashing.write_text(FORMS.read_text().replace("if (cols == 57) total +=", "if (cols > 0) total +="))
    target = next(t for t in _targets(crashing) if t.name == "forms_crash_late")
    clean = next(t for t in _targets(FORMS) if t.name == "forms_row_sum")
    checks = sanitize([target, clean], ("memcheck",), SANITIZER)
    (memcheck,), (after,) = checks["forms_crash_late"], checks["forms_row_sum"]
    assert memcheck.status is CheckStatus.FAILED and "forms_crash_late.cu:" in memcheck.detail, memcheck.detail
    assert after.status is CheckStatus.PASSED, after.detail  # a fresh process took the substrate after the crash


@needs_sanitizer
def test_a_sub_word_cas_reaching_past_an_odd_count_of_halves_is_reported_by_memcheck(tmp_path):
    # What the first run of the gate with the sanitizers found in the family: the f16/bf16 gradients
    # swap the aligned 32-bit word around their element, two bytes past the last of an odd count
    # unless launch gives grad_in whole words.
    family = REPO / "substrates" / "candidate_pad_backward_reflect.py"
    unpadded = tmp_path / family.name
    unpadded.write_text(family.read_text().replace(
        "out = zeroed_words(in_shape, grad_out.dtype, grad_out.device, torch)",
        "out = torch.zeros(in_shape, dtype=grad_out.dtype, device=grad_out.device)"))
    halves = [t for t in _targets(unpadded) if t.name == "pad_backward_reflect_f16"]
    padded = [t for t in _targets(family) if t.name in ("pad_backward_reflect_f16", "pad_backward_reflect_bf16")]
    checks = sanitize(halves, ("memcheck",), SANITIZER)
    ((memcheck,),) = checks.values()
    assert memcheck.status is CheckStatus.FAILED, memcheck.detail
    assert "Invalid __global__ read of size 4" in memcheck.detail and "atomic_accumulate" in memcheck.detail
    for name, (after,) in sanitize(padded, ("memcheck",), SANITIZER).items():
        assert after.status is CheckStatus.PASSED, f"{name}: {after.detail}"
