"""Functions run inside spawned workers by tests/test_worker.py (a spawned child imports them by name)."""

import ctypes
import os
import time


def sleeps(conn):
    conn.send(("step", "sleeping"))
    time.sleep(60)


def exits(conn):
    conn.send(("step", "exiting"))
    os._exit(3)


def segfaults(conn):
    conn.send(("step", "reading address 0"))
    ctypes.string_at(0)


def answers(conn):
    conn.send(("step", "answering"))
    conn.send(("done", 42))
