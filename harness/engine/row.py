"""A --matrix row's trials queued on the device one after another and read in two transfers.

A matrix runs every trial of every mutant. One trial at a time, each run's findings are a read, and a read waits for
a GPU that a dozen workers share: about forty waits a row over the 28 family substrates. Queued, each trial's run one
is launched after the trial before, its signals (the address check's state, the guard bands, the inputs' sums, the
poison left, the comparison and its first mismatches) made on the device as the run ends, before the next run reuses
the buffers, and every signal is read once, after the last trial. Most of a matrix's cells fail at run one in a way
run two cannot change (harness.gate.pipeline.decided_by_first_run: 85% of the 28's); the trials left undecided then
make their run two, queued and read likewise, run one's poison kept for the unwritten-output check. A trial alone
(run_kernel with stop_when_decided) makes the same runs.

What a signal cannot describe without the memory it came from (which guard bytes, which input element changed) is
found by running that trial again alone (harness.gate.pipeline.run_kernel): a deterministic kernel does the same
again, and the cell is the one the trial run alone makes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch

from harness.backends import Backend, LoadedKernel
from harness.compiler import signature
from harness.gate.checks.compare import coords_of, compare_later
from harness.gate.checks.guards import (POISON_BYTES, GuardedBuffers, checksum_parts, poison_where, read_together,
                                        unwritten_signals)
from harness.gate.pipeline import KernelRun, LaunchRecord, decided_by_first_run, guarded_copy, reads_wait


# The largest output a queued trial compares on the device: its float64 temporaries (a few times 8 bytes an element)
# are made and freed trial by trial, so 16 Mi elements hold at most about half a GiB a worker at once. The 28 family
# substrates' largest T0 output is 13.8 Mi elements; a larger output's trial runs alone.
QUEUED_MAX_ELEMENTS = 1 << 24


def queues_rows(backend: Backend) -> bool:
    """Whether a row's trials can be queued on `backend`: its reads wait for a device (a GPU's), and every launch's
    fault is a signal read with the others (the address check's state, Backend.pending_fault), not a synchronize."""
    return reads_wait(backend.device) and bool(getattr(backend, "check_addresses", False))


BOTH_RUNS, RUN_ONE, RUN_TWO = (1, 2), (1,), (2,)


@dataclass
class QueuedTrial:
    """A trial's runs (`runs`: both, run one, or run two after a run one queued before), launched; their signals in
    `signals`, in the order trial_run reads them."""

    shape: tuple
    initialised: bool           # launch fills out itself: no poison, nothing left unwritten
    tensors: list[int]          # the inputs that are tensors: each one's sums are a signal after each run
    guarded_inputs: int         # their guard bands, read after the last run
    runs: tuple = BOTH_RUNS
    faults: list = field(default_factory=list)       # each run's PendingFault
    comparisons: list = field(default_factory=list)  # each run's PendingComparison
    signals: list = field(default_factory=list)
    beside: int = 0             # how many of the caller's signals come last
    still_first: torch.Tensor | None = None  # RUN_ONE: where out still holds pattern one, for run two's unwritten
    held: int = 0               # RUN_ONE, once read: whether out still holds pattern one somewhere (0 or 1)

    def decided(self, run: KernelRun) -> bool:
        """Whether run one, read (trial_run's), already gives the trial's first failure: no run two to make."""
        return decided_by_first_run(run, 0 if self.initialised else self.held)


def queue_trial(entry, kernel: LoadedKernel, backend: Backend, inputs: list, expected: torch.Tensor,
                launched: LaunchRecord | None, buffers: GuardedBuffers,
                beside: Callable[[], list] | None = None, runs: tuple = BOTH_RUNS,
                first: "QueuedTrial | None" = None) -> QueuedTrial | None:
    """A trial's `runs` (`inputs`, `expected`) launched after whatever is queued, with their signals, and `beside`'s
    (a caller's 1-d int64 signals, made after the last run); None, with nothing launched, where the trial cannot be
    queued (launch's record unknown, arguments this kernel refuses, an output compare_later does not take): the
    caller runs it alone. RUN_TWO takes `first`, the trial's RUN_ONE queued before, for the poison run one left."""
    if (launched is None or tuple(expected.shape) != tuple(launched.shape) or expected.dtype != launched.dtype
            or not 0 < expected.numel() <= QUEUED_MAX_ELEMENTS):
        return None
    guarded = [guarded_copy(buffers, i, x, backend.device) if isinstance(x, torch.Tensor) else None
               for i, x in enumerate(inputs)]
    views = [g.tensor if g is not None else x for g, x in zip(guarded, inputs)]
    out = buffers.take("out", launched.shape, launched.dtype, backend.device)
    arguments = launched.arguments(views, out.tensor)
    if signature.check_arguments(kernel.params, arguments):
        return None
    tensors = [i for i, view in enumerate(views) if isinstance(view, torch.Tensor)]
    queued = QueuedTrial(tuple(launched.shape), launched.initial is not None, tensors,
                         sum(g is not None for g in guarded), runs)
    still_first = first.still_first if first is not None else None
    for run_number in runs:
        pattern = POISON_BYTES[run_number - 1]
        if queued.initialised:
            out.tensor.copy_(launched.initial)
        else:
            out.poison(pattern)
        backend.launch(kernel, launched.grid, launched.block, signature.to_ctypes(arguments))
        fault = backend.pending_fault()
        queued.faults.append(fault)
        queued.comparisons.append(compare_later(out.tensor, expected, entry.tolerance, describe=True,
                                                max_elements=QUEUED_MAX_ELEMENTS))
        # The check's state adds up until it is read: each run's is copied as it ends.
        queued.signals += [fault.signals.clone(), out.bands_changed(), *(checksum_parts(views[i]) for i in tensors),
                           queued.comparisons[-1].signals]
        if not queued.initialised and run_number == 1:
            still_first = poison_where(out.tensor, pattern)
            if runs == RUN_ONE:  # kept for run two, should the trial need one
                queued.still_first = still_first
                queued.signals.append(still_first.any().to(torch.int64).reshape(1))
        elif not queued.initialised:
            queued.signals.append(unwritten_signals(still_first, out.tensor))
    queued.signals += [g.bands_changed() for g in guarded if g is not None]
    made = beside() if beside is not None else []
    queued.signals += made
    queued.beside = len(made)
    return queued


def read_row(queued: list[QueuedTrial]) -> Iterator[list[int]]:
    """Every queued trial's signals' values, in order, from one transfer (it waits for every queued run)."""
    return iter(read_together([signal for trial in queued for signal in trial.signals]))


def trial_run(queued: QueuedTrial, values: Iterator[list[int]], sums: list,
              first: KernelRun | None = None) -> KernelRun | None:
    """The KernelRun run_kernel would have made of a queued trial, from its signals' values (`values`, read_row's,
    advanced past this trial's); None where a guard band or an input changed (which bytes, which element: the memory
    is gone), for the caller to run the trial alone. A fault the address check foresaw is raised as run_kernel raises
    it (Backend.pending_fault), and the values after it are not read: the row ends there. RUN_TWO's values go on
    `first`, run one's KernelRun (trial_run's of the trial's RUN_ONE)."""
    result = first or KernelRun(out_elements=math.prod(queued.shape), initialised_by_launch=queued.initialised)
    described = True
    for run_number, fault, pending in zip(queued.runs, queued.faults, queued.comparisons):
        fault.read(next(values))
        described = not any(next(values)) and described
        for i in queued.tensors:
            described = sum(next(values)) == sums[i] and described
        result.comparisons.append(pending.finish(next(values)))
        if not queued.initialised and queued.runs == RUN_ONE:
            (queued.held,) = next(values)
        elif not queued.initialised and run_number == 2:
            result.unwritten, first_unwritten = next(values)
            result.first_unwritten = coords_of(first_unwritten, queued.shape) if result.unwritten else ()
    for _ in range(queued.guarded_inputs):
        described = not any(next(values)) and described
    result.beside = [next(values) for _ in range(queued.beside)]
    return result if described else None
