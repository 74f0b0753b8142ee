"""Workers leave when their parent does: a parent stopped by a signal cannot kill them itself."""

import multiprocessing
import os
import time

from harness.processes import _run_watched


def _sleep_long() -> None:
    time.sleep(60)


def test_a_busy_worker_whose_parent_is_gone_exits_within_seconds():
    context = multiprocessing.get_context("spawn")
    # A parent pid that is not the worker's parent: the watch sees its parent "gone" at its first look.
    worker = context.Process(target=_run_watched, args=(_sleep_long, os.getpid() + 4_000_000))
    started = time.monotonic()
    worker.start()
    worker.join(30)
    assert worker.exitcode == 3
    assert time.monotonic() - started < 20


def test_a_worker_whose_parent_lives_runs_to_the_end():
    context = multiprocessing.get_context("spawn")
    worker = context.Process(target=_run_watched, args=(time.sleep, os.getpid(), 2.5))
    worker.start()
    worker.join(30)
    assert worker.exitcode == 0


def _watch_then_sleep(pid: int, seconds: float) -> None:
    from harness.watch import watch_process

    watch_process(pid)
    time.sleep(seconds)


def test_a_sanitized_program_whose_gate_is_gone_exits_within_seconds():
    # Under compute-sanitizer the program's parent is the tool, not the gate: it watches the gate's pid.
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    context = multiprocessing.get_context("spawn")
    watcher = context.Process(target=_watch_then_sleep, args=(gone.pid, 60))
    started = time.monotonic()
    watcher.start()
    watcher.join(30)
    assert watcher.exitcode == 3 and time.monotonic() - started < 20
    alive = context.Process(target=_watch_then_sleep, args=(os.getpid(), 2.5))
    alive.start()
    alive.join(30)
    assert alive.exitcode == 0
