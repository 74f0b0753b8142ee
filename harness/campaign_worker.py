"""Inside a campaign worker: one substrate, kept warm, running one mutant after another.

The worker builds every trial's inputs and computes the official reference once, compiles the
unmutated source once, and then for each mutant: compiles it (a compile error is a status),
compares its PTX with the original's and with earlier mutants' (identical code is Equivalent or
Duplicate and never runs), and runs the trials, in the order that has killed most so far,
until the first one fails. A fault that poisons the CUDA context ends the worker; the parent
starts a fresh one for the mutants left.

Messages to the parent: ("step_timeout", s) once the unmutated run is timed, ("baseline", ok,
why, seconds), ("mutant", id) as each mutant starts, ("step", what) before each compile and
trial, ("result", {...}) per mutant.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# A mutant may take this many times the slowest unmutated trial, plus the allowance, per step.
STEP_TIMEOUT_FACTOR = 20
STEP_TIMEOUT_ALLOWANCE = 20.0

_NOT_CODE = re.compile(r"^\s*(\.loc|\.file|//|@@DWARF)")


def ptx_digest(ptx: str) -> str:
    """A digest of what the PTX executes: line-info directives and comments left out."""
    lines = [line.strip() for line in ptx.splitlines() if line.strip() and not _NOT_CODE.match(line)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@dataclass(frozen=True)
class CampaignJob:
    file: str
    name: str
    backend: str
    mutant_ids: tuple[str, ...]
    run_baseline: bool = True
    step_timeout: float | None = None  # from an earlier worker's unmutated run; measured again when None
    # Off in the naive comparison mode: no PTX comparison, so the unmutated source is compiled only if needed.
    check_equivalence: bool = True
    # Where the worker's stderr goes: a mutant that corrupts the CPU backend's heap makes libc
    # print, and a dying worker's traceback would land in the middle of the progress bar.
    stderr_log: str | None = None
    cache_dir: str | None = None
    kb_root: str | None = None


@dataclass
class Trial:
    suite: str
    t: int
    inputs: list
    expected: object

    @property
    def where(self) -> str:
        return f"{self.suite} trial {self.t}"


def prepare_trials(entry, official, device) -> list[Trial]:
    """Every suite trial's inputs (on the device) and official output, computed once."""
    import torch

    trials = []
    for suite, n_trials, builder in entry.suites():
        for t in range(n_trials):
            inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in builder(t, device)]
            with torch.no_grad():
                expected = official(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
            trials.append(Trial(suite, t, inputs, expected))
    return trials


def first_failure(run, expected, entry) -> str:
    """'' when the run passes every check the gate makes of a kernel, else the first check it fails."""
    from harness.compare import compare

    if run.argument_problems:
        return "launch_arguments: " + run.argument_problems[0]
    if run.guard_damage:
        return "writes_in_bounds: " + run.guard_damage[0]
    if run.changed_inputs:
        return "inputs_unchanged: " + run.changed_inputs[0]
    if run.unwritten:
        return f"output_fully_written: {run.unwritten} output elements never written"
    for output in run.outputs:
        comparison = compare(output, expected, entry.tolerance)
        if not comparison.ok:
            return "output_matches: " + comparison.describe()
    return ""


def _load_entry(job: CampaignJob):
    from harness.candidates import import_candidate, make_entry, register_candidate

    path = Path(job.file)
    registered = register_candidate(import_candidate(path), path)
    entry, problems = make_entry(job.name, registered[job.name], path)
    if problems:
        raise ValueError("; ".join(problems))
    return entry


def run_campaign_job(job: CampaignJob, conn) -> None:
    from harness.backends import KernelFault, create_backend
    from harness.cache import compile_cached
    from harness.mutants import generate
    from harness.mutation_report import MutantStatus
    from harness.nvrtc import CompileError
    from harness.pipeline import run_kernel
    from harness.problems import ProblemSearch, load_problem

    entry = _load_entry(job)
    backend = create_backend(job.backend, cache_dir=Path(job.cache_dir) if job.cache_dir else None)
    search = ProblemSearch.for_candidate(entry.file, Path(job.kb_root) if job.kb_root else None)
    official = load_problem(entry.kb_file, search).build_model(backend.device)
    conn.send(("step", "building the trials"))
    trials = prepare_trials(entry, official, backend.device)
    program = f"{entry.name}.cu"
    cache_dir = Path(job.cache_dir) if job.cache_dir else None

    def compile_digest(source: str) -> str:
        # For the backend's own architecture: its load() then finds this compile in the cache.
        compiled, _ = compile_cached(source, entry.kernel_name, backend.nvrtc_arch, cache_dir, program)
        return ptx_digest(compiled.ptx)

    loaded = {}

    def original():
        if "kernel" not in loaded:
            conn.send(("step", "compiling the unmutated source"))
            loaded["kernel"] = backend.load(entry.cuda, entry.kernel_name, program)
        return loaded["kernel"]

    digests = {compile_digest(entry.cuda): None} if job.check_equivalence else {}

    def run_trial(kernel, trial: Trial) -> str:
        run = run_kernel(entry, kernel, backend, trial.inputs)
        return first_failure(run, trial.expected, entry)

    # The unmutated source goes through the same trials and must survive every one.
    slowest = 0.0
    if job.run_baseline:
        started = time.perf_counter()
        for trial in trials:
            conn.send(("step", f"unmutated {trial.where}"))
            began = time.perf_counter()
            failure = run_trial(original(), trial)
            slowest = max(slowest, time.perf_counter() - began)
            if failure:
                conn.send(("baseline", False, f"the unmutated source fails {trial.where}: {failure}",
                           time.perf_counter() - started))
                return
        conn.send(("baseline", True, "", time.perf_counter() - started))
    conn.send(("step_timeout", job.step_timeout or STEP_TIMEOUT_ALLOWANCE + STEP_TIMEOUT_FACTOR * slowest))

    def judge(kernel, mutant_id: str) -> tuple[MutantStatus, str, bool]:
        """Run the trials, in the order that has killed most, until one fails: (status, detail, context lost)."""
        for i in sorted(range(len(trials)), key=lambda i: -kills[i]):
            trial = trials[i]
            conn.send(("step", f"{mutant_id} {trial.where}"))
            try:
                failure = run_trial(kernel, trial)
                # Atomic kernels sum in any order: a kill stands only if the unmutated kernel passes it again.
                if failure and entry.accumulates and run_trial(original(), trial):
                    continue
            except KernelFault as fault:
                return MutantStatus.RUNTIME_ERROR, f"{trial.where}: {fault}", fault.poisons_context
            except RuntimeError as error:  # torch meeting a context the mutant broke
                if "CUDA" not in str(error):
                    raise
                return MutantStatus.RUNTIME_ERROR, f"{trial.where}: {error}", True
            if failure:
                kills[i] += 1
                return MutantStatus.KILLED, f"{trial.where}: {failure}", False
        return MutantStatus.SURVIVED, f"passed all {len(trials)} trials", False

    mutants = {m.id: m for m in generate(entry.cuda, entry.name)}
    kills = Counter()
    for mutant_id in job.mutant_ids:
        started = time.perf_counter()
        conn.send(("mutant", mutant_id))
        conn.send(("step", f"compiling {mutant_id}"))

        def report(status: MutantStatus, detail: str = "", digest: str = "") -> None:
            conn.send(("result", {"mutant_id": mutant_id, "status": status.value, "detail": detail,
                                  "seconds": round(time.perf_counter() - started, 4), "ptx_sha256": digest}))

        source = mutants[mutant_id].apply(entry.cuda)
        digest = ""
        try:
            # PTX first: an equivalent or duplicate mutant is never loaded (nor, on the CPU, built by g++).
            if job.check_equivalence:
                digest = compile_digest(source)
                if digest in digests:
                    twin = digests[digest]
                    if twin is None:
                        report(MutantStatus.EQUIVALENT, "compiled code identical to the unmutated source's", digest)
                    else:
                        report(MutantStatus.DUPLICATE, f"compiled code identical to {twin}'s", digest)
                    continue
                digests[digest] = mutant_id
            kernel = backend.load(source, entry.kernel_name, program)
        except CompileError as error:
            report(MutantStatus.COMPILE_ERROR, str(error).splitlines()[0])
            continue
        except KernelFault as fault:
            report(MutantStatus.RUNTIME_ERROR, f"loading the mutant: {fault}")
            if fault.poisons_context:
                return
            continue
        status, detail, context_lost = judge(kernel, mutant_id)
        report(status, detail, digest)
        if context_lost:
            return  # the parent starts a fresh worker for the rest
