"""What a command checks before any work: that its packages are installed and its output paths writable.

A gate or campaign that finds out later has spent minutes first (and lost its table to a traceback);
a missing torch otherwise shows as every candidate "failing to import".
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

# The installed package's own needs (pyproject.toml's dependencies), by the module each provides.
REQUIRED_MODULES = {"torch": "torch", "numpy": "numpy", "tqdm": "tqdm", "cuda.bindings": "cuda-bindings"}
INSTALL = "pip install -e '.[test]' in the project's folder (the README's set-up)"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a dotted name whose parent package is missing
        return False


def missing_packages(modules: dict[str, str] | None = None) -> list[str]:
    """The distributions (pip names) of the modules this Python cannot import."""
    return [package for module, package in (modules or REQUIRED_MODULES).items() if not _installed(module)]


OLDEST_PYTHON = (3, 11)  # pyproject.toml's requires-python


def python_problem(version: tuple = tuple(sys.version_info[:3])) -> str:
    """One line naming a Python older than the harness runs on; "" for one it runs on. First: an older Python
    has no wheels for the packages either, and its pip would fail later, naming none of this."""
    if tuple(version[:2]) >= OLDEST_PYTHON:
        return ""
    return (f"Python {'.'.join(map(str, version))} ({sys.executable}) is older than the harness runs on: it needs "
            f"Python {'.'.join(map(str, OLDEST_PYTHON))} or newer (make the virtual environment with one)")


def packages_problem(modules: dict[str, str] | None = None) -> str:
    """One line naming what is missing and how to install it (or the Python too old for them); "" when nothing is."""
    if too_old := python_problem():
        return too_old
    missing = missing_packages(modules)
    if not missing:
        return ""
    return (f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed for this Python "
            f"({sys.executable}): activate the project's virtual environment, or run {INSTALL}")


def unwritable(path: Path, option: str) -> str:
    """Why `path` (a file the command will write, `option` naming where it came from) cannot be written; "" when
    it can. Checked before any work: a report that cannot be written after an hour's gate is an hour lost."""
    path = Path(path)
    if path.is_dir():
        return f"{option} {path}: is a folder; give a file path"
    if path.exists():
        return "" if os.access(path, os.W_OK) else f"{option} {path}: not writable (permission denied)"
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return f"{option} {path}: its folder {folder} does not exist"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{option} {path}: cannot create a file in {folder} (permission denied)"
    return ""
