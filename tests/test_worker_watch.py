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


def _sigint_default(pid: int) -> bool:
    """Whether SIGINT would kill the process: neither handled (Python's KeyboardInterrupt) nor ignored, as /proc says.

    A worker forked by the fork server starts with SIGINT ignored (the server's own setting) and then with Python's
    handler, before its start sets the default: a signal sent in either window does not show the behaviour tested."""
    import signal

    bit = 1 << (signal.SIGINT - 1)
    masks = {}
    for line in open(f"/proc/{pid}/status"):
        name, _, value = line.partition(":")
        if name in ("SigCgt", "SigIgn"):
            masks[name] = int(value.split()[0], 16)
    return not (masks.get("SigCgt", 0) | masks.get("SigIgn", 0)) & bit


def test_a_worker_waiting_for_its_job_ends_quietly_on_ctrl_c():
    # Ctrl-C reaches the whole process group: a worker started ahead, still waiting for its job, ends at once (killed
    # by the signal), not with a KeyboardInterrupt traceback (exit code 1) beside its parent's own report.
    import signal

    from harness.processes import start_worker

    worker = start_worker()
    deadline = time.monotonic() + 30
    while not _sigint_default(worker.process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sigint_default(worker.process.pid), "the worker never set SIGINT's default action within 30 s"
    os.kill(worker.process.pid, signal.SIGINT)
    worker.process.join(10)
    assert worker.process.exitcode == -signal.SIGINT
    worker.stop()
