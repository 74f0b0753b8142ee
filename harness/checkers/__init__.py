"""Correctness checkers under test: functions that judge a kernel as a KernelBench-style harness would.

A checker is `function(problem, kernel, device) -> bool`, True where it accepts the kernel as
correct: `problem` has the official `Model`, `get_inputs` and `get_init_inputs` (a
`harness.problems.Problem`), and `kernel(*inputs)` runs the kernel on the inputs and returns its
output, raising where the kernel faults. Campaigns judge every mutant again with each checker to
say which faulty kernels it would let through (issue 43); `resolve` turns a `--checker` argument
into a factory that makes a substrate's checker from its entry (`t0` runs that substrate's own
T0_original; the others are the same function for every substrate).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.checkers.kernelbench import kernelbench, kernelbench_v0
from harness.checkers.t0 import t0_checker

Checker = Callable[..., bool]
CheckerFactory = Callable[[object], Checker]  # a substrate's entry -> its checker
BUILT_IN: dict[str, CheckerFactory] = {"kernelbench": lambda entry: kernelbench,
                                       "kernelbench-v0": lambda entry: kernelbench_v0, "t0": t0_checker}


class CheckerError(Exception):
    """A --checker argument that names no usable function; the message says which part is wrong."""


def resolve(spec: str) -> CheckerFactory:
    """A built-in checker's name, `path/to/file.py:function` or `module:function`, as a checker factory."""
    if spec in BUILT_IN:
        return BUILT_IN[spec]
    where, colon, name = spec.rpartition(":")
    if not colon or not where or not name:
        raise CheckerError(f"--checker {spec!r}: not a built-in checker ({', '.join(BUILT_IN)}) nor "
                           f"FILE.py:FUNCTION or MODULE:FUNCTION")
    holder = _module_at(spec, where) if where.endswith(".py") else _module_named(spec, where)
    function = getattr(holder, name, None)
    if not callable(function):
        defined = sorted(n for n, v in vars(holder).items() if callable(v) and not n.startswith("_"))
        raise CheckerError(f"--checker {spec!r}: {where} has no function {name!r} (it defines: "
                           f"{', '.join(defined) or 'none'})")
    return lambda entry: function


def _module_at(spec: str, file: str):
    path = Path(file)
    if not path.is_file():
        raise CheckerError(f"--checker {spec!r}: no such file {file}")
    module_spec = importlib.util.spec_from_file_location(f"_checker_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:
        raise CheckerError(f"--checker {spec!r}: importing {file} raised {type(error).__name__}: {error}") from error
    return module


def _module_named(spec: str, name: str):
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise CheckerError(f"--checker {spec!r}: no module {name!r} ({error})") from error


@dataclass(frozen=True)
class CheckerVerdicts:
    """One checker over one campaign's mutants: whether it is sound, and what it accepts of what the suites detect.

    Where it rejects a substrate's unmutated kernel (or gives no verdict on it), its verdicts on that substrate's
    mutants say nothing of them: they are `uncounted`, and `accepted`, `rejected` and `unjudged` hold the other
    substrates' detected mutants."""

    name: str
    sound: bool  # it accepts every unmutated substrate
    accepted: tuple[str, ...]  # mutant ids the suites detect that it accepts, in id order
    rejected: tuple[str, ...]
    unsound_on: tuple[str, ...] = ()  # "<substrate> (why)" for each substrate whose unmutated kernel it did not accept
    unjudged: tuple[str, ...] = ()  # detected mutants it gave no verdict on (its error, or the mutant ended a worker)
    uncounted: tuple[str, ...] = ()  # the detected mutants of the substrates it is unsound on

    def headline(self) -> str:
        detected = len(self.accepted) + len(self.rejected)
        unjudged = f" ({len(self.unjudged)} more not judged)" if self.unjudged else ""
        counted = f"accepts {len(self.accepted)} of the {detected} mutants the suites detect{unjudged}"
        if self.sound:
            return f"{self.name}: {counted}"
        # A substrate's unmutated kernel it rejected, or gave no verdict on (each one's why in parentheses).
        which = (f"{len(self.unsound_on)} correct substrates" if len(self.unsound_on) > 1 else "a correct substrate")
        which += f": {'; '.join(self.unsound_on)}" if self.unsound_on else ""
        if not detected and not self.unjudged:
            return f"{self.name}: unsound (it does not accept {which}); its verdicts are not counted"
        there = (f"its verdicts on their {len(self.uncounted)} detected mutants are not counted" if self.uncounted
                 else "they have no detected mutants")
        return f"{self.name}: unsound (it does not accept {which}); {there}; elsewhere it {counted}"
