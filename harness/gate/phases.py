"""Where a gate's time goes: seconds per phase, summed over trials, safe to add to from several threads.

A KernelBench-sized gate spends minutes; the report keeps this breakdown (`phase_seconds`) so a
slow gate can be told apart into drawing inputs, moving them, the references and the kernel's runs.
Phases that run in a background thread overlap the ones of the worker's main thread: they do not
add up to the gate's wall time. Each phase's calls and its longest call (`calls`) tell a cost paid
once (a first call's imports or the device's lazily loaded kernels) from one paid on every trial. Traced
(`PhaseClock(trace=True)`: `python -m harness.benchmarks.gate --trace`), every call is kept too, with its thread
and its start, so a slow call can be placed on the gate's timeline.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager


TRACE_LIMIT = 50_000  # calls a traced clock keeps: a KernelBench gate makes a few thousand, a campaign's far more


class PhaseClock:
    def __init__(self, trace: bool = False):
        self._phases: dict[str, list] = {}  # phase -> [seconds, calls, longest call's seconds]
        self._lock = threading.Lock()
        self._origin = time.perf_counter()
        self._calls: list[dict] | None = [] if trace else None

    def add(self, phase: str, seconds: float, started: float | None = None) -> None:
        with self._lock:
            total = self._phases.setdefault(phase, [0.0, 0, 0.0])
            total[0] += seconds
            total[1] += 1
            total[2] = max(total[2], seconds)
            if self._calls is not None and len(self._calls) < TRACE_LIMIT:
                start = (time.perf_counter() - seconds if started is None else started) - self._origin
                self._calls.append({"phase": phase, "thread": threading.current_thread().name,
                                    "start": round(start, 6), "seconds": round(seconds, 6)})

    @contextmanager
    def timing(self, phase: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(phase, time.perf_counter() - started, started)

    def trace(self) -> list[dict]:
        """Every call so far in the order they ended ({phase, thread, start: s from the clock's making, seconds});
        [] where the clock does not trace."""
        with self._lock:
            return list(self._calls or [])

    def _largest_first(self) -> list[tuple[str, list]]:
        with self._lock:
            return sorted(((k, list(v)) for k, v in self._phases.items()), key=lambda kv: -kv[1][0])

    def seconds(self) -> dict[str, float]:
        """Every phase's seconds so far, largest first, to the millisecond."""
        return {k: round(seconds, 3) for k, (seconds, _calls, _longest) in self._largest_first()}

    def calls(self) -> dict[str, dict]:
        """Every phase's calls so far and its longest call's seconds, in seconds()'s order."""
        return {k: {"calls": calls, "longest": round(longest, 3)} for k, (_s, calls, longest) in self._largest_first()}


class PrefixedClock:
    """A PhaseClock seen through a prefix: each phase timed on it is the clock's `prefix + phase` (a worker's parts
    of one phase named as parts of another)."""

    def __init__(self, clock: PhaseClock, prefix: str):
        self.clock, self.prefix = clock, prefix

    def add(self, phase: str, seconds: float, started: float | None = None) -> None:
        self.clock.add(self.prefix + phase, seconds, started)

    def timing(self, phase: str):
        return self.clock.timing(self.prefix + phase)
