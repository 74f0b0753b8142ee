"""Before any work: missing packages, unwritable outputs and folder targets, each a clear line and exit 2."""

import os
import shutil
import time
from pathlib import Path

import pytest

from harness import preflight
from harness.candidates import candidate_files
from harness.gate.command import EXIT_REJECTED, EXIT_USAGE, main
from harness.preflight import packages_problem, unwritable

ROOT = Path(__file__).resolve().parent.parent
SILU = ROOT / "examples" / "substrates" / "candidate_example_silu.py"


def test_a_missing_package_is_named_with_the_install_command():
    problem = packages_problem({"torch": "torch", "no_such_module_for_the_test": "no-such-package",
                                "no_such_parent_for_the_test.bindings": "no-such-bindings"})
    assert problem.startswith("no-such-package, no-such-bindings are not installed for this Python (")
    assert problem.endswith("activate the project's virtual environment, or run pip install -e '.[test]' in the "
                            "project's folder (the README's set-up)")
    assert packages_problem({"torch": "torch"}) == ""


def test_the_gate_without_its_packages_says_so_in_one_line_and_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(preflight, "REQUIRED_MODULES", {"no_such_module_for_the_test": "torch"})
    assert main(["--list"]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("gate.py: error: torch is not installed for this Python (")
    assert len(captured.err.splitlines()) == 1


def test_unwritable_paths_are_named_with_why(tmp_path, monkeypatch):
    assert unwritable(tmp_path / "report.json", "--json") == ""
    assert unwritable(tmp_path / "missing" / "report.json", "--json") == (
        f"--json {tmp_path / 'missing' / 'report.json'}: its folder {tmp_path / 'missing'} does not exist")
    assert unwritable(tmp_path, "--record") == f"--record {tmp_path}: is a folder; give a file path"
    existing = tmp_path / "admissions.json"
    existing.write_text("{}")
    monkeypatch.setattr(preflight.os, "access", lambda path, mode: False)  # as a read-only file system answers
    assert unwritable(existing, "--record") == f"--record {existing}: not writable (permission denied)"
    assert unwritable(tmp_path / "new.json", "--json") == (
        f"--json {tmp_path / 'new.json'}: cannot create a file in {tmp_path} (permission denied)")


@pytest.mark.parametrize("option", ["--json", "--record"])
def test_an_output_path_that_cannot_be_written_stops_the_gate_before_any_work(tmp_path, capsys, option):
    target = tmp_path / "no_such_folder" / "out.json"
    began = time.monotonic()
    assert main(["--backend", "cpu", option, str(target), "pad_const_b4"]) == EXIT_USAGE
    assert time.monotonic() - began < 2  # no worker, no discovery
    assert capsys.readouterr().err == (f"gate.py: error: {option} {target}: its folder {target.parent} does not "
                                       f"exist\n")


def test_a_candidate_folder_that_cannot_hold_its_record_is_named_with_the_way_around(tmp_path, capsys, monkeypatch):
    shutil.copy(SILU, tmp_path / SILU.name)
    real_access = os.access
    monkeypatch.setattr(preflight.os, "access", lambda path, mode: Path(path) != tmp_path and real_access(path, mode))
    assert main(["--backend", "cpu", str(tmp_path / SILU.name)]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"gate.py: error: admission record {tmp_path / 'admissions.json'}: cannot create a file in {tmp_path} "
        f"(permission denied) (--no-record gates without writing the admission records)\n")


def test_a_folder_target_gates_the_candidates_in_it(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    shutil.copy(SILU, tmp_path / "mine" / SILU.name)
    shutil.copytree(SILU.parent.parent / "problems", tmp_path / "problems")  # found beside the candidates' folder
    (tmp_path / "mine" / "helpers.py").write_text("raise SystemExit('not a candidate: never imported')\n")
    assert main(["--backend", "cpu", "--no-record", "--no-progress", str(tmp_path / "mine")]) == 0
    out = capsys.readouterr().out
    assert "gate: 1 substrate(s) on backend cpu" in out
    assert "1 admitted, 0 rejected" in out


def test_a_folder_without_candidates_is_a_usage_error(tmp_path, capsys):
    assert main(["--backend", "cpu", str(tmp_path)]) == EXIT_USAGE
    assert capsys.readouterr().err == f"gate.py: error: {tmp_path}: a folder with no candidate_*.py file in it\n"


def test_list_exits_1_when_a_candidate_does_not_import(tmp_path, capsys):
    broken = tmp_path / "candidate_broken.py"
    broken.write_text("raise RuntimeError('broken on purpose')\n")
    assert main(["--list", str(broken)]) == EXIT_REJECTED
    captured = capsys.readouterr()
    assert "import failed: " in captured.out and "broken on purpose" in captured.out
    family = len(candidate_files())
    assert captured.err == f"1 of {family + 1} candidate file(s) did not import\n"


def test_a_python_older_than_the_harness_runs_on_is_named_first():
    assert preflight.python_problem((3, 10, 13)) == (
        f"Python 3.10.13 ({os.sys.executable}) is older than the harness runs on: it needs Python 3.11 or newer "
        f"(make the virtual environment with one)")
    assert preflight.python_problem((3, 11, 0)) == preflight.python_problem((3, 13, 1)) == ""


def test_the_oldest_python_is_the_one_pyproject_requires():
    import tomllib

    required = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert required == ">=" + ".".join(map(str, preflight.OLDEST_PYTHON))


def _python_3_10() -> str | None:
    """A Python 3.10 that runs: on PATH, or one pyenv installed (its shim on PATH may not run it)."""
    import subprocess

    found = [shutil.which("python3.10"), *map(str, sorted(Path.home().glob(".pyenv/versions/3.10*/bin/python3.10")))]
    for python in filter(None, found):
        if subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0:
            return python
    return None


def test_under_python_3_10_the_gate_names_the_version_not_the_packages():
    import subprocess

    python = _python_3_10()
    if python is None:
        pytest.skip("needs a Python 3.10 (on PATH, or under ~/.pyenv/versions)")
    done = subprocess.run([python, "gate.py", "--list"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == EXIT_USAGE
    assert done.stderr.startswith("gate.py: error: Python 3.10.") and "it needs Python 3.11 or newer" in done.stderr
    assert len(done.stderr.splitlines()) == 1
