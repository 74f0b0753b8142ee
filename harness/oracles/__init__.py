"""Oracles that judge a kernel by more than its output values: compute-sanitizer's tools (sanitizer, and the
program under them, sanitized_run), and the program of a trial past 2^31 elements (large_index_run). A
campaign's survivors are judged by both in harness.engine.judge."""

import os
from pathlib import Path


def program_env(**extra: str) -> dict[str, str]:
    """The environment of an oracle's own program (`python -m harness.oracles...`): this one's, with the
    repository on PYTHONPATH so the program finds harness from any working folder, and `extra`."""
    from harness.processes import quiet_openmp

    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
               **extra)
    # Whenever the program starts: a sanitizer's process started before the gate's first worker (which sets it in
    # the gate's own environment) spun OpenMP threads beside the jobs, and the gate took twice as long.
    quiet_openmp(env)
    return env


def last_line(text: str) -> str:
    """A program's last non-empty line of output, cut to 300 characters: the words of its end."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"
