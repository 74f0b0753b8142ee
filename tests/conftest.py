"""Shared fixtures; GPU tests (marked `gpu`) skip cleanly where no GPU is visible."""

import signal
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from harness.processes import quiet_openmp  # noqa: E402

quiet_openmp()  # before torch loads libgomp: tests run the CPU backend in-process too

from harness.backends import gpu_visible  # noqa: E402

TEST_CANDIDATES = Path(__file__).resolve().parent / "candidates"


def pytest_collection_modifyitems(config, items):
    if gpu_visible():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none visible)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def sigint_as_it_was():
    """A test that runs a worker's code in this process (which makes SIGINT end the process at once, quietly) leaves
    SIGINT as it found it: a Ctrl-C, or a test's own SIGINT, then stops pytest as Python's handler does."""
    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """A compile cache of the test's own, so tests neither read nor fill the user's."""
    monkeypatch.setenv("SUBSTRATE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def registered_entries():
    """Every substrate registered under substrates/, as checked entries (imports torch on the CPU only)."""
    from harness.candidates import candidate_files, import_candidate, make_entry, register_candidate

    entries = []
    for path in candidate_files():
        for name, raw in register_candidate(import_candidate(path), path).items():
            entry, problems = make_entry(name, raw, path)
            assert not problems, problems
            entries.append(entry)
    return entries
