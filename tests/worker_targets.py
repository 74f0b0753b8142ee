"""Functions run inside spawned workers by tests/test_worker.py (a spawned child imports them by name)."""

import ctypes
import os
import time


def sleeps(conn):
    conn.send(("step", "sleeping"))
    time.sleep(60)


def sleeps_in_a_limited_step(conn):
    """A step with its own limit of 1 s (a --matrix cell's), a message inside it, then a step without one."""
    conn.send(("step", "a quick step", 1.0))
    time.sleep(0.5)
    conn.send(("cell", "within the step's limit"))
    time.sleep(2.0)  # past the step's own limit: the worker is killed here
    conn.send(("step", "an ordinary step"))
    time.sleep(60)


def sleeps_after_a_limited_step(conn):
    conn.send(("step", "a quick step", 1.0))
    conn.send(("step", "an ordinary step"))
    time.sleep(2.0)  # past the last step's limit, within the worker's
    conn.send(("done", 42))


def exits(conn):
    conn.send(("step", "exiting"))
    os._exit(3)


def segfaults(conn):
    conn.send(("step", "reading address 0"))
    ctypes.string_at(0)


def answers(conn):
    conn.send(("step", "answering"))
    conn.send(("done", 42))


def answers_then_serves(conn):
    """Work a spare does ahead (WorkerStarter.warm): says so, then reads its job as the fork server's worker does."""
    conn.send(("warmed",))
    target, args = conn.recv()
    target(*args, conn)


def marks_ready(directory):
    """A worker's preparation: leaves <pid>.ready in directory."""
    from pathlib import Path

    Path(directory, f"{os.getpid()}.ready").write_text("")


def reports_pid(conn):
    conn.send(("done", os.getpid()))


def reports_environment(conn):
    conn.send(("done", os.environ.get("WORKER_TEST_VARIABLE"), os.environ.get("WORKER_TEST_ADDED"), os.getcwd(),
               "torch" in __import__("sys").modules))


def counts_imports_of_a_poisoned_allocation(conn):
    import sys

    import torch

    from harness.gate.checks.guards import poisoned_allocations

    before = set(sys.modules)
    with poisoned_allocations(0xA5):
        torch.empty(4)
    conn.send(("done", sorted(set(sys.modules) - before)))


def exits_with_bytes_unread(conn):
    """Asks for a reply, leaves it unread and exits: its end of the socket pair resets the parent's."""
    conn.send(("step", "waiting for a reply it never reads"))
    time.sleep(1.0)
    os._exit(5)
