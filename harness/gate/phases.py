"""Where a gate's time goes: seconds per phase, summed over trials, safe to add to from several threads.

A KernelBench-sized gate spends minutes; the report keeps this breakdown (`phase_seconds`) so a
slow gate can be told apart into drawing inputs, moving them, the references and the kernel's runs.
Phases that run in a background thread overlap the ones of the worker's main thread: they do not
add up to the gate's wall time. Each phase's calls and its longest call (`calls`) tell a cost paid
once (a first call's imports or the device's lazily loaded kernels) from one paid on every trial.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager


class PhaseClock:
    def __init__(self):
        self._seconds: dict[str, float] = {}
        self._calls: dict[str, int] = {}
        self._longest: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, phase: str, seconds: float) -> None:
        with self._lock:
            self._seconds[phase] = self._seconds.get(phase, 0.0) + seconds
            self._calls[phase] = self._calls.get(phase, 0) + 1
            self._longest[phase] = max(self._longest.get(phase, 0.0), seconds)

    @contextmanager
    def timing(self, phase: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(phase, time.perf_counter() - started)

    def seconds(self) -> dict[str, float]:
        """Every phase's seconds so far, largest first, to the millisecond."""
        with self._lock:
            return {k: round(v, 3) for k, v in sorted(self._seconds.items(), key=lambda kv: -kv[1])}

    def calls(self) -> dict[str, dict]:
        """Every phase's calls so far and its longest call's seconds, in seconds()'s order."""
        with self._lock:
            return {k: {"calls": self._calls[k], "longest": round(self._longest[k], 3)}
                    for k, _v in sorted(self._seconds.items(), key=lambda kv: -kv[1])}
