"""Turns at the device's memory for large-index processes that build their trials side by side.

Several substrates' large trials run at once (harness.engine.large_index, LARGE_AT_ONCE), each in its own
process, and a trial of 2^31 elements takes tens of GiB. Checked one by one against the free memory, two
processes could both see room for one trial, and whichever then ran out was judged again alone, after the
others, one substrate at a time. Here a process takes its turn (an exclusive lock on a file the parent names)
before it reads the free memory, builds its trial and reserves the rest of what the trial will take; the next
process then reads the memory with all of that held. One whose trial does not fit waits, in its turn, for the
others to give memory back, where their giving it all back would make room; else it says it is short at once.
"""

from __future__ import annotations

import fcntl
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

POLL_SECONDS = 0.2
HEARTBEAT_SECONDS = 5.0  # a waiting process says so this often: its parent hears it as alive


@contextmanager
def memory_turn(lock_path: str | None, heartbeat: Callable[[float], None] = lambda waited: None,
                clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
    """This process's turn at the device's memory while the block runs (no turn to take where `lock_path` is None:
    a process alone on the device). While another holds the turn, `heartbeat(seconds waited)` is called every
    HEARTBEAT_SECONDS."""
    if lock_path is None:
        yield
        return
    with open(lock_path, "a") as lock:
        started = beat = clock()
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if clock() - beat >= HEARTBEAT_SECONDS:
                    heartbeat(clock() - started)
                    beat = clock()
                sleep(POLL_SECONDS)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass(frozen=True)
class MemoryWait:
    """How a wait for device memory ended: the free and total bytes last read, the seconds waited, why it gave up
    ('' where the memory came), and whether the device is too small for the need whatever the others give back
    (the same process alone on the device would give up too)."""

    free: int
    total: int
    seconds: float = 0.0
    gave_up: str = ""
    beyond_device: bool = False

    @property
    def fits(self) -> bool:
        return self.total == 0 or not self.gave_up


def wait_for_memory(need: int, memory_info: Callable[[], tuple[int, int]], held_here: Callable[[], int],
                    deadline_seconds: float, heartbeat: Callable[[float, int], None] = lambda waited, free: None,
                    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
                    ) -> MemoryWait:
    """Until `need` bytes of device memory are free, within `deadline_seconds`; called in the process's turn, so
    the memory others give back is not taken by a process that came later.

    `memory_info`: (free, total) bytes, (0, 0) where the backend cannot tell (nothing is waited for). `held_here`:
    the bytes this process holds itself (its allocator's cache), which giving back would not free for it. It gives
    up at once where the others' memory, all of it given back, would still leave too little; `heartbeat(seconds
    waited, free bytes)` is called every HEARTBEAT_SECONDS while it waits."""
    started = clock()
    free, total = memory_info()
    if total == 0 or need <= free:
        return MemoryWait(free, total)
    beat = started
    while True:
        held_by_others = max(0, total - free - held_here())
        waited = clock() - started
        if need > free + held_by_others:
            return MemoryWait(free, total, waited, "the device holds too little even with every other process's "
                                                   "memory given back", beyond_device=True)
        if waited >= deadline_seconds:
            return MemoryWait(free, total, waited, f"no room came within {deadline_seconds:g} s" if deadline_seconds
                              else "not waited for: no other large-index process runs beside it")
        if clock() - beat >= HEARTBEAT_SECONDS:
            heartbeat(waited, free)
            beat = clock()
        sleep(POLL_SECONDS)
        free, total = memory_info()
        if need <= free:
            return MemoryWait(free, total, clock() - started)
