"""The commands on PATH: pyproject's console scripts name the same mains `python gate.py` and `-m` run."""

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def test_the_gate_the_campaign_and_the_benchmark_are_console_scripts():
    assert SCRIPTS == {"substrate-gate": "harness.gate.command:main", "substrate-campaign": "harness.campaign:main",
                       "substrate-bench-gate": "harness.benchmarks.gate:main"}
    for target in SCRIPTS.values():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function))


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_an_installed_script_answers_help(script):
    installed = Path(sys.executable).parent / script  # pip install -e puts it beside the venv's python
    if not installed.is_file():
        pytest.skip(f"{script} is not installed beside {sys.executable} (pip install -e . creates it)")
    done = subprocess.run([str(installed), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ")
