"""CPU-only tests of the check pipeline: every check can fail, and fails for its own reason.

`harness.gate.pipeline.gate_entry` runs on the real pad_const_b4 entry (CUDA source compiled by
the real NVRTC, official reference, ref, launch, probe) with tests/fakes.FakeBackend, whose
Python kernels read and write the harness's guarded CPU buffers through the raw pointers of
the launch's ctypes arguments. The faithful kernel must be admitted; each planted fault must
be rejected by the check made for it, with the words that check uses.
"""

from __future__ import annotations

import ctypes
import dataclasses
import re
from pathlib import Path

import pytest
import torch

from harness.backends import KernelFault
from harness.candidates import SUBSTRATES_DIR, import_candidate, make_entry, register_candidate
from harness.gate.pipeline import CheckBook, gate_entry
from harness.gate.records import PIPELINE_CHECKS, CheckName, CheckResult, CheckStatus
from harness.problems import PROBLEMS_DIR, ProblemSearch
from tests import fakes

C = CheckName
PAD_FILE = SUBSTRATES_DIR / "candidate_pad_const.py"

# The import checks as the worker hands them to gate_entry once import and register() succeeded.
IMPORTED = [
    CheckResult(C.IMPORT_SAFE, CheckStatus.PASSED, "no CUDA context or torch.cuda state after import and register()"),
    CheckResult(C.CANDIDATE_FILE, CheckStatus.PASSED, "candidate_pad_const.py defines register(K, torch, ctypes)"),
    CheckResult(C.REGISTRATION, CheckStatus.PASSED, ""),
]
KERNEL_CHECKS = [C.LAUNCH_ARGUMENTS, C.OUTPUT_MATCHES, C.OUTPUT_FULLY_WRITTEN, C.WRITES_IN_BOUNDS,
                 C.INPUTS_UNCHANGED, C.RUNS_TO_COMPLETION]
OUTPUT_CHECKS = [C.OUTPUT_MATCHES, C.OUTPUT_FULLY_WRITTEN, C.WRITES_IN_BOUNDS, C.INPUTS_UNCHANGED]

# The probe's first trial ("aligned"): x is (2, 8, 32, 32), padded to (3, 10, 38, 40).
PROBE_IN = 2 * 8 * 32 * 32  # 16384 interior elements
PROBE_OUT = 3 * 10 * 38 * 40  # 45600 output elements
TRIALS = 2 + 8  # the probe's two, then the misaligned suite's eight (ranks 1..8)


# ------------------------------------------------------------------ helpers


def _load_pad_entry():
    registered = register_candidate(import_candidate(PAD_FILE), PAD_FILE)
    entry, problems = make_entry("pad_const_b4", registered["pad_const_b4"], PAD_FILE)
    assert not problems, problems
    return entry


@pytest.fixture(scope="module")
def real_entry():
    """The pad_const_b4 entry exactly as registered (all four suites)."""
    return _load_pad_entry()


@pytest.fixture(scope="module")
def entry(real_entry):
    """The real entry with only its misaligned suite: ranks 1..8, odd extents, every dtype of the width."""
    full = real_entry.suites

    def misaligned_only():
        return [suite for suite in full() if suite[0] == "misaligned"]

    return dataclasses.replace(real_entry, suites=misaligned_only)


def gate(entry, impl=fakes.pad_const_b4, checks_so_far=IMPORTED, backend=None, **kwargs):
    backend = backend or fakes.FakeBackend(kernels={"pad_const_b4": impl})
    report = gate_entry(entry, backend, checks_so_far=list(checks_so_far), **kwargs)
    return report, backend


def checks(report) -> dict:
    results = {c.check: c for c in report.checks}
    assert list(results) == list(PIPELINE_CHECKS), ("the pipeline's report lists every check of its own once, in "
                                                    "CheckName order (the sanitizers' come after it, from the cli)")
    return results


# The `entry` fixture keeps only the misaligned suite, to stay fast, and tests here trim suites
# further; suite_rules rejects that (no T0_original, one targeted suite), and suites_can_fail may.
# Those checks of the suites themselves are tested in test_spec_rules.py and test_suite_rules.py;
# tests of the other checks set them aside.
_AT = f"test_pipeline.py:{Path(__file__).read_text().splitlines().index('    def misaligned_only():') + 1}"
MISALIGNED_ONLY = (f"{_AT}: no T0_original suite: the spec asks for one with exactly get_inputs()'s shapes and dtypes, "
                   f"5 trials seeded 1000 + t; {_AT}: 1 targeted suite(s) besides T0_original (misaligned); the spec "
                   f"asks for two or three")
SUITE_CHECKS = (C.SUITE_RULES, C.SUITES_CAN_FAIL)


def failed(report) -> dict:
    """The failed checks, but for the checks of the suites themselves."""
    return {c.check: c.detail for c in report.checks if c.status is CheckStatus.FAILED and c.check not in SUITE_CHECKS}


def with_launch(entry, change):
    """The entry with a launch that runs the real one, then lets `change(inputs, out, grid, block, args)` alter it."""
    real_launch = entry.launch

    def launch(inputs, torch):
        out, grid, block, args = real_launch(inputs, torch)
        return change(inputs, out, grid, block, list(args))

    return dataclasses.replace(entry, launch=launch)


def suite_table(report) -> dict:
    return {s.name: (s.trials, s.passed) for s in report.suites}


# ------------------------------------------------------------------ the faithful kernel is admitted


def test_faithful_fake_is_admitted_with_every_check_explained(entry):
    report, backend = gate(entry)

    assert failed(report) == {}
    results = checks(report)
    assert results[C.SUITE_RULES].detail == MISALIGNED_ONLY
    assert {c.status for c in report.checks if c.check is not C.SUITE_RULES} == {CheckStatus.PASSED}, report.checks
    assert results[C.IMPORT_SAFE].detail == IMPORTED[0].detail
    assert results[C.REGISTRATION].detail == "held in 1 trial"
    assert results[C.OFFICIAL_REFERENCE].detail == (
        f"{PROBLEMS_DIR / 'pad_const_b4.py'} loaded KernelBench-style; its Model ran on every trial")
    assert results[C.CUDA_SOURCE].detail == (
        "device code only, allowed headers, and every mutation-site rule of the spec")
    assert results[C.NO_FALSE_KILL].detail == (
        "the official Model in float64 agrees with it within bitwise on every trial")
    assert re.fullmatch(r"NVRTC \d+\.\d+ for sm_\d+", results[C.COMPILE].detail), results[C.COMPILE].detail
    assert results[C.SUITES_BUILD].detail == "every trial built; builders called as builder(t, device) (misaligned)"
    for check in [C.REF_MATCHES_OFFICIAL, *KERNEL_CHECKS]:
        assert results[check].detail == f"held in {TRIALS} trials", check

    assert suite_table(report) == {"probe": (2, 2), "misaligned": (8, 8)}
    assert all(s.failures == [] and s.mismatched_elements == 0 for s in report.suites)
    assert report.kb_file == "pad_const_b4.py"
    assert "-ftz=false" in report.compile_options and any(o.startswith("-arch=sm_") for o in report.compile_options)
    # Two runs per trial (one per poison pattern), each with the launch's own block.
    assert len(backend.launches) == 2 * TRIALS
    assert {block for _name, _grid, block in backend.launches} == {(256, 1, 1)}
    assert backend.loaded[0].params[2].size == 8  # n_out is long long, read from the real PTX


def test_faithful_fake_is_admitted_on_special_values_and_wide_pads(real_entry):
    """Random bit patterns in float32 and int32, NaN-payload fills, pads wider than x, an empty axis."""
    full = real_entry.suites
    entry = dataclasses.replace(
        real_entry, suites=lambda: [s for s in full() if s[0] in ("special_values", "wide_pads")])

    report, _backend = gate(entry)

    assert failed(report) == {}
    assert suite_table(report) == {"probe": (2, 2), "special_values": (4, 4), "wide_pads": (7, 7)}


def test_without_the_import_checks_nothing_is_admitted(entry):
    report, _backend = gate(dataclasses.replace(entry, suites=lambda: []), checks_so_far=[])

    assert not report.admitted
    results = checks(report)
    assert results[C.IMPORT_SAFE].status is CheckStatus.NOT_RUN
    assert results[C.REGISTRATION].status is CheckStatus.NOT_RUN
    assert failed(report) == {}


def test_a_failed_import_check_is_kept(entry):
    imported = [CheckResult(C.IMPORT_SAFE, CheckStatus.FAILED, "importing the file did CUDA work"), IMPORTED[1]]

    report, _backend = gate(dataclasses.replace(entry, suites=lambda: []), checks_so_far=imported)

    assert failed(report) == {C.IMPORT_SAFE: "importing the file did CUDA work"}


# ------------------------------------------------------------------ planted kernel faults

# name -> (kernel, the checks that must fail, the start of the named check's detail)
PLANTED = {
    "wrong_value": (fakes.pad_wrong_value, {C.OUTPUT_MATCHES},
                    (C.OUTPUT_MATCHES, f"probe trial 0 (bitwise): {PROBE_IN} of {PROBE_OUT} elements differ; at ")),
    "unwritten": (fakes.pad_unwritten, {C.OUTPUT_FULLY_WRITTEN, C.OUTPUT_MATCHES},
                  (C.OUTPUT_FULLY_WRITTEN, f"probe trial 0: {len(range(3, PROBE_OUT, 7))} of {PROBE_OUT} output "
                                           f"elements never written (first at (0, 0, 0, 3)); ")),
    "out_of_bounds": (fakes.pad_out_of_bounds, {C.WRITES_IN_BOUNDS},
                      (C.WRITES_IN_BOUNDS, "probe trial 0: 64 bytes changed in the guard band after out "
                                           "(nearest 0 bytes from its edge); ")),
    "changes_input": (fakes.pad_changes_input, {C.INPUTS_UNCHANGED, C.OUTPUT_MATCHES},
                      (C.INPUTS_UNCHANGED, f"probe trial 0: input 0 changed by run 1: {PROBE_IN} of {PROBE_IN} "
                                           f"elements differ; at (0, 0, 0, 0): ")),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_fault_is_rejected_by_its_check(entry, name):
    impl, expected_failures, (check, detail_start) = PLANTED[name]

    report, backend = gate(entry, impl)

    assert not report.admitted
    assert set(failed(report)) == expected_failures, report.reasons()
    detail = failed(report)[check]
    assert detail.startswith(detail_start), detail
    # Every trial fails the same way: three are quoted, the other seven counted.
    assert detail.endswith(f"(and {TRIALS - 3} more)"), detail
    assert len(backend.launches) == 2 * TRIALS  # not a fault: every trial still ran
    assert all(passed == 0 for _trials, passed in suite_table(report).values())


def test_fault_words_match_the_gpu_tests(entry):
    """The fragments tests/test_gate_gpu.py asserts on a GPU appear in the same checks here."""
    for impl, check, words in [(fakes.pad_wrong_value, C.OUTPUT_MATCHES, "elements differ"),
                               (fakes.pad_unwritten, C.OUTPUT_FULLY_WRITTEN, "never written"),
                               (fakes.pad_out_of_bounds, C.WRITES_IN_BOUNDS, "guard band after out"),
                               (fakes.pad_changes_input, C.INPUTS_UNCHANGED, "changed by run 1"),
                               (fakes.pad_illegal_address, C.RUNS_TO_COMPLETION, "CUDA_ERROR_ILLEGAL_ADDRESS")]:
        small = dataclasses.replace(entry, suites=lambda: [])
        report, _backend = gate(small, impl)
        assert words in failed(report).get(check, ""), (impl.__name__, report.reasons())


def test_kernel_fault_stops_the_run_and_leaves_later_checks_not_run(entry):
    report, backend = gate(entry, fakes.pad_illegal_address)

    fault = f"probe trial 0: {fakes.ILLEGAL_ADDRESS}"
    assert failed(report) == {C.RUNS_TO_COMPLETION: fault + " (the CUDA context is lost: no further trials run)"}
    results = checks(report)
    for check in [C.LAUNCH_ARGUMENTS, *OUTPUT_CHECKS]:
        assert results[check].status is CheckStatus.NOT_RUN, check
        assert results[check].detail == "not run: " + fault
    assert results[C.SUITES_BUILD].detail == "held in 1 trial"
    assert len(backend.launches) == 1
    assert suite_table(report) == {"probe": (2, 0)}
    assert report.suites[0].failures == ["trial 0: kernel fault"]


def test_kernel_fault_in_a_later_trial_keeps_what_passed_before(entry):
    def faults_on_rank_5(grid, block, args):
        if args[4].rank == 5:  # misaligned trial 4; the probe is ranks 4 and 3
            fakes.pad_illegal_address(grid, block, args)
        fakes.pad_const_b4(grid, block, args)

    report, _backend = gate(entry, faults_on_rank_5)

    assert failed(report) == {C.RUNS_TO_COMPLETION: f"misaligned trial 4: {fakes.ILLEGAL_ADDRESS} "
                                                    f"(the CUDA context is lost: no further trials run)"}
    results = checks(report)
    for check in [C.LAUNCH_ARGUMENTS, *OUTPUT_CHECKS]:
        assert results[check].status is CheckStatus.PASSED and results[check].detail == "held in 6 trials"
    assert suite_table(report) == {"probe": (2, 2), "misaligned": (8, 4)}
    assert report.suites[1].failures == ["trial 4: kernel fault"]


def test_a_grid_too_small_leaves_output_unwritten(entry):
    """The fake honours the grid: one block of 256 threads writes only the first 256 elements."""
    report, _backend = gate(with_launch(entry, lambda i, out, grid, block, args: (out, (1, 1, 1), block, args)))

    assert set(failed(report)) == {C.OUTPUT_FULLY_WRITTEN, C.OUTPUT_MATCHES}
    # 256 = 6 rows of 40, then 16: the first element no thread reached.
    assert failed(report)[C.OUTPUT_FULLY_WRITTEN].startswith(
        f"probe trial 0: {PROBE_OUT - 256} of {PROBE_OUT} output elements never written (first at (0, 0, 6, 16))")


# ------------------------------------------------------------------ launches that do not fit the kernel


def _narrowed_n_out(inputs, out, grid, block, args):
    args[2] = (ctypes.c_int, args[2][1])  # the kernel takes long long n_out
    return out, grid, block, args


def _dangling_pointer(inputs, out, grid, block, args):
    scratch = inputs[0].clone()  # freed when launch returns
    args[0] = (ctypes.c_void_p, scratch.data_ptr())
    return out, grid, block, args


def _out_aliases_input(inputs, out, grid, block, args):
    x = inputs[0]
    args[1] = (ctypes.c_void_p, x.data_ptr())
    return x, grid, block, args


def _no_pointer_to_out(inputs, out, grid, block, args):
    args[1] = (ctypes.c_void_p, inputs[0].data_ptr())
    return out, grid, block, args


def _raises(inputs, out, grid, block, args):
    raise ValueError("pads must be small today")


# name -> (change to the real launch, the start of launch_arguments' detail, as a regular expression)
LAUNCH_FAULTS = {
    "narrowed_n_out": (_narrowed_n_out, re.escape(
        "probe trial 0: argument 2: launch passes c_int (integer, 4 bytes) but kernel parameter 2 is an integer of 8 bytes; "
        "probe trial 1: argument 2: launch passes c_int (integer, 4 bytes) but kernel parameter 2 is an integer of 8 bytes; ")),
    "dangling_pointer": (_dangling_pointer, r"probe trial 0: argument 0 \(0x[0-9a-f]+\) points to neither an input "
                                            r"nor out; memory made inside launch is freed when launch returns; "),
    "out_aliases_input": (_out_aliases_input, re.escape(
        "probe trial 0: launch's out shares memory with input 0: it must be a fresh tensor; ")),
    "no_pointer_to_out": (_no_pointer_to_out, re.escape(
        "probe trial 0: no pointer argument points to out, so the kernel cannot write the output; ")),
    "block_2048_wide": (lambda i, out, grid, block, args: (out, grid, (2048, 1, 1), args), re.escape(
        "probe trial 0: block (2048, 1, 1): dimension 0 is 2048, outside [1, 1024]; ")),
    "block_2048_threads": (lambda i, out, grid, block, args: (out, grid, (32, 64, 1), args), re.escape(
        "probe trial 0: block (32, 64, 1) has 2048 threads, more than 1024; ")),
    "grid_with_zero": (lambda i, out, grid, block, args: (out, (grid[0], 0, 1), block, args), re.escape(
        "probe trial 0: grid (179, 0, 1): dimension 1 is 0, outside [1, 65535]; ")),
    "grid_of_floats": (lambda i, out, grid, block, args: (out, (float(grid[0]), 1, 1), block, args), re.escape(
        "probe trial 0: grid (179.0, 1, 1) is not a tuple of 3 ints; ")),
    "missing_argument": (lambda i, out, grid, block, args: (out, grid, block, args[:4]), re.escape(
        "probe trial 0: launch passes 4 arguments but the kernel takes 5; ")),
    "three_values": (lambda i, out, grid, block, args: (out, grid, block), re.escape(
        "probe trial 0: launch returned tuple, not (out, grid, block, args); ")),
    "launch_raises": (_raises, re.escape("probe trial 0: launch raised ValueError: pads must be small today; ")),
}


@pytest.mark.parametrize("name", sorted(LAUNCH_FAULTS))
def test_launch_that_does_not_fit_fails_launch_arguments(entry, name):
    change, detail_start = LAUNCH_FAULTS[name]

    report, backend = gate(with_launch(entry, change))

    assert not report.admitted
    assert set(failed(report)) == {C.LAUNCH_ARGUMENTS}, report.reasons()
    detail = failed(report)[C.LAUNCH_ARGUMENTS]
    assert re.match(detail_start, detail), detail
    assert detail.endswith(f"(and {TRIALS - 3} more)"), detail
    assert backend.launches == [], "a launch that does not fit must never reach the kernel"
    results = checks(report)
    for check in OUTPUT_CHECKS:
        assert results[check].status is CheckStatus.NOT_RUN
        assert results[check].detail == "not run: no trial reached it"
    assert all(f.endswith("launch arguments do not fit the kernel") or f.endswith("launch raised")
               for s in report.suites for f in s.failures)


def test_narrowed_argument_message_is_exactly_the_gpu_one(entry):
    """The same words tests/test_gate_gpu.py expects from broken_wrong_arguments on a GPU."""
    report, _backend = gate(with_launch(entry, _narrowed_n_out))

    assert ("argument 2: launch passes c_int (integer, 4 bytes) but kernel parameter 2 is an integer of 8 bytes"
            in failed(report)[C.LAUNCH_ARGUMENTS])


# ------------------------------------------------------------------ inputs, references, compile


def test_builder_that_raises_fails_suites_build(entry):
    full = entry.suites

    def exploding(t, device):
        raise OSError(f"no inputs for trial {t}")

    report, _backend = gate(dataclasses.replace(entry, suites=lambda: [*full(), ("exploding", 2, exploding)]))

    assert failed(report) == {C.SUITES_BUILD: "exploding trial 0: building inputs raised OSError: no inputs for trial 0; "
                                              "exploding trial 1: building inputs raised OSError: no inputs for trial 1"}
    assert suite_table(report)["exploding"] == (2, 0)
    assert report.suites[-1].failures == ["trial 0: inputs could not be built", "trial 1: inputs could not be built"]
    assert checks(report)[C.OUTPUT_MATCHES].detail == f"held in {TRIALS} trials"  # the other trials still ran


def test_suites_that_raise_fail_suites_build_and_the_probe_still_runs(entry):
    report, _backend = gate(dataclasses.replace(entry, suites=lambda: 1 / 0))

    assert failed(report) == {C.SUITES_BUILD: "suites() raised ZeroDivisionError: division by zero"}
    assert suite_table(report) == {"probe": (2, 2)}


def test_probe_that_raises_fails_suites_build(entry):
    def probe(torch):
        raise KeyError("dtype")

    report, _backend = gate(dataclasses.replace(entry, probe=probe))

    assert failed(report) == {C.SUITES_BUILD: "probe(torch) raised KeyError: 'dtype'"}
    assert suite_table(report) == {"misaligned": (8, 8)}


def test_ref_that_disagrees_fails_ref_matches_official(entry):
    good_ref = entry.ref

    def flipped_ref(x, pads, value):
        out = good_ref(x, pads, value)
        flat = out.reshape(-1)
        flat[0:1] = (flat[0:1].view(torch.int32) ^ 1).view(out.dtype)
        return out

    report, _backend = gate(dataclasses.replace(entry, ref=flipped_ref))

    assert set(failed(report)) == {C.REF_MATCHES_OFFICIAL}
    detail = failed(report)[C.REF_MATCHES_OFFICIAL]
    assert detail.startswith(f"probe trial 0: 1 of {PROBE_OUT} elements differ; at (0, 0, 0, 0): got "), detail
    assert detail.endswith(f"(and {TRIALS - 3} more)")
    assert all(passed == 0 for _trials, passed in suite_table(report).values())


def test_ref_that_raises_fails_ref_matches_official(entry):
    def ref(x, pads, value):
        raise TypeError("ref takes no pads")

    report, _backend = gate(dataclasses.replace(entry, ref=ref))

    assert set(failed(report)) == {C.REF_MATCHES_OFFICIAL}
    assert failed(report)[C.REF_MATCHES_OFFICIAL].startswith(
        "probe trial 0: ref raised TypeError: ref takes no pads; probe trial 1: ref raised TypeError")


def test_syntax_error_fails_compile_and_quotes_the_source_line(entry):
    broken = entry.cuda.replace("rest = rest / g.out_shape[d];", "rest = rest / g.out_shap[d];")
    assert broken != entry.cuda

    report, backend = gate(dataclasses.replace(entry, cuda=broken))

    assert set(failed(report)) == {C.COMPILE}
    detail = failed(report)[C.COMPILE]
    line = broken.splitlines().index("        rest = rest / g.out_shap[d];") + 1
    assert re.match(rf"pad_const_b4\.cu:{line}: error: .*out_shap", detail), detail
    assert f"\n    {line:4d} |         rest = rest / g.out_shap[d];" in detail
    results = checks(report)
    # Everything that does not need the kernel still runs, so every other broken rule is found too.
    for check in [C.OFFICIAL_REFERENCE, C.SUITES_BUILD, C.REF_MATCHES_OFFICIAL, C.NO_FALSE_KILL]:
        assert results[check].status is CheckStatus.PASSED, check
    for check in KERNEL_CHECKS:
        assert results[check].status is CheckStatus.NOT_RUN
        assert results[check].detail == "not run: the kernel did not compile"
    assert backend.launches == [] and suite_table(report) == {"probe": (2, 0), "misaligned": (8, 0)}


def test_compile_error_names_the_line_of_the_candidate_file(entry):
    """An error on a line that stands once in candidate_pad_const.py names that file and line too."""
    broken = entry.cuda.replace("long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;", "")
    py_line = PAD_FILE.read_text().splitlines().index("    if (o >= n_out) return;") + 1
    cu_line = broken.splitlines().index("    if (o >= n_out) return;") + 1

    report, _backend = gate(dataclasses.replace(entry, cuda=broken))

    detail = failed(report)[C.COMPILE]
    assert detail.startswith(f"pad_const_b4.cu:{cu_line} (candidate_pad_const.py:{py_line}): error: "), detail
    assert '"o"' in detail and f"{cu_line:4d} |     if (o >= n_out) return;" in detail


def test_kernel_that_cannot_be_loaded_fails_compile(entry):
    class UnloadableBackend(fakes.FakeBackend):
        def load(self, source, kernel_name, program_name, locate=None, compiled=None):
            super().load(source, kernel_name, program_name, locate)
            raise KernelFault("cuModuleLoadData: CUDA error 218 CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed")

    report, _backend = gate(entry, backend=UnloadableBackend(kernels={"pad_const_b4": fakes.pad_const_b4}))

    assert failed(report) == {C.COMPILE: "loading the compiled kernel failed: cuModuleLoadData: CUDA error 218 "
                                         "CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed"}


def test_missing_kb_file_fails_official_reference_and_nothing_else_runs(entry):
    report, backend = gate(dataclasses.replace(entry, kb_file="pad_const_b3.py"))

    assert not report.admitted
    detail = failed(report)[C.OFFICIAL_REFERENCE]
    assert set(failed(report)) == {C.OFFICIAL_REFERENCE}
    assert detail == (f"kb_file 'pad_const_b3.py': no such problem file (looked in {PROBLEMS_DIR / 'pad_const_b3.py'}); "
                      f"for a KernelBench problem, point the gate at a checkout with --kb-root DIR or $KERNELBENCH_ROOT")
    results = checks(report)
    for check in [C.COMPILE, C.SUITES_BUILD]:  # neither needs the reference
        assert results[check].status is CheckStatus.PASSED
    for check in [C.REF_MATCHES_OFFICIAL, C.NO_FALSE_KILL, *KERNEL_CHECKS]:
        assert results[check].status is CheckStatus.NOT_RUN
        assert results[check].detail == "not run: the official reference did not load"
    assert backend.launches == []


def test_problem_file_without_model_fails_official_reference(entry, tmp_path):
    (tmp_path / "pad_const_b4.py").write_text("def get_inputs():\n    return []\n")

    report, _backend = gate(entry, search=ProblemSearch((tmp_path,)))

    assert failed(report) == {C.OFFICIAL_REFERENCE: f"{tmp_path / 'pad_const_b4.py'}: not a KernelBench problem, "
                                                    f"it lacks Model, get_init_inputs"}


def test_official_model_that_raises_fails_official_reference(entry, tmp_path):
    (tmp_path / "pad_const_b4.py").write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x, pads, value):\n"
        "        raise ArithmeticError('the official pad overflowed')\n"
        "def get_inputs():\n"
        "    return [torch.zeros(2, 8, 32, 32), torch.zeros(4, 2, dtype=torch.int64), torch.tensor(0.0)]\n"
        "def get_init_inputs():\n    return []\n")

    report, backend = gate(entry, search=ProblemSearch((tmp_path,)))

    assert set(failed(report)) == {C.OFFICIAL_REFERENCE}
    assert failed(report)[C.OFFICIAL_REFERENCE].startswith(
        "probe trial 0: the official Model raised ArithmeticError: the official pad overflowed; probe trial 1: ")
    assert backend.launches == []  # nothing to compare the kernel with, so it never runs


# ------------------------------------------------------------------ CheckBook


def test_checkbook_lists_results_in_check_order_whatever_the_order_recorded():
    book = CheckBook()
    for check in reversed(PIPELINE_CHECKS):
        book.ran(check)

    assert [r.check for r in book.results()] == list(PIPELINE_CHECKS)


def test_checkbook_failure_detail_shows_three_and_counts_the_rest():
    book = CheckBook()
    for i in range(5):
        book.fail(C.OUTPUT_MATCHES, f"trial {i}")
    for i in range(3):
        book.fail(C.WRITES_IN_BOUNDS, f"trial {i}")
    book.fail(C.INPUTS_UNCHANGED, "trial 0")

    results = {r.check: r for r in book.results()}
    assert results[C.OUTPUT_MATCHES].detail == "trial 0; trial 1; trial 2 (and 2 more)"
    assert results[C.WRITES_IN_BOUNDS].detail == "trial 0; trial 1; trial 2"
    assert results[C.INPUTS_UNCHANGED].detail == "trial 0"
    assert all(results[c].status is CheckStatus.FAILED for c in (C.OUTPUT_MATCHES, C.WRITES_IN_BOUNDS))


def test_checkbook_one_failure_outweighs_passes_and_skip_changes_nothing_recorded():
    book = CheckBook()
    book.ran(C.OUTPUT_MATCHES)
    book.fail(C.OUTPUT_MATCHES, "probe trial 1: 1 of 8 elements differ")
    book.ran(C.OUTPUT_MATCHES)
    book.ran(C.COMPILE, "NVRTC 13.0 for sm_90")
    book.ran(C.COMPILE)
    book.ran(C.SUITES_BUILD)
    book.ran(C.LAUNCH_ARGUMENTS)
    book.ran(C.LAUNCH_ARGUMENTS)
    book.skip(C.INPUTS_UNCHANGED, "not run: first reason")
    book.skip(C.INPUTS_UNCHANGED, "not run: second reason")
    for check in CheckName:
        book.skip(check, "not run: a fault")

    results = {r.check: (r.status, r.detail) for r in book.results()}
    assert results[C.OUTPUT_MATCHES] == (CheckStatus.FAILED, "probe trial 1: 1 of 8 elements differ")
    assert results[C.COMPILE] == (CheckStatus.PASSED, "NVRTC 13.0 for sm_90")  # a note outlives later passes
    assert results[C.SUITES_BUILD] == (CheckStatus.PASSED, "held in 1 trial")
    assert results[C.LAUNCH_ARGUMENTS] == (CheckStatus.PASSED, "held in 2 trials")
    assert results[C.INPUTS_UNCHANGED] == (CheckStatus.NOT_RUN, "not run: first reason")  # the first reason stays
    assert results[C.WRITES_IN_BOUNDS] == (CheckStatus.NOT_RUN, "not run: a fault")


def test_checkbook_with_nothing_recorded_says_not_reached():
    results = CheckBook().results()

    assert [(r.status, r.detail) for r in results] == [(CheckStatus.NOT_RUN, "not reached")] * len(PIPELINE_CHECKS)


# ------------------------------------------------------------------ bugs found by these tests, now fixed


def test_launch_raising_runtime_error_fails_launch_arguments(entry):
    def launch(inputs, torch):
        raise RuntimeError("shape '[-1, 7]' is invalid for input of size 9")  # what torch raises on a bad view

    report, _backend = gate(dataclasses.replace(entry, launch=launch))

    assert set(failed(report)) == {C.LAUNCH_ARGUMENTS}
    assert failed(report)[C.LAUNCH_ARGUMENTS].startswith(
        "probe trial 0: launch raised RuntimeError: shape '[-1, 7]' is invalid for input of size 9; ")


def test_malformed_suites_list_fails_suites_build(entry):
    report, _backend = gate(dataclasses.replace(entry, suites=lambda: [("misaligned", 8)]))

    assert C.SUITES_BUILD in failed(report)


def test_runs_to_completion_is_not_claimed_when_the_kernel_never_ran(entry):
    report, backend = gate(with_launch(entry, _narrowed_n_out))

    assert backend.launches == []
    assert checks(report)[C.RUNS_TO_COMPLETION].status is CheckStatus.NOT_RUN, checks(report)[C.RUNS_TO_COMPLETION]


def test_fault_that_keeps_the_context_does_not_stop_the_run(entry):
    report, _backend = gate(entry, fakes.pad_launch_failure)

    detail = failed(report)[C.RUNS_TO_COMPLETION]
    assert "context is lost" not in detail, detail
    assert suite_table(report) == {"probe": (2, 0), "misaligned": (8, 0)}


def test_a_not_run_import_check_is_not_turned_into_a_pass(entry):
    imported = [CheckResult(C.IMPORT_SAFE, CheckStatus.NOT_RUN, "not run: the worker stopped"), IMPORTED[1]]

    report, _backend = gate(dataclasses.replace(entry, suites=lambda: []), checks_so_far=imported)

    assert checks(report)[C.IMPORT_SAFE].status is CheckStatus.NOT_RUN
    assert not report.admitted


def test_out_of_memory_is_a_limit_of_the_machine_under_its_own_check(entry, monkeypatch):
    from harness.gate import pipeline

    real = pipeline.GuardedTensor.copy_of
    calls = []

    def copy_of(source, device, guard_byte=None):
        calls.append(1)
        if len(calls) == 1:  # probe trial 0
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total "
                                         "capacity of 139.80 GiB of which 2.10 GiB is free.")
        return real(source, device, guard_byte)

    monkeypatch.setattr(pipeline.GuardedTensor, "copy_of", staticmethod(copy_of))
    report, _backend = gate(entry)

    assert failed(report) == {C.FITS_DEVICE_MEMORY: (
        "probe trial 0: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of "
        "139.80 GiB of which 2.10 GiB is free. (a limit of this machine, not a fault of the kernel)")}
    assert suite_table(report) == {"probe": (2, 1), "misaligned": (8, 8)}  # the other trials still ran
    assert report.suites[0].failures == ["trial 0: out of device memory"]


OOM_WORDS = "CUDA out of memory. Tried to allocate 2.00 GiB."
# A CUDA call's own (a library's workspace, a context), not torch's allocator's: a RuntimeError naming CUDA, which the
# gate took for a broken context, or for the Model's or the candidate's failure.
CUDA_OOM_WORDS = "CUDA error: out of memory"
OOM_ERRORS = [(torch.OutOfMemoryError, OOM_WORDS), (RuntimeError, CUDA_OOM_WORDS)]


def _raises_out_of_memory_once(function, kind=torch.OutOfMemoryError, words=OOM_WORDS):
    """`function`, raising `kind(words)` on its first call (beside other jobs, the memory was held)."""
    calls = []

    def once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise kind(words + "\nmore words")
        return function(*args, **kwargs)

    return once


@pytest.mark.parametrize("kind, words", OOM_ERRORS)
@pytest.mark.parametrize("where", ["the official Model", "ref", "launch"])
def test_out_of_memory_in_the_models_ref_or_launch_is_the_machines_limit_not_a_fault(entry, tmp_path, where, kind,
                                                                                      words):
    """Beside other jobs the device's memory can run out anywhere in a trial: the official Model, the candidate's
    ref and launch's out included. Each is the machine's limit (the command then gates the candidate again alone),
    never a verdict on the Model, the ref or launch (kb_conv1d, gated with 18 others on an H100, was rejected by
    `official_reference: ... the official Model raised OutOfMemoryError`)."""
    search = None
    if where == "the official Model":
        (tmp_path / "pad_const_b4.py").write_text(
            "import torch\n"
            "import torch.nn.functional as F\n"
            "CALLS = []\n"
            "class Model(torch.nn.Module):\n"
            "    def forward(self, x, pads, value):\n"
            "        CALLS.append(1)\n"
            "        if len(CALLS) == 1:\n"
            f"            raise {'torch.OutOfMemoryError' if kind is torch.OutOfMemoryError else 'RuntimeError'}"
            f"({words!r})\n"
            "        return F.pad(x, [int(p) for p in pads.flip(0).flatten()], value=float(value))\n"
            "def get_inputs():\n"
            "    return [torch.zeros(2, 8, 32, 32), torch.zeros(4, 2, dtype=torch.int64), torch.tensor(0.0)]\n"
            "def get_init_inputs():\n    return []\n")
        search = ProblemSearch((tmp_path,))
        changed = entry
    elif where == "ref":
        changed = dataclasses.replace(entry, ref=_raises_out_of_memory_once(entry.ref, kind, words))
    else:
        changed = dataclasses.replace(entry, launch=_raises_out_of_memory_once(entry.launch, kind, words))

    report, _backend = gate(changed, search=search)

    assert failed(report) == {C.FITS_DEVICE_MEMORY: f"probe trial 0: {words} (a limit of this machine, not a "
                                                    f"fault of the kernel)"}
    assert report.suites[0].failures == ["trial 0: out of device memory"]
    assert suite_table(report) == {"probe": (2, 1), "misaligned": (8, 8)}  # the other trials still ran


@pytest.mark.parametrize("kind, words", OOM_ERRORS)
def test_a_builder_out_of_device_memory_is_the_machines_limit_not_a_suite_that_cannot_be_built(entry, kind, words):
    import functools

    ((name, n_trials, builder),) = entry.suites()
    raising = _raises_out_of_memory_once(builder, kind, words)
    report, _backend = gate(dataclasses.replace(entry, suites=lambda: [
        (name, n_trials, functools.wraps(builder)(lambda *args: raising(*args)))]))

    assert failed(report) == {C.FITS_DEVICE_MEMORY: f"misaligned trial 0 (building its inputs): {words} (a "
                                                    f"limit of this machine, not a fault of the kernel)"}
    assert checks(report)[C.SUITES_BUILD].status is CheckStatus.PASSED
    assert suite_table(report) == {"probe": (2, 2), "misaligned": (8, 7)}  # the other trials still ran


@pytest.mark.parametrize("kind, words", OOM_ERRORS)
def test_an_official_model_whose_weights_do_not_fit_is_the_machines_limit(entry, tmp_path, kind, words):
    raised = "torch.OutOfMemoryError" if kind is torch.OutOfMemoryError else "RuntimeError"
    (tmp_path / "pad_const_b4.py").write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        raise {raised}({words!r} + '\\nmore words')\n"
        "def get_inputs():\n    return []\n"
        "def get_init_inputs():\n    return []\n")

    report, _backend = gate(entry, search=ProblemSearch((tmp_path,)))

    assert failed(report) == {C.FITS_DEVICE_MEMORY: f"building the official Model: {words} (a limit of this "
                                                    f"machine, not a fault of the kernel)"}
    assert checks(report)[C.OFFICIAL_REFERENCE].status is CheckStatus.NOT_RUN


def test_one_run_launches_the_kernel_once_and_skips_only_the_unwritten_check(entry):
    """run_kernel(runs=1), a campaign's run of its admitted unmutated source: one launch, no unwritten check."""
    from harness.gate.pipeline import run_kernel

    (_name, _n, builder), = entry.suites()
    inputs = builder(0, torch.device("cpu"))
    expected = entry.ref(*inputs)
    for impl, runs, launches, unwritten, matches in [(fakes.pad_const_b4, 1, 1, 0, True),
                                                     (fakes.pad_const_b4, 2, 2, 0, True),
                                                     (fakes.pad_unwritten, 2, 2, None, False),
                                                     (fakes.pad_unwritten, 1, 1, 0, False)]:
        backend = fakes.FakeBackend(kernels={"pad_const_b4": impl})
        kernel = backend.load(entry.cuda, entry.kernel_name, "pad_const_b4.cu")
        run = run_kernel(entry, kernel, backend, inputs, expected, runs=runs)
        assert len(backend.launches) == launches and len(run.comparisons) == runs
        assert (run.unwritten > 0) if unwritten is None else run.unwritten == unwritten
        assert all(c.ok for c in run.comparisons) is matches
    with pytest.raises(ValueError, match="runs must be 1 or 2, got 3"):
        run_kernel(entry, kernel, backend, inputs, expected, runs=3)


def _pad_skips_fill(grid, block, args) -> None:
    """Planted fault: only elements inside the input are written (`if (!inside) return;`), the fill never."""
    call = fakes.PadCall(grid, block, args)
    o = call.threads()
    values, inside, _src = call.compute()
    o = o[inside[o]]
    call.output()[o] = values[o]


# Fill values: 0.0, and poison pattern one's own bits (0xA5A5A5A5 as an int32).
ZERO_FILL, PATTERN_ONE_FILL = 0, 0xA5A5A5A5 - (1 << 32)


@pytest.mark.parametrize("exact, fill, comparisons_ok", [(True, ZERO_FILL, [False, False]),
                                                         (False, ZERO_FILL, [True, False]),
                                                         (True, PATTERN_ONE_FILL, [True, False])])
def test_a_reference_known_to_hold_no_poison_finds_the_same_unwritten_output(entry, exact, fill, comparisons_ok):
    """expected_poison (a campaign's trials) spares the search for poison only where the output matched bit for bit
    and the reference holds none of the run's pattern; the kernel here never writes the fill.

    A fill of 0.0 under a tolerance: poison pattern one read as a float32 is -2.9e-16, within atol of 0.0, so run
    one's output matches and only its poison search finds the fill unwritten (run two's pattern, 1.5e16, fails the
    comparison). Bitwise, run one's output fails the comparison itself. A fill of pattern one's bits: run one's
    output matches bit for bit, and the reference is known to hold pattern one, so the search is made.
    """
    from harness.gate.checks.guards import POISON_BYTES, poison_held
    from harness.gate.pipeline import run_kernel
    from harness.gate.checks.tolerance import Tolerance

    tolerance = Tolerance(exact=True) if exact else Tolerance(exact=False, atol=1e-2, rtol=1e-2)
    judged = dataclasses.replace(entry, tolerance=tolerance)
    x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0))
    value = torch.tensor(fill, dtype=torch.int32).view(torch.float32)
    inputs = [x, torch.tensor([[1, 0], [0, 2], [2, 1]], dtype=torch.int64), value]
    expected = entry.ref(*inputs)
    fill_elements = expected.numel() - x.numel()
    known = tuple(bool(poison_held(expected, pattern)) for pattern in POISON_BYTES)
    assert known == (fill == PATTERN_ONE_FILL, False)
    backend = fakes.FakeBackend(kernels={"pad_const_b4": _pad_skips_fill})
    kernel = backend.load(entry.cuda, entry.kernel_name, "pad_const_b4.cu")
    for expected_poison in (None, known):
        run = run_kernel(judged, kernel, backend, inputs, expected, expected_poison=expected_poison)
        assert [c.ok for c in run.comparisons] == comparisons_ok
        assert run.unwritten == fill_elements and run.first_unwritten == (0, 0, 0)
    faithful = fakes.FakeBackend(kernels={"pad_const_b4": fakes.pad_const_b4})
    run = run_kernel(judged, faithful.load(entry.cuda, entry.kernel_name, "pad_const_b4.cu"), faithful, inputs,
                     expected, expected_poison=known)
    assert all(c.ok for c in run.comparisons) and run.unwritten == 0


def test_guarded_buffers_reused_after_writes_past_out_judge_the_next_kernel_afresh(entry):
    """A campaign keeps its guarded output and input copies (GuardedBuffers) from run to run: the bands one kernel
    wrote are the guard byte again for the next, and an unwritten element is not hidden by what the last run left."""
    from harness.gate.checks.guards import INPUT_GUARD_BYTES, GuardedBuffers
    from harness.gate.pipeline import run_kernel

    (_name, _n, builder), = entry.suites()
    inputs = builder(0, torch.device("cpu"))
    expected = entry.ref(*inputs)
    buffers = GuardedBuffers()

    def run(impl):
        backend = fakes.FakeBackend(kernels={"pad_const_b4": impl})
        return run_kernel(entry, backend.load(entry.cuda, entry.kernel_name, "pad_const_b4.cu"), backend, inputs,
                          expected, buffers=buffers)

    overrun = run(fakes.pad_out_of_bounds)
    assert overrun.guard_damage == [f"{fakes.OVERRUN_ELEMENTS * 4} bytes changed in the guard band after out "
                                    f"(nearest 0 bytes from its edge)"]
    out = buffers.take("out", expected.shape, expected.dtype, "cpu")
    x = buffers.take(("input", 0), inputs[0].shape, inputs[0].dtype, "cpu", INPUT_GUARD_BYTES[0])
    faithful = run(fakes.pad_const_b4)
    assert buffers.take("out", expected.shape, expected.dtype, "cpu") is out  # the same buffers, judged afresh
    assert buffers.take(("input", 0), inputs[0].shape, inputs[0].dtype, "cpu", INPUT_GUARD_BYTES[0]) is x
    assert faithful.guard_damage == [] and all(c.ok for c in faithful.comparisons) and faithful.unwritten == 0
    unwritten = run(fakes.pad_unwritten)
    assert unwritten.unwritten == (expected.numel() + 3) // 7 and not unwritten.comparisons[0].ok
    assert buffers.take("out", (2, 3), torch.float32, "cpu") is not out  # another shape: a new buffer


def _pad_writes_before_its_input(grid, block, args) -> None:
    """Planted fault: out written faithfully, and the 4 elements before the input (its guard band) zeroed."""
    fakes.pad_const_b4(grid, block, args)
    call = fakes.PadCall(grid, block, args)
    fakes.memory(call.in_address - 4 * fakes.ELEMENT_BYTES, 4)[:] = 0


@pytest.mark.parametrize("impl", [fakes.pad_const_b4, fakes.pad_wrong_value, fakes.pad_unwritten, _pad_skips_fill,
                                  fakes.pad_out_of_bounds, fakes.pad_changes_input, _pad_writes_before_its_input],
                         ids=lambda impl: impl.__name__.lstrip("_"))
@pytest.mark.parametrize("exact", [True, False], ids=["bitwise", "tolerance"])
def test_the_signals_read_in_one_transfer_find_what_the_separate_reads_find(entry, monkeypatch, impl, exact):
    """On a GPU a small output's comparison is read with the guards' signals, and the inputs' guard bands with the
    last run's (pipeline.reads_wait); here the host's memory is made to take that path: every finding is the same,
    for each planted fault, bit for bit and under a tolerance, with and without the reference's poison known."""
    from harness.gate import pipeline
    from harness.gate.checks.guards import POISON_BYTES, poison_held
    from harness.gate.checks.tolerance import Tolerance

    judged = dataclasses.replace(entry, tolerance=Tolerance(exact=True) if exact
                                 else Tolerance(exact=False, atol=1e-2, rtol=1e-2))
    x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0))
    inputs = [x, torch.tensor([[1, 0], [0, 2], [2, 1]], dtype=torch.int64), torch.tensor(0.5)]
    expected = entry.ref(*inputs)
    known = tuple(bool(poison_held(expected, pattern)) for pattern in POISON_BYTES)
    runs = {}
    # Gathered, also with each run's mismatch described in its one read (describe_ahead: a --matrix cell's).
    for gathered, ahead in ((False, False), (True, False), (True, True)):
        monkeypatch.setattr(pipeline, "reads_wait", lambda device, gathered=gathered: gathered)
        for expected_poison in (None, known):
            for n in (1, 2):
                backend = fakes.FakeBackend(kernels={"pad_const_b4": impl})
                kernel = backend.load(entry.cuda, entry.kernel_name, "pad_const_b4.cu")
                runs[gathered, ahead, expected_poison, n] = pipeline.run_kernel(
                    judged, kernel, backend, [i.clone() for i in inputs], expected, expected_poison=expected_poison,
                    runs=n, describe_ahead=ahead)
    for expected_poison in (None, known):
        for n in (1, 2):
            assert runs[True, False, expected_poison, n] == runs[False, False, expected_poison, n]
            assert runs[True, True, expected_poison, n] == runs[False, False, expected_poison, n]
    found = runs[True, True, None, 2]
    # A flipped lowest bit is within the tolerance.
    harmless = impl is fakes.pad_const_b4 or (impl is fakes.pad_wrong_value and not exact)
    assert bool(found.guard_damage or found.changed_inputs or found.unwritten
                or not all(c.ok for c in found.comparisons)) is not harmless
    if impl is _pad_writes_before_its_input:
        assert found.guard_damage == ["16 bytes changed in the guard band before input 0 (nearest 0 bytes from its "
                                      "edge)"]


@pytest.mark.parametrize("gathered", [False, True], ids=["separate reads", "one transfer"])
def test_signals_read_beside_the_last_run_are_made_after_it_and_read_with_it(entry, monkeypatch, gathered):
    # A --matrix cell reads its trial's checksum this way: after both runs, where their stray writes would show.
    from harness.gate import pipeline

    monkeypatch.setattr(pipeline, "reads_wait", lambda device: gathered)
    launches = []

    def counted(grid, block, args):
        launches.append(1)
        fakes.pad_const_b4(grid, block, args)

    x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0))
    inputs = [x, torch.tensor([[1, 0], [0, 2], [2, 1]], dtype=torch.int64), torch.tensor(0.5)]
    backend = fakes.FakeBackend(kernels={"pad_const_b4": counted})
    kernel = backend.load(entry.cuda, entry.kernel_name, "pad_const_b4.cu")
    run = pipeline.run_kernel(entry, kernel, backend, inputs, entry.ref(*inputs),
                              read_beside=lambda: [torch.tensor([len(launches)]), torch.tensor([7, 8])])
    assert run.beside == [[2], [7, 8]]
    assert pipeline.run_kernel(entry, kernel, backend, inputs, entry.ref(*inputs)).beside is None


@pytest.mark.parametrize("impl, launches", [
    (fakes.pad_const_b4, 2), (fakes.pad_unwritten, 2), (fakes.pad_changes_input, 2), (fakes.pad_wrong_value, 1),
    (fakes.pad_out_of_bounds, 1), (_pad_writes_before_its_input, 1)], ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("gathered", [False, True], ids=["separate reads", "one transfer"])
def test_a_second_run_is_made_only_where_it_could_change_the_first_failure(entry, monkeypatch, impl, launches,
                                                                            gathered):
    # A --matrix cell wants the first failure only: a wrong value with nothing left unwritten, or a guard band written
    # (an input's too, read with run one here), is decided by run one; a pass, an unwritten element (both patterns
    # needed) and a changed input (run two starts from it) take both runs.
    from harness.engine.worker import first_failure
    from harness.gate import pipeline

    monkeypatch.setattr(pipeline, "reads_wait", lambda device: gathered)
    made = []

    def counted(grid, block, args):
        made.append(1)
        impl(grid, block, args)

    x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0))
    inputs = [x, torch.tensor([[1, 0], [0, 2], [2, 1]], dtype=torch.int64), torch.tensor(0.5)]
    expected = entry.ref(*inputs)
    backend = fakes.FakeBackend(kernels={"pad_const_b4": counted})
    kernel = backend.load(entry.cuda, entry.kernel_name, "pad_const_b4.cu")
    both = pipeline.run_kernel(entry, kernel, backend, [i.clone() for i in inputs], expected)
    made.clear()
    decided = pipeline.run_kernel(entry, kernel, backend, [i.clone() for i in inputs], expected,
                                  stop_when_decided=True, read_beside=lambda: [torch.tensor([len(made)])])
    assert len(made) == launches and decided.beside == [[launches]]
    assert first_failure(decided, expected, entry) == first_failure(both, expected, entry)
    assert bool(first_failure(decided, expected, entry)) is (impl is not fakes.pad_const_b4)


@pytest.mark.parametrize("got, expected, tolerance", [
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]), "exact"),
    (torch.tensor([1.0, -0.0]), torch.tensor([1.0, 0.0]), "exact"),
    (torch.tensor([1, 2, 3], dtype=torch.int16), torch.tensor([1, 2, 4], dtype=torch.int16), "close"),
    (torch.tensor([1.0, 2.001]), torch.tensor([1.0, 2.0]), "close"),
    (torch.tensor([1.0, 2.5]), torch.tensor([1.0, 2.0]), "close"),
    (torch.tensor([float("nan"), 1.0]), torch.tensor([float("nan"), 1.0]), "close"),
    (torch.tensor([float("inf"), 1.0]), torch.tensor([float("inf"), 1.0]), "close"),
    (torch.tensor([3.0e38, -3.0e38]), torch.tensor([-3.0e38, 3.0e38]), "close"),
    (torch.tensor([2.0]), torch.tensor(2.0), "close"),
    (torch.tensor([2.0, 1.0]), torch.tensor([2.0, 1.0], dtype=torch.float64), "close"),
    (torch.zeros(0), torch.zeros(0), "close"),
], ids=["equal", "negative-zero", "int-mismatch", "within", "beyond", "nan", "inf", "overflowing-difference",
        "scalar-shapes", "dtype", "empty"])
def test_a_comparison_read_later_is_the_comparison_compare_makes(got, expected, tolerance):
    """compare_later's verdict, or None (compare() then), is compare()'s Comparison whenever it gives one."""
    from harness.gate.checks.compare import compare, compare_later
    from harness.gate.checks.tolerance import Tolerance

    rule = Tolerance(exact=True) if tolerance == "exact" else Tolerance(exact=False, atol=1e-2, rtol=1e-2)
    pending = compare_later(got, expected, rule)
    made = compare(got, expected, rule)
    if pending is None:  # a structure problem or an empty output
        assert made.problem or not expected.numel()
        return
    finished = pending.finish(pending.signals.tolist())
    assert finished is None or finished == made
    if not made.ok:
        assert finished is None  # a mismatch is described by compare()
    if made.ok and tolerance == "close" and not torch.isinf(expected).any() and not torch.isnan(expected).any():
        assert finished == made  # a finite match is read, not left to compare()


class _FaultingBackend(fakes.FakeBackend):
    """Every launch faults: `foreseen`, the fault an address check records (read later with the run's signals, as
    CudaBackend.pending_fault reads its state); `device`, one the device raises itself (the read fails, here by a
    tensor on another device, and synchronize raises it)."""

    def __init__(self, kernels: dict, how: str):
        super().__init__(kernels)
        self.how, self.faulted = how, False

    def launch(self, kernel, grid, block, args) -> None:
        super().launch(kernel, grid, block, args)
        self.faulted = True

    def _fault(self) -> KernelFault:
        return KernelFault(f"kernel run: a {self.how} fault", poisons_context=self.how == "device",
                           foreseen=self.how == "foreseen")

    def synchronize(self) -> None:
        if self.faulted:
            self.faulted = False
            raise self._fault()

    def pending_fault(self):
        from harness.backends.base import PendingFault

        if self.how == "device":
            return PendingFault(torch.empty(0, dtype=torch.int64, device="meta"), lambda values: None)
        flag, self.faulted = torch.tensor([int(self.faulted)]), False

        def read(values):
            if values[0]:
                raise self._fault()

        return PendingFault(flag, read)


@pytest.mark.parametrize("how", ["foreseen", "device"])
def test_a_fault_read_with_the_runs_signals_is_raised_as_synchronize_raises_it(entry, monkeypatch, how):
    from harness.gate import pipeline

    (_name, _n, builder), = entry.suites()
    inputs = builder(0, torch.device("cpu"))
    expected = entry.ref(*inputs)
    raised = {}
    for gathered in (False, True):
        monkeypatch.setattr(pipeline, "reads_wait", lambda device, gathered=gathered: gathered)
        backend = _FaultingBackend({"pad_const_b4": fakes.pad_const_b4}, how)
        kernel = backend.load(entry.cuda, entry.kernel_name, "pad_const_b4.cu")
        with pytest.raises(KernelFault) as fault:
            pipeline.run_kernel(entry, kernel, backend, inputs, expected)
        raised[gathered] = (str(fault.value), fault.value.poisons_context, fault.value.foreseen)
        assert len(backend.launches) == 1  # run one: its fault ends the trial
    assert raised[True] == raised[False] == (f"kernel run: a {how} fault", how == "device", how == "foreseen")


def test_a_recorded_launch_judges_each_kernel_as_launch_itself_does_without_calling_launch_again(entry):
    """A campaign records launch's return on a trial once (LaunchRecord) and runs its mutants from the record: each
    mutant's run is judged as with its own launch call, its pointers into that call's own guarded copies."""
    from harness.gate.checks.guards import INPUT_GUARD_BYTES, GuardedBuffers
    from harness.gate.pipeline import run_kernel

    (_name, _n, builder), = entry.suites()
    inputs = builder(0, torch.device("cpu"))
    expected = entry.ref(*inputs)
    calls = []
    counted = dataclasses.replace(entry, launch=lambda views, torch: calls.append(1) or entry.launch(views, torch))

    def run(impl, buffers, **recorded):
        seen = []

        def watched(grid, block, args):
            seen.append([a.value for a in args[:2]])  # the pointers to x and to out
            impl(grid, block, args)

        backend = fakes.FakeBackend(kernels={"pad_const_b4": watched})
        kernel = backend.load(entry.cuda, entry.kernel_name, "pad_const_b4.cu")
        judged = run_kernel(counted, kernel, backend, inputs, expected, initialised=False, buffers=buffers, **recorded)
        return judged, seen

    first, _ = run(fakes.pad_const_b4, GuardedBuffers(), record_launch=True)
    assert first.launch is not None and len(calls) == 1
    buffers = GuardedBuffers()  # other copies than the recording run's: the record's pointers must follow them
    for impl in (fakes.pad_const_b4, fakes.pad_unwritten, fakes.pad_out_of_bounds, fakes.pad_wrong_value,
                 fakes.pad_changes_input):
        fresh, _ = run(impl, GuardedBuffers())
        recorded, pointers = run(impl, buffers, launched=first.launch)
        assert ([c.ok for c in recorded.comparisons], recorded.guard_damage, recorded.unwritten,
                recorded.first_unwritten, recorded.out_elements, recorded.argument_problems) == (
            [c.ok for c in fresh.comparisons], fresh.guard_damage, fresh.unwritten, fresh.first_unwritten,
            fresh.out_elements, fresh.argument_problems), impl.__name__
        x = buffers.take(("input", 0), inputs[0].shape, inputs[0].dtype, "cpu", INPUT_GUARD_BYTES[0]).tensor
        out = buffers.take("out", expected.shape, expected.dtype, "cpu").tensor
        assert pointers == [[x.data_ptr(), out.data_ptr()]] * 2
    assert len(calls) == 1 + 5  # the recording run and the fresh ones: none from the record


def test_a_launch_that_hides_an_address_outside_its_pointer_arguments_is_not_recorded():
    """A structure passed by value may carry pointers in its fields, and an integer may be an address: a record
    would keep the address of the recording run's copies, so such a launch is called for every run instead."""
    import ctypes

    from harness.gate.pipeline import LaunchRecord

    class Holder(ctypes.Structure):
        _fields_ = [("n", ctypes.c_int), ("p", ctypes.c_void_p)]

    x, out = torch.zeros(16), torch.zeros(16)
    plain = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr() + 4), (ctypes.c_longlong, 16),
             (Holder, Holder(3, 0)), (ctypes.c_float, 1.5)]
    record = LaunchRecord.of(out, (1, 1, 1), (16, 1, 1), plain, [x], False)
    assert record.args[:3] == [(ctypes.c_void_p, (0, 0)), (ctypes.c_void_p, ("out", 4)), (ctypes.c_longlong, 16)]
    for hidden in [(ctypes.c_uint64, x.data_ptr() + 8), (Holder, Holder(3, out.data_ptr())),
                   (ctypes.c_longlong * 2, (ctypes.c_longlong * 2)(0, x.data_ptr()))]:
        assert LaunchRecord.of(out, (1, 1, 1), (16, 1, 1), plain + [hidden], [x], False) is None, hidden


def test_a_recorded_launch_that_initialises_out_keeps_one_element_of_it_and_none_where_its_elements_differ():
    import ctypes

    from harness.gate.pipeline import LaunchRecord

    x = torch.zeros(4)
    args = [(ctypes.c_void_p, x.data_ptr())]
    zeros = torch.full((64, 32), -0.0)
    record = LaunchRecord.of(zeros, (1, 1, 1), (1, 1, 1), args + [(ctypes.c_void_p, zeros.data_ptr())], [x], True)
    assert record.initial.shape == zeros.shape and record.initial.untyped_storage().nbytes() == 4  # one element
    target = torch.ones(64, 32)
    target.copy_(record.initial)
    assert torch.equal(target.view(torch.int32), zeros.view(torch.int32))  # -0.0, bit for bit
    mixed = torch.zeros(8)
    mixed[3] = -0.0
    assert LaunchRecord.of(mixed, (1, 1, 1), (1, 1, 1), args + [(ctypes.c_void_p, mixed.data_ptr())], [x], True) is None
    assert LaunchRecord.of(mixed, (1, 1, 1), (1, 1, 1), args + [(ctypes.c_void_p, mixed.data_ptr())], [x],
                           False).initial is None  # not initialised: its contents are never read
