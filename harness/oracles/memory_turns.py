"""Turns at the device's memory for large-index processes that build their trials side by side.

Several substrates' large trials run at once (harness.engine.large_index, LARGE_AT_ONCE), each in its own
process, and a trial of 2^31 elements takes tens of GiB. Checked one by one against the free memory, two
processes could both see room for one trial, and whichever then ran out was judged again alone, after the
others, one substrate at a time. Here a process builds its trial in its turn (an exclusive lock on a file the
parent names): it reads the free memory, builds the trial and reserves the rest of what the trial will take, so
the next process reads the memory with all of that held.

One whose trial does not fit lets the turn go and waits outside it, its need written in the waiters' ledger beside
the lock, for the others to give memory back (where their giving it all back would make room; else it says it is
short at once). Waiting in the turn made a convoy: every process behind it waited too, those whose trials fitted
among them (the eight backward pads of the 28 waited 8 to 41 s each for a turn on an H100). A later process whose
trial fits goes before the waiters whose trials do not, until the longest waiter has waited BACKFILL_SECONDS: from
then on what the running processes give back is the waiters', first come first served.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

POLL_SECONDS = 0.2
HEARTBEAT_SECONDS = 5.0  # a waiting process says so this often: its parent hears it as alive
BACKFILL_SECONDS = 10.0  # how long the longest waiter for room lets later processes whose trials fit go first


def _take(lock, heartbeat: Callable[[float], None], clock, sleep) -> float:
    """The turn's lock taken, polling (a waiting process says so every HEARTBEAT_SECONDS); the seconds it took."""
    started = beat = clock()
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return clock() - started
        except BlockingIOError:
            if clock() - beat >= HEARTBEAT_SECONDS:
                heartbeat(clock() - started)
                beat = clock()
            sleep(POLL_SECONDS)


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
    turn_seconds: float = 0.0  # of `seconds`, those spent waiting for the turn's lock (the rest: for room)

    @property
    def fits(self) -> bool:
        return self.total == 0 or not self.gave_up


def wait_for_memory(need: int, memory_info: Callable[[], tuple[int, int]], held_here: Callable[[], int],
                    deadline_seconds: float, heartbeat: Callable[[float, int], None] = lambda waited, free: None,
                    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
                    ) -> MemoryWait:
    """Until `need` bytes of device memory are free, within `deadline_seconds`: a process alone on the device
    (turn_with_room waits so beside others).

    `memory_info`: (free, total) bytes, (0, 0) where the backend cannot tell (nothing is waited for). `held_here`:
    the bytes this process holds itself (its allocator's cache), which giving back would not free for it. It gives
    up at once where the others' memory, all of it given back, would still leave too little; `heartbeat(seconds
    waited, free bytes)` is called every HEARTBEAT_SECONDS while it waits."""
    started = beat = clock()
    free, total = memory_info()
    if total == 0 or need <= free:
        return MemoryWait(free, total)
    while True:
        ended = _wait_ended(need, free, total, held_here, clock() - started, deadline_seconds, 0.0)
        if ended is not None:
            return ended
        if clock() - beat >= HEARTBEAT_SECONDS:
            heartbeat(clock() - started, free)
            beat = clock()
        sleep(POLL_SECONDS)
        free, total = memory_info()
        if total == 0 or need <= free:
            return MemoryWait(free, total, clock() - started)


def goes_now(need: int, free: int, earlier: list[tuple[int, float]], now: float,
             backfill_seconds: float = BACKFILL_SECONDS) -> bool:
    """Whether a process whose trial needs `need` bytes builds it now, `free` bytes being free, beside the waiters
    that came before it (`earlier`: each one's need and since when it waits): where its trial fits, no earlier
    waiter's fits too (that one's turn is first), and none has waited past `backfill_seconds` (from then on, what
    the running processes give back is the waiters')."""
    return need <= free and all(need_before > free and now - since <= backfill_seconds
                                for need_before, since in earlier)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        pass
    return True


STALE_SECONDS = 60.0  # a waiter's entry not written again for this long is dropped (one that left it behind)


class WaitersLedger:
    """The processes waiting for room, beside the turn's lock: {pid: {"need": bytes, "since": clock, "seen": clock}},
    read and written only in the turn. A waiter writes its entry again at each poll (`seen`); one whose process died
    (a hang's kill, an interrupt) or that has not been seen for STALE_SECONDS is dropped as the ledger is read."""

    def __init__(self, lock_path: str, alive: Callable[[int], bool] = _alive):
        self.path = Path(lock_path).with_name(Path(lock_path).name + ".waiting.json")
        self.alive = alive

    def read(self, now: float | None = None) -> dict[int, dict]:
        try:
            found = json.loads(self.path.read_text())
        except (OSError, ValueError):  # none yet (written whole, by rename): the waiters write themselves again
            return {}
        return {int(pid): w for pid, w in found.items() if self.alive(int(pid))
                and (now is None or now - w.get("seen", w["since"]) <= STALE_SECONDS)}

    def write(self, waiters: dict[int, dict]) -> None:
        written = self.path.with_name(self.path.name + f".{os.getpid()}.{threading.get_ident()}")
        written.write_text(json.dumps({str(pid): w for pid, w in waiters.items()}))
        os.replace(written, self.path)


@contextmanager
def turn_with_room(lock_path: str | None, need: int, memory_info: Callable[[], tuple[int, int]],
                   held_here: Callable[[], int], deadline_seconds: float,
                   heartbeat: Callable[[float, int | None], None] = lambda waited, free: None,
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                   me: int | None = None, alive: Callable[[int], bool] = _alive,
                   backfill_seconds: float = BACKFILL_SECONDS):
    """This process's turn at the device's memory, taken once `need` bytes are free for it (goes_now), or not at all
    where it gives up (as wait_for_memory does: the device too small whatever the others give back, or no room
    within `deadline_seconds`): yields the MemoryWait, the turn held while the block runs where it fits; later
    processes pass the waiters for `backfill_seconds` (goes_now). The deadline counts the time it waited first in
    line, as a process once waited in its turn: not the time it queued behind earlier waiters, each of which goes or
    gives up at its own deadline. Alone (`lock_path` None) it is wait_for_memory's. `heartbeat(seconds waited, free
    bytes or None while it waits for the lock)` is called every HEARTBEAT_SECONDS while it waits."""
    if lock_path is None:
        yield wait_for_memory(need, memory_info, held_here, deadline_seconds, heartbeat, clock, sleep)
        return
    me = os.getpid() if me is None else me
    ledger, started = WaitersLedger(lock_path, alive), clock()
    beat, since, turn_seconds, first_seconds, polled = started, None, 0.0, 0.0, None
    with open(lock_path, "a") as lock:
        while True:
            took = _take(lock, lambda waited: heartbeat(clock() - started, None), clock, sleep)
            turn_seconds += took
            if polled is not None and polled[1]:  # first in line at the last poll: it has waited so since
                first_seconds += clock() - polled[0] - took
            free, total = memory_info()
            waiters = ledger.read(clock())
            waiters.pop(me, None)
            earlier = [(w["need"], w["since"]) for w in waiters.values() if since is None or w["since"] < since]
            ended = _wait_ended(need, free, total, held_here, first_seconds, deadline_seconds, turn_seconds)
            if total == 0 or goes_now(need, free, earlier, clock(), backfill_seconds) or ended is not None:
                ledger.write(waiters)
                try:
                    yield (dataclasses.replace(ended, seconds=clock() - started) if ended is not None
                           else MemoryWait(free, total, clock() - started, turn_seconds=turn_seconds))
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
                return
            since = clock() if since is None else since
            ledger.write({**waiters, me: {"need": need, "since": since, "seen": clock()}})
            fcntl.flock(lock, fcntl.LOCK_UN)
            polled = (clock(), not earlier)
            if clock() - beat >= HEARTBEAT_SECONDS:
                heartbeat(clock() - started, free)
                beat = clock()
            sleep(POLL_SECONDS)


def _wait_ended(need: int, free: int, total: int, held_here: Callable[[], int], waited: float,
                deadline_seconds: float, turn_seconds: float) -> MemoryWait | None:
    """The MemoryWait of a process that gives up waiting for room (as wait_for_memory gives up), or None where it
    waits on (or has room)."""
    if total == 0 or need <= free:
        return None
    if need > free + max(0, total - free - held_here()):
        return MemoryWait(free, total, waited, "the device holds too little even with every other process's memory "
                                               "given back", beyond_device=True, turn_seconds=turn_seconds)
    if waited >= deadline_seconds:
        return MemoryWait(free, total, waited, f"no room came within {deadline_seconds:g} s" if deadline_seconds
                          else "not waited for: no other large-index process runs beside it",
                          turn_seconds=turn_seconds)
    return None
