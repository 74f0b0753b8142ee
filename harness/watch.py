"""A process that ends itself once the process it works for is gone: its parent, or an ancestor further up.

A parent stopped by a signal (SIGTERM, SIGKILL, a closed terminal) cannot kill its workers, and an orphaned
worker would go on using a GPU for as long as its mutants or trials last. No harness import here: workers,
T0 helpers, cluster items and the oracles' programs all use it.
"""

from __future__ import annotations

import os
import threading
import time

PARENT_CHECK_SECONDS = 1.0


def watch_parent(parent_pid: int) -> None:
    """Exit this process as soon as its parent (`parent_pid`) is gone, from a thread of its own."""
    _exit_when(lambda: os.getppid() != parent_pid)


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, under another user
    return False


def watch_process(pid: int) -> None:
    """Exit this process as soon as process `pid` (an ancestor further up than the parent: the gate above
    compute-sanitizer, say) is gone, from a thread of its own."""
    _exit_when(lambda: _process_gone(pid))


def _exit_when(gone) -> None:
    def watch() -> None:
        while True:
            time.sleep(PARENT_CHECK_SECONDS)
            if gone():
                os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def watch_starter(starter_pid: int) -> None:
    """Exit this process as soon as the process that asked for it (`starter_pid`) is gone, or its parent
    changes: a worker forked by the fork server has the server as its parent, and the server exits when the
    starter does; either going ends the worker."""
    parent_at_start = os.getppid()
    _exit_when(lambda: os.getppid() != parent_at_start or _process_gone(starter_pid))
