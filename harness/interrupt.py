"""Ctrl-C and SIGTERM for the gate and the campaign: stop taking work, end every child process, say so once.

Python's own KeyboardInterrupt reaches the main thread only, while the work runs in threads and in
worker processes: the threads would go on taking jobs and start fresh workers for those the signal
killed. Here the signal sets an event the job queues read, and every descendant process (workers,
the fork server, T0 helpers, sanitizer processes) is killed at once; the command then reports what
finished before the signal and exits EXIT_INTERRUPTED. A second signal while that happens ends the
process at once.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command Ctrl-C ended
# A second signal sooner than this after the first is the same stop, not a second Ctrl-C (no one presses twice in
# half a second; timeout -s INT sends the command one signal and its process group, the command included, another).
SAME_STOP_SECONDS = 0.5
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def descendants(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Every process below `pid` (children, their children, ...), read from /proc; [] where there is no /proc."""
    children: dict[int, list[int]] = {}
    try:
        entries = list(proc.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after its last ')'. A zombie
        # (ended, not yet reaped by its parent) holds nothing and is left out.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit() and fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, frontier = [], [pid]
    while frontier:
        below = children.get(frontier.pop(), [])
        found += below
        frontier += below
    return found


def _resource_tracker() -> int | None:
    """The pid of this process's multiprocessing resource tracker, if it has one."""
    from multiprocessing import resource_tracker

    return getattr(getattr(resource_tracker, "_resource_tracker", None), "_pid", None)


def kill_descendants(pid: int | None = None) -> int:
    """SIGKILL every descendant of `pid` (this process by default); how many were signalled. Processes that
    escape the scan (forked meanwhile) end on their own: each watches the process that started it (harness.watch).

    This process's resource tracker is spared: killed, it would be started again by the shared memory this process
    lets go of as it exits, and the new one, which never saw those segments, prints a KeyError traceback for each;
    alive, it unlinks whatever the killed processes left in /dev/shm when this process exits."""
    killed, spared = 0, _resource_tracker() if pid is None else None
    for child in descendants(os.getpid() if pid is None else pid):
        if child == spared:
            continue
        try:
            os.kill(child, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
    return killed


@dataclass
class Interruption:
    """Whether, and by which signal, the command was asked to stop. `stopped()` is what job queues read."""

    signal_name: str = ""
    event: threading.Event = field(default_factory=threading.Event)
    first_at: float = 0.0  # time.monotonic() of the first signal

    def stopped(self) -> bool:
        return self.event.is_set()

    def handle(self, signum: int, _frame=None) -> None:
        now = time.monotonic()
        if self.event.is_set():
            if now - self.first_at < SAME_STOP_SECONDS:  # the same stop sent twice: timeout(1) signals the command,
                return                                    # then its whole process group
            kill_descendants()  # a second Ctrl-C: the user will not wait for the report
            os._exit(EXIT_INTERRUPTED)
        self.signal_name, self.first_at = signal.Signals(signum).name, now
        self.event.set()
        kill_descendants()

    def line(self, done: int, total: int, what: str) -> str:
        """The one line a command prints when it was interrupted: `done` of `total` `what` (a plural noun)."""
        return (f"interrupted by {self.signal_name}: {done} of {total} {what} finished before it (above); the other "
                f"{total - done} did not run")


@contextmanager
def caught(interruption: Interruption, raising: bool = False):
    """SIGINT and SIGTERM handled by `interruption` while the block runs (from the main thread only: signal handlers
    cannot be set elsewhere, and there the block runs as it would without this). `raising`: the first signal also
    raises KeyboardInterrupt in the main thread, for a command whose main thread waits on work that only unwinding
    stops (the campaign: its report is made as the interrupt unwinds, every child killed first)."""
    if threading.current_thread() is not threading.main_thread():
        yield interruption
        return
    handler = functools.partial(_handle_and_raise, interruption) if raising else interruption.handle
    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield interruption
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _handle_and_raise(interruption: Interruption, signum: int, _frame) -> None:
    """Interruption.handle (every child killed now, the same stop sent twice ignored, a second Ctrl-C later the end),
    then, for the first signal only, KeyboardInterrupt: killed here, not after the main thread unwinds, since a
    worker busy in a checker (~40 s a mutant at KernelBench's real sizes) or a thread waiting on it held the report
    back, and a signal sent to this process alone (kill -INT, a batch system's SIGTERM) reaches no child at all."""
    first = not interruption.stopped()
    interruption.handle(signum)
    if first:
        raise KeyboardInterrupt(interruption.signal_name)


def die_quietly_on_interrupt() -> None:
    """In a worker process: a Ctrl-C at the terminal (sent to the whole process group) ends it at once, without the
    KeyboardInterrupt traceback; its parent, which catches the signal, reports the interruption."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
