"""Official references: KernelBench-format problem files, loaded the way KernelBench loads them.

KernelBench executes a problem file's source in a fresh namespace and takes `Model`,
`get_inputs` and `get_init_inputs` from it (src/kernelbench/eval.py,
load_original_model_and_inputs); this does the same, keeping the file name for tracebacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROBLEMS_DIR = REPO_ROOT / "problems"


class ProblemError(Exception):
    """The problem file is missing or is not in KernelBench's format."""


@dataclass(frozen=True)
class Problem:
    kb_file: str
    path: Path
    Model: type
    get_inputs: object
    get_init_inputs: object

    def build_model(self, device):
        return self.Model(*self.get_init_inputs()).to(device).eval()


def resolve_problem_path(kb_file: str, problems_dir: Path = PROBLEMS_DIR) -> Path:
    path = problems_dir / kb_file
    if not path.is_file():
        raise ProblemError(f"kb_file {kb_file!r}: no such problem file {path}")
    return path


def load_problem(kb_file: str, problems_dir: Path = PROBLEMS_DIR) -> Problem:
    path = resolve_problem_path(kb_file, problems_dir)
    namespace: dict = {"__name__": f"kb_problem_{path.stem}", "__file__": str(path)}
    try:
        exec(compile(path.read_text(), str(path), "exec"), namespace)
    except Exception as error:
        raise ProblemError(f"{path}: loading failed: {type(error).__name__}: {error}") from error
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs") if name not in namespace]
    if missing:
        raise ProblemError(f"{path}: not a KernelBench problem, it lacks {', '.join(missing)}")
    return Problem(kb_file, path, namespace["Model"], namespace["get_inputs"], namespace["get_init_inputs"])
