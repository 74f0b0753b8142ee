"""Inside a campaign worker: one substrate, kept warm, running one mutant after another.

The worker builds every trial's inputs and computes the official reference once, compiles the
unmutated source once, and then takes the mutants `batch_size` at a time: compiles them as one
NVRTC program (`harness.engine.compile`, `harness.compiler.batches`; a batch that fails is compiled one mutant at a time, and a
mutant that does not compile alone is a CompileError), and for each mutant compares its code
with the original's and with earlier mutants' (identical code is Equivalent or Duplicate and
never runs), then runs the trials, most kills per byte first (`trial_order`), until the first
one fails. A fault that poisons the CUDA context ends the worker; the parent starts a fresh one
for the mutants left.

Messages to the parent: ("timings", {phase: seconds so far}) after the baseline, after each
result and last however the job ends; ("step_timeout", s) once the unmutated run is timed;
("baseline", ok, why, seconds); ("retry", id, why) when a mutant must be judged again in a fresh
worker (the worker's copy of a trial was damaged, perhaps by an earlier mutant, or the device's memory ran out);
("short_of_memory", id, why) where the memory ran out for the first mutant of a fresh worker; ("batch", ids)
before a batch compiles with NVRTC and ("compiled",) after (a timeout or crash between them blames no
mutant; on the CPU backend g++ then builds the batch in a process beside the worker, and the next
batch is compiled before the mutants of this one run); ("mutant", id) as each mutant starts;
("step", what) before each compile and trial (("step", what, s) for a --matrix cell: its own limit);
("result", {...}) per mutant; ("parked", n, trials, share bytes) where n of the trials wait in host memory
(harness.engine.trials). Under --matrix and --checker, the row's and the checkers' messages beside
(harness.engine.run.JUDGING_MESSAGES), ("row_timeout", s) with the step timeout, and ("queued", id) before a row's
trials are queued on the device (a loss before its next cell: the mutant is judged again a trial at a time).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness.backends import KernelFault
from harness.backends.base import out_of_device_memory
from harness.compiler.nvrtc import CompileError
from harness.engine.compile import CAMPAIGN_BACKEND_SETTINGS
from harness.engine.report import MutantStatus
from harness.engine.trials import (HostMemoryShort, Trial, Trials, checksum_of, input_sums, trial_bytes,
                                   trial_checksum, trial_checksum_parts, trial_checksums)

# A mutant may take this many times the slowest unmutated trial, plus the allowance, per step.
STEP_TIMEOUT_FACTOR = 20
STEP_TIMEOUT_ALLOWANCE = 20.0
# A --matrix cell's allowance in its place: every mutant runs every trial there, and one that spins on the largest
# (a loop bound off by one) spent the whole allowance on each of them (16 such of 1538 held a worker 20 s each).
MATRIX_CELL_ALLOWANCE = 5.0
# A --matrix row whose trial 0 took longer runs its other trials one at a time: a trial's wait for the device, which
# queuing saves, is a few milliseconds against a run this long, and a trial alone makes no run again to be described.
# The accumulations' swapped-index mutants (every atomic on a few addresses) run slowly on every trial: rows of up to
# 46 s on an H100 (MEASUREMENTS.md).
SLOW_ROW_SECONDS = 0.25
# Mutants compiled as one NVRTC program (measured in MEASUREMENTS.md: the per-mutant compile
# time stops falling well before this size, and a worker restarted after a fault loses at most
# one batch's compile).
BATCH_SIZE = 32
# The start of the ("baseline", False, why, s) message's `why` when the address check stopped the unmutated
# kernel: memory the check's table does not know of (not torch's), which the parent then runs without it.
BASELINE_STOPPED_BY_CHECK = "the address check stopped the unmutated source"


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
    batch_size: int = BATCH_SIZE  # 1: every mutant compiled alone (naive mode; after a batch timed out)
    # (code digest, mutant id) of mutants already judged, by an earlier worker or an earlier run:
    # a mutant whose code matches one of them is a Duplicate whichever worker meets it.
    known_digests: tuple[tuple[str, str], ...] = ()
    # Where the worker's stderr goes: a mutant that corrupts the CPU backend's heap makes libc
    # print, and a dying worker's traceback would land in the middle of the progress bar.
    stderr_log: str | None = None
    cache_dir: str | None = None
    kb_root: str | None = None
    # The plan's batches (harness.engine.compile.batches) holding mutant_ids: compiled whole, as planned.
    batches: tuple[tuple[str, ...], ...] = ()
    # cuda: mutants loaded address-checked (harness.backends.address_check), so a fault foreseen ends no worker.
    check_addresses: bool = False
    # On a backend that switches schemata: the mutants the substrate's schema switches (harness.engine.schema) run
    # from it, their batches' checked cubins (cuda) or shared objects (the CPU's g++) holding only the others.
    schemata: bool = False
    # --matrix: every trial of every suite, past the first failure (harness.engine.matrix); each result holds its cells.
    matrix: bool = False
    # --checker specs (harness.checkers.resolve): each judges the unmutated kernel with the baseline, then every
    # mutant that ran; each result holds their verdicts.
    checkers: tuple[str, ...] = ()
    # The plan's batches that come before this job's, run by other workers at once (harness.engine.plan.shards): their
    # code's digests are learnt from the compile cache first, so that a duplicate is found as one worker finds it.
    learn_batches: tuple[tuple[str, ...], ...] = ()
    # --matrix on a GPU: the limit of a row's trials queued at once (harness.engine.row), from an earlier worker's
    # unmutated runs (measured again when None), and the mutants whose rows run a trial at a time (a queued row of
    # theirs hung or crashed its worker, where the trial that did it is not known).
    row_timeout: float | None = None
    rows_alone: tuple[str, ...] = ()
    # --checker: mutants whose fault on the suites ended an earlier worker (their suites' verdict stored), judged here
    # by the checkers alone.
    checkers_apart: tuple[str, ...] = ()
    # The worker's share of its device's memory (the GPU's over the campaign's workers on it): trials past it wait in
    # host memory (harness.engine.trials). None: every trial on the device (the CPU backend, or not known).
    device_share_bytes: int | None = None
    # --kernel-times: the backend times each launch on the device (Backend.kernel_seconds), reported as KERNEL_TIME.
    time_kernels: bool = False


def prepare_trials(entry, official, device, clock, state: tuple = (), after_first_t0=None,
                   share_bytes: int | None = None, say=None) -> Trials:
    """Every suite trial's inputs (on the device) and official output, computed once; `clock` (a PhaseClock) gets
    the seconds of each as parts of "trials and references". `state`: the entry's model_state tensors, appended to
    each trial's inputs after the official output is computed (the kernel reads them, the Model holds them).
    `after_first_t0(inputs, n_trials)`, called with T0's first trial as built, may return its further trials as
    helpers build them (harness.engine.draws_ahead.DrawsAhead), or None. Trials past the worker's `share_bytes` of
    the device wait in host memory (harness.engine.trials.Parking), their checksums taken on the device first.
    `say(what)`, where given, hears of each trial as it is begun (a real-size T0 takes tens of seconds a trial)."""
    import torch

    from harness.engine.trials import Parking
    from harness.gate.checks.guards import POISON_BYTES, poison_held, read_together
    from harness.gate.checks.suite_rules import T0_NAME
    from harness.gate.trial_inputs import build_trial

    made = []  # (trial, each pattern's poison_held on the device or None, its checksum parts)
    parking = Parking(share_bytes, clock)
    suites = list(entry.suites())
    total = sum(n_trials for _suite, n_trials, _builder in suites)
    for suite, n_trials, builder in suites:
        ahead = None
        for t in range(n_trials):
            if say is not None:
                say(f"building the trials: {suite} trial {t}, {len(made) + 1} of {total}")
            with clock.timing("trials and references: inputs"):
                # As the gate builds it (the global RNG seeded alike; a large T0 in helpers, as the gate's): the t0
                # checker's T0 trials are these.
                built = ahead.take(t) if ahead is not None else None
                if built is None:
                    built = build_trial(builder, t, device)
                if suite == T0_NAME and t == 0 and after_first_t0 is not None:
                    ahead = after_first_t0(built, n_trials)
                inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in built]
                del built
            with torch.no_grad(), clock.timing("trials and references: official outputs"):
                expected = official(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
                held = ([poison_held(expected, pattern) for pattern in POISON_BYTES]
                        if isinstance(expected, torch.Tensor) else None)
            trial = Trial(suite, t, [*inputs, *state], expected)
            made.append((trial, held, trial_checksum_parts(trial)))
            del inputs, expected
            parking.place(len(made) - 1, trial)
    # Whether each official output holds the poison patterns, and each trial's checksum, read in one transfer: a read
    # of each waited for a GPU that the campaign's other workers share.
    with clock.timing("trials and references: official outputs"):
        read = iter(read_together([signal for _trial, held, parts in made for signal in (*(held or ()), *parts)]))
        checksums = []
        for trial, held, parts in made:
            trial.expected_poison = None if held is None else tuple(bool(next(read)[0]) for _ in held)
            checksums.append(checksum_of([next(read) for _ in parts]))
    return Trials([trial for trial, *_ in made], parking.parked, checksums, device)


def _unswitched_cubins(compiled: dict, batch: tuple[str, ...], switches: dict) -> dict:
    """A batch's variants ({mutant id: Variant or None}), those of mutants the schema does not switch made to load
    from the checked cubin of them alone (checked_cubin_ptx, the pool's); the switched ones run from the schema, and
    their code is only compared."""
    from harness.engine.compile import kernels_of_their_own

    # The variants to run, each from its program's PTX (a batch's, or a mutant's alone) pruned to them.
    unswitched = kernels_of_their_own({mutant_id: compiled[mutant_id].kernel for mutant_id in batch
                                       if compiled[mutant_id] is not None and mutant_id not in switches}, len(batch))
    return {mutant_id: (dataclasses.replace(variant, kernel=unswitched[mutant_id]) if mutant_id in unswitched
                        else variant)
            for mutant_id, variant in compiled.items()}


def code_status(digests: dict[str, str | None], digest: str, mutant_id: str):
    """Equivalent or Duplicate when `digest` is known (None stands for the unmutated source), else
    None, and the mutant's code is recorded as `mutant_id`'s for those that come after it."""
    if digest not in digests:
        digests[digest] = mutant_id
        return None
    return MutantStatus.EQUIVALENT if digests[digest] is None else MutantStatus.DUPLICATE


def trial_order(kills: dict[int, int], costs: list[int]) -> list[int]:
    """Trials in the order that kills soonest: most kills per byte of the trial first.

    A kill found by a small trial saves the large ones (a mutant that makes a kernel spin runs a
    small trial far faster than a KernelBench-sized one). The cost is the trial's bytes, not its
    measured time, so the order, and with it which trial is named as the killer, is the same on
    every run. Kills start at one each, so untried trials still get their turn.
    """
    return sorted(range(len(costs)), key=lambda i: (-(kills.get(i, 0) + 1) / max(costs[i], 1), i))


def first_failure(run, expected, entry) -> str:
    """'' when the run passes every check the gate makes of a kernel, else the first check it fails."""
    if run.argument_problems:
        return "launch_arguments: " + run.argument_problems[0]
    if run.guard_damage:
        return "writes_in_bounds: " + run.guard_damage[0]
    if run.changed_inputs:
        return "inputs_unchanged: " + run.changed_inputs[0]
    if run.unwritten:
        return f"output_fully_written: {run.unwritten} output elements never written"
    for comparison in run.comparisons:
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


def run_campaign_job(job: CampaignJob, conn, wait_for_job: bool = False, processor_since: float = 0.0) -> bool:
    """Run the job's mutants; ("timings", {phase: seconds}) is the last message, however the job ends. Returns
    whether this worker may take another job: it ran every mutant, no fault ended it, and its device still runs
    work; its backend (its CUDA context) is then kept for that job (make_backend_ahead's place).

    wait_for_job: `job` names only the substrate; its trials and references are built and its unmutated source
    compiled, and then the job itself is read from `conn` as the fork server's worker reads one, (target, (job,)):
    a spare worker warmed ahead of a fault (WorkerStarter.warm). processor_since: the process's processor time when
    this job began (a kept worker's earlier jobs reported theirs), 0 for its first.
    """
    from harness.gate.phases import PhaseClock
    from harness.interrupt import die_quietly_on_interrupt

    die_quietly_on_interrupt()  # Ctrl-C ends the campaign, which says so once: no traceback per worker
    phases, mutant_parts, setup_parts = Counter(), PhaseClock(), PhaseClock()
    backend = None
    try:
        backend = _run_campaign_job(job, conn, phases, mutant_parts, setup_parts, wait_for_job, processor_since)
    finally:
        conn.send(("timings", timings(phases, mutant_parts, setup_parts, processor_since)))
    if backend is None or not backend.end_job():
        return False
    _made_ahead[(job.backend, backend_settings(job.backend, job.cache_dir, job.check_addresses,
                                               job.time_kernels))] = backend
    return True


# Where a worker's time goes, in the order the campaign prints them.
PHASES = ("start-up", "trials and references", "unmutated runs", "compiling", "mutants")
# The parts of the mutants' time (loading each, and run_kernel's phases), reported beside PHASES under this
# prefix: the campaign's speed is the mutants' time, and these say what in it to make faster.
MUTANT_PART = "mutants: "
# A worker's processor time (all its threads), beside its phases: what of its wall time it left to other processes
# (the compile pool's), waiting on the GPU without spinning, say.
PROCESSOR_TIME = "processor time"
# With --kernel-times: the seconds the job's kernels ran on the device (Backend.kernel_seconds).
KERNEL_TIME = "kernels on the device"


def timings(phases: Counter, mutant_parts, setup_parts, processor_since: float = 0.0) -> dict[str, float]:
    """The ("timings", ...) message's content: the phases and, prefixed with their phase, the parts of the mutants'
    time and of the start-up's and the trials' (`setup_parts` names them with the prefix already), and the processor
    time since `processor_since`."""
    return {**phases, **{MUTANT_PART + part: seconds for part, seconds in mutant_parts.seconds().items()},
            **setup_parts.seconds(), PROCESSOR_TIME: time.process_time() - processor_since}


class _Phase:
    """Adds the seconds spent inside a `with` block to phases[name]."""

    def __init__(self, phases: Counter, name: str):
        assert name in PHASES, name
        self.phases, self.name = phases, name

    def __enter__(self):
        self.started = time.perf_counter()

    def __exit__(self, *exc):
        self.phases[self.name] += time.perf_counter() - self.started


def backend_settings(backend: str, cache_dir: str | None, check_addresses: bool, time_kernels: bool = False) -> tuple:
    """The settings a campaign worker's backend is made with, as create_backend takes them (key, value pairs)."""
    settings = {"cache_dir": Path(cache_dir) if cache_dir else None, **CAMPAIGN_BACKEND_SETTINGS.get(backend, {}),
                **({"check_addresses": True} if check_addresses else {}),
                **({"time_kernels": True} if time_kernels else {})}
    return tuple(sorted(settings.items()))


# A backend made before this process's job was known (make_backend_ahead), by (name, settings): the process's own,
# handed to its job if the job wants that one. Process-local: each worker is a process of its own.
_made_ahead: dict = {}


def make_backend_ahead(backend: str, settings: tuple) -> None:
    """Make the backend a job will want, before the job comes: a worker started ahead of need (a spare) then
    starts its job with its CUDA context made (a second of a core each, more when many start at once)."""
    from harness.backends import create_backend

    try:
        _made_ahead[(backend, settings)] = create_backend(backend, **dict(settings))
    except Exception:  # left for the job to make, which then says what is wrong as it always has
        pass


def import_ahead(backend: str) -> None:
    """Import what _run_campaign_job needs, which takes seconds (torch above all), before the job is known.

    cuda.bindings' modules load NVRTC and the driver library; none of them initialises CUDA.
    """
    import importlib

    for module in ("torch", "cuda.bindings.nvrtc", "harness.compiler.batches", "harness.engine.compile", "harness.compiler.cache", "harness.gate.pipeline",
                   "harness.gate.checks.compare", "harness.candidates", "harness.problems", "harness.engine.mutants",
                   f"harness.backends.{backend}", *(("cuda.bindings.driver",) if backend == "cuda" else ())):
        importlib.import_module(module)


def _run_campaign_job(job: CampaignJob, conn, phases: Counter, mutant_parts, setup_parts, wait_for_job: bool,
                      processor_since: float):
    """The job (run_campaign_job); returns its backend where every mutant was judged and no fault ended the job,
    else None."""
    run = _SubstrateRun(job, conn, phases, mutant_parts, setup_parts, processor_since)
    try:
        try:
            run.start_up()
        except TrialsDoNotFit:  # said: the substrate is not run on
            return None
        run.compile_original()
        if wait_for_job:
            run.take_job()
        run.plan_mutants()
        if not run.run_baseline():
            return None
        return run.backend if run.run_mutants() else None
    finally:
        run.note_kernel_time(wait=True)
        for ahead in (run.t0_ahead, run.draws_ahead):
            if ahead is not None:  # draws not taken (the job ended first): their helpers go
                ahead.close()


class TrialsDoNotFit(Exception):
    """A substrate's trials do not fit in the device's memory (the campaign was told: `short_of_memory`)."""


def _first_words(error: BaseException) -> str:
    """An error's first line, at most 200 characters (an out-of-memory error's next lines are torch's advice)."""
    lines = str(error).strip().splitlines()
    return lines[0][:200] if lines else type(error).__name__


@dataclass(frozen=True)
class _Verdict:
    """What judging one mutant on the trials found (_SubstrateRun.judge)."""

    status: MutantStatus | None  # None: a kill on a trial the run damaged, which the worker must end to confirm
    detail: str
    end_worker: bool = False
    memory_fault: bool = False  # a memory fault the CPU shim caught
    foreseen: bool = False  # a GPU fault the address check foresaw
    cells: tuple = ()  # under --matrix: the row's cells (harness.engine.matrix.Cell), in the suites' order
    handed_back: bool = False  # sent back ("retry") to be judged in a fresh worker: no result of this worker's


@dataclass
class _QueuedRow:
    """A row's queued trials, read (harness.engine.row): each trial's KernelRun, the unmutated kernel's runs after an
    accumulation's trials, and the trial the row ends at where one ended it."""

    runs: dict = dataclasses.field(default_factory=dict)  # trial: its KernelRun, None where it must run alone
    unmutated: dict = dataclasses.field(default_factory=dict)  # trial: the unmutated kernel's KernelRun (or None)
    # (trial, KernelFault): a launch refused as it was queued, or a fault the address check foresaw; nothing after it
    ends: tuple | None = None

    def run(self, i: int):
        """Trial i's KernelRun; None where it was not queued, or its signals say it must run alone to be described.
        The fault that ends the row at trial i is raised there, as run_kernel raises it."""
        if self.ends is not None and self.ends[0] == i:
            raise self.ends[1]
        return self.runs.get(i)

    def read(self, queued: dict, values, sums: list, firsts: dict | None = None) -> None:
        """The queued trials' values read in their order ({trial: (the mutant's QueuedTrial, the unmutated kernel's or
        None)}); on `firsts` (trial: run one's KernelRun) where these are run twos. Stops at a fault: the row ends."""
        from harness.engine.row import trial_run

        firsts = firsts or {}
        for i, (made, again) in queued.items():
            try:
                if made is not None:
                    self.runs[i] = trial_run(made, values, sums[i], firsts.get(i))
                if again is not None:
                    self.unmutated[i] = trial_run(again, values, sums[i])
            except KernelFault as fault:
                self.ends = (i, fault)
                return


class _SubstrateRun:
    """One job's substrate in this worker: the trials and references built once, the unmutated source compiled once,
    then the mutants a chunk at a time. The steps are methods that _run_campaign_job calls in order; what one step
    makes, the later ones read from the instance."""

    def __init__(self, job: CampaignJob, conn, phases: Counter, mutant_parts, setup_parts, processor_since: float):
        self.job, self.conn, self.phases = job, conn, phases
        self.mutant_parts, self.setup_parts, self.processor_since = mutant_parts, setup_parts, processor_since
        self.loaded: dict = {}  # "kernel": the unmutated source's, "schema": the schema's (None where it failed)
        # Draws helpers make at once (harness.engine.draws_ahead): T0's trials, the KernelBench checkers' inputs.
        self.t0_ahead = self.draws_ahead = None
        self.backend, self.kernel_seconds_before = None, None

    def note_kernel_time(self, wait: bool) -> None:
        """The job's kernels' time on the device so far into its phases (--kernel-times; nothing where not timed or
        no backend made); without `wait`, the launches still running are left out."""
        if self.backend is None or self.kernel_seconds_before is None:
            return
        try:
            self.phases[KERNEL_TIME] = self.backend.kernel_seconds(wait) - self.kernel_seconds_before
        except Exception:  # the backend's device is gone (a fault): its time cannot be read
            pass

    def start_up(self) -> None:
        """The candidate's entry, the backend, the official model and the trials: what a worker started after a
        fault pays again, timed in parts (where to look to make that cheaper)."""
        from harness.backends import create_backend
        from harness.problems import ProblemSearch, load_problem, model_state

        job, setup_parts = self.job, self.setup_parts
        with _Phase(self.phases, "start-up"):
            with setup_parts.timing("start-up: candidate imported"):
                self.entry = _load_entry(job)
            with setup_parts.timing("start-up: backend"):
                settings = backend_settings(job.backend, job.cache_dir, job.check_addresses, job.time_kernels)
                self.backend = (_made_ahead.pop((job.backend, settings), None)
                                or create_backend(job.backend, **dict(settings)))
                self.kernel_seconds_before = self.backend.kernel_seconds()  # a kept backend's earlier jobs' time
            with setup_parts.timing("start-up: official model"):
                search = ProblemSearch.for_candidate(self.entry.file, Path(job.kb_root) if job.kb_root else None)
                self.problem = load_problem(self.entry.kb_file, search)
                self.official = official = self.problem.build_model(self.backend.device)
                self.state = tuple(model_state(official, self.entry.model_state))
        self.conn.send(("step", "building the trials"))
        with _Phase(self.phases, "trials and references"):
            try:
                self.trials = prepare_trials(self.entry, official, self.backend.device, setup_parts, self.state,
                                             self.draws_ahead_from, job.device_share_bytes,
                                             say=lambda what: self.conn.send(("step", what)))
                self.trials.clock = self.mutant_parts
                if self.trials.parked:
                    self.conn.send(("parked", len(self.trials.parked), len(self.trials), job.device_share_bytes))
            except Exception as error:
                if out_of_device_memory(error) or isinstance(error, HostMemoryShort):
                    raise self.trials_do_not_fit(error) from error
                raise
        self.program = f"{self.entry.name}.cu"
        self.cache_dir = Path(job.cache_dir) if job.cache_dir else None

    def compile_batch_ptx(self, source: str, name_expressions: tuple[str, ...], arch: str, program_name: str):
        """Through the cache, which holds what the pool compiled ahead. Alone where a schema runs some of the batch:
        the checked cubin of the rest is assembled (or found, the pool's) as they load (checked_cubin_ptx)."""
        from harness.compiler.cache import compile_program_cached

        with self.setup_parts.timing("compiling: NVRTC, or the cache"):
            return compile_program_cached(source, name_expressions, arch, program_name, self.cache_dir)

    def compile_batch(self, source: str, name_expressions: tuple[str, ...], arch: str, program_name: str):
        """compile_batch_ptx; checked, with the batch's checked cubin too, so that a batch ptxas refuses fails here
        (and is split) rather than as it loads."""
        from harness.compiler.cache import address_checked_cubin

        compiled = self.compile_batch_ptx(source, name_expressions, arch, program_name)
        if self.job.check_addresses:
            with self.setup_parts.timing("compiling: the address-checked cubin, assembled or from the cache"):
                address_checked_cubin(compiled.ptx, arch, self.cache_dir)
        return compiled

    def compile_digest(self, source: str) -> str:
        from harness.compiler.batches import ptx_digest
        from harness.compiler.cache import compile_cached

        # For the backend's own architecture: its load() then finds this compile in the cache.
        compiled, _ = compile_cached(source, self.entry.kernel_name, self.backend.nvrtc_arch, self.cache_dir,
                                     self.program)
        return ptx_digest(compiled.ptx)

    def original(self):
        """The unmutated source's kernel, loaded once."""
        if "kernel" not in self.loaded:
            self.conn.send(("step", "compiling the unmutated source"))
            # Batch form when the worker batches: the digest's compile is the one that runs.
            self.loaded["kernel"] = self.backend.load(
                self.entry.cuda, self.entry.kernel_name, self.program,
                compiled=self.original_variant.kernel if self.original_variant else None)
        return self.loaded["kernel"]

    def compile_original(self) -> None:
        """The unmutated source's compile and digest, and each trial's cost and byte sums."""
        from harness.engine.compile import compile_variants

        entry = self.entry
        # Digests of batch-compiled code and of code compiled alone differ; a worker uses one form throughout.
        self.conn.send(("step", "compiling the unmutated source"))
        with _Phase(self.phases, "compiling"):
            self.original_variant = (compile_variants([entry.cuda], entry, self.backend.nvrtc_arch, self.program,
                                                      self.compile_batch)[0]
                                     if self.job.batch_size > 1 else None)
            self.batching = self.original_variant is not None
            self.original_digest = ((self.original_variant.digest if self.batching else self.compile_digest(entry.cuda))
                                    if self.job.check_equivalence else None)
        self.costs = [trial_bytes(trial) for trial in self.trials.built]
        self.checksums = self.trials.checksums
        self.sums_of_inputs = [input_sums(trial, checksum)
                               for trial, checksum in zip(self.trials.built, self.checksums)]

    def take_job(self) -> None:
        """A spare warmed ahead: the job itself, read from `conn` as the fork server's worker reads one."""
        job = self.job
        self.conn.send(("step", "warmed ahead, waiting for its job"))
        _target, (given,) = self.conn.recv()
        # What was built ahead is for this substrate, compiled this way; the parent keys its spares so.
        same = ("file", "name", "backend", "batch_size", "check_equivalence", "cache_dir", "kb_root", "check_addresses",
                "schemata")
        if any(getattr(given, field) != getattr(job, field) for field in same):
            raise ValueError(f"a worker warmed for {job.name} ({job.file}, batch size {job.batch_size}) was given a "
                             f"job for {given.name} ({given.file}, batch size {given.batch_size})")
        self.job = given

    def plan_mutants(self) -> None:
        """The job's mutants in chunks to compile, the schema that switches most of them, and what the runs share;
        on a backend that builds beside the worker (g++), the schema and the first chunk's build started."""
        from harness.engine.compile import group_by_batch
        from harness.engine.mutants import generate
        from harness.engine.schema import schema
        from harness.gate.checks.guards import GuardedBuffers

        job = self.job
        self.digests: dict = {}
        if job.check_equivalence:
            self.digests.update(dict(job.known_digests))
            self.digests[self.original_digest] = None
        # Mutants change the CUDA source, never launch: whether launch initialises out is found once per trial, and
        # what launch returns is recorded then and reused (harness.gate.pipeline.LaunchRecord).
        self.initialised: dict[int, bool] = {}
        self.launches: dict = {}  # trial -> LaunchRecord
        self.buffers = GuardedBuffers()  # one trial's guarded copies and output, kept from run to run
        self.mutants = {m.id: m for m in generate(self.entry.cuda, self.entry.name)}
        # Of every mutant of the substrate, not only this job's: the same schema, compiled once, in every worker and
        # pool.
        self.made_schema = (schema(self.entry.cuda, list(self.mutants.values()))
                            if job.schemata and self.batching and self.backend.switches_schemata else None)
        self.switches = self.made_schema.switches if self.made_schema else {}
        if job.learn_batches and job.check_equivalence and self.batching:
            self.learn_digests(job.learn_batches)
        if self.batching and job.batches:  # the plan's batches, the same in every worker: compiled ahead, in the cache
            self.chunks = group_by_batch(job.mutant_ids, job.batches)
        else:
            per_compile = job.batch_size if self.batching else 1
            self.chunks = [(chunk, chunk) for chunk in (job.mutant_ids[first:first + per_compile]
                                                        for first in range(0, len(job.mutant_ids), per_compile))]
        # Where the backend builds beside this worker (g++), the schema and the first batch are started before the
        # unmutated source runs and each next batch before the mutants of the one before; elsewhere the compile is in
        # this thread, and a batch is compiled when its mutants come, which leaves the compile pool the time to have
        # made it.
        self.ahead = self.backend.builds_beside
        if self.ahead and self.switches and any(mutant_id in self.switches for mutant_id in job.mutant_ids):
            self.backend.compile_ahead([self.made_schema.source()], self.entry.kernel_name, self.program)
        self.prepared = self.prepare(self.chunks[0]) if self.chunks and self.ahead else None
        # Where nvJitLink does not load, the driver assembles each checked module as it loads it: named apart.
        self.loading = ("loading (nvJitLink not loadable in the worker)"
                        if getattr(self.backend, "assembles_checked_ptx", False) else "loading")
        self.kills = Counter()
        # Mutants this worker has started: trials damaged after the first may be an earlier one's doing.
        self.started_here = 0
        self.checkers, self.built_problem = {}, None
        if job.checkers:
            from harness.checkers import resolve

            self.checkers = {spec: resolve(spec)(self.entry) for spec in job.checkers}

    def run_trial(self, kernel, i: int, runs: int = 2, clock=None) -> str:
        return first_failure(self.run_kernel(kernel, i, runs, clock), self.trials[i].expected, self.entry)

    def run_kernel(self, kernel, i: int, runs: int = 2, clock=None, describe_ahead: bool = False, read_beside=None,
                   stop_when_decided: bool = False):
        """The kernel on trial i (harness.gate.pipeline.run_kernel), launch's findings kept for the next kernels."""
        from harness.gate.pipeline import run_kernel

        trial = self.trials[i]
        run = run_kernel(self.entry, kernel, self.backend, trial.inputs, trial.expected,
                         initialised=self.initialised.get(i), input_sums=self.sums_of_inputs[i], runs=runs,
                         clock=clock, expected_poison=trial.expected_poison, buffers=self.buffers,
                         launched=self.launches.get(i), record_launch=i not in self.launches,
                         describe_ahead=describe_ahead, read_beside=read_beside, stop_when_decided=stop_when_decided)
        if not run.argument_problems:
            self.initialised.setdefault(i, run.initialised_by_launch)
        if run.launch is not None:
            self.launches[i] = run.launch
        if run.out_of_memory is not None:
            # launch's own allocation (its output) met the device's limit beside the campaign's other workers: no
            # verdict on the kernel, said as the memory's (judge, judge_row and run_baseline catch it)
            raise run.out_of_memory
        return run

    def schema_kernel(self):
        """The schema's kernel, loaded once (None where it does not compile or load: its mutants then load alone)."""
        from harness.engine.compile import compile_variants

        if "schema" not in self.loaded:
            self.conn.send(("step", "compiling the schema"))
            self.loaded["schema"] = None
            with _Phase(self.phases, "compiling"):
                (variant,) = compile_variants([self.made_schema.source()], self.entry, self.backend.nvrtc_arch,
                                              self.program, self.compile_batch)
            if variant is not None:
                try:
                    with self.mutant_parts.timing(self.loading):
                        self.loaded["schema"] = self.backend.load(self.made_schema.source(), self.entry.kernel_name,
                                                                  self.program, compiled=variant.kernel)
                except CompileError:
                    pass
        return self.loaded["schema"]

    def learn_digests(self, learn_batches: tuple[tuple[str, ...], ...]) -> None:
        """The code digests of the mutants of `learn_batches` (run by other workers), recorded as code_status records
        those it meets, in the plan's order: compiled as prepare() compiles them, so found in the compile cache."""
        from harness.engine.compile import compile_variants

        entry = self.entry
        self.conn.send(("step", f"learning the code of {sum(map(len, learn_batches))} mutants other workers run"))
        with _Phase(self.phases, "compiling"):
            for batch in learn_batches:
                variants = compile_variants([self.mutants[mutant_id].apply(entry.cuda) for mutant_id in batch], entry,
                                            self.backend.nvrtc_arch, self.program,
                                            self.compile_batch_ptx if self.switches else self.compile_batch)
                for mutant_id, variant in zip(batch, variants):
                    if variant is not None:
                        self.digests.setdefault(variant.digest, mutant_id)

    def prepare(self, chunk) -> tuple[list[str], list]:
        """The sources and NVRTC variants of a chunk's mutants, their g++ build (on the CPU backend) started
        beside what follows. The whole batch is compiled, as the plan made it, so that it is the program
        compiled ahead; a worker after a fault may have only part of it to run.

        NVRTC runs here, in this thread, between the ("batch", ...) and ("compiled",) messages:
        a compiler that crashes the worker is then seen as the batch's doing, not a mutant's.
        """
        from harness.engine.compile import compile_variants, to_load

        entry, switches = self.entry, self.switches
        batch, members = chunk
        batch_sources = {mutant_id: self.mutants[mutant_id].apply(entry.cuda) for mutant_id in batch}
        sources = [batch_sources[mutant_id] for mutant_id in members]
        variants = [None] * len(members)
        if self.batching:
            self.conn.send(("batch", members))
            self.conn.send(("step", f"compiling {len(batch)} mutants as one program"))
            with _Phase(self.phases, "compiling"):
                compiled = dict(zip(batch, compile_variants(
                    list(batch_sources.values()), entry, self.backend.nvrtc_arch, self.program,
                    self.compile_batch_ptx if switches else self.compile_batch)))
                if switches and self.job.check_addresses:
                    compiled = _unswitched_cubins(compiled, batch, switches)
                variants = [compiled[mutant_id] for mutant_id in members]
                unswitched = [i for i, mutant_id in enumerate(members) if mutant_id not in switches]
                self.backend.compile_ahead(to_load([sources[i] for i in unswitched], [variants[i] for i in unswitched],
                                                   self.digests if self.job.check_equivalence else None),
                                           entry.kernel_name, self.program)
            self.conn.send(("compiled",))
        return sources, variants

    def run_baseline(self) -> bool:
        """The unmutated source through every trial, once each (the gate admitted it with both runs on these trials;
        one run still shows the campaign's copy of the trials intact and times a mutant's step, two runs), and the
        step timeout sent; False where it failed a trial (said in a ("baseline", False, ...) message)."""
        conn, job = self.conn, self.job
        slowest = queued = 0.0
        if job.run_baseline:
            from harness.gate.phases import PrefixedClock

            started = time.perf_counter()
            with (_Phase(self.phases, "unmutated runs"),
                  self.trials.timed_on(PrefixedClock(self.setup_parts, "unmutated runs: "))):
                for i, trial in enumerate(self.trials):
                    conn.send(("step", f"unmutated {trial.where}"))
                    began = time.perf_counter()
                    try:
                        failure = self.run_trial(self.original(), i, runs=1)
                    except KernelFault as fault:
                        if not fault.foreseen:
                            raise
                        conn.send(("baseline", False, f"{BASELINE_STOPPED_BY_CHECK} on {trial.where}: {fault}",
                                   time.perf_counter() - started))
                        return False
                    except RuntimeError as error:
                        if not out_of_device_memory(error):
                            raise
                        conn.send(("short_of_memory", job.name, f"the unmutated source on {trial.where}: the device's "
                                                                 f"memory ran out ({_first_words(error)})"))
                        return False
                    both_runs = 2 * (time.perf_counter() - began)
                    slowest = max(slowest, both_runs)
                    queued += both_runs if i else 0.0  # a row queues trials 1 onwards
                    if failure:
                        conn.send(("baseline", False, f"the unmutated source fails {trial.where}: {failure}",
                                   time.perf_counter() - started))
                        return False
            conn.send(("baseline", True, "", time.perf_counter() - started))
            if self.checkers:
                # Its own phase: at real sizes the checkers' draws for every kernel after it are made here.
                with _Phase(self.phases, "unmutated runs"):
                    verdicts, _end, _foreseen = self.run_checkers(
                        self.original(), "the unmutated kernel", PrefixedClock(self.setup_parts, "unmutated runs: "))
                conn.send(("checkers_unmutated", verdicts))
            self.send_timings()
        self.step_timeout = job.step_timeout or STEP_TIMEOUT_ALLOWANCE + STEP_TIMEOUT_FACTOR * slowest
        conn.send(("step_timeout", self.step_timeout))
        self.row_timeout = job.row_timeout or (MATRIX_CELL_ALLOWANCE + STEP_TIMEOUT_FACTOR * queued
                                               if job.run_baseline else None)
        if job.matrix and self.row_timeout:
            conn.send(("row_timeout", self.row_timeout))
        return True

    def send_timings(self) -> None:
        # Cumulative, the parent keeping the last: a worker killed later (a hang, Ctrl-C) has said its kernels' time
        # so far. Not waited for: the results just sent were read from the device after their launches.
        self.note_kernel_time(wait=False)
        self.conn.send(("timings", timings(self.phases, self.mutant_parts, self.setup_parts, self.processor_since)))

    def trials_damaged(self) -> bool:
        """Whether any of the worker's trials on the device differs from what it was built as (a stray write's doing;
        a parked trial's host copy is out of a kernel's reach)."""
        held = self.trials.held()
        return trial_checksums([self.trials[i] for i in held]) != [self.checksums[i] for i in held]

    def judge(self, kernel, mutant_id: str) -> _Verdict:
        """Run the trials, those that kill soonest first, until one fails (under --matrix, judge_row).

        A kill stands only if the worker's copy of the trial is intact (its byte sums are those it was
        built with; a stray write of this or an earlier mutant may have changed it: status None, the
        worker must end), and, for an atomic kernel, which may sum in another order, only if the
        unmutated kernel passes the trial again (else the trial is skipped).
        """
        if self.job.matrix:
            return self.judge_row(kernel, mutant_id)
        for i in trial_order(self.kills, self.costs):
            trial = self.trials[i]
            self.conn.send(("step", f"{mutant_id} {trial.where}"))
            try:
                failure = self.run_trial(kernel, i, clock=self.mutant_parts)
                if failure:
                    with self.mutant_parts.timing("the trial's checksum after a kill"):
                        damaged = trial_checksum(trial) != self.checksums[i]
                    if damaged:
                        return _Verdict(None, f"{trial.where}: {failure}", end_worker=True)
                if failure and self.entry.accumulates:
                    self.conn.send(("step", f"{mutant_id} {trial.where}: the unmutated kernel again"))
                    if self.run_trial(self.original(), i, clock=self.mutant_parts):
                        continue
            except KernelFault as fault:
                return self.fault_verdict(fault, trial)
            except RuntimeError as error:  # torch meeting a context the mutant broke
                if out_of_device_memory(error):
                    return self.short_of_memory(mutant_id, trial, error)
                if "CUDA" not in str(error):
                    raise
                return _Verdict(MutantStatus.RUNTIME_ERROR, f"{trial.where}: {error}", end_worker=True)
            if failure:
                self.kills[i] += 1
                return _Verdict(MutantStatus.KILLED, f"{trial.where}: {failure}")
        return _Verdict(MutantStatus.SURVIVED, f"passed all {len(self.trials)} trials")

    def judge_row(self, kernel, mutant_id: str) -> _Verdict:
        """Every trial in the suites' order, past failures, a cell each (sent as it is made, so that the parent
        keeps the row of a worker that dies); a fault ends the row, and a kill on a trial the run damaged ends it
        as judge() ends its search. The first cell that is no pass decides the status (matrix.row_verdict).

        Trial 0 runs alone (a mutant that spins does so there, within a cell's limit), then on a GPU the others are
        queued and read in two transfers (harness.engine.row), unless trial 0 took more than SLOW_ROW_SECONDS;
        a queued read the device fails hands the mutant back to be judged a trial at a time ("retry"), as does the
        parent where a queued row is lost."""
        from harness.engine.matrix import Cell, CellStatus, row_verdict

        self.conn.send(("row", mutant_id))
        cells, queued, first_seconds = [], None, 0.0
        for i, trial in enumerate(self.trials):
            try:
                if i == 1 and self.queues_row(mutant_id) and first_seconds <= SLOW_ROW_SECONDS:
                    queued = self.queue_rest(kernel, mutant_id)
                    if queued is None:
                        return _Verdict(None, "", end_worker=True, handed_back=True)
                began = time.perf_counter()
                cell, failure, damaged = self.row_cell(kernel, mutant_id, i, queued)
                if i == 0:
                    first_seconds = time.perf_counter() - began
            except (KernelFault, RuntimeError) as error:
                if isinstance(error, RuntimeError) and out_of_device_memory(error):
                    return self.short_of_memory(mutant_id, trial, error)
                if isinstance(error, RuntimeError) and "CUDA" not in str(error):
                    raise
                verdict = (self.fault_verdict(error, trial) if isinstance(error, KernelFault)
                           else _Verdict(MutantStatus.RUNTIME_ERROR, f"{trial.where}: {error}", end_worker=True))
                cells.append(Cell(trial.suite, trial.t, CellStatus.FAULT, "", str(error)))
                self.conn.send(("cell", cells[-1].to_json()))
                status, detail = row_verdict(cells)
                return dataclasses.replace(verdict, status=MutantStatus(status), detail=detail, cells=tuple(cells))
            cells.append(cell)
            if damaged:
                return _Verdict(None, f"{trial.where}: {failure}", end_worker=True, cells=tuple(cells))
            self.conn.send(("cell", cell.to_json()))
        status, detail = row_verdict(cells)
        return _Verdict(MutantStatus(status), detail, cells=tuple(cells))

    def queues_row(self, mutant_id: str) -> bool:
        from harness.engine.row import queues_rows

        # Queued, every trial of the row is on the device at once: not where some are parked.
        return (len(self.trials) > 1 and self.row_timeout is not None and mutant_id not in self.job.rows_alone
                and not self.trials.parked
                and queues_rows(self.backend))

    def queue_rest(self, kernel, mutant_id: str) -> "_QueuedRow | None":
        """Trials 1 onwards queued on the device and read (harness.engine.row): run one of each, then run two of those
        run one left undecided (and an accumulation's unmutated kernel after each), each read in one transfer; a
        _QueuedRow, or None where a read failed (a fault of the device's own, at some trial: the mutant goes back to be
        judged a trial at a time)."""
        from harness.engine.row import RUN_ONE, RUN_TWO

        self.conn.send(("queued", mutant_id))
        self.conn.send(("step", f"{mutant_id}: trials 1 to {len(self.trials) - 1} queued", self.row_timeout))
        with self.mutant_parts.timing("kernel: queued trials"):
            row = _QueuedRow()
            firsts, row.ends = self.queue_trials(kernel, range(1, len(self.trials)), RUN_ONE)
            if not self.read_queued(row, firsts, mutant_id):
                return None
            # An accumulation's cell is skipped where the unmutated kernel, run again after the mutant, fails the trial
            # too: queued after the mutant's last run as it would run, read with them.
            last = row.ends[0] if row.ends is not None else len(self.trials)
            undecided = {i: firsts[i][0] for i, run in row.runs.items()
                         if run is not None and i < last and not firsts[i][0].decided(run)}
            left = [i for i in row.runs if i < last and (self.entry.accumulates or i in undecided)]
            seconds, ends = self.queue_trials(kernel, left, RUN_TWO, undecided)
            row.ends = ends or row.ends
            if seconds and not self.read_queued(row, seconds, mutant_id, {i: row.runs[i] for i in undecided}):
                return None
        return row

    def queue_trials(self, kernel, trials, runs: tuple, firsts: dict | None = None) -> tuple[dict, tuple | None]:
        """`runs` of each of `trials` queued (RUN_TWO only for those in `firsts`, their RUN_ONE QueuedTrials), and an
        accumulation's unmutated kernel after each under RUN_TWO: ({trial: (the mutant's QueuedTrial or None, the
        unmutated kernel's or None)}, (trial, KernelFault) where a launch was refused as it was made)."""
        from harness.engine.row import RUN_TWO, queue_trial

        queued, firsts = {}, firsts or {}
        for i in trials:
            trial = self.trials[i]
            try:
                made = (None if runs == RUN_TWO and i not in firsts else
                        queue_trial(self.entry, kernel, self.backend, trial.inputs, trial.expected,
                                    self.launches.get(i), self.buffers, lambda trial=trial: trial_checksum_parts(trial),
                                    runs, firsts.get(i)))
                again = (queue_trial(self.entry, self.original(), self.backend, trial.inputs, trial.expected,
                                     self.launches.get(i), self.buffers)
                         if runs == RUN_TWO and self.entry.accumulates else None)
            except KernelFault as fault:  # a launch refused as it was made: the row ends at that trial
                return queued, (i, fault)
            if made is not None or again is not None:
                queued[i] = (made, again)
        return queued, None

    def read_queued(self, row: "_QueuedRow", queued: dict, mutant_id: str, firsts: dict | None = None) -> bool:
        """`queued`'s signals read into `row`; False where the device failed the read, the mutant handed back."""
        from harness.engine.row import read_row

        try:
            values = read_row([part for pair in queued.values() for part in pair if part is not None])
        except (KernelFault, RuntimeError) as error:
            if isinstance(error, RuntimeError) and "CUDA" not in str(error):
                raise
            self.conn.send(("retry", mutant_id, f"its queued trials failed the device ({error}): judged again a "
                                                f"trial at a time"))
            return False
        row.read(queued, values, self.sums_of_inputs, firsts)
        return True

    def row_cell(self, kernel, mutant_id: str, i: int, queued: "_QueuedRow | None"):
        """Trial i's cell of the row, the failure it shows ('' for none), and whether the run damaged the worker's
        copy of the trial; from the queued read where it says enough, else from a run of the trial alone."""
        from harness.engine.matrix import Cell, CellStatus, failed_cell

        trial = self.trials[i]
        run = queued.run(i) if queued is not None else None
        if run is None:
            cell_limit = self.step_timeout - STEP_TIMEOUT_ALLOWANCE + MATRIX_CELL_ALLOWANCE
            self.conn.send(("step", f"{mutant_id} {trial.where}", cell_limit))
            self.conn.send(("trial", trial.suite, trial.t))
            # Most cells of a matrix fail (85% of the 28's): each run's mismatch is described in its one read, the
            # trial's checksum, wanted after a kill, is read with the last run's signals, and a second run that
            # cannot change the cell's check is not made.
            run = self.run_kernel(kernel, i, clock=self.mutant_parts, describe_ahead=True,
                                  read_beside=lambda: trial_checksum_parts(trial), stop_when_decided=True)
        failure = first_failure(run, trial.expected, self.entry)
        errors = next(((c.max_abs_error, c.max_rel_error) for c in run.comparisons), (None, None))
        cell = failed_cell(trial.suite, trial.t, failure, errors) if failure else \
            Cell(trial.suite, trial.t, CellStatus.PASSED, "", "", *errors)
        if not failure:
            return cell, failure, False
        with self.mutant_parts.timing("the trial's checksum after a kill"):
            checksum = checksum_of(run.beside) if run.beside is not None else trial_checksum(trial)
            damaged = checksum != self.checksums[i]
        if not damaged and self.entry.accumulates and self.unmutated_fails(i, queued):
            cell = Cell(trial.suite, trial.t, CellStatus.SKIPPED, cell.check,
                        "the unmutated kernel fails it too (an accumulation's order)")
        return cell, failure, damaged

    def unmutated_fails(self, i: int, queued: "_QueuedRow | None") -> bool:
        """Whether the unmutated kernel, run again after the mutant, fails trial i: its queued run where the row
        queued one, else a run now."""
        run = queued.unmutated.get(i) if queued is not None else None
        if run is not None:
            return bool(first_failure(run, self.trials[i].expected, self.entry))
        self.conn.send(("trial", self.trials[i].suite, self.trials[i].t))
        return bool(self.run_trial(self.original(), i, clock=self.mutant_parts))

    def run_checkers(self, kernel, what: str, clock=None) -> tuple[dict, bool, bool]:
        """Each --checker's verdict on `kernel` ({spec: CheckerVerdict's JSON}); whether the worker must end (a fault
        that poisoned the context, or a kernel whose runs changed the worker's trials); and whether a fault the
        address check foresaw stopped one of the kernel's runs (the GPU would have ended the worker). `clock` times
        the checkers' parts (the mutants' by default)."""
        from harness.checkers.under_test import (BuiltProblem, CheckerVerdict, KernelCall, judge_with,
                                                 judged_from_shared_run)

        clock = clock or self.mutant_parts
        self.trials.evict()  # a parked trial's copy: the checkers' own trials and outputs need the room
        if self.built_problem is None:  # one for every kernel the worker judges: it keeps what checkers draw
            self.built_problem = BuiltProblem(self.problem, self.official, self.backend.device, ahead=self.draws_ahead)
            self._give_t0_trials(self.built_problem)
        problem = self.built_problem
        problem.clock = clock  # the draws this kernel's checkers make
        verdicts, end, foreseen, shared = {}, False, False, {}
        for spec, checker in self.checkers.items():
            self.conn.send(("step", f"checker {spec} on {what}"))
            call = KernelCall(self.entry, self.backend, kernel, self.state, shared, clock,
                              self.buffers if self.backend.device.type == "cpu" else None)  # the GPU's allocator caches
            with clock.timing("checkers"):
                verdict = judge_with(spec, checker, problem, call, self.backend.device)
            verdicts[spec] = verdict.to_json()
            foreseen = foreseen or any(getattr(error, "foreseen", False) for error in call.raised)
            if call.poisoned:  # the device is gone: the checkers after it cannot run, but may read the run it made
                lost = CheckerVerdict(None, f"not judged: the kernel's fault under checker {spec} ended the worker")
                for rest in [name for name in self.checkers if name not in verdicts]:
                    read = judged_from_shared_run(rest, self.checkers[rest], problem, shared, self.backend.device)
                    verdicts[rest] = (read or lost).to_json()
                return verdicts, True, foreseen
            end = end or (bool(call.raised) or verdict.accepted is False) and self.trials_damaged()
        return verdicts, end, foreseen

    def draws_ahead_from(self, first: list, n_trials: int):
        """After T0's first trial (`first`, as built): where a trial that large gains, T0's further trials, and the
        KernelBench checkers' draws, are made by helpers at once (harness.engine.draws_ahead); T0's are returned."""
        from harness.engine.draws_ahead import for_kernelbench_checkers, for_t0
        from harness.gate.trial_inputs import inputs_bytes

        size = inputs_bytes(first)
        self.t0_ahead = for_t0(self.entry, self.problem, n_trials, size)
        self.draws_ahead = for_kernelbench_checkers(self.job.checkers, self.problem, size)
        return self.t0_ahead

    def _give_t0_trials(self, problem) -> None:
        """The worker's T0 trials, built as the t0 checker builds them, given to it rather than drawn again (at
        real sizes drawing took most of the checkers' time: kb_argmax's 8 GiB a trial, 13 s each on the H200's host)."""
        from harness.gate.checks.suite_rules import T0_NAME

        own = len(self.state)  # the Model's tensors appended to each trial's inputs: not the builder's
        for trial in self.trials.built:  # a parked one from host memory: the checkers copy their inputs in
            if trial.suite == T0_NAME:
                problem.give((T0_NAME, trial.t), trial.inputs[:len(trial.inputs) - own])

    def trials_do_not_fit(self, error: BaseException) -> "TrialsDoNotFit":
        """Building the trials ran out of the device's memory, or of the host's for those past the worker's share of
        the device (`error`): the substrate is not run on by this worker,
        said to the campaign (kb_avgpool2d's five 16 GiB T0 trials, all kept on an 80 GiB H100, ended its worker,
        `lost outside any mutant`). Returns the exception that ends the job."""
        host = isinstance(error, HostMemoryShort)  # its words are ours, whole: no advice of torch's to cut
        words = str(error) if host else _first_words(error)
        self.conn.send(("short_of_memory", self.job.name,
                        f"building its trials, the host's memory ran out: {words}" if host
                        else f"building its trials, the device's memory ran out ({words})"))
        return TrialsDoNotFit(words)

    def short_of_memory(self, mutant_id: str, trial: Trial, error: RuntimeError) -> _Verdict:
        """A trial that ran out of the device's memory says nothing of the mutant: what ran out is the harness's
        allocations (launch's output, its guards, the comparison), beside the campaign's other workers. The mutant is
        handed back, to be judged first in a fresh worker (this one's cached memory given back as it ends); where it
        was that already, its substrate is not run on (short_of_memory), rather than judged by the memory."""
        words = f"{trial.where}: the device's memory ran out ({_first_words(error)})"
        if self.started_here > 1:
            self.conn.send(("retry", mutant_id, f"{words}: judged again, first in a fresh worker"))
        else:
            self.conn.send(("short_of_memory", mutant_id, f"{words}, as the first mutant of a fresh worker"))
        return _Verdict(None, "", end_worker=True, handed_back=True)

    def fault_verdict(self, fault: KernelFault, trial: Trial) -> _Verdict:
        end = fault.poisons_context
        if fault.foreseen:
            # The GPU would have ended this worker, and with it whatever the kernel wrote before the
            # access the check stopped. Writes into the worker's trials end it still.
            with self.mutant_parts.timing("the trials' checksums after a foreseen fault"):
                end = self.trials_damaged()
        return _Verdict(MutantStatus.RUNTIME_ERROR, f"{trial.where}: {fault}", end, fault.memory_fault,
                        fault.foreseen)

    def load_mutant(self, mutant_id: str, source: str, variant):
        """The mutant's kernel, and whether it runs from the schema (its switch set); raises CompileError or
        KernelFault as loading does."""
        switches = self.switches
        kernel = self.schema_kernel() if mutant_id in switches else None
        with self.mutant_parts.timing(self.loading):
            if kernel is not None:
                self.backend.set_switch(kernel, _switch_symbol(), switches[mutant_id])
                return kernel, True
            # A switched mutant is in no checked cubin of its batch: alone, as one that failed to batch.
            batched = variant.kernel if variant is not None and mutant_id not in switches else None
            try:
                return self.backend.load(source, self.entry.kernel_name, self.program, compiled=batched), False
            except CompileError:
                if batched is None or not switches:
                    raise
                # ptxas refused the batch's pruned cubin (one of its mutants' doing): this one alone says.
                return self.backend.load(source, self.entry.kernel_name, self.program), False

    def run_mutants(self) -> bool:
        """Every chunk's mutants in turn; False where one ended the worker (the parent starts a fresh one for the
        rest)."""
        for index, (_batch, members) in enumerate(self.chunks):
            sources, variants = self.prepared if self.prepared is not None else self.prepare(self.chunks[index])
            self.prepared = (self.prepare(self.chunks[index + 1]) if self.ahead and index + 1 < len(self.chunks)
                             else None)
            for mutant_id, source, variant in zip(members, sources, variants):
                if not self.run_mutant(mutant_id, source, variant):
                    return False
        return True

    def report(self, mutant_id: str, started: float, from_schema: bool, status: MutantStatus, detail: str = "",
               digest: str = "", judged: dict | None = None) -> None:
        """The mutant's result; `judged` (--matrix's cells, --checker's verdicts) goes into it as it is."""
        seconds = time.perf_counter() - started
        self.phases["mutants"] += seconds
        self.conn.send(("result", {"mutant_id": mutant_id, "status": status.value, "detail": detail,
                                   "seconds": round(seconds, 4), "ptx_sha256": digest,
                                   **({"schema": True} if from_schema else {}), **(judged or {})}))
        # So far: a worker that dies later has said this much.
        self.send_timings()

    def run_mutant(self, mutant_id: str, source: str, variant) -> bool:
        """One mutant: its code compared, loaded, judged and reported; False where it ends the worker."""
        started = time.perf_counter()
        self.started_here += 1
        self.conn.send(("mutant", mutant_id))
        if mutant_id in self.job.checkers_apart:
            return self.run_checkers_apart(mutant_id, source, variant)
        digest = ""
        try:
            # Code compared first: an equivalent or duplicate mutant is never loaded (nor, on the CPU,
            # built by g++). A mutant that compiles alone but not in a batch is run without comparison.
            if self.job.check_equivalence and (variant or not self.batching):
                if not self.batching:
                    self.conn.send(("step", f"compiling {mutant_id}"))
                digest = variant.digest if variant else self.compile_digest(source)
                same_code = code_status(self.digests, digest, mutant_id)
                if same_code is not None:
                    twin = self.digests[digest]
                    self.report(mutant_id, started, False, same_code,
                                "compiled code identical to the unmutated source's" if twin is None
                                else f"compiled code identical to {twin}'s", digest)
                    return True
            self.conn.send(("step", f"loading {mutant_id}"))
            kernel, from_schema = self.load_mutant(mutant_id, source, variant)
        except CompileError as error:
            self.report(mutant_id, started, False, MutantStatus.COMPILE_ERROR, str(error).splitlines()[0])
            return True
        except KernelFault as fault:
            self.report(mutant_id, started, False, MutantStatus.RUNTIME_ERROR, f"loading the mutant: {fault}",
                        judged=self.unjudged(f"it faulted as it loaded: {fault}"))
            return not fault.poisons_context
        verdict, from_schema, kernel = self.judge_loaded(kernel, mutant_id, source, from_schema)
        if verdict is None:
            return False
        judged, end_worker, foreseen_by_checkers = self.judged(verdict, kernel, mutant_id)
        self.report(mutant_id, started, from_schema, verdict.status, verdict.detail, digest, judged)
        if end_worker:
            return False  # the parent starts a fresh worker for the rest
        if verdict.foreseen or foreseen_by_checkers:
            self.go_on_as_fresh()
        return True

    def go_on_as_fresh(self) -> None:
        """After a fault the address check foresaw: the GPU would have ended this worker, and the next mutant would
        start in a fresh one, its trial order not yet learnt. So it does here, and is judged as it would be."""
        self.kills.clear()
        self.started_here = 0

    def run_checkers_apart(self, mutant_id: str, source: str, variant) -> bool:
        """A mutant whose fault on the suites ended an earlier worker (its suites' verdict is stored): loaded and
        judged by the checkers alone, as any worker judges it after the suites; its result holds their verdicts and
        says so ("checkers_apart"). False where it ends this worker too."""
        started = time.perf_counter()
        try:
            kernel, _from_schema = self.load_mutant(mutant_id, source, variant)
        except (CompileError, KernelFault) as error:
            verdicts = self.unjudged(f"it did not load in a fresh worker: {error}")["checkers"]
            end = isinstance(error, KernelFault) and error.poisons_context
        else:
            verdicts, end, foreseen = self.run_checkers(kernel, mutant_id)
            if foreseen:
                self.go_on_as_fresh()
        self.phases["mutants"] += time.perf_counter() - started
        self.conn.send(("result", {"mutant_id": mutant_id, "checkers_apart": True, "checkers": verdicts}))
        self.send_timings()
        return not end

    def unjudged(self, why: str) -> dict:
        """What a result holds under --matrix and --checker for a mutant that ran no trial: no cells, no verdicts."""
        from harness.checkers.under_test import CheckerVerdict

        return {**({"cells": []} if self.job.matrix else {}),
                **({"checkers": {spec: CheckerVerdict(None, f"not judged: {why}").to_json() for spec in self.checkers}}
                   if self.checkers else {})}

    def judged(self, verdict: _Verdict, kernel, mutant_id: str) -> tuple[dict, bool, bool]:
        """What --matrix and --checker add to the mutant's result, whether the worker ends after it, and whether a
        checker's run met a fault the address check foresaw (run_checkers)."""
        from harness.checkers.under_test import CheckerVerdict

        judged = {}
        if self.job.matrix:
            judged["cells"] = [cell.to_json() for cell in verdict.cells]
        if not self.checkers:
            return judged, verdict.end_worker, False
        if verdict.end_worker:  # the checkers judge it in a fresh worker (checkers_apart)
            apart = CheckerVerdict(None, "not judged yet: its fault on the suites ended its worker; a fresh worker "
                                         "judges it with the checkers alone", apart=True).to_json()
            return {**judged, "checkers": {spec: apart for spec in self.checkers}}, True, False
        # The suites' verdict stands if a checker's run then ends the worker (a hang, a crash): run.lost_row keeps it.
        self.conn.send(("suites_verdict", verdict.status.value, verdict.detail))
        judged["checkers"], end, foreseen = self.run_checkers(kernel, mutant_id)
        return judged, end, foreseen

    def judge_loaded(self, kernel, mutant_id: str, source: str, from_schema: bool):
        """judge(), then judged again where its verdict may not be the mutant's own: (the verdict, whether it ran
        from the schema, the kernel judged), or (None, ...) where the mutant was handed back ("retry") for a fresh
        worker to judge."""
        verdict = self.judge(kernel, mutant_id)
        if verdict.handed_back:
            return None, from_schema, kernel
        faulted = verdict.status is MutantStatus.RUNTIME_ERROR or any(
            cell.status.value == "fault" for cell in verdict.cells)
        if from_schema and faulted and not (verdict.foreseen or verdict.memory_fault or verdict.end_worker):
            # The schema's kernel, not the mutant's, may be what failed (a block that fits the mutant's registers
            # and not the schema's): the mutant compiled alone says. A memory fault (the CPU shim's) is the
            # mutant's own code faulting, which the schema runs as it is.
            self.conn.send(("step", f"{mutant_id}: judged again, compiled alone"))
            try:
                with self.mutant_parts.timing(self.loading):
                    alone = self.backend.load(source, self.entry.kernel_name, self.program)
            except (CompileError, KernelFault):
                alone = None  # the schema's verdict stands
            if alone is not None:
                from_schema, kernel = False, alone
                verdict = self.judge(alone, mutant_id)
                if verdict.handed_back:
                    return None, from_schema, kernel
                verdict = dataclasses.replace(
                    verdict, detail=verdict.detail + " (judged again compiled alone: it failed to run from the schema)")
        if verdict.memory_fault and self.started_here > 1:
            # Such a fault used to end the process, and a death is a mutant's own only when it is the
            # first mutant of a fresh worker (an earlier one may have damaged the process). With the
            # trials intact, this worker becomes that: its trial order forgotten, the mutant judged again.
            if self.trials_damaged():
                self.conn.send(("retry", mutant_id,
                                f"{verdict.detail}; a trial changed before it: judged in a fresh worker"))
                return None, from_schema, kernel
            self.kills.clear()
            self.started_here = 1
            verdict = self.judge(kernel, mutant_id)
            verdict = dataclasses.replace(verdict,
                                          detail=verdict.detail + " (judged again as the first mutant of a fresh worker)")
        if verdict.status is None and self.started_here > 1:
            # The damage may be an earlier mutant's: judge this one again, first in a fresh worker.
            self.conn.send(("retry", mutant_id, f"{verdict.detail}; the worker's copy of that trial has changed"))
            return None, from_schema, kernel
        if verdict.status is None:
            verdict = dataclasses.replace(verdict, status=MutantStatus.KILLED, detail=(
                f"{verdict.detail} (and its stray writes changed the worker's copy of the trial)"))
        return verdict, from_schema, kernel


def _switch_symbol() -> str:
    from harness.engine.schema import switch_symbol

    return switch_symbol()
