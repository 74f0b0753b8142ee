"""Official references: KernelBench-format problem files, found and loaded the way KernelBench loads them.

KernelBench executes a problem file's source in a fresh namespace and takes `Model`,
`get_inputs` and `get_init_inputs` from it (src/kernelbench/eval.py,
load_original_model_and_inputs); this does the same, keeping the file name for tracebacks.

A candidate's `kb_file` is looked up, in order, in the `problems/` folder beside the candidate's
own folder (`examples/substrates/candidate_x.py` -> `examples/problems/`), in this project's
`problems/`, and in the `level1` folder of a KernelBench checkout when one is given
(`--kb-root DIR` or `$KERNELBENCH_ROOT`); `levelN/name.py` names another level of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

REPO_ROOT = Path(__file__).resolve().parent.parent
PROBLEMS_DIR = REPO_ROOT / "problems"
KB_ROOT_ENV = "KERNELBENCH_ROOT"
# eval_kernel_against_ref's seed_num: the seed under which KernelBench draws get_init_inputs() and a Model's weights.
KERNELBENCH_SEED = 42


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
        """The official Model as KernelBench's eval_kernel_against_ref builds it, moved to `device`.

        Seeded with KERNELBENCH_SEED before get_init_inputs() and again right before Model(...), under
        no_grad, on the CPU (so every process and backend gets the same weights), and left in the mode a
        module starts in: KernelBench never calls .eval(), so a BatchNorm normalises by batch statistics.
        The seeding is scoped (fork_rng): whatever the candidate or an earlier Model drew decides nothing,
        and nothing after depends on it.
        """
        import torch

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(KERNELBENCH_SEED)
            # eval.py moves tensor init inputs to the device before the Model sees them; the rest as they are.
            init_inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in self.get_init_inputs()]
            with torch.no_grad():
                torch.manual_seed(KERNELBENCH_SEED)
                model = self.Model(*init_inputs)
        return model.to(device)


def model_state(model, names: tuple[str, ...]) -> list:
    """The tensors an entry's `model_state` names, from the official Model's state_dict(), in that order.

    Copies, taken once the Model is built: a forward pass in training mode updates a BatchNorm's running
    statistics in place, and the kernel is handed what KernelBench's Model held when it was made.
    """
    if not names:
        return []  # a parameter-free entry asks nothing of the Model (which may be any callable)
    held = model.state_dict()
    unknown = [name for name in names if name not in held]
    if unknown:
        raise ProblemError(f"model_state names {', '.join(map(repr, unknown))}, which the official Model does not "
                           f"hold; its state_dict() holds {', '.join(map(repr, held)) or 'nothing'}")
    return [held[name].detach().clone() for name in names]


def kernelbench_dir(kb_root: Path) -> Path:
    """The folder holding `level1`, `level2`, ... in a KernelBench checkout (its root or its KernelBench/)."""
    for candidate in (kb_root / "KernelBench", kb_root):
        if (candidate / "level1").is_dir():
            return candidate
    raise ProblemError(f"KernelBench root {kb_root}: no problems there (looked for {kb_root / 'KernelBench' / 'level1'} "
                       f"and {kb_root / 'level1'})")


def kb_root_usage_error(kb_root: Path | None) -> str:
    """'' when kb_root is unset or a KernelBench checkout, else the error for the --kb-root option."""
    if kb_root is None:
        return ""
    try:
        kernelbench_dir(kb_root)
    except ProblemError as error:
        return f"--kb-root (or ${KB_ROOT_ENV}): {error}"
    return ""


def kb_root_from_env() -> Path | None:
    value = os.environ.get(KB_ROOT_ENV, "").strip()
    return Path(value) if value else None


@dataclass(frozen=True)
class ProblemSearch:
    """Where a candidate's kb_file may live: project problem folders, then a KernelBench checkout's levels."""

    folders: tuple[Path, ...] = (PROBLEMS_DIR,)
    kernelbench: Path | None = None  # the folder holding level1, level2, ...

    @classmethod
    def for_candidate(cls, candidate_file: Path | None, kb_root: Path | None = None) -> "ProblemSearch":
        folders = [PROBLEMS_DIR]
        if candidate_file is not None:
            beside = Path(candidate_file).resolve().parent.parent / "problems"
            if beside.is_dir() and beside != PROBLEMS_DIR:
                folders.insert(0, beside)
        return cls(tuple(folders), kernelbench_dir(kb_root) if kb_root else None)

    def places(self, kb_file: str) -> list[Path]:
        """Every path `kb_file` may name, in the order they are tried."""
        places = [folder / kb_file for folder in self.folders]
        if self.kernelbench is not None:
            parts = PurePosixPath(kb_file).parts
            level_given = len(parts) == 2 and parts[0].startswith("level")
            places.append(self.kernelbench / kb_file if level_given else self.kernelbench / "level1" / kb_file)
        return places

    def resolve(self, kb_file: str) -> Path:
        parts = PurePosixPath(kb_file).parts
        if not kb_file.endswith(".py") or PurePosixPath(kb_file).is_absolute() or ".." in parts or len(parts) > 2:
            raise ProblemError(f"kb_file {kb_file!r}: must be a problem file name such as '19_ReLU.py' "
                               f"(or 'level2/name.py' in a KernelBench checkout)")
        places = self.places(kb_file)
        for path in places:
            if path.is_file():
                return path
        hint = "" if self.kernelbench else (f"; for a KernelBench problem, point the gate at a checkout with "
                                            f"--kb-root DIR or ${KB_ROOT_ENV}")
        raise ProblemError(f"kb_file {kb_file!r}: no such problem file (looked in "
                           f"{', '.join(str(p) for p in places)}){hint}")


def load_problem(kb_file: str, search: ProblemSearch | Path = PROBLEMS_DIR) -> Problem:
    if isinstance(search, Path):
        search = ProblemSearch((search,))
    return load_problem_file(kb_file, search.resolve(kb_file))


def load_problem_file(kb_file: str, path: Path) -> Problem:
    """The problem in `path`, executed KernelBench-style in a fresh namespace."""
    namespace: dict = {"__name__": f"kb_problem_{path.stem}", "__file__": str(path)}
    try:
        exec(compile(path.read_text(), str(path), "exec"), namespace)
    except Exception as error:
        raise ProblemError(f"{path}: loading failed: {type(error).__name__}: {error}") from error
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs") if name not in namespace]
    if missing:
        raise ProblemError(f"{path}: not a KernelBench problem, it lacks {', '.join(missing)}")
    return Problem(kb_file, path, namespace["Model"], namespace["get_inputs"], namespace["get_init_inputs"])
