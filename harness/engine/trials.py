"""A campaign worker's trials: every suite trial's inputs and official output, built once, kept on the device where
they fit the worker's share of its memory, the rest parked in host memory and brought in one at a time.

Every mutant runs every trial it needs, so a worker keeps its trials where the kernels run. At KernelBench's real sizes
five T0 trials do not fit an 80 GiB H100 beside the runs (kb_avgpool2d's are 16 GiB each), although the gate admits
the substrate there: a trial past the worker's share is parked, and copied back to the device (a fresh copy, as built)
when a kernel runs on it. Parking changes where a trial waits, never what a kernel is given; only the memory around
its buffers differs, so a mutant's access outside every allocation may fault where it read a neighbour, or the
reverse (harness.report_diff.told_apart_by_memory): a detection either way.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

# Of the worker's share of the device, this many times its largest trial is left free beside the trials it keeps:
# a parked trial brought in, the kernel's guarded copies of the inputs and its output, a checker's own trial and
# reference.
RESERVED_TRIALS = 4


@dataclass
class Trial:
    suite: str
    t: int
    inputs: list
    expected: object
    # Whether the official output holds poison pattern one, and two, somewhere (run_kernel's expected_poison).
    expected_poison: tuple[bool, bool] | None = None

    @property
    def where(self) -> str:
        return f"{self.suite} trial {self.t}"


def trial_tensors(trial: Trial) -> list:
    import torch

    return [x for x in (*trial.inputs, trial.expected) if isinstance(x, torch.Tensor)]


def trial_bytes(trial: Trial) -> int:
    """What a trial moves: the bytes of its tensor inputs and of the official output."""
    return sum(x.numel() * x.element_size() for x in trial_tensors(trial))


def trial_checksum(trial: Trial) -> tuple[int, ...]:
    """A sum of each tensor of a trial (inputs and official output), taken where it lives.

    The bytes are summed as 64-bit words (wrapping), the last few as bytes: one read of the trial,
    about 5 ms per 100 MB on this project's 2-core CPU (summing single bytes took 50 times that), so
    cheap enough to take for every trial when a worker starts and again when a kill is found. A
    stray write that changes a trial changes its sums, except by a coincidence no fault pattern makes.
    """
    return trial_checksums([trial])[0]


def trial_checksums(trials: list[Trial]) -> list[tuple[int, ...]]:
    """trial_checksum of each trial, read from the device in one transfer where they share one (a wait for the
    device each, not one a tensor: a checked campaign sums every trial after each fault the check foresees)."""
    from harness.gate.checks.guards import read_together

    parts = [trial_checksum_parts(trial) for trial in trials]
    read = iter(read_together([part for group in parts for part in group]))
    return [checksum_of([next(read) for _ in group]) for group in parts]


def trial_checksum_parts(trial: Trial) -> list:
    """trial_checksum's terms on the device, two int64 a tensor (guards.checksum_parts): read with other signals."""
    from harness.gate.checks.guards import checksum_parts

    return [checksum_parts(x) for x in trial_tensors(trial)]


def checksum_of(values: list[list[int]]) -> tuple[int, ...]:
    """trial_checksum from the values of trial_checksum_parts."""
    return tuple(sum(pair) for pair in values)


def input_sums(trial: Trial, checksum: tuple[int, ...]) -> list:
    """Each input's part of `trial_checksum` (None for a non-tensor input): what run_kernel compares the
    inputs' guarded copies with after each run, so a mutant's trial need not sum its fresh copies again."""
    import torch

    sums = iter(checksum)
    return [next(sums) if isinstance(x, torch.Tensor) else None for x in trial.inputs]


def parks(kept_bytes: int, trial_size: int, largest: int, share_bytes: int | None) -> bool:
    """Whether a trial of `trial_size` bytes is parked, where the trials kept on the device so far hold `kept_bytes`
    and the largest trial is `largest` bytes: past the worker's `share_bytes` of the device less RESERVED_TRIALS of
    the largest. `share_bytes` None: everything is kept (the CPU backend; a share not known). Pure."""
    return share_bytes is not None and kept_bytes + trial_size > share_bytes - RESERVED_TRIALS * largest


class HostMemoryShort(Exception):
    """A trial past the worker's share of the device that the host's memory has no room for either."""


def host_short_for(size: int) -> str:
    """Why the host cannot take `size` more bytes of parked trials: what would be left available under the share of
    its memory a worker leaves (harness.gate.trial_inputs.HOST_RESERVE_SHARE, as beside the checkers' kept draws;
    three workers on an H100 parking kb_argmax's five 8 GiB trials each would take 120 GiB of a 128 GiB host);
    '' where it can, or where the system does not say."""
    from harness.gate.trial_inputs import HOST_RESERVE_SHARE, keeps_host_reserve

    kept = keeps_host_reserve(size)
    if kept is None or kept[0]:
        return ""
    _kept, left, total = kept
    return (f"parked, it would leave {max(0, left) / 2**30:.1f} GiB of the host's {total / 2**30:.0f} GiB available, "
            f"under the {HOST_RESERVE_SHARE:.0%} kept for draws and other workers")


class Parking:
    """Where each trial waits, decided as the trials are made (the largest, T0's, first): kept on the device while
    they fit the worker's share (`parks`), else moved to host memory; `parked` holds the indices of those moved."""

    def __init__(self, share_bytes: int | None, clock, host_short=None):
        self.share_bytes, self.clock = share_bytes, clock  # clock: a PhaseClock, timing the moves
        # why the host has no room for a trial's bytes ('' where it has): host_short_for unless given
        self.host_short = host_short or host_short_for
        self.kept_bytes = self.largest = 0
        self.parked: set[int] = set()

    def place(self, i: int, trial: Trial) -> None:
        """Trial i, just made on the device: kept there, or its tensors replaced by host copies; HostMemoryShort
        where the host has no room for them either."""
        size = trial_bytes(trial)
        self.largest = max(self.largest, size)
        if not parks(self.kept_bytes, size, self.largest, self.share_bytes):
            self.kept_bytes += size
            return
        if why := self.host_short(size):
            raise HostMemoryShort(f"{trial.where} ({size / 2**30:.1f} GiB) is past the worker's "
                                  f"{self.share_bytes / 2**30:.1f} GiB share of the device, and the host's memory has "
                                  f"no room for it: {why}")
        with self.clock.timing("trials and references: parked in host memory"):
            parked = _moved(trial, "cpu")
        trial.inputs, trial.expected = parked.inputs, parked.expected
        self.parked.add(i)


def parked_note(name: str, parked: int, total: int, share_bytes: int) -> str:
    """The line a campaign prints once for a substrate whose worker parked trials (its ("parked", ...) message)."""
    return (f"campaign: {name}: {parked} of its {total} trials wait in host memory, copied to the device when a kernel "
            f"runs on them (slower, the same verdicts but where an access outside every allocation meets other "
            f"memory): beside room for its runs they do not fit the worker's "
            f"{share_bytes / 2**30:.1f} GiB share of the device (--worker-memory)")


def _moved(trial: Trial, device) -> Trial:
    """A copy of `trial` whose tensors are on `device`: fresh copies even where they are there already (a kernel's
    stray write must not reach the parked trial)."""
    import torch

    def move(x):
        return x.to(device, copy=True) if isinstance(x, torch.Tensor) else x

    return Trial(trial.suite, trial.t, [move(x) for x in trial.inputs], move(trial.expected), trial.expected_poison)


class Trials:
    """The worker's trials by index: `trials[i]` is trial i on the device, kept there or, if parked, brought in as a
    fresh copy that stays until another parked trial is asked for (its tensors then dropped, the copy's fields
    emptied: nothing may keep one trial while asking for another). `checksums` are each trial's as built."""

    def __init__(self, built: list[Trial], parked: set[int], checksums: list[tuple[int, ...]], device,
                 clock=None):
        from harness.gate.phases import PhaseClock

        self.built, self.parked, self.checksums, self.device = built, parked, checksums, device
        self.clock = clock if clock is not None else PhaseClock()  # a PhaseClock: what the copies in took
        self._brought: tuple[int, Trial] | None = None

    def __len__(self) -> int:
        return len(self.built)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, i: int) -> Trial:
        if i not in self.parked:
            return self.built[i]
        if self._brought is not None and self._brought[0] == i:
            return self._brought[1]
        self.evict()
        with self.clock.timing("kernel: a parked trial brought to the device"):
            trial = _moved(self.built[i], self.device)
        self._brought = (i, trial)
        return trial

    @contextlib.contextmanager
    def timed_on(self, clock):
        """Parked trials brought in within the block timed on `clock` (the unmutated runs' own parts, say)."""
        before, self.clock = self.clock, clock
        try:
            yield
        finally:
            self.clock = before

    def evict(self) -> None:
        """The parked trial brought in dropped, its memory the device's again."""
        if self._brought is not None:
            _i, trial = self._brought
            trial.inputs, trial.expected = [], None
            self._brought = None

    def held(self) -> list[int]:
        """The trials on the device now: those kept there, and the parked one brought in."""
        brought = [self._brought[0]] if self._brought is not None else []
        return [i for i in range(len(self)) if i not in self.parked] + brought
