"""The CPU backend's C++ compiler, found without importing torch (the gate's own process checks for it)."""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache

from harness.backends.base import BackendUnavailable


def cxx() -> str:
    """The C++ compiler: $CXX when it is set, read at each use (a worker forked from the fork server has
    the backend imported already, but the environment it was started with)."""
    return os.environ.get("CXX", "g++")


def compiler_version() -> str:
    """g++ --version's first line; BackendUnavailable, with the reason, where there is no compiler."""
    return _version_of(cxx())


@lru_cache(maxsize=None)
def _version_of(compiler: str) -> str:
    try:
        done = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        raise BackendUnavailable(f"the CPU backend needs a C++17 compiler ({compiler}): {error}") from error
    return done.stdout.splitlines()[0]
