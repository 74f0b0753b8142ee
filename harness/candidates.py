"""Find candidate files, import them, and turn what `register` adds into checked entries.

A candidate is `substrates/candidate_<name>.py` defining `register(K, torch, ctypes)`, which
sets `K.PROBLEMS[name] = dict(...)` with the spec's seven keys for each substrate it holds.
"""

from __future__ import annotations

import ctypes
import enum
import hashlib
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.gate.checks.tolerance import DEFAULT_TOLERANCE, Tolerance
from harness.problems import REPO_ROOT, ProblemError, ProblemSearch

SUBSTRATES_DIR = REPO_ROOT / "substrates"
REQUIRED_KEYS = ("kb_file", "cuda", "kernel_name", "ref", "launch", "suites", "probe")
# Optional keys of this harness: `exact` asks for bitwise comparison of float outputs (byte
# movers); `atol`/`rtol` may tighten the default 1e-2, never loosen it; `accumulates` says the
# kernel adds into an `out` that launch initialises (atomic gradients), so the harness keeps
# launch's contents instead of poisoning them; `model_state` names tensors of the official Model's
# state_dict() (a convolution's weight, a norm's affine parameters) that the harness appends, as the
# Model holds them, after every trial's inputs: ref(*inputs, *state), launch(inputs + state, torch).
OPTIONAL_KEYS = ("exact", "atol", "rtol", "accumulates", "model_state")


SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
REGISTER_PARAMETERS = ("K", "torch", "ctypes")


class CandidateError(Exception):
    """The candidate file cannot be imported or registered; the message names the file."""


class RegistrationTarget:
    """The `K` handed to register(): a fresh one per load, so no state leaks between files."""

    def __init__(self):
        self.PROBLEMS: dict = {}


@dataclass(frozen=True)
class Entry:
    """One registered substrate. A key that is missing or of the wrong type is None in a partial entry
    (`make_entry(..., partial=True)`), so the gate can still check every rule that does not need it."""

    name: str
    file: Path
    kb_file: str | None
    cuda: str | None
    kernel_name: str | None
    ref: object
    launch: object
    suites: object
    probe: object
    tolerance: Tolerance
    accumulates: bool = False
    model_state: tuple[str, ...] = ()  # names in the official Model's state_dict(), appended to every trial's inputs

    def source_sha256(self, search: ProblemSearch | None = None) -> str:
        """Hash of everything that decides the verdict: the candidate file, its CUDA source, its problem."""
        digest = hashlib.sha256()
        digest.update(self.file.read_bytes())
        digest.update((self.cuda or "").encode())
        try:
            if self.kb_file is not None:
                digest.update((search or ProblemSearch.for_candidate(self.file)).resolve(self.kb_file).read_bytes())
        except ProblemError:
            pass  # no problem file: the gate rejects the entry, and the hash still names this source
        return digest.hexdigest()

    def locate_cuda_line(self, text: str) -> str | None:
        """'file.py:N' where this CUDA line stands in the candidate, if it stands there exactly once."""
        return locate_line(self.file, text)


def locate_line(file: Path, text: str) -> str | None:
    """'file.py:N' where `text` (stripped) is a line of `file`, if it is exactly one line there."""
    wanted = text.strip()
    try:
        hits = [i for i, line in enumerate(Path(file).read_text().splitlines(), 1) if line.strip() == wanted]
    except OSError:
        return None
    return f"{Path(file).name}:{hits[0]}" if len(hits) == 1 else None


class BuilderForm(str, enum.Enum):
    """How a suite builder is called: the spec never fixes it, so both forms an author may write are taken."""

    TRIAL = "builder(t)"
    TRIAL_DEVICE = "builder(t, device)"


def builder_form(builder) -> BuilderForm:
    """builder(t, device) when the builder can take a second positional argument, else builder(t).

    Decided from the signature, never by trying a call: a builder that raises a TypeError of its own
    must be reported as raising, not retried another way. A callable whose signature Python cannot
    read (a builtin) is given the device.
    """
    try:
        parameters = list(inspect.signature(builder).parameters.values())
    except (TypeError, ValueError):
        return BuilderForm.TRIAL_DEVICE
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters) or len(positional) >= 2:
        return BuilderForm.TRIAL_DEVICE
    return BuilderForm.TRIAL


def builder_output(builder, t: int, device) -> list:
    """The trial's inputs exactly as the builder returns them (each tensor wherever it put it)."""
    return list(builder(t, device) if builder_form(builder) is BuilderForm.TRIAL_DEVICE else builder(t))


def call_builder(builder, t: int, device) -> list:
    """The trial's inputs as the builder returns them, each tensor moved to `device` if it is elsewhere."""
    import torch

    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in builder_output(builder, t, device)]


def candidate_files(directory: Path = SUBSTRATES_DIR) -> list[Path]:
    return sorted(directory.glob("candidate_*.py"))


def import_candidate(path: Path):
    """Import the file as a fresh module (never from sys.modules) and return it."""
    module_name = f"substrate_candidate_{path.stem}_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CandidateError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        sys.modules.pop(module_name, None)
        raise CandidateError(f"{path}: import failed: {type(error).__name__}: {error}") from error
    return module


def where_defined(function, fallback: str) -> str:
    """'file.py:N' where a candidate's function is defined, or `fallback` when Python cannot tell."""
    try:
        return f"{Path(inspect.getsourcefile(function)).name}:{inspect.getsourcelines(function)[1]}"
    except (OSError, TypeError):
        return fallback


def candidate_file_problems(path: Path, module) -> list[str]:
    """The spec's rules for the file itself: its name, and a register(K, torch, ctypes) it defines."""
    problems = []
    stem = path.name.removesuffix(".py")
    if not (path.name.endswith(".py") and stem.startswith("candidate_")
            and SNAKE_CASE.fullmatch(stem.removeprefix("candidate_"))):
        problems.append(f"{path}: a candidate file is named candidate_<snake_case_name>.py, not {path.name!r}")
    register = getattr(module, "register", None)
    if not callable(register):
        problems.append(f"{path}: defines no register(K, torch, ctypes)")
        return problems
    try:
        parameters = list(inspect.signature(register).parameters.values())
    except (TypeError, ValueError):
        return problems
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(parameters) != len(REGISTER_PARAMETERS) or len(positional) != len(REGISTER_PARAMETERS):
        where = f"{path.parent}/{where_defined(register, path.name)}"
        problems.append(f"{where}: register{inspect.signature(register)} must take exactly "
                        f"({', '.join(REGISTER_PARAMETERS)})")
    return problems


def register_candidate(module, path: Path) -> dict:
    """Call the module's register(K, torch, ctypes) and return what it put in K.PROBLEMS."""
    import torch

    register = getattr(module, "register", None)
    if not callable(register):
        raise CandidateError(f"{path}: defines no register(K, torch, ctypes)")
    target = RegistrationTarget()
    try:
        register(target, torch, ctypes)
    except Exception as error:
        raise CandidateError(f"{path}: register() failed: {type(error).__name__}: {error}") from error
    if not isinstance(target.PROBLEMS, dict) or not target.PROBLEMS:
        raise CandidateError(f"{path}: register() added nothing to K.PROBLEMS")
    return dict(target.PROBLEMS)


def _tolerance(name: str, raw: dict, problems: list[str]) -> Tolerance:
    exact = raw.get("exact", False)
    if not isinstance(exact, bool):
        problems.append(f"{name}: 'exact' must be True or False, got {exact!r}")
        exact = False
    bounds = {}
    for key in ("atol", "rtol"):
        value = raw.get(key, DEFAULT_TOLERANCE)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= DEFAULT_TOLERANCE:
            problems.append(f"{name}: {key!r} must be a number in [0, {DEFAULT_TOLERANCE}], got {value!r}")
            value = DEFAULT_TOLERANCE
        bounds[key] = float(value)
    return Tolerance(exact=exact, **bounds)


def _model_state(name: str, value, problems: list[str]) -> tuple[str, ...]:
    """`model_state` as a tuple of distinct names; () with a problem noted when it is anything else."""
    if isinstance(value, str):
        problems.append(f"{name}: 'model_state' must be a tuple of state_dict() names, got the string {value!r} "
                        f"(write ({value!r},))")
        return ()
    if not isinstance(value, (tuple, list)) or not all(isinstance(n, str) and n.strip() for n in value):
        problems.append(f"{name}: 'model_state' must be a tuple of non-empty state_dict() names, got {value!r}")
        return ()
    repeated = sorted({n for n in value if list(value).count(n) > 1})
    if repeated:
        problems.append(f"{name}: 'model_state' names {', '.join(map(repr, repeated))} more than once")
        return ()
    return tuple(value)


def make_entry(name: str, raw, path: Path, partial: bool = False) -> tuple[Entry | None, list[str]]:
    """Check one K.PROBLEMS value against the spec; returns (the entry, []) or (None, what is wrong).

    With `partial`, an entry comes back whenever `raw` is a dict, its bad keys None, beside the list
    of what is wrong: the gate then checks every rule the good keys allow.
    """
    if not isinstance(raw, dict):
        return None, [f"{name}: K.PROBLEMS[{name!r}] is a {type(raw).__name__}, not a dict"]
    problems = []
    if not (isinstance(name, str) and SNAKE_CASE.fullmatch(name)):
        problems.append(f"{name}: a substrate name is snake_case (K.PROBLEMS[{name!r}])")
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    unknown = [k for k in raw if k not in REQUIRED_KEYS + OPTIONAL_KEYS]
    if missing:
        problems.append(f"{name}: missing key(s) {', '.join(missing)}")
    if unknown:
        problems.append(f"{name}: unknown key(s) {', '.join(map(str, unknown))}; the spec allows "
                        f"{', '.join(REQUIRED_KEYS)} (and optionally {', '.join(OPTIONAL_KEYS)})")
    for key in ("kb_file", "cuda", "kernel_name"):
        if key in raw and not (isinstance(raw[key], str) and raw[key].strip()):
            problems.append(f"{name}: {key!r} must be a non-empty string, got {type(raw[key]).__name__}")
    for key in ("ref", "launch", "suites", "probe"):
        if key in raw and not callable(raw[key]):
            problems.append(f"{name}: {key!r} must be callable, got {type(raw[key]).__name__}")
    tolerance = _tolerance(name, raw, problems)
    accumulates = raw.get("accumulates", False)
    if not isinstance(accumulates, bool):
        problems.append(f"{name}: 'accumulates' must be True or False, got {accumulates!r}")
    state = _model_state(name, raw.get("model_state", ()), problems)
    if problems and not partial:
        return None, problems
    valid = {}
    for key in REQUIRED_KEYS:
        value = raw.get(key)
        good = (isinstance(value, str) and value.strip()) if key in ("kb_file", "cuda", "kernel_name") else callable(value)
        valid[key] = value if good else None
    return Entry(name=name, file=path, tolerance=tolerance, accumulates=accumulates is True, model_state=state,
                 **valid), problems
