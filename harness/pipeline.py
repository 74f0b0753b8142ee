"""The checks of one substrate, run in order inside a worker: compile, probe, every trial of every suite.

Each trial: build the inputs, compute the official reference and the candidate's own `ref`,
put the inputs in guarded buffers, call `launch`, check its argument list against the
kernel's parameters, run the kernel twice over two poison patterns, then check the output,
the guard bands and the inputs. Every failure is kept; only a CUDA fault (which leaves the
context unusable) stops the run early.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import torch

from harness import signature, source_rules, suite_rules, suite_safety
from harness.backends import Backend, KernelFault, LoadedKernel
from harness.candidates import Entry, call_builder, where_defined
from harness.compare import Comparison, compare, compare_bitwise
from harness.guards import INPUT_GUARD_BYTES, POISON_BYTES, GuardedTensor, unwritten_mask
from harness.nvrtc import CompileError
from harness.problems import ProblemError, ProblemSearch, load_problem
from harness.records import CheckName, CheckResult, CheckStatus, SubstrateReport, SuiteResult

MAX_BLOCK_THREADS = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
SHOWN_FAILURES = 3


class CheckBook:
    """Collects pass/fail per check across every trial; a check with no failure has passed.

    A passed check says what it saw (how many trials, or a note such as the compiler used), so
    every verdict is explained, not only rejections.
    """

    def __init__(self):
        self._failures: dict[CheckName, list[str]] = {}
        self._passes: dict[CheckName, int] = {}
        self._notes: dict[CheckName, str] = {}
        self._not_run: dict[CheckName, str] = {}

    def ran(self, check: CheckName, note: str = "") -> None:
        self._passes[check] = self._passes.get(check, 0) + 1
        if note:
            self._notes[check] = note

    def fail(self, check: CheckName, detail: str) -> None:
        self._failures.setdefault(check, []).append(detail)

    def skip(self, check: CheckName, why: str) -> None:
        if check not in self._passes and check not in self._failures:
            self._not_run.setdefault(check, why)

    def results(self) -> list[CheckResult]:
        results = []
        for check in CheckName:
            if check in self._failures:
                failures = self._failures[check]
                detail = "; ".join(failures[:SHOWN_FAILURES])
                if len(failures) > SHOWN_FAILURES:
                    detail += f" (and {len(failures) - SHOWN_FAILURES} more)"
                results.append(CheckResult(check, CheckStatus.FAILED, detail))
            elif check in self._passes:
                count = self._passes[check]
                note = self._notes.get(check) or f"held in {count} trial{'s' if count != 1 else ''}"
                results.append(CheckResult(check, CheckStatus.PASSED, note))
            else:
                results.append(CheckResult(check, CheckStatus.NOT_RUN, self._not_run.get(check, "not reached")))
        return results


@dataclass
class KernelRun:
    """What one trial's kernel did: its two outputs (one per poison pattern) and any harm done."""

    outputs: list = field(default_factory=list)
    argument_problems: list[str] = field(default_factory=list)
    guard_damage: list[str] = field(default_factory=list)
    changed_inputs: list[str] = field(default_factory=list)
    unwritten: int = 0
    first_unwritten: tuple = ()


def _clone_all(inputs: list) -> list:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _geometry_problems(label: str, dims, limits) -> list[str]:
    if not (isinstance(dims, (tuple, list)) and len(dims) == 3 and all(type(d) is int for d in dims)):
        return [f"{label} {dims!r} is not a tuple of 3 ints"]
    problems = [f"{label} {tuple(dims)}: dimension {axis} is {d}, outside [1, {limit}]"
                for axis, (d, limit) in enumerate(zip(dims, limits)) if not 1 <= d <= limit]
    return problems


def _byte_range(t: torch.Tensor) -> tuple[int, int]:
    return t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()


def _redirect_pointers(args: list, out: torch.Tensor, out_target: torch.Tensor, inputs: list) -> tuple[list, list[str]]:
    """Point every argument aimed at launch's `out` at the guarded output instead.

    A pointer to anything but an input or out is refused: a tensor made inside launch is freed
    when launch returns, so the kernel would write memory that belongs to someone else.
    """
    problems, redirected, reaches_out = [], [], False
    out_start, out_end = _byte_range(out)
    known = [_byte_range(x) for x in inputs if isinstance(x, torch.Tensor)]
    for i, (ctype, value) in enumerate(args):
        if signature.is_pointer_type(ctype) and isinstance(value, int):
            if out_start <= value < max(out_end, out_start + 1):
                value = out_target.data_ptr() + (value - out_start)
                reaches_out = True
            elif not any(lo <= value < max(hi, lo + 1) for lo, hi in known):
                problems.append(f"argument {i} (0x{value:x}) points to neither an input nor out; memory made "
                                f"inside launch is freed when launch returns")
        redirected.append((ctype, value))
    if not reaches_out and out.numel() > 0:
        problems.append("no pointer argument points to out, so the kernel cannot write the output")
    return redirected, problems


def run_kernel(entry: Entry, kernel: LoadedKernel, backend: Backend, inputs: list) -> KernelRun:
    """Launch the kernel on guarded copies of `inputs`, twice, and report what it did."""
    device = backend.device
    guarded = [GuardedTensor.copy_of(x, device, INPUT_GUARD_BYTES[i % len(INPUT_GUARD_BYTES)])
               if isinstance(x, torch.Tensor) else None for i, x in enumerate(inputs)]
    views = [g.tensor if g is not None else x for g, x in zip(guarded, inputs)]
    result = KernelRun()

    try:
        returned = entry.launch(views, torch)
    except Exception as error:
        result.argument_problems.append(f"launch raised {type(error).__name__}: {error}")
        return result
    if not (isinstance(returned, (tuple, list)) and len(returned) == 4):
        result.argument_problems.append(f"launch returned {type(returned).__name__}, not (out, grid, block, args)")
        return result
    out, grid, block, args = returned
    if not isinstance(out, torch.Tensor):
        result.argument_problems.append(f"launch's out is a {type(out).__name__}, not a tensor")
        return result
    if out.device != torch.device(device) or not out.is_contiguous():
        result.argument_problems.append(f"launch's out must be a contiguous tensor on {device}, got one on "
                                        f"{out.device} (contiguous: {out.is_contiguous()})")
        return result
    for i, view in enumerate(views):
        if isinstance(view, torch.Tensor) and out.numel() and view.numel():
            (a, b), (c, d) = _byte_range(out), _byte_range(view)
            if a < d and c < b:
                result.argument_problems.append(f"launch's out shares memory with input {i}: it must be a fresh tensor")
    result.argument_problems += _geometry_problems("grid", grid, MAX_GRID)
    result.argument_problems += _geometry_problems("block", block, MAX_BLOCK)
    if not result.argument_problems and block[0] * block[1] * block[2] > MAX_BLOCK_THREADS:
        result.argument_problems.append(f"block {tuple(block)} has {block[0] * block[1] * block[2]} threads, "
                                        f"more than {MAX_BLOCK_THREADS}")
    result.argument_problems += signature.check_arguments(kernel.params, args)
    if result.argument_problems:
        return result

    # One guarded output per run, so neither run's result has to be copied out before the next.
    guarded_outs = [GuardedTensor(out.shape, out.dtype, device) for _ in POISON_BYTES]
    for run_number, (pattern, guarded_out) in enumerate(zip(POISON_BYTES, guarded_outs), 1):
        run_args, pointer_problems = _redirect_pointers(list(args), out, guarded_out.tensor, views)
        if pointer_problems:
            result.argument_problems += pointer_problems
            return result
        if entry.accumulates:
            guarded_out.tensor.copy_(out)  # what launch put there (zeros) is what the kernel adds to
        else:
            guarded_out.poison(pattern)
        backend.launch(kernel, tuple(grid), tuple(block), signature.to_ctypes(run_args))
        backend.synchronize()
        result.outputs.append(guarded_out.tensor)
        # Inputs are checked after each run: a change the second run undoes still counts.
        for i, (view, original) in enumerate(zip(views, inputs)):
            if isinstance(view, torch.Tensor) and not result.changed_inputs:
                change = compare_bitwise(view, original.to(device))
                if not change.ok:
                    result.changed_inputs.append(f"input {i} changed by run {run_number}: {change.describe()}")

    labelled = [("out", g) for g in guarded_outs] + [(f"input {i}", g) for i, g in enumerate(guarded) if g is not None]
    for label, g in labelled:
        result.guard_damage += [damage.describe(label) for damage in g.damage()]
    result.guard_damage = list(dict.fromkeys(result.guard_damage))  # both outputs usually show the same damage
    if entry.accumulates:
        return result
    unwritten = unwritten_mask(*result.outputs)
    result.unwritten = int(torch.count_nonzero(unwritten)) if bool(unwritten.any()) else 0
    if result.unwritten:
        flat = int(torch.nonzero(unwritten.reshape(-1))[0])
        result.first_unwritten = tuple(int(c) for c in torch.unravel_index(torch.tensor(flat), tuple(out.shape)))
    return result


def _record_comparison(suite: SuiteResult, comparison: Comparison) -> None:
    suite.mismatched_elements = max(suite.mismatched_elements, comparison.mismatches)
    if comparison.max_abs_error is not None:
        suite.worst_abs_error = max(suite.worst_abs_error or 0.0, comparison.max_abs_error)
        suite.worst_rel_error = max(suite.worst_rel_error or 0.0, comparison.max_rel_error)


@dataclass
class Case:
    """One trial to run: the probe's or a suite's, with its inputs, or the error building them raised."""

    suite: str
    t: int
    n_trials: int
    inputs: list | None = None
    error: Exception | None = None

    @property
    def where(self) -> str:
        return f"{self.suite} trial {self.t}"


# Two global RNG states a builder is run under: a deterministic builder ignores them.
_DETERMINISM_SEEDS = (0x5EED, 0xD1CE)


def _build(builder, t: int, device, seed: int) -> list:
    """The trial's inputs, built under global RNG state `seed` (restored afterwards), on `device`."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return call_builder(builder, t, device)


def _cases(entry: Entry, device, book: CheckBook, problem, progress):
    """Yield a Case for each probe entry, then each trial of each suite, checking the suite and probe rules.

    `progress` hears of each trial before it is built, so a worker lost while building names it.
    """
    try:
        probe = entry.probe(torch)
    except Exception as error:
        book.fail(CheckName.SUITES_BUILD, f"probe(torch) raised {type(error).__name__}: {error}")
        probe = []
    else:
        if problem is not None:
            problems = suite_rules.probe_problems(probe, suite_rules.official_signature(problem))
            where = where_defined(entry.probe, 'probe')
            for text in problems:
                book.fail(CheckName.PROBE_RULES, f"{where}: {text}")
            if not problems:
                book.ran(CheckName.PROBE_RULES, "two entries of CPU tensors under 1 MB: one aligned like T0, one misaligned")
    probe = probe if isinstance(probe, (list, tuple)) else []
    for t, item in enumerate(probe):
        progress(f"probe trial {t}")
        try:
            _label, tensors = item
            yield Case("probe", t, len(probe), [x.to(device) if isinstance(x, torch.Tensor) else x for x in tensors])
        except Exception as error:
            yield Case("probe", t, len(probe), error=error)
    try:
        suites = list(entry.suites())
    except Exception as error:
        book.fail(CheckName.SUITES_BUILD, f"suites() raised {type(error).__name__}: {error}")
        suites = []
    well_formed = []
    for i, suite in enumerate(suites):
        if (isinstance(suite, (tuple, list)) and len(suite) == 3 and isinstance(suite[0], str)
                and type(suite[1]) is int and suite[1] >= 1 and callable(suite[2])):
            well_formed.append(tuple(suite))
        else:
            book.fail(CheckName.SUITES_BUILD, f"suites()[{i}] is {suite!r:.80}, not (name, n_trials >= 1, builder)")
    suites_where = where_defined(entry.suites, 'suites')
    for text in suite_rules.suite_list_problems(well_formed):
        book.fail(CheckName.SUITE_RULES, f"{suites_where}: {text}")
    for suite_name, n_trials, builder in well_formed:
        for t in range(n_trials):
            case = Case(suite_name, t, n_trials)
            progress(case.where)
            try:
                case.inputs = _build(builder, t, device, _DETERMINISM_SEEDS[0])
                t0_problems = []
                if suite_name == suite_rules.T0_NAME and problem is not None:
                    official = suite_rules.official_inputs(problem, t)
                    t0_problems = suite_rules.t0_trial_problems(
                        t, [x.cpu() if isinstance(x, torch.Tensor) else x for x in case.inputs], official)
                    del official
                # A T0 trial equal to get_inputs() under its seed is deterministic already; every other
                # trial is built again under another global RNG state (KernelBench-sized T0s are gigabytes).
                difference = ""
                if suite_name != suite_rules.T0_NAME or problem is None or t0_problems:
                    difference = suite_rules.first_difference(
                        case.inputs, _build(builder, t, device, _DETERMINISM_SEEDS[1]))
            except Exception as error:
                case.error = error
                yield case
                continue
            if difference:
                book.fail(CheckName.SUITE_RULES, f"{where_defined(builder, 'the builder')}: {case.where} is not deterministic: "
                                                 f"built twice, {difference}")
            for text in t0_problems:
                book.fail(CheckName.SUITE_RULES, f"{where_defined(builder, 'the builder')}: {text}")
            yield case
    if well_formed and problem is not None:
        book.ran(CheckName.SUITE_RULES, f"{suite_rules.T0_NAME} is get_inputs() seeded {suite_rules.T0_SEED_BASE} + t "
                                        f"in all {suite_rules.T0_TRIALS} trials; "
                                        f"{len(well_formed) - 1} targeted suites; every builder deterministic")


def count_cases(entry: Entry) -> int:
    """How many trials the gate will run (probe entries included), for the progress bar."""
    try:
        return len(entry.probe(torch)) + sum(n for _name, n, _builder in entry.suites())
    except Exception:
        return 0


def cuda_source_check(cuda: str, kernel_name: str, program_name: str, locate=lambda text: None) -> CheckResult:
    """The spec's CUDA source rules, each violation named with its rule and its line."""
    violations = source_rules.check_source(cuda, kernel_name)
    if not violations:
        return CheckResult(CheckName.CUDA_SOURCE, CheckStatus.PASSED,
                           "device code only, allowed headers, and every mutation-site rule of the spec")
    lines = []
    for violation in violations:
        at = ""
        if violation.line:
            found = locate(violation.text)
            at = f"{found} ({program_name}:{violation.line})" if found else f"{program_name}:{violation.line}"
        lines.append(f"{at + ': ' if at else ''}[{violation.rule.value}] {violation.message}")
    return CheckResult(CheckName.CUDA_SOURCE, CheckStatus.FAILED, "; ".join(lines))


def _official_alternatives(official, device) -> list[tuple[str, object]]:
    """Second legitimate ways of computing the official output, as (label, (inputs, expected) -> output or None):
    float64, and on a GPU, the CPU."""
    model64 = suite_safety.widened_model(official)
    alternatives = [("in float64", lambda inputs, expected: suite_safety.float64_reference(model64, inputs, expected))]
    if torch.device(device).type != "cpu":
        model_cpu = copy.deepcopy(official).cpu()
        alternatives.append(("on the CPU", lambda inputs, _expected: suite_safety.cpu_reference(model_cpu, inputs)))
    return alternatives


def _check_no_false_kill(alternatives, case: Case, expected, entry: Entry, book: CheckBook,
                         unavailable: dict[str, str]) -> None:
    for label, compute in alternatives:
        if label in unavailable:
            continue
        try:
            other = compute(case.inputs, expected)
        except Exception as error:
            unavailable[label] = f"{type(error).__name__}: {error}"
            continue
        if other is None:  # nothing floating-point: the float64 route is the official one
            continue
        agreement = suite_safety.agreement(other, expected, entry.tolerance)
        if agreement.ok:
            book.ran(CheckName.NO_FALSE_KILL)
        else:
            book.fail(CheckName.NO_FALSE_KILL,
                      f"{case.where}: the official Model {label} disagrees with it beyond the tolerance "
                      f"({entry.tolerance.describe()}): {agreement.describe()}; two correct implementations can "
                      f"differ here, so this suite would reject a correct kernel")


def gate_entry(entry: Entry, backend: Backend, checks_so_far: list[CheckResult], progress=lambda step: None,
               search: ProblemSearch | None = None) -> SubstrateReport:
    """Run every check of one substrate on `backend`; `checks_so_far` holds the import checks."""
    started = time.perf_counter()
    search = search or ProblemSearch.for_candidate(entry.file)
    book = CheckBook()
    for result in checks_so_far:
        if result.status is CheckStatus.FAILED:
            book.fail(result.check, result.detail)
        elif result.status is CheckStatus.PASSED:
            book.ran(result.check, result.detail)
        else:
            book.skip(result.check, result.detail)
    report = SubstrateReport(name=entry.name, file=str(entry.file), kb_file=entry.kb_file,
                             source_sha256=entry.source_sha256(search))
    device = backend.device

    problem = official = None
    try:
        problem = load_problem(entry.kb_file, search)
        official = problem.build_model(device)
        book.ran(CheckName.OFFICIAL_REFERENCE, f"{problem.path} loaded KernelBench-style; its Model ran on every trial")
    except ProblemError as error:
        book.fail(CheckName.OFFICIAL_REFERENCE, str(error))
    except Exception as error:
        book.fail(CheckName.OFFICIAL_REFERENCE, f"building the official Model failed: {type(error).__name__}: {error}")

    source = cuda_source_check(entry.cuda, entry.kernel_name, f"{entry.name}.cu", entry.locate_cuda_line)
    (book.ran if source.ok else book.fail)(source.check, source.detail)

    progress("compile")
    kernel = None
    try:
        kernel = backend.load(entry.cuda, entry.kernel_name, f"{entry.name}.cu", entry.locate_cuda_line)
        report.compile_options = list(kernel.options)
        book.ran(CheckName.COMPILE, f"{kernel.compiler} for {kernel.target}"
                                    f"{' (from the compile cache)' if kernel.from_cache else ''}")
    except CompileError as error:
        book.fail(CheckName.COMPILE, str(error))
    except KernelFault as error:
        book.fail(CheckName.COMPILE, f"loading the compiled kernel failed: {error}")

    alternatives = _official_alternatives(official, device) if official is not None else []
    unavailable_routes: dict[str, str] = {}
    trivial = suite_safety.TrivialKernels(entry.tolerance)
    suites: dict[str, SuiteResult] = {}
    fault = None
    for case in _cases(entry, device, book, problem, progress):
        suite = suites.setdefault(case.suite, SuiteResult(case.suite, case.n_trials))
        where = case.where
        if case.error is not None:
            book.fail(CheckName.SUITES_BUILD, f"{where}: building inputs raised {type(case.error).__name__}: {case.error}")
            suite.failures.append(f"trial {case.t}: inputs could not be built")
            continue
        book.ran(CheckName.SUITES_BUILD)
        inputs = case.inputs
        if official is None:
            continue
        trial_ok = True
        try:
            with torch.no_grad():
                expected = official(*_clone_all(inputs))
        except Exception as error:
            book.fail(CheckName.OFFICIAL_REFERENCE, f"{where}: the official Model raised {type(error).__name__}: {error}")
            suite.failures.append(f"trial {case.t}: official reference failed")
            continue
        try:
            own = compare(entry.ref(*_clone_all(inputs)), expected, entry.tolerance)
            if own.ok:
                book.ran(CheckName.REF_MATCHES_OFFICIAL)
            else:
                book.fail(CheckName.REF_MATCHES_OFFICIAL, f"{where}: {own.describe()}")
                trial_ok = False
        except Exception as error:
            book.fail(CheckName.REF_MATCHES_OFFICIAL, f"{where}: ref raised {type(error).__name__}: {error}")
            trial_ok = False
        _check_no_false_kill(alternatives, case, expected, entry, book, unavailable_routes)
        if case.suite != "probe":
            trivial.observe(case.suite, case.t, inputs, expected)
        if kernel is None:
            continue

        try:
            run = run_kernel(entry, kernel, backend, inputs)
        except KernelFault as error:
            if not error.poisons_context:
                book.fail(CheckName.RUNS_TO_COMPLETION, f"{where}: {error}")
                suite.failures.append(f"trial {case.t}: kernel fault")
                continue
            fault = f"{where}: {error}"
        except RuntimeError as error:
            # Launch's own errors are caught in run_kernel; a RuntimeError naming CUDA after the kernel
            # started is torch meeting a context the kernel broke.
            if "CUDA" not in str(error):
                raise
            fault = f"{where}: {error}"
        if fault:
            book.fail(CheckName.RUNS_TO_COMPLETION, fault + " (the CUDA context is lost: no further trials run)")
            suite.failures.append(f"trial {case.t}: kernel fault")
            break

        if run.argument_problems:
            book.fail(CheckName.LAUNCH_ARGUMENTS, f"{where}: " + "; ".join(run.argument_problems))
            suite.failures.append(f"trial {case.t}: launch arguments do not fit the kernel")
            continue
        book.ran(CheckName.LAUNCH_ARGUMENTS)
        book.ran(CheckName.RUNS_TO_COMPLETION)
        for check, problems in ((CheckName.WRITES_IN_BOUNDS, run.guard_damage),
                                (CheckName.INPUTS_UNCHANGED, run.changed_inputs)):
            if problems:
                book.fail(check, f"{where}: " + "; ".join(problems))
                trial_ok = False
            else:
                book.ran(check)
        if run.unwritten:
            book.fail(CheckName.OUTPUT_FULLY_WRITTEN,
                      f"{where}: {run.unwritten} of {run.outputs[0].numel()} output elements never written "
                      f"(first at {run.first_unwritten})")
            trial_ok = False
        elif entry.accumulates:
            book.ran(CheckName.OUTPUT_FULLY_WRITTEN, "not applicable: the kernel adds into out, which launch "
                                                     "initialises; a slot it misses keeps that value and fails "
                                                     "output_matches")
        else:
            book.ran(CheckName.OUTPUT_FULLY_WRITTEN)
        for output in run.outputs:
            comparison = compare(output, expected, entry.tolerance)
            _record_comparison(suite, comparison)
            if not comparison.ok:
                book.fail(CheckName.OUTPUT_MATCHES, f"{where} ({entry.tolerance.describe()}): {comparison.describe()}")
                trial_ok = False
                break
        else:
            book.ran(CheckName.OUTPUT_MATCHES)
        if trial_ok:
            suite.passed += 1
        else:
            suite.failures.append(f"trial {case.t}")

    if fault is None and official is not None and suites:
        checked = [label for label, _compute in alternatives if label not in unavailable_routes]
        note = (f"the official Model {' and '.join(checked)} agrees with it within {entry.tolerance.describe()} on "
                f"every trial" if checked else "no second way of computing the official output could run")
        note += "".join(f"; {label} it could not run ({why})" for label, why in unavailable_routes.items())
        book.ran(CheckName.NO_FALSE_KILL, note)
        problems = trivial.problems()
        for text in problems:
            book.fail(CheckName.SUITES_CAN_FAIL, text)
        if not problems:
            book.ran(CheckName.SUITES_CAN_FAIL, trivial.summary())
    why = "not run: " + (fault or ("the kernel did not compile" if kernel is None and official is not None
                                   else "the official reference did not load" if official is None
                                   else "no trial reached it"))
    for check in CheckName:
        book.skip(check, why)
    report.checks = book.results()
    report.suites = list(suites.values())
    report.seconds = time.perf_counter() - started
    report.peak_device_bytes = backend.peak_memory_bytes()
    return report
