"""Which substrates `gate.py --jobs N` gates at once: as many as the device's memory holds.

Each job reserves an estimate of the device memory it needs (`estimate_bytes`: a few times its
largest T0 trial, which KernelBench sizes to gigabytes) before its worker starts, and waits while
the reservations of the jobs running would exceed the device's memory. A job whose estimate
exceeds the whole device runs alone. A job that still runs out of memory beside others is run
again alone (`MemoryBudget.alone`), so no candidate is rejected because other jobs held the memory;
one that runs out alone has met a limit of the machine, and its report says so.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections import Counter
from contextlib import contextmanager

# A trial holds its inputs, the official output, launch's out and the guarded output on the device;
# before its official output, its float64 route where that fits (suite_safety.float64_fits_device:
# five times the input for an elementwise problem), or else the official outputs of up to
# SecondReferences.PENDING earlier trials wait there for their second references: for the level-1
# problems whose output is as large as their input, six times the input. (A convolution's output can
# be eight times its input: this estimate is low for those.)
TRIAL_COPIES = 6
# The CUDA context, the allocator's rounding, small suites, and a small trial's float64 route on the
# device (at most suite_safety.DEVICE_FLOAT64_MAX_BYTES, 1 GiB).
HEADROOM_BYTES = 2 * 2**30


# `--jobs auto` on a GPU: measured on the H200 (16 cores), the gate over the 28 took 19.4 s at 4 jobs, 16.8-18.5 s at
# 8 and 17.8-18.5 s at 16 (MEASUREMENTS.md); past 8 the sanitizer stage beside the jobs sets the pace. Half the
# cores: each job's worker has T0's helpers and the sanitizers beside it.
AUTO_GPU_JOBS = 8
# On the CPU backend a kernel's blocks already run on every core, but a job's Python (its inputs, references and
# checks) runs on one: on 2 cores the gate over the 28 took 27.4-28.0 s at 2 jobs against 33.3-33.6 s at 1.
AUTO_CPU_JOBS = 2


# A T0 this large is drawn ahead by helper processes that a gate worker forks before its backend exists
# (harness.gate.trial_inputs, which reads it from here: the gate's own process never imports torch).
FORKED_HELPERS_FROM_BYTES = 16 * 2**20


def auto_jobs(backend: str, cpu_cores: int) -> int:
    """Substrates gated at once when `--jobs` is auto: on a GPU half the cores, at most AUTO_GPU_JOBS; on the CPU
    backend AUTO_CPU_JOBS, at most one a core."""
    if backend == "cpu":
        return max(1, min(AUTO_CPU_JOBS, cpu_cores))
    return max(1, min(AUTO_GPU_JOBS, cpu_cores // 2))


def estimate_bytes(t0_bytes: int) -> int:
    return TRIAL_COPIES * t0_bytes + HEADROOM_BYTES


def device_memory_bytes(backend: str) -> int | None:
    """The memory of the device jobs share: the first visible GPU's (nvidia-smi, no CUDA context in this
    process), or this machine's RAM for the CPU backend; None when it cannot be read (no limit then)."""
    if backend == "cpu":
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    command = ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"]
    if visible:
        command += ["-i", visible]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=20, check=True).stdout
        return int(out.split()[0]) * 2**20
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


class MemoryBudget:
    """Reservations of device memory by concurrent jobs; thread-safe."""

    def __init__(self, capacity: int | None):
        self.capacity = capacity
        self._used = 0
        self._running = 0
        self._exclusive = False
        self._starts = 0
        self._condition = threading.Condition()

    def _fits(self, need: int) -> bool:
        if self._exclusive:
            return False
        if self._running == 0 or self.capacity is None:
            return True
        return self._used + need <= self.capacity

    @contextmanager
    def reserve(self, need: int):
        """Hold `need` bytes while the block runs; yields a function telling whether another job ran meanwhile."""
        with self._condition:
            self._condition.wait_for(lambda: self._fits(need))
            self._used += need
            self._running += 1
            self._starts += 1
            mine, company = self._starts, self._running > 1
        try:
            # Jobs that start later are counted by _starts: they shared the device too.
            yield lambda: company or self._starts > mine
        finally:
            with self._condition:
                self._used -= need
                self._running -= 1
                self._condition.notify_all()

    @contextmanager
    def alone(self):
        """Run the block with no other job on the device (waiting for those running to end)."""
        with self._condition:
            self._condition.wait_for(lambda: self._running == 0 and not self._exclusive)
            self._exclusive = True
            self._running = 1
        try:
            yield
        finally:
            with self._condition:
                self._exclusive = False
                self._running = 0
                self._condition.notify_all()


def may_reuse_worker(t0_bytes: int) -> bool:
    """Whether a substrate may be gated by a worker that already gated another of its file: only one whose T0
    the worker builds itself (its helpers are forked before the backend exists, and a kept worker has one)."""
    return t0_bytes < FORKED_HELPERS_FROM_BYTES


def next_job(pending_keys: list[str], slot_key: str | None, active: Counter) -> int | None:
    """Which pending job (its position in `pending_keys`, each job's worker key: its candidate file) a free slot
    takes, or None when none is worth a new worker.

    A slot keeps to the file its worker imported while that file has jobs (its worker serves them without a new
    process or CUDA context). Otherwise it starts a worker for the file with the most pending jobs for each slot
    that would then work on it, so that the last file to finish is not one slot's alone; of equals, the one
    fewest slots work on, then the earlier. It joins a file another slot works on only for two jobs or more:
    that slot would gate a last one as soon as a new worker could start. Pure.
    """
    if slot_key is not None and slot_key in pending_keys:
        return pending_keys.index(slot_key)
    pending = Counter(pending_keys)
    worth = [key for key in pending if active[key] == 0 or pending[key] >= 2]
    if not worth:
        return None
    best = max(worth, key=lambda key: (pending[key] / (active[key] + 1), -active[key], -pending_keys.index(key)))
    return pending_keys.index(best)


class JobQueue:
    """The gate's jobs not yet started, taken by slots (threads) by `next_job`; thread-safe.

    `key(job)` names the worker that can serve it: its candidate file, or a key of its own for a job that needs
    a fresh worker whatever ran before (a T0 drawn by helpers, `may_reuse_worker`)."""

    def __init__(self, jobs: list[tuple[str, str]], key=lambda job: job[0], stopped=lambda: False):
        self._pending = list(enumerate(jobs))  # (position in the run, (file, name))
        self._key = key
        self._stopped = stopped  # true once the run is interrupted: no job is taken after it
        self._active: Counter = Counter()
        self._lock = threading.Lock()

    def take(self, slot_key: str | None) -> tuple[int, tuple[str, str]] | None:
        """The next job for a slot whose worker serves `slot_key` (None: it has none), or None when nothing is
        left for it; the slot is counted busy with the job's key until `done`."""
        with self._lock:
            if not self._pending or self._stopped():
                return None
            position = next_job([self._key(job) for _, job in self._pending], slot_key, self._active)
            if position is None:
                return None
            taken = self._pending.pop(position)
            self._active[self._key(taken[1])] += 1
            return taken

    def done(self, job: tuple[str, str]) -> None:
        with self._lock:
            self._active[self._key(job)] -= 1
