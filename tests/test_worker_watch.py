"""Workers leave when their parent does: a parent stopped by a signal cannot kill them itself."""

import multiprocessing
import os
import time

from harness.worker import _run_watched


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
