"""T0's trials drawn ahead of the gate's workers, by processes that hold no device, and handed over as files.

A T0 trial is two draws of the CPU generator (the candidate's builder and get_inputs()), which a gate
worker otherwise makes on its job's critical path: on the H200's host, where a float16 randn of 8.4 M values
takes 0.36 s (this machine: 0.04), T0 was most of the 28 substrates' `inputs built` (15.6 of 30 s of work).
A T0 of 16 MiB a trial or more has its worker's own helpers (harness.trial_inputs); a smaller one is drawn
here, on cores the gate's jobs leave idle, while the workers start and gate the substrates before it.

The drawers are workers forked from the gate's fork server (torch imported, no CUDA state). Each substrate
has a folder; whoever makes it first owns the substrate's T0: a drawer, which draws its trials in order with
`build_here` (device cpu, as a helper draws them: harness.trial_inputs) and writes each as `t{t}.pt`, then
`stopped`; or the substrate's worker, arriving first, which then builds T0 itself. A worker whose T0 a drawer
owns takes each trial's file as it appears (`DrawnT0.take`), and builds the trial itself where the drawer
could not write it, stopped, or died. The report is the same either way: every field `build_here` gives is
handed over, an error as its type's name and its words.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.trial_inputs import BuiltTrial

# torch is imported where a drawer or a worker needs it: the gate's parent, which imports this module to plan
# the drawers, never imports torch.

MAX_DRAWERS = 4
RESERVED_CORES = 4  # left to the parent and the sanitizer stage's processes
POLL_SECONDS = 0.002
STOPPED = "stopped"
OWNER = "owner"  # the drawer's pid; absent where the substrate's worker owns it


def auto_drawers(cores: int, jobs_at_once: int, substrates: int) -> int:
    """Drawers for `substrates` eligible T0s where `jobs_at_once` gate jobs run on `cores`: the cores the jobs
    and RESERVED_CORES leave, at most MAX_DRAWERS (none on a machine the jobs fill). Pure."""
    return max(0, min(MAX_DRAWERS, substrates, cores - jobs_at_once - RESERVED_CORES))


@dataclass(frozen=True)
class DrawJob:
    """One substrate whose T0 a drawer may draw: its folder, and where its builder and problem come from."""

    folder: str
    file: str
    name: str
    kb_root: str | None = None


def _named_error(name: str, text: str) -> Exception:
    """An exception whose type is called `name`: the report's `TypeName: words` as the worker would write them
    (a candidate's own exception class may not exist, or unpickle, in the worker)."""
    return type(name, (Exception,), {})(text)


def _error_fields(error: Exception | None):
    return None if error is None else (type(error).__name__, str(error))


def _write_trial(folder: Path, t: int, built: BuiltTrial) -> None:
    import torch

    record = {"inputs": built.inputs, "error": _error_fields(built.error),
              # A T0 identical to get_inputs() is written once.
              "official": None if built.identical else built.official,
              "official_error": _error_fields(built.official_error),
              "difference": built.difference, "identical": built.identical}
    partial = folder / f"t{t}.partial"
    torch.save(record, partial)
    partial.rename(folder / f"t{t}.pt")  # whole or not at all, for a worker polling for it


def _read_trial(path: Path) -> BuiltTrial:
    import torch

    from harness.trial_inputs import BuiltTrial

    record = torch.load(path, weights_only=False)
    built = BuiltTrial(inputs=record["inputs"], difference=record["difference"], identical=record["identical"])
    built.error = _named_error(*record["error"]) if record["error"] else None
    built.official_error = _named_error(*record["official_error"]) if record["official_error"] else None
    built.official = list(record["inputs"]) if record["identical"] else record["official"]
    return built


def _claim(folder: Path) -> bool:
    try:
        folder.mkdir()
    except FileExistsError:
        return False
    return True


def _draw_one(job: DrawJob, registered: dict) -> None:
    from harness.candidates import import_candidate, make_entry, register_candidate
    from harness.problems import ProblemSearch, load_problem
    from harness.suite_rules import T0_NAME
    import torch

    from harness.trial_inputs import build_here

    folder = Path(job.folder)
    try:
        path = Path(job.file)
        if job.file not in registered:  # each file imported once a drawer
            registered[job.file] = register_candidate(import_candidate(path), path)
        entry, _problems = make_entry(job.name, registered[job.file][job.name], path, partial=True)
        search = ProblemSearch.for_candidate(path, Path(job.kb_root) if job.kb_root else None)
        problem = load_problem(entry.kb_file, search)
        t0 = [(n, builder) for name, n, builder in entry.suites() if name == T0_NAME]
    except Exception:
        return  # not claimed: the worker finds out, and reports, what is wrong
    if len(t0) != 1 or type(t0[0][0]) is not int or not callable(t0[0][1]) or not _claim(folder):
        return
    try:
        (folder / OWNER).write_text(str(os.getpid()))
        n_trials, builder = t0[0]
        for t in range(n_trials):
            built = build_here(builder, t, torch.device("cpu"), problem)
            try:
                _write_trial(folder, t, built)
            except Exception:  # not picklable, or no room: the worker builds it, and the rest
                return
            del built
    finally:
        (folder / STOPPED).touch()


def draw_ahead(jobs: list[DrawJob], conn) -> None:
    """A drawer: every job's T0 not yet owned, in the order given (the order the gate's slots reach them)."""
    import torch

    torch.set_num_threads(1)  # a draw is one generator's: threads would only compete with the gate's jobs
    registered: dict = {}
    for job in jobs:
        if not Path(job.folder).exists():
            _draw_one(job, registered)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class DrawnT0:
    """A worker's side of its substrate's folder: owned by a drawer (take its trials) or by itself (None)."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self.mine = _claim(self.folder)  # arrived before any drawer: T0 built in the worker
        if self.mine:
            (self.folder / STOPPED).touch()
        self._owner: int | None = None

    def _drawer_gone(self) -> bool:
        if self._owner is None:
            try:
                self._owner = int((self.folder / OWNER).read_text())
            except (OSError, ValueError):
                return False  # claimed a moment ago: the pid comes next
        return not _alive(self._owner)

    def take(self, t: int) -> BuiltTrial | None:
        """Trial t as the drawer drew it, waiting for it; None where the worker must build it itself."""
        if self.mine:
            return None
        path, taken = self.folder / f"t{t}.pt", self.folder / f"t{t}.taken"
        while True:
            try:
                path.rename(taken)
            except FileNotFoundError:
                if (self.folder / STOPPED).exists() and not path.exists():
                    return None
                if self._drawer_gone() and not path.exists():
                    return None
                time.sleep(POLL_SECONDS)
                continue
            try:
                return _read_trial(taken)
            except Exception:
                return None
            finally:
                taken.unlink(missing_ok=True)
