"""The KernelBench candidates under examples/kernelbench/, gated on the CPU against small stand-ins.

Each candidate is written for a real KernelBench problem at its real size (gigabytes per input,
gated on a GPU), and keeps that problem file's size constants as module-level assignments of the
same names (`batch_size = 4096`, `N = 2048 * 2`, ...) used by its T0_original. The KernelBench
files are not in this repository; tests/kernelbench_standin/ holds, for each problem used here,
a stand-in with the same Model and get_inputs() code and small sizes. This test copies every
candidate into a temporary folder with each of those constants replaced by the stand-in's value,
checks that the substitution happened (every constant, and T0's shapes are the stand-in's), and
runs the gate once over all the copies on the CPU backend, and on the GPU where there is one,
with `--kb-root` the stand-in folder: every substrate must be admitted.
"""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.candidates import call_builder, import_candidate, register_candidate
from harness.problems import ProblemSearch, kernelbench_dir, load_problem

REPO = Path(__file__).resolve().parent.parent
CANDIDATES = REPO / "examples" / "kernelbench"
STANDIN_ROOT = REPO / "tests" / "kernelbench_standin"
MAX_T0_ELEMENTS = 1 << 20  # a stand-in's T0 trial, all inputs together
GATE_TIMEOUT_S = 600


def _module_constants(path: Path) -> list[str]:
    """Names assigned (plainly, `NAME = ...`) at module level of a Python file, in order."""
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names.append(node.targets[0].id)
    return names


def _standin_constants(kb_file: str) -> tuple[dict, object]:
    """The stand-in problem's module-level constants (name -> value) and the loaded problem."""
    search = ProblemSearch((), kernelbench_dir(STANDIN_ROOT))
    path = search.resolve(kb_file)
    namespace: dict = {"__name__": "standin"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    constants = {name: namespace[name] for name in _module_constants(path)}
    return constants, load_problem(kb_file, search)


def _shrunk_copy(candidate: Path, destination: Path) -> tuple[Path, str, dict, object]:
    """Copy `candidate` into `destination` with the stand-in's constants substituted.

    Returns the copy, its substrate name, the constants substituted and the stand-in problem.
    """
    module = import_candidate(candidate)
    registered = register_candidate(module, candidate)
    assert len(registered) == 1, f"{candidate.name} registers {sorted(registered)}; one substrate expected"
    ((name, raw),) = registered.items()
    constants, problem = _standin_constants(raw["kb_file"])
    assert constants, f"the stand-in for {raw['kb_file']} has no module-level constants"
    text = candidate.read_text()
    for constant, value in constants.items():
        pattern = re.compile(rf"^{re.escape(constant)} = .*$", re.M)
        hits = pattern.findall(text)
        assert len(hits) == 1, (f"{candidate.name} must assign {constant} (a constant of {raw['kb_file']}) exactly "
                                f"once at module level, as `{constant} = ...` at column 0; found {len(hits)}")
        text = pattern.sub(f"{constant} = {value!r}", text)
    copy = destination / candidate.name
    copy.write_text(text)
    return copy, name, constants, problem


def _t0_shapes(inputs: list) -> list:
    return [tuple(x.shape) if isinstance(x, torch.Tensor) else x for x in inputs]


# On the GPU the sanitizers' checks run too (wherever compute-sanitizer is found): none may fire.
@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_every_kernelbench_candidate_is_admitted_on_the_stand_ins(tmp_path, backend):
    candidates = sorted(CANDIDATES.glob("candidate_*.py"))
    assert candidates, f"no candidates in {CANDIDATES}"
    folder = tmp_path / "kernelbench"
    folder.mkdir()
    copies, names = [], []
    for candidate in candidates:
        copy, name, constants, problem = _shrunk_copy(candidate, folder)
        # The substitution reached T0: its trial 0 has the stand-in get_inputs()'s shapes, and is small.
        shrunk = register_candidate(import_candidate(copy), copy)[name]
        module, original = import_candidate(copy), import_candidate(candidate)
        for constant, value in constants.items():
            assert getattr(module, constant) == value, f"{copy.name}: {constant} was not substituted"
        assert any(getattr(original, c) != v for c, v in constants.items()), (
            f"{candidate.name}: its size constants already have the stand-in's values")
        t0 = dict((s[0], s[2]) for s in shrunk["suites"]())["T0_original"]
        built = call_builder(t0, 0, torch.device("cpu"))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1000)
            official = list(problem.get_inputs())
        assert _t0_shapes(built) == _t0_shapes(official), (
            f"{copy.name}: T0_original trial 0 is {_t0_shapes(built)}, the stand-in's get_inputs() "
            f"{_t0_shapes(official)}: the size constants did not reach T0")
        elements = sum(x.numel() for x in built if isinstance(x, torch.Tensor))
        assert elements <= MAX_T0_ELEMENTS, f"{copy.name}: T0 trial 0 has {elements} elements after substitution"
        copies.append(copy)
        names.append(name)

    report_path = tmp_path / "r.json"
    command = [sys.executable, "gate.py", "--backend", backend, "--no-record", "--no-progress", "--jobs", "2",
               "--kb-root", str(STANDIN_ROOT), "--json", str(report_path), *map(str, copies)]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=GATE_TIMEOUT_S)
    output = result.stdout + result.stderr
    assert report_path.is_file(), f"the gate wrote no report (exit {result.returncode}):\n{output}"
    report = json.loads(report_path.read_text())
    admitted = {s["name"]: s.get("admitted") for s in report["substrates"]}
    assert sorted(admitted) == sorted(names), f"gated {sorted(admitted)}, expected {sorted(names)}:\n{output}"
    rejected = sorted(name for name, ok in admitted.items() if ok is not True)
    assert not rejected and result.returncode == 0, f"rejected: {rejected} (exit {result.returncode}):\n{output}"
