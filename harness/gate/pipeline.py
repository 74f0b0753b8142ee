"""The checks of one substrate, run in order inside a worker: compile, probe, every trial of every suite.

Each trial is a table of checks (`TRIAL_CHECKS`), one function each, run in order on a
`TrialState`: the official output, the candidate's own `ref`, the second legitimate references
(on the CPU, beside the device work), the do-nothing kernels, then the kernel itself (`launch`,
its argument list against the kernel's parameters, two runs over poisoned or launch-initialised
guarded buffers) and the checks of what it did: guard bands, inputs, unwritten output, values.
A new check is a new function and a line in the table.

Every failure is kept. Only a CUDA fault (which leaves the context unusable) stops the run early;
a check whose subject never existed (no probe key, a kb_file naming nothing, a kernel that did
not compile) is not run, with the reason, never failed with claims about it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from harness.backends import Backend, KernelFault, LoadedKernel
from harness.backends.base import PendingFault, out_of_device_memory
from harness.candidates import Entry, builder_form, where_defined
from harness.compiler import signature
from harness.compiler.nvrtc import CompileError
from harness.gate.checks import source_rules, suite_rules, suite_safety
from harness.gate.checks.compare import (Comparison, PendingComparison, compare, compare_bitwise, compare_later,
                                         compared_bitwise, coords_of)
from harness.gate.checks.guards import (INPUT_GUARD_BYTES, POISON_BYTES, GuardedBuffers, GuardedTensor, checksum_parts,
                                        poison_held, poison_where, poisoned_allocations, read_together, tensor_checksum,
                                        unwritten_signals)
from harness.gate.foresight import OutputForesight
from harness.gate.phases import PhaseClock
from harness.gate.records import PIPELINE_CHECKS, CheckName, CheckResult, CheckStatus, SubstrateReport, SuiteResult
from harness.gate.trial_inputs import TrialInputs, build_here
from harness.problems import ProblemError, ProblemSearch, load_problem, model_state

MAX_BLOCK_THREADS = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
SHOWN_FAILURES = 3
KERNEL_OUTPUT_CHECKS = (CheckName.OUTPUT_MATCHES, CheckName.OUTPUT_FULLY_WRITTEN, CheckName.OUT_INITIALISED,
                        CheckName.WRITES_IN_BOUNDS, CheckName.INPUTS_UNCHANGED)
PENDING = "not run: the worker stopped before this check was decided"


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

    @classmethod
    def of(cls, results: list[CheckResult]) -> "CheckBook":
        """A book that starts from checks decided before the pipeline (the import's)."""
        book = cls()
        for result in results:
            if result.status is CheckStatus.FAILED:
                book.fail(result.check, result.detail)
            elif result.status is CheckStatus.PASSED:
                book.ran(result.check, result.detail)
            else:
                book.skip(result.check, result.detail)
        return book

    def ran(self, check: CheckName, note: str = "") -> None:
        self._passes[check] = self._passes.get(check, 0) + 1
        if note:
            self._notes[check] = note

    def fail(self, check: CheckName, detail: str) -> None:
        self._failures.setdefault(check, []).append(detail)

    def skip(self, check: CheckName, why: str) -> None:
        if check not in self._passes and check not in self._failures:
            self._not_run.setdefault(check, why)

    def decided(self, check: CheckName) -> bool:
        return check in self._passes or check in self._failures or check in self._not_run

    def results(self, undecided: str = "not reached") -> list[CheckResult]:
        results = []
        for check in PIPELINE_CHECKS:  # the sanitizers' checks are decided after the pipeline, by the caller
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
                results.append(CheckResult(check, CheckStatus.NOT_RUN, self._not_run.get(check, undecided)))
        return results


@dataclass
class KernelRun:
    """What one trial's kernel did: each run's comparison with the expected output, and any harm done."""

    comparisons: list[Comparison] = field(default_factory=list)
    argument_problems: list[str] = field(default_factory=list)
    guard_damage: list[str] = field(default_factory=list)
    changed_inputs: list[str] = field(default_factory=list)
    unwritten: int = 0
    first_unwritten: tuple = ()
    out_elements: int = 0
    initialised_by_launch: bool = False  # launch fills out itself: the kernel runs on that, not on poison
    # An accumulating entry (the kernel adds into out) whose launch left out as the allocation held it: two launch
    # calls over differently poisoned memory gave out different bytes.
    uninitialised_accumulator: bool = False
    launch: "LaunchRecord | None" = None  # launch's return, where run_kernel was asked to record it
    beside: list | None = None  # the values of run_kernel's read_beside signals, read with the last run's
    out_of_memory: Exception | None = None  # launch ran out of device memory (also one of argument_problems)


def _geometry_problems(label: str, dims, limits) -> list[str]:
    if not (isinstance(dims, (tuple, list)) and len(dims) == 3 and all(type(d) is int for d in dims)):
        return [f"{label} {dims!r} is not a tuple of 3 ints"]
    problems = [f"{label} {tuple(dims)}: dimension {axis} is {d}, outside [1, {limit}]"
                for axis, (d, limit) in enumerate(zip(dims, limits)) if not 1 <= d <= limit]
    return problems


def _byte_range(t: torch.Tensor) -> tuple[int, int]:
    return t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Do the bytes of two (non-empty) tensors overlap?"""
    (a_start, a_end), (b_start, b_end) = _byte_range(a), _byte_range(b)
    return a.numel() > 0 and b.numel() > 0 and a_start < b_end and b_start < a_end


def _redirect_pointers(args: list, out: torch.Tensor, out_target: torch.Tensor, inputs: list) -> tuple[list, list[str]]:
    """Point every argument aimed at launch's `out` at the guarded output instead.

    A pointer to anything but an input or out is refused: a tensor made inside launch is freed
    when launch returns, so the kernel would write memory that belongs to someone else.
    """
    problems, redirected, reaches_out = [], [], False
    ranges = _pointed_at(out, inputs)
    for i, (ctype, value) in enumerate(args):
        if signature.is_pointer_type(ctype) and isinstance(value, int):
            where = _locate(value, ranges)
            if where is not None and where[0] == "out":
                value = out_target.data_ptr() + where[1]
                reaches_out = True
            elif where is None:
                problems.append(f"argument {i} (0x{value:x}) points to neither an input nor out; memory made "
                                f"inside launch is freed when launch returns")
        redirected.append((ctype, value))
    if not reaches_out and out.numel() > 0:
        problems.append("no pointer argument points to out, so the kernel cannot write the output")
    return redirected, problems


@dataclass
class LaunchRecord:
    """What `launch` returned for one trial, for the next kernels run on that trial: a campaign's mutants change the
    CUDA source, never launch (whose inputs are the trial's, the same each time), so its Python, and the reads of the
    device it may make, run once a trial. Pointers are kept as (k, offset) into input k, or ("out", offset): each call
    has its own guarded copies and output."""

    shape: tuple
    dtype: torch.dtype
    # launch's out where launch initialises it (the kernel adds to it), as one element broadcast: else None
    initial: torch.Tensor | None
    grid: tuple
    block: tuple
    args: list  # (ctypes type, value, or a pointer's (k or "out", offset))

    @staticmethod
    def of(out: torch.Tensor, grid, block, args: list, views: list, initialised: bool) -> "LaunchRecord | None":
        """The record of a launch whose every pointer points into an input or out; None where one does not, or where
        an argument that is no pointer holds such an address (an integer, a structure's field): that address would
        not follow a later run's own copies, so such a launch is called for every run, as before."""
        ranges = _pointed_at(out, views)
        kept = []
        for ctype, value in args:
            if signature.is_pointer_type(ctype) and isinstance(value, int):
                value = _locate(value, ranges)
                if value is None:
                    return None
            elif _holds_an_address(value, ranges):
                return None
            kept.append((ctype, value))
        initial = None
        if initialised:
            initial = _as_one_element(out)
            if initial is None:
                return None
        return LaunchRecord(tuple(out.shape), out.dtype, initial, tuple(grid), tuple(block), kept)

    def arguments(self, views: list, out: torch.Tensor) -> list:
        """The arguments for a run on `views` writing `out` (the guarded output)."""
        return [(ctype, (out if value[0] == "out" else views[value[0]]).data_ptr() + value[1])
                if signature.is_pointer_type(ctype) and isinstance(value, tuple) else (ctype, value)
                for ctype, value in self.args]


def _pointed_at(out: torch.Tensor, inputs: list) -> list[tuple]:
    """What a launch's pointers may point into: ("out", its byte range), then (k, input k's) for each tensor input."""
    return [("out", _byte_range(out))] + [(k, _byte_range(x)) for k, x in enumerate(inputs)
                                          if isinstance(x, torch.Tensor)]


def _locate(address: int, ranges: list[tuple]) -> tuple | None:
    """(what, offset) of the first of `ranges` (_pointed_at) holding `address` (an empty tensor's start counts), or
    None."""
    return next(((what, address - lo) for what, (lo, hi) in ranges if lo <= address < max(hi, lo + 1)), None)


def _as_one_element(out: torch.Tensor) -> torch.Tensor | None:
    """`out` as one element broadcast to its shape, where every element has the same bytes (launch's zeros, say), so
    that a record keeps no copy of an output: None where they differ."""
    if out.numel() == 0:
        return out.clone()
    elements = out.reshape(-1).view(torch.uint8).reshape(out.numel(), out.element_size())
    if not bool((elements == elements[0]).all()):
        return None
    return out.reshape(-1)[:1].clone().reshape([1] * out.dim()).expand(out.shape)


def _holds_an_address(value, ranges: list[tuple]) -> bool:
    """Whether an argument's value (no pointer's) holds an address inside one of the `ranges` (_pointed_at): as an
    integer, or as any 8 bytes of a ctypes object (a structure passed by value may carry pointers in its fields)."""
    import ctypes

    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        words = [value]
    elif isinstance(value, ctypes._SimpleCData | ctypes.Structure | ctypes.Union | ctypes.Array):
        raw = ctypes.string_at(ctypes.addressof(value), ctypes.sizeof(value))
        words = [int.from_bytes(raw[i:i + 8], "little") for i in range(len(raw) - 7)]
    else:
        return False
    return any(_locate(word, ranges) is not None for word in words)


def _launch(entry: Entry, views: list, pattern_byte: int):
    """launch(views, torch), every uninitialised allocation it makes filled with `pattern_byte`."""
    with poisoned_allocations(pattern_byte):
        return entry.launch(views, torch)


def _launch_problems(returned, views: list, device) -> list[str]:
    if not (isinstance(returned, (tuple, list)) and len(returned) == 4):
        return [f"launch returned {type(returned).__name__}, not (out, grid, block, args)"]
    out, grid, block, _args = returned
    if not isinstance(out, torch.Tensor):
        return [f"launch's out is a {type(out).__name__}, not a tensor"]
    if out.device != torch.device(device) or not out.is_contiguous():
        return [f"launch's out must be a contiguous tensor on {device}, got one on {out.device} "
                f"(contiguous: {out.is_contiguous()})"]
    problems = []
    for i, view in enumerate(views):
        if isinstance(view, torch.Tensor) and _overlap(out, view):
            problems.append(f"launch's out shares memory with input {i}: it must be a fresh tensor")
    problems += _geometry_problems("grid", grid, MAX_GRID)
    problems += _geometry_problems("block", block, MAX_BLOCK)
    if not problems and block[0] * block[1] * block[2] > MAX_BLOCK_THREADS:
        problems.append(f"block {tuple(block)} has {block[0] * block[1] * block[2]} threads, more than "
                        f"{MAX_BLOCK_THREADS}")
    return problems


def _launch_initialises_out(entry: Entry, views: list, out: torch.Tensor, first_sum: int) -> bool:
    """Does launch fill out itself? Called again under the second pattern: the same bytes mean yes.

    `first_sum` is out's checksum from the first call, made under the first pattern, so no second
    copy of a gigabyte output is held to compare.
    """
    again = _launch(entry, views, POISON_BYTES[1])
    other = again[0] if isinstance(again, (tuple, list)) and again else None
    same = (isinstance(other, torch.Tensor) and other.shape == out.shape and other.dtype == out.dtype
            and tensor_checksum(other) == first_sum)
    del again, other
    return same


def _changed_input(view: torch.Tensor, original: torch.Tensor) -> Comparison:
    """How `view` differs from `original` (which may live on another device), compared chunk by chunk."""
    if view.numel() <= 1 << 24:
        return compare_bitwise(view, original.to(view.device))
    flat_view, flat_original = view.reshape(-1), original.reshape(-1)
    for start in range(0, flat_view.numel(), 1 << 24):
        piece = compare_bitwise(flat_view[start:start + (1 << 24)],
                                flat_original[start:start + (1 << 24)].to(view.device))
        if not piece.ok:
            return piece
    return Comparison(ok=True, total=view.numel())


def _after_run(result: KernelRun, run_number: int, guarded_out: GuardedTensor, views: list, inputs: list,
               sums: list, pattern: int | None, pending: PendingComparison | None = None,
               guarded_inputs: list | None = None, fault: PendingFault | None = None,
               synchronize=None, beside: list | None = None) -> tuple[int, list[int]]:
    """Out's guard bands, and the inputs, after one run (a change the second run undoes still counts); returns 1
    when some element of out still holds `pattern`, else 0 (always 0 when `pattern` is None: launch initialised out),
    and the values of the `pending` comparison's signals. With `guarded_inputs` (the last run's), their guard bands
    too, their damage added to result.guard_damage. With `fault` (Backend.pending_fault, in place of the run's
    synchronize) its signals come first, and the fault they show is raised before anything else is read; a fault of
    the device's own fails the read, and `synchronize` (the backend's) then raises it. `beside`: a caller's signals,
    read last, their values put in result.beside.

    Every signal is computed on the device and read in one transfer: a campaign asks this of every
    trial of every mutant, and on a GPU each separate read is a wait for the device. The details
    (which bytes, which elements) are worked out only where a signal says something is wrong.
    """
    tensors = [i for i, view in enumerate(views) if isinstance(view, torch.Tensor)]
    present = [(i, g) for i, g in enumerate(guarded_inputs or ()) if g is not None]
    with _faults_raised_as_the_backend_raises_them(synchronize if fault is not None else None):
        read = iter(read_together([
            *([fault.signals] if fault is not None else []),
            guarded_out.bands_changed(), *(checksum_parts(views[i]) for i in tensors),
            *([poison_held(guarded_out.tensor, pattern)] if pattern is not None else []),
            *([pending.signals] if pending is not None else []), *(g.bands_changed() for _, g in present),
            *(beside or ())]))
    if fault is not None:
        fault.read(next(read))
    if any(next(read)):
        result.guard_damage += [damage.describe("out") for damage in guarded_out.damage()]
    for i in tensors:
        if sum(next(read)) != sums[i] and not result.changed_inputs:
            change = _changed_input(views[i], inputs[i])
            if not change.ok:
                result.changed_inputs.append(f"input {i} changed by run {run_number}: {change.describe()}")
    held = next(read)[0] if pattern is not None else 0
    compared = next(read) if pending is not None else []
    for i, g in present:
        if any(next(read)):
            result.guard_damage += [damage.describe(f"input {i}") for damage in g.damage()]
    if beside is not None:
        result.beside = [next(read) for _ in beside]
    return held, compared


@contextlib.contextmanager
def _faults_raised_as_the_backend_raises_them(synchronize):
    """Where the kernel's run was not waited for (Backend.pending_fault), torch meets a fault of the kernel's own as
    a RuntimeError at its next launch or read: `synchronize` (the backend's) then raises it as it would have. None:
    the run was waited for, and a RuntimeError is torch's own."""
    try:
        yield
    except RuntimeError:
        if synchronize is not None:
            synchronize()
        raise


def reads_wait(device) -> bool:
    """Whether reading a value from `device` waits for it (a GPU's), so that reads are worth gathering into one: in
    host memory compare()'s own ways are the quicker (memcmp for bit-for-bit)."""
    return torch.device(device).type != "cpu"


def guarded_copy(buffers: GuardedBuffers | None, i: int, x: torch.Tensor, device) -> GuardedTensor:
    """Input i's guarded copy, in its buffer of `buffers` when the caller keeps them."""
    guard_byte = INPUT_GUARD_BYTES[i % len(INPUT_GUARD_BYTES)]
    if buffers is None:
        return GuardedTensor.copy_of(x, device, guard_byte)
    return buffers.copy_of(("input", i), x, device, guard_byte)


def _written_everywhere(comparison: Comparison | None, expected: torch.Tensor, entry: Entry,
                        expected_poison: tuple[bool, bool] | None, run_number: int) -> bool:
    """True when the run's output is known to hold no poison without looking: it matches `expected` bit for bit,
    and `expected` holds none of this run's pattern (`expected_poison`, when the caller knows it). False while the
    comparison is not known (None)."""
    return (expected_poison is not None and comparison is not None and comparison.ok
            and not expected_poison[run_number - 1] and compared_bitwise(expected, entry.tolerance))


def run_kernel(entry: Entry, kernel: LoadedKernel, backend: Backend, inputs: list, expected: torch.Tensor,
               guarded: list | None = None, initialised: bool | None = None,
               input_sums: list | None = None, clock: PhaseClock | None = None, runs: int = 2,
               expected_poison: tuple[bool, bool] | None = None, buffers: GuardedBuffers | None = None,
               launched: LaunchRecord | None = None, record_launch: bool = False,
               describe_ahead: bool = False, read_beside: Callable[[], list] | None = None,
               stop_when_decided: bool = False) -> KernelRun:
    """Launch the kernel twice on guarded copies of `inputs`, comparing each run's output with `expected`.

    `guarded` are the inputs' guarded copies when the caller made them already (the gate runs the
    references on them first), `input_sums` their byte sums as built; otherwise both are made here.
    One guarded output serves both runs:
    run one starts from poison pattern one, run two from pattern two (or both from what launch put
    in out, when launch initialises it), and an element still holding its run's pattern after both
    was never written. `initialised`, when known (a campaign's mutants share one launch), spares
    the second launch call that finds out whether launch initialises out. `clock` hears how long
    each part took. `runs=1`: the first run only, for a kernel already known to pass both (a
    campaign's unmutated source, admitted by the gate): no unwritten-output check, half the work.
    `expected_poison`, when known (a campaign's trials: expected_holds_poison), says whether `expected` holds
    pattern one, and two, somewhere: where it holds neither and a run's output matches it bit for bit, that
    output holds no pattern either, and the search for one is skipped. `buffers` keeps the guarded output and
    input copies from call to call (a campaign's); without it each call allocates its own. `launched`: launch's
    return on this trial, recorded by an earlier call (`record_launch` asks for it: KernelRun.launch), in place of a
    launch call; the arguments are still checked against this kernel's parameters. `describe_ahead`: a mismatch's
    description is queued with each run's verdict (compare_later's `describe`), for a caller that expects mismatches
    (a --matrix cell), where a second read would wait for the device again. `read_beside`: signals (1-d int64
    tensors) the caller wants after the last run, made then and read with its own, their values in KernelRun.beside
    (a --matrix cell's trial checksum, wanted after most of its runs). `stop_when_decided`: run one reads what the
    last run reads (the inputs' guard bands, `read_beside`), and run two is skipped where run one already decides
    first_failure's answer (decided_by_first_run): for a caller that wants the first failure, not every reason.
    """
    if runs not in (1, 2):
        raise ValueError(f"run_kernel: runs must be 1 or 2, got {runs}")
    clock = clock or PhaseClock()
    with clock.timing("kernel: guarded input copies"):
        if guarded is None:
            guarded = [guarded_copy(buffers, i, x, backend.device) if isinstance(x, torch.Tensor) else None
                       for i, x in enumerate(inputs)]
        views = [g.tensor if g is not None else x for g, x in zip(guarded, inputs)]
        sums = input_sums or [tensor_checksum(v) if isinstance(v, torch.Tensor) else None for v in views]
    result = KernelRun()
    with clock.timing("kernel: launch calls"):
        called = _call_launch(entry, kernel, backend.device, views, initialised, launched, result)
    if called is None:
        return result
    out, grid, block, args, shape, dtype = called
    guarded_out = (buffers.take("out", shape, dtype, backend.device) if buffers is not None
                   else GuardedTensor(shape, dtype, backend.device))
    run_args = _run_arguments(result, kernel, (out, grid, block, args), views, guarded_out, launched, record_launch)
    if run_args is None:
        return result
    runs_of = _OutputRuns(entry, kernel, backend, inputs, views, sums, guarded, expected, expected_poison, out,
                          guarded_out, (tuple(grid), tuple(block), run_args), clock, result, describe_ahead,
                          read_beside)
    still_first = None
    for run_number, pattern in enumerate(POISON_BYTES[:runs], 1):
        held = runs_of.run(run_number, pattern, run_number == runs or stop_when_decided)
        with clock.timing("kernel: guards, unwritten output, inputs"):
            still_first = _track_unwritten(result, run_number, guarded_out.tensor, pattern, held, still_first, shape)
        if stop_when_decided and run_number < runs and decided_by_first_run(result, held):
            break
    result.guard_damage = list(dict.fromkeys(result.guard_damage))  # both runs usually show the same damage
    return result


def decided_by_first_run(result: KernelRun, held: int) -> bool:
    """Whether a second run could not change the first failure run one shows (its order: arguments, guards, inputs,
    unwritten output, output): run one damaged a guard band, or its output mismatches with no element still holding
    its poison (unwritten needs both runs' patterns) and no input changed (inputs run two would start from).
    A kernel whose second run differs from its first otherwise (a race, a read of out's old contents) may still
    fail it in another way; its first failure is then the first run's."""
    if result.guard_damage:
        return True
    return not result.changed_inputs and held == 0 and any(not c.ok for c in result.comparisons)


def _call_launch(entry: Entry, kernel: LoadedKernel, device, views: list, initialised: bool | None,
                 launched: LaunchRecord | None, result: KernelRun):
    """launch's (out, grid, block, args, shape, dtype) on this trial, called now or `launched`'s record of it; None,
    with `result`'s argument problems saying why, where launch raised or returned what cannot be run."""
    try:
        if launched is not None:
            result.out_elements = math.prod(launched.shape)
            result.initialised_by_launch = launched.initial is not None
            return launched.initial, launched.grid, launched.block, None, launched.shape, launched.dtype
        # Whether launch initialises out is known (a campaign's mutants share one launch): out's first contents are
        # then never read, and filling a fresh allocation with poison would be wasted.
        returned = _launch(entry, views, POISON_BYTES[0]) if initialised is None else entry.launch(views, torch)
        result.argument_problems += _launch_problems(returned, views, device)
        if result.argument_problems:
            return None
        out, grid, block, args = returned
        result.argument_problems += signature.check_arguments(kernel.params, args)
        if result.argument_problems:
            return None
        if initialised is None:
            writes_out = out.numel() > 0 and _launch_initialises_out(entry, views, out, tensor_checksum(out))
            result.uninitialised_accumulator = entry.accumulates and out.numel() > 0 and not writes_out
            initialised = entry.accumulates or writes_out
        result.out_elements = math.prod(tuple(out.shape))
        result.initialised_by_launch = initialised
        return out, grid, block, args, tuple(out.shape), out.dtype
    except Exception as error:
        if out_of_device_memory(error):  # the gate says it as the machine's limit (_kernel_runs)
            result.out_of_memory = error
        result.argument_problems.append(f"launch raised {type(error).__name__}: {error}")
        return None


def _run_arguments(result: KernelRun, kernel: LoadedKernel, returned: tuple, views: list,
                   guarded_out: GuardedTensor, launched: LaunchRecord | None, record_launch: bool) -> list | None:
    """The kernel's arguments with launch's out swapped for the guarded output (recorded, if asked, for the next
    kernels of this trial); None, with `result`'s argument problems saying why, where they cannot be run."""
    out, grid, block, args = returned
    if launched is not None:
        run_args = launched.arguments(views, guarded_out.tensor)
        result.argument_problems += signature.check_arguments(kernel.params, run_args)  # this kernel's parameters
        return None if result.argument_problems else run_args
    run_args, pointer_problems = _redirect_pointers(list(args), out, guarded_out.tensor, views)
    if pointer_problems:
        result.argument_problems += pointer_problems
        return None
    if record_launch:
        result.launch = LaunchRecord.of(out, grid, block, args, views, result.initialised_by_launch)
    return run_args


@dataclass
class _OutputRuns:
    """One trial's kernel runs over one guarded output, once launch's arguments are known: each run launched, its
    output compared, its guards, inputs and poison read into `result`."""

    entry: Entry
    kernel: LoadedKernel
    backend: Backend
    inputs: list
    views: list          # the inputs as the kernel sees them: their guarded copies
    sums: list           # their byte sums as built, to show a write into an input
    guarded: list
    expected: torch.Tensor
    expected_poison: tuple[bool, bool] | None
    out: torch.Tensor    # launch's own out: what an initialising launch put there
    guarded_out: GuardedTensor
    launch: tuple        # (grid, block, the kernel's arguments, out swapped for guarded_out): both runs
    clock: PhaseClock
    result: KernelRun
    describe_ahead: bool = False
    read_beside: Callable[[], list] | None = None

    def run(self, run_number: int, pattern: int, last: bool) -> int:
        """Run `run_number` from poison `pattern` (or from launch's out); the elements still holding the pattern (0
        where the output is known written)."""
        result, output, clock, backend = self.result, self.guarded_out.tensor, self.clock, self.backend
        grid, block, run_args = self.launch
        with clock.timing("kernel: runs"):
            if result.initialised_by_launch:
                output.copy_(self.out)  # what launch put there (zeros) is what the kernel adds to
            else:
                self.guarded_out.poison(pattern)
            backend.launch(self.kernel, grid, block, signature.to_ctypes(run_args))
        with clock.timing("kernel: output compared"), _faults_raised_as_the_backend_raises_them(backend.synchronize):
            # A small output's verdict is read with the guards' signals below, and so is whether the kernel failed
            # (Backend.pending_fault); only a mismatch (to be described) or a large output is compared on its own,
            # after the kernel is known to have run.
            pending = (compare_later(output, self.expected, self.entry.tolerance, self.describe_ahead,
                                     figures=backend.close_figures) if reads_wait(backend.device) else None)
        with clock.timing("kernel: runs"):
            fault = backend.pending_fault() if pending is not None else None
            if fault is None:
                backend.synchronize()
        with clock.timing("kernel: output compared"):
            comparison = self._compared() if pending is None else None
        with clock.timing("kernel: guards, unwritten output, inputs"):
            # The poison search is skipped where the output is known written (it matches an `expected` without
            # the pattern); a comparison still pending is not known yet, so its poison is searched for beside it.
            written = result.initialised_by_launch or self._written(comparison, run_number)
            held, compared = _after_run(result, run_number, self.guarded_out, self.views, self.inputs, self.sums,
                                        None if written else pattern, pending, self.guarded if last else None, fault,
                                        backend.synchronize,
                                        self.read_beside() if last and self.read_beside is not None else None)
        if pending is not None:
            with clock.timing("kernel: output compared"):
                comparison = pending.finish(compared) or self._compared()
            held = 0 if result.initialised_by_launch or self._written(comparison, run_number) else held
        result.comparisons.append(comparison)
        return held

    def _compared(self) -> Comparison:
        """The output compared on its own (a large one; a mismatch to describe), in one pass where the backend can."""
        return compare(self.guarded_out.tensor, self.expected, self.entry.tolerance, self.backend.close_figures)

    def _written(self, comparison: Comparison | None, run_number: int) -> bool:
        return _written_everywhere(comparison, self.expected, self.entry, self.expected_poison, run_number)


def _track_unwritten(result: KernelRun, run_number: int, output: torch.Tensor, pattern: int, held: int,
                     still_first, shape: tuple):
    """After run one, where its pattern is still held (None if nowhere); after run two, the elements that held both
    runs' patterns, never written, counted into `result` with the first one's coordinates."""
    if result.initialised_by_launch:
        return still_first
    if run_number == 1:
        return poison_where(output, pattern) if held else None
    if held and still_first is not None:
        result.unwritten, first = unwritten_signals(still_first, output).tolist()
        if result.unwritten:
            result.first_unwritten = coords_of(first, shape)
    return still_first


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


def _probe(entry: Entry, book: CheckBook, problem, official_inputs: tuple | None) -> list:
    """probe(torch)'s entries, checked against the probe rules (PROBE_RULES decided here)."""
    probe = []
    if entry.probe is None:
        book.skip(CheckName.PROBE_RULES, "not run: the entry has no valid probe")
    else:
        try:
            probe = entry.probe(torch)
        except Exception as error:
            book.fail(CheckName.SUITES_BUILD, f"probe(torch) raised {type(error).__name__}: {error}")
            book.skip(CheckName.PROBE_RULES, "not run: probe(torch) raised")
        else:
            if problem is not None:
                problems, readings = suite_rules.probe_problems(
                    probe, suite_rules.official_signature(problem, official_inputs),
                    suite_rules.model_accepts(problem))
                where = where_defined(entry.probe, 'probe')
                for text in problems:
                    book.fail(CheckName.PROBE_RULES, f"{where}: {text}")
                if not problems and not readings:
                    book.ran(CheckName.PROBE_RULES, "two entries of CPU tensors under 1 MB: one aligned like T0, "
                                                    "one misaligned")
                elif not problems:
                    book.ran(CheckName.PROBE_RULES, "two entries of CPU tensors as the official Model allows them "
                                                    "(the spec's rules read for this problem: " + "; ".join(readings)
                                                    + ")")
            else:
                book.skip(CheckName.PROBE_RULES, "not run: the official reference did not load")
    return probe


def _cases(entry: Entry, device, book: CheckBook, problem, progress, trial_inputs: TrialInputs | None,
           clock: PhaseClock, official_inputs: tuple | None = None):
    """Yield a Case for each probe entry, then each trial of each suite, checking the suite and probe rules.

    Inputs are yielded on the host; the trial puts them on the device. `progress` hears of each
    trial before it is built, so a worker lost while building names it.
    """
    probe = _probe(entry, book, problem, official_inputs)
    probe = probe if isinstance(probe, (list, tuple)) else []
    for t, item in enumerate(probe):
        progress(f"probe trial {t}")
        try:
            _label, tensors = item
            yield Case("probe", t, len(probe), list(tensors))
        except Exception as error:
            yield Case("probe", t, len(probe), error=error)
    well_formed = _well_formed_suites(entry, book)
    if well_formed is None:
        return
    t0_notes = []
    for suite in well_formed:
        yield from _suite_cases(suite, device, book, problem, progress, trial_inputs, clock, t0_notes)
    if well_formed:
        forms = {}
        for suite_name, _n, builder in well_formed:
            forms.setdefault(builder_form(builder).value, []).append(suite_name)
        book.ran(CheckName.SUITES_BUILD, "every trial built; builders called as " + "; ".join(
            f"{form} ({', '.join(names)})" for form, names in forms.items()))
    if well_formed and problem is not None:
        how = suite_rules.summarise_t0(t0_notes)
        book.ran(CheckName.SUITE_RULES, f"{suite_rules.T0_NAME} has get_inputs()'s shapes and dtypes in all "
                                        f"{suite_rules.T0_TRIALS} trials, its values {how}; "
                                        f"{len(well_formed) - 1} targeted suites; every builder deterministic")


def _well_formed_suites(entry: Entry, book: CheckBook) -> list[tuple] | None:
    """suites()'s (name, n_trials, builder) triples that are well formed, the others failed in `book` with the suite
    list's rules; None where there are none to build (no valid suites, or suites() raised)."""
    if entry.suites is None:
        book.skip(CheckName.SUITE_RULES, "not run: the entry has no valid suites")
        return None
    try:
        suites = list(entry.suites())
    except Exception as error:
        book.fail(CheckName.SUITES_BUILD, f"suites() raised {type(error).__name__}: {error}")
        book.skip(CheckName.SUITE_RULES, "not run: suites() raised")
        return None
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
    return well_formed


def _suite_cases(suite: tuple, device, book: CheckBook, problem, progress, trial_inputs: TrialInputs | None,
                 clock: PhaseClock, t0_notes: list):
    """Yield a Case per trial of one suite, its build checked (deterministic, get_inputs() ran); T0's trials are
    drawn ahead where there are helpers, matched against get_inputs()'s, and settled together after the last
    (`t0_notes` hears how their values matched)."""
    suite_name, n_trials, builder = suite
    is_t0 = suite_name == suite_rules.T0_NAME
    ahead = is_t0 and trial_inputs is not None and problem is not None
    if ahead:
        trial_inputs.start(problem, builder, n_trials)
    where = where_defined(builder, 'the builder')
    t0_matches = []
    for t in range(n_trials):
        case = Case(suite_name, t, n_trials)
        with clock.timing("progress, to the parent"):
            progress(case.where)
        started = time.perf_counter()
        built = trial_inputs.t0(t) if ahead else build_here(builder, t, device, problem if is_t0 else None)
        clock.add(_inputs_phase(trial_inputs if ahead else None), time.perf_counter() - started, started)
        if built.error is not None:
            case.error = built.error
            yield case
            continue
        case.inputs = built.inputs
        if built.difference:
            book.fail(CheckName.SUITE_RULES, f"{where}: {case.where} is not deterministic: built twice, "
                                             f"{built.difference}")
        if built.official_error is not None:
            book.fail(CheckName.OFFICIAL_REFERENCE, f"{case.where}: get_inputs() raised "
                                                    f"{type(built.official_error).__name__}: {built.official_error}")
        if is_t0 and built.official is not None:
            with clock.timing("T0 against get_inputs()"):
                match = suite_rules.t0_trial_match(t, built.inputs, built.official, built.identical)
            for text in match.problems:
                book.fail(CheckName.SUITE_RULES, f"{where}: {text}")
            t0_notes.append(match.how)
            t0_matches.append(match)
        del built
        yield case
        with clock.timing("the trial's inputs freed"):  # the pipeline has let go of the case: the last reference
            del case
    if is_t0 and t0_matches:
        with clock.timing("T0 against get_inputs()"):
            problems, notes = suite_rules.settle_t0(t0_matches)
        for text in problems:
            book.fail(CheckName.SUITE_RULES, f"{where}: {text}")
        t0_notes += notes


def _inputs_phase(trial_inputs: TrialInputs | None) -> str:
    """The phase a trial's inputs took: built here, or waited for from T0's helpers (drawn once for both builds, where
    the builder was given get_inputs()'s draws: harness.gate.trial_inputs)."""
    if trial_inputs is None or not trial_inputs.helping:
        return "inputs built"
    if trial_inputs.last_drawn_once:
        return "inputs from helpers (waiting, drawn once)"
    return "inputs from helpers (waiting)"


def count_cases(entry: Entry) -> int:
    """How many trials the gate will run (probe entries included), for the progress bar."""
    total = 0
    for key, count in ((entry.probe, lambda: len(entry.probe(torch))),
                       (entry.suites, lambda: sum(n for _name, n, _builder in entry.suites()))):
        if key is not None:
            try:
                total += count()
            except Exception:
                pass
    return total


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


# ---------------------------------------------------------------- one trial, as a table of checks


@dataclass
class GateContext:
    """What every trial of one substrate shares."""

    entry: Entry
    backend: Backend
    book: CheckBook
    official: object = None  # the official Model, on the device
    model_state: list = field(default_factory=list)  # the entry's model_state tensors, as the Model was built
    kernel: LoadedKernel | None = None
    second: suite_safety.SecondReferences | None = None
    trivial: suite_safety.TrivialKernels | None = None
    fault: str = ""  # a CUDA fault that lost the context: nothing more runs
    trials_on_device: int = 0  # trials whose inputs reached the device
    clock: PhaseClock = field(default_factory=PhaseClock)


@dataclass
class TrialState:
    """One trial in flight: its host inputs, their guarded device copies, what has been found."""

    case: Case
    suite: SuiteResult
    inputs: list = field(default_factory=list)  # the trial's inputs, then the entry's model_state tensors
    guarded: list = field(default_factory=list)  # GuardedTensor or None per input
    views: list = field(default_factory=list)  # what `ref` and the kernel see: every input, the model state too
    sums: list = field(default_factory=list)  # checksum of each input as built
    expected: object = None
    float64: suite_safety.DeviceFloat64 | None = None  # the float64 route's result, run ahead on the device
    run: KernelRun | None = None
    ok: bool | None = True  # None: the trial is neither passed nor failed again (its failure is already in the suite)

    def fail(self, ctx: GateContext, check: CheckName, detail: str, why: str = "") -> None:
        ctx.book.fail(check, f"{self.case.where}{why}: {detail}")
        self.ok = False

    @property
    def model_views(self) -> list:
        """What the official Model (and every second way of computing it) sees: the trial's own inputs."""
        return self.views[:len(self.case.inputs)]


def _restore_inputs(state: TrialState) -> None:
    """Put back any input a reference changed in place (the kernel must see the trial as built)."""
    for g, original, expected_sum in zip(state.guarded, state.inputs, state.sums):
        if g is not None and tensor_checksum(g.tensor) != expected_sum:
            g.tensor.copy_(original)


def _float64_ahead(ctx: GateContext, state: TrialState) -> bool:
    if ctx.second is not None:
        state.float64 = ctx.second.ahead_of_official(state.model_views)
    return True


def _official_output(ctx: GateContext, state: TrialState) -> bool:
    try:
        with torch.no_grad():
            expected = ctx.official(*state.model_views)
    except Exception as error:
        if out_of_device_memory(error):
            raise  # the machine's limit (FITS_DEVICE_MEMORY, run again alone beside other jobs), not the Model's
        ctx.book.fail(CheckName.OFFICIAL_REFERENCE, f"{state.case.where}: the official Model raised "
                                                    f"{type(error).__name__}: {error}")
        state.suite.failures.append(f"trial {state.case.t}: official reference failed")
        state.ok = False
        return False
    if isinstance(expected, torch.Tensor) and any(g is not None and _overlap(expected, g.tensor)
                                                  for g in state.guarded):
        expected = expected.clone()  # a Model that returns (a view of) its input: keep it apart from the input
    state.expected = expected
    _restore_inputs(state)
    return True


def _own_ref(ctx: GateContext, state: TrialState) -> bool:
    if ctx.entry.ref is None:
        return True
    try:
        with torch.no_grad():
            own = compare(ctx.entry.ref(*state.views), state.expected, ctx.entry.tolerance,
                          ctx.backend.close_figures)
    except Exception as error:
        if out_of_device_memory(error):
            raise  # as in _official_output
        state.fail(ctx, CheckName.REF_MATCHES_OFFICIAL, f"ref raised {type(error).__name__}: {error}")
        _restore_inputs(state)
        return True
    _restore_inputs(state)
    if own.ok:
        ctx.book.ran(CheckName.REF_MATCHES_OFFICIAL)
    else:
        state.fail(ctx, CheckName.REF_MATCHES_OFFICIAL, own.describe())
    return True


def _second_references(ctx: GateContext, state: TrialState) -> bool:
    if ctx.second is not None and isinstance(state.expected, torch.Tensor):
        ctx.second.submit(state.case.where, state.case.inputs, state.expected, device_inputs=state.model_views,
                          float64=state.float64, suite=state.case.suite)
    state.float64 = None
    return True


def _trivial_kernels(ctx: GateContext, state: TrialState) -> bool:
    if state.case.suite != "probe":
        ctx.trivial.observe(state.case.suite, state.case.t, state.model_views, state.expected)
    return True


def _kernel_runs(ctx: GateContext, state: TrialState) -> bool:
    if ctx.kernel is None or ctx.entry.launch is None:
        state.ok = None  # the trial says nothing of a kernel that did not run: neither passed nor failed
        return False
    where = state.case.where
    try:
        state.run = run_kernel(ctx.entry, ctx.kernel, ctx.backend, state.inputs, state.expected, state.guarded,
                               input_sums=state.sums, clock=ctx.clock)
        if state.run.out_of_memory is not None:  # not launch's fault: _run_trial says it as the machine's limit
            raise state.run.out_of_memory
    except KernelFault as error:
        if not error.poisons_context:
            ctx.book.fail(CheckName.RUNS_TO_COMPLETION, f"{where}: {error}")
            state.suite.failures.append(f"trial {state.case.t}: kernel fault")
            state.ok = None  # counted as a failure already
            return False
        ctx.fault = f"{where}: {error}"
    except RuntimeError as error:
        # Launch's own errors are caught in run_kernel; a RuntimeError naming CUDA after the kernel
        # started is torch meeting a context the kernel broke.
        if "CUDA" not in str(error) or out_of_device_memory(error):
            raise
        ctx.fault = f"{where}: {error}"
    if ctx.fault:
        ctx.book.fail(CheckName.RUNS_TO_COMPLETION, ctx.fault + " (the CUDA context is lost: no further trials run)")
        state.suite.failures.append(f"trial {state.case.t}: kernel fault")
        state.ok = None
        return False
    if state.run.argument_problems:
        ctx.book.fail(CheckName.LAUNCH_ARGUMENTS, f"{where}: " + "; ".join(state.run.argument_problems))
        state.suite.failures.append(f"trial {state.case.t}: launch arguments do not fit the kernel")
        state.ok = None
        return False
    ctx.book.ran(CheckName.LAUNCH_ARGUMENTS)
    ctx.book.ran(CheckName.RUNS_TO_COMPLETION)
    return True


def _writes_in_bounds(ctx: GateContext, state: TrialState) -> bool:
    if state.run.guard_damage:
        state.fail(ctx, CheckName.WRITES_IN_BOUNDS, "; ".join(state.run.guard_damage))
    else:
        ctx.book.ran(CheckName.WRITES_IN_BOUNDS)
    return True


def _inputs_unchanged(ctx: GateContext, state: TrialState) -> bool:
    if state.run.changed_inputs:
        state.fail(ctx, CheckName.INPUTS_UNCHANGED, "; ".join(state.run.changed_inputs))
    else:
        ctx.book.ran(CheckName.INPUTS_UNCHANGED)
    return True


def _output_fully_written(ctx: GateContext, state: TrialState) -> bool:
    run = state.run
    if run.unwritten:
        state.fail(ctx, CheckName.OUTPUT_FULLY_WRITTEN, f"{run.unwritten} of {run.out_elements} output elements "
                                                        f"never written (first at {run.first_unwritten})")
    elif run.initialised_by_launch:
        how = ("launch initialises out ('accumulates')" if ctx.entry.accumulates else
               "launch initialises out itself (two launch calls over differently poisoned memory gave it the "
               "same bytes)")
        ctx.book.ran(CheckName.OUTPUT_FULLY_WRITTEN, f"not applicable: {how}; the kernel runs on that content, so a "
                                                     f"slot it misses keeps it and fails output_matches")
    else:
        ctx.book.ran(CheckName.OUTPUT_FULLY_WRITTEN)
    return True


def _out_initialised(ctx: GateContext, state: TrialState) -> bool:
    if not ctx.entry.accumulates:
        ctx.book.ran(CheckName.OUT_INITIALISED, "not applicable: the entry does not accumulate into out")
    elif state.run.uninitialised_accumulator:
        state.fail(ctx, CheckName.OUT_INITIALISED, "launch leaves out uninitialised: the kernel adds into whatever the "
                                                   "allocation held (two launch calls over differently poisoned "
                                                   "memory gave out different bytes); create it with torch.zeros")
    else:
        ctx.book.ran(CheckName.OUT_INITIALISED, "launch initialises the out the kernel accumulates into")
    return True


def _output_matches(ctx: GateContext, state: TrialState) -> bool:
    for comparison in state.run.comparisons:
        _record_comparison(state.suite, comparison)
        if not comparison.ok:
            state.fail(ctx, CheckName.OUTPUT_MATCHES, comparison.describe(), f" ({ctx.entry.tolerance.describe()})")
            return True
    ctx.book.ran(CheckName.OUTPUT_MATCHES)
    return True


@dataclass(frozen=True)
class TrialCheck:
    name: str
    run: object  # (GateContext, TrialState) -> bool: False ends the trial's checks here


# In order. Each returns False when the checks after it have nothing to look at.
TRIAL_CHECKS = (
    # Before the official output: the trial's device memory peaks at its inputs and the float64 route together.
    TrialCheck("official Model in float64, ahead", _float64_ahead),
    TrialCheck("the official output", _official_output),
    TrialCheck("the candidate's ref", _own_ref),
    TrialCheck("second references", _second_references),
    TrialCheck("kernels that compute nothing", _trivial_kernels),
    TrialCheck("the kernel's two runs", _kernel_runs),
    TrialCheck("guard bands", _writes_in_bounds),
    TrialCheck("inputs", _inputs_unchanged),
    TrialCheck("unwritten output", _output_fully_written),
    TrialCheck("accumulator initialised", _out_initialised),
    TrialCheck("output values", _output_matches),
)


def _record_comparison(suite: SuiteResult, comparison: Comparison) -> None:
    suite.mismatched_elements = max(suite.mismatched_elements, comparison.mismatches)
    if comparison.max_abs_error is not None:
        suite.worst_abs_error = max(suite.worst_abs_error or 0.0, comparison.max_abs_error)
        suite.worst_rel_error = max(suite.worst_rel_error or 0.0, comparison.max_rel_error)


def _device_memory_failure(ctx: GateContext, where: str, error: Exception) -> None:
    free, total = ctx.backend.memory_info()
    state = f"; {free / 2**30:.1f} GiB of {total / 2**30:.1f} GiB free afterwards" if total else ""
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    ctx.book.fail(CheckName.FITS_DEVICE_MEMORY, f"{where}: {first}{state} (a limit of this machine, not a fault "
                                                f"of the kernel)")


def _run_trial(ctx: GateContext, case: Case, suite: SuiteResult) -> None:
    state = TrialState(case, suite, inputs=[*case.inputs, *ctx.model_state])
    try:
        device = ctx.backend.device
        with ctx.clock.timing("inputs to the device"):
            state.guarded = [GuardedTensor.copy_of(x, device, INPUT_GUARD_BYTES[i % len(INPUT_GUARD_BYTES)])
                             if isinstance(x, torch.Tensor) else None for i, x in enumerate(state.inputs)]
            state.views = [g.tensor if g is not None else x for g, x in zip(state.guarded, state.inputs)]
            ctx.trials_on_device += 1
            state.sums = [tensor_checksum(v) if isinstance(v, torch.Tensor) else None for v in state.views]
        for check in TRIAL_CHECKS:
            with ctx.clock.timing(check.name):
                if not check.run(ctx, state):
                    break
    except Exception as error:
        if not out_of_device_memory(error):
            raise
        del state.guarded, state.views, state.expected, state.float64, state.run
        _device_memory_failure(ctx, case.where, error)
        suite.failures.append(f"trial {case.t}: out of device memory")
        return
    if state.ok:
        suite.passed += 1
    elif state.ok is False:
        suite.failures.append(f"trial {case.t}")


def _load_official(entry: Entry, search: ProblemSearch, device, book: CheckBook):
    if entry.kb_file is None:
        book.skip(CheckName.OFFICIAL_REFERENCE, "not run: the entry has no valid kb_file")
        return None, None
    try:
        problem = load_problem(entry.kb_file, search)
        official = problem.build_model(device)
    except ProblemError as error:
        book.fail(CheckName.OFFICIAL_REFERENCE, str(error))
        return None, None
    except Exception as error:
        if out_of_device_memory(error):  # its weights did not fit beside other jobs: run again alone
            book.fail(CheckName.FITS_DEVICE_MEMORY, f"building the official Model: {str(error).splitlines()[0]} (a "
                                                    f"limit of this machine, not a fault of the kernel)")
            book.skip(CheckName.OFFICIAL_REFERENCE, "not run: the official Model did not fit the device's memory")
            return None, None
        book.fail(CheckName.OFFICIAL_REFERENCE, f"building the official Model failed: {type(error).__name__}: {error}")
        return None, None
    book.ran(CheckName.OFFICIAL_REFERENCE, f"{problem.path} loaded KernelBench-style; its Model ran on every trial")
    return problem, official


def _with_model_state(ctx: GateContext) -> Entry:
    """The entry, its model_state tensors taken from the official Model into ctx; where the Model lacks one,
    `registration` fails and the entry comes back without ref and launch, which would be called wrongly."""
    entry = ctx.entry
    if ctx.official is None or not entry.model_state:
        return entry
    try:
        ctx.model_state = model_state(ctx.official, entry.model_state)
    except ProblemError as error:
        ctx.book.fail(CheckName.REGISTRATION, f"{entry.name}: {error}")
        return dataclasses.replace(entry, ref=None, launch=None)
    return entry


def _compile(entry: Entry, backend: Backend, book: CheckBook, report: SubstrateReport):
    if entry.cuda is None or entry.kernel_name is None:
        book.skip(CheckName.CUDA_SOURCE, "not run: the entry has no valid cuda and kernel_name")
        book.skip(CheckName.COMPILE, "not run: the entry has no valid cuda and kernel_name")
        return None
    source = cuda_source_check(entry.cuda, entry.kernel_name, f"{entry.name}.cu", entry.locate_cuda_line)
    (book.ran if source.ok else book.fail)(source.check, source.detail)
    try:
        kernel = backend.load(entry.cuda, entry.kernel_name, f"{entry.name}.cu", entry.locate_cuda_line)
    except CompileError as error:
        book.fail(CheckName.COMPILE, str(error))
        return None
    except KernelFault as error:
        book.fail(CheckName.COMPILE, f"loading the compiled kernel failed: {error}")
        return None
    report.compile_options = list(kernel.options)
    book.ran(CheckName.COMPILE, f"{kernel.compiler} for {kernel.target}{' (from the compile cache)' if kernel.from_cache else ''}")
    return kernel


def _conclude_suites(ctx: GateContext, entry: Entry, suites: dict) -> None:
    """The checks of the suites as a whole: no false kill and can fail, once every trial has been seen."""
    book = ctx.book
    if ctx.second is not None:
        with ctx.clock.timing("second references (waiting at the end)"):
            collected = ctx.second.collect()
        for result in collected:
            if result.agreement.ok:
                book.ran(CheckName.NO_FALSE_KILL)
            else:
                book.fail(CheckName.NO_FALSE_KILL,
                          f"{result.where}: the official Model {result.label} disagrees with it beyond the tolerance "
                          f"({entry.tolerance.describe()}): {result.agreement.describe()}; two correct "
                          f"implementations can differ here, so this suite would reject a correct kernel")
        if ctx.fault:
            book.skip(CheckName.NO_FALSE_KILL, "not run: " + ctx.fault)
        elif ctx.second.submitted:
            checked = [label for label in ctx.second.labels() if label not in ctx.second.unavailable]
            note = (f"the official Model {' and '.join(checked)} agrees with it within {entry.tolerance.describe()} "
                    f"on every trial" if checked else "no second way of computing the official output could run")
            note += "".join(f"; {label} it could not run ({why})" for label, why in ctx.second.unavailable.items())
            if ctx.second.on_device:
                note += f"; in float64 on the device in {ctx.second.on_device} of {ctx.second.submitted} trials"
                note += "".join(f"; on the CPU in {count} ({why})" for why, count in ctx.second.off_device.items())
            if ctx.second.cpu_route_sampled_out:
                note += (f"; on the CPU in float32 in all but {ctx.second.cpu_route_sampled_out} trials (a suite's "
                         f"trials of {suite_safety.CPU_ROUTE_SAMPLE_FROM_BYTES // 2**20} MiB or more after its "
                         f"first, and of {suite_safety.CPU_ROUTE_SAMPLE_SAME_SHAPES_FROM_BYTES // 2**20} MiB or more "
                         f"after its first of the same shapes: further draws of it, each checked in float64)")
            if ctx.second.compared_on_host:
                note += (f"; compared on the host in {ctx.second.compared_on_host} (the device's memory too full for "
                         f"the result)")
            if ctx.second.device_float64_error:
                note += f"; in float64 on the CPU only (on the device: {ctx.second.device_float64_error})"
            book.ran(CheckName.NO_FALSE_KILL, note)
    if ctx.fault:
        book.skip(CheckName.SUITES_CAN_FAIL, "not run: " + ctx.fault)
    elif ctx.trivial is not None and ctx.trivial.observed:
        problems = ctx.trivial.problems()
        for text in problems:
            book.fail(CheckName.SUITES_CAN_FAIL, text)
        if not problems:
            book.ran(CheckName.SUITES_CAN_FAIL, ctx.trivial.summary())
    for check in (CheckName.NO_FALSE_KILL, CheckName.SUITES_CAN_FAIL):
        book.skip(check, "not run: no suite trial had an official output" if ctx.official is not None
                  else "not run: the official reference did not load")


def gate_entry(entry: Entry, backend: Backend, checks_so_far: list[CheckResult], progress=lambda step: None,
               search: ProblemSearch | None = None, publish=lambda report: None,
               trial_inputs: TrialInputs | None = None, official_inputs: tuple | None = None,
               official_output: tuple | None = None, trace: bool = False) -> SubstrateReport:
    """Run every check of one substrate on `backend`; `checks_so_far` holds the import checks.

    `publish` is handed the report as it stands after each trial (undecided checks marked PENDING),
    so a worker that dies mid-suite loses nothing it found. `trial_inputs` builds T0's trials ahead
    of need in processes of their own (KernelBench-sized get_inputs() take seconds each on the CPU).
    `official_inputs`: get_inputs()'s suite_rules.portable_signature, and `official_output` the official
    output's on it (foresight.official_output_signature), where discovery made them. `trace`: the report keeps every
    timed call (SubstrateReport.phase_trace), not only each phase's sum.
    """
    started = time.perf_counter()
    search = search or ProblemSearch.for_candidate(entry.file)
    book = CheckBook.of(checks_so_far)
    report = SubstrateReport(name=entry.name, file=str(entry.file), kb_file=entry.kb_file or "",
                             source_sha256=entry.source_sha256(search))
    device = backend.device
    ctx = GateContext(entry, backend, book, clock=PhaseClock(trace=trace))
    problem, ctx.official = _load_official(entry, search, device, book)
    entry = ctx.entry = _with_model_state(ctx)
    progress("compile")
    ctx.kernel = _compile(entry, backend, book, report)
    if ctx.official is not None:
        foresight = OutputForesight.from_discovery(ctx.official, official_inputs, official_output)
        ctx.second = suite_safety.SecondReferences(ctx.official, device, entry.tolerance, ctx.clock, foresight,
                                                   backend.close_figures)
        ctx.trivial = suite_safety.TrivialKernels(entry.tolerance)
    if entry.ref is None:
        book.skip(CheckName.REF_MATCHES_OFFICIAL, "not run: the entry has no valid ref")
    if entry.launch is None:
        for check in (CheckName.LAUNCH_ARGUMENTS, CheckName.RUNS_TO_COMPLETION, *KERNEL_OUTPUT_CHECKS):
            book.skip(check, "not run: the entry has no valid launch")

    suites: dict[str, SuiteResult] = {}

    def snapshot() -> SubstrateReport:
        report.checks = book.results(undecided=PENDING)
        report.suites = list(suites.values())
        report.seconds = time.perf_counter() - started
        return report

    try:
        for case in _cases(entry, device, book, problem, progress, trial_inputs, ctx.clock, official_inputs):
            suite = suites.setdefault(case.suite, SuiteResult(case.suite, case.n_trials))
            if case.error is not None and out_of_device_memory(case.error):  # a builder drawing on the device
                _device_memory_failure(ctx, f"{case.where} (building its inputs)", case.error)
                suite.failures.append(f"trial {case.t}: out of device memory")
                continue
            if case.error is not None:
                book.fail(CheckName.SUITES_BUILD, f"{case.where}: building inputs raised "
                                                  f"{type(case.error).__name__}: {case.error}")
                suite.failures.append(f"trial {case.t}: inputs could not be built")
                continue
            book.ran(CheckName.SUITES_BUILD)
            if ctx.official is not None:
                _run_trial(ctx, case, suite)
            del case
            with ctx.clock.timing("the report so far, to the parent"):
                publish(snapshot())
            if ctx.fault:
                break
    finally:
        if trial_inputs is not None:
            trial_inputs.close()
    if ctx.official is not None:
        _conclude_suites(ctx, entry, suites)
    return _concluded(ctx, report, suites, started)


def _concluded(ctx: GateContext, report: SubstrateReport, suites: dict[str, SuiteResult],
               started: float) -> SubstrateReport:
    """The report once every trial ran (or the run stopped): the memory checks passed where nothing failed them,
    every check no trial reached skipped saying why, the peak memory and the phases' time."""
    book = ctx.book
    if not book.decided(CheckName.FITS_DEVICE_MEMORY) and ctx.trials_on_device:
        book.ran(CheckName.FITS_DEVICE_MEMORY, f"all {ctx.trials_on_device} trials fit the device's memory")
    if not book.decided(CheckName.FITS_HOST_MEMORY) and ctx.trials_on_device:
        # Decided here only when it passes: a worker the host's out-of-memory killer ends never gets here,
        # and run_gate_job reports that death under this check (harness.gate.worker.classify_death).
        book.ran(CheckName.FITS_HOST_MEMORY, "the worker ran to its end: the host's memory sufficed")
    why = "not run: " + (ctx.fault or ("the kernel did not compile" if ctx.kernel is None and ctx.official is not None
                                       else "the official reference did not load" if ctx.official is None
                                       else "no trial reached it"))
    for check in PIPELINE_CHECKS:
        book.skip(check, why)
    report.checks = book.results()
    report.suites = list(suites.values())
    report.seconds = time.perf_counter() - started
    report.peak_device_bytes = ctx.backend.peak_memory_bytes()
    report.phase_seconds = ctx.clock.seconds()
    report.phase_calls = ctx.clock.calls()
    report.phase_trace = ctx.clock.trace()
    return report

