"""Inside a campaign worker: one substrate, kept warm, running one mutant after another.

The worker builds every trial's inputs and computes the official reference once, compiles the
unmutated source once, and then takes the mutants `batch_size` at a time: compiles them as one
NVRTC program (`harness.engine.compile`, `harness.batches`; a batch that fails is compiled one mutant at a time, and a
mutant that does not compile alone is a CompileError), and for each mutant compares its code
with the original's and with earlier mutants' (identical code is Equivalent or Duplicate and
never runs), then runs the trials, most kills per byte first (`trial_order`), until the first
one fails. A fault that poisons the CUDA context ends the worker; the parent starts a fresh one
for the mutants left.

Messages to the parent: ("timings", {phase: seconds so far}) after the baseline, after each
result and last however the job ends; ("step_timeout", s) once the unmutated run is timed;
("baseline", ok, why, seconds); ("retry", id, why) when a mutant must be judged again in a fresh
worker (the worker's copy of a trial was damaged, perhaps by an earlier mutant); ("batch", ids)
before a batch compiles with NVRTC and ("compiled",) after (a timeout or crash between them blames no
mutant; on the CPU backend g++ then builds the batch in a process beside the worker, and the next
batch is compiled before the mutants of this one run); ("mutant", id) as each mutant starts;
("step", what) before each compile and trial; ("result", {...}) per mutant.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# A mutant may take this many times the slowest unmutated trial, plus the allowance, per step.
STEP_TIMEOUT_FACTOR = 20
STEP_TIMEOUT_ALLOWANCE = 20.0
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


@dataclass
class Trial:
    suite: str
    t: int
    inputs: list
    expected: object
    # Whether the official output holds poison pattern one, and two, somewhere (run_kernel's expected_poison).
    expected_poison: tuple[bool, bool] | None = None

    @property
    def where(self) -> str:
        return f"{self.suite} trial {self.t}"


def prepare_trials(entry, official, device, clock, state: tuple = ()) -> list[Trial]:
    """Every suite trial's inputs (on the device) and official output, computed once; `clock` (a PhaseClock) gets
    the seconds of each as parts of "trials and references". `state`: the entry's model_state tensors, appended to
    each trial's inputs after the official output is computed (the kernel reads them, the Model holds them)."""
    import torch

    from harness.candidates import call_builder
    from harness.guards import POISON_BYTES, poison_held, read_together

    made = []  # (suite, t, inputs, expected, each pattern's poison_held on the device, or None)
    for suite, n_trials, builder in entry.suites():
        for t in range(n_trials):
            with clock.timing("trials and references: inputs"):
                inputs = call_builder(builder, t, device)
            with torch.no_grad(), clock.timing("trials and references: official outputs"):
                expected = official(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
                held = ([poison_held(expected, pattern) for pattern in POISON_BYTES]
                        if isinstance(expected, torch.Tensor) else None)
            made.append((suite, t, [*inputs, *state], expected, held))
    # Whether each official output holds the poison patterns, read in one transfer: a read of each (two a trial)
    # waited for a GPU that the campaign's other workers share.
    with clock.timing("trials and references: official outputs"):
        read = iter(read_together([signal for *_, held in made if held is not None for signal in held]))
        return [Trial(suite, t, inputs, expected,
                      None if held is None else tuple(bool(next(read)[0]) for _ in held))
                for suite, t, inputs, expected, held in made]


def _unswitched_cubins(compiled: dict, batch: tuple[str, ...], switches: dict) -> dict:
    """A batch's variants ({mutant id: Variant or None}), those of mutants the schema does not switch made to load
    from the checked cubin of them alone (checked_cubin_ptx, the pool's); the switched ones run from the schema, and
    their code is only compared."""
    import dataclasses

    from harness.batches import variant_index
    from harness.engine.compile import checked_cubin_ptx

    unswitched: dict[str, list[int]] = {}  # each program's PTX (a batch's, or a mutant's alone): its variants to run
    for mutant_id in batch:
        variant = compiled[mutant_id]
        if variant is not None and mutant_id not in switches:
            unswitched.setdefault(variant.kernel.ptx, []).append(variant_index(variant.kernel.lowered_name))
    pruned = {ptx: checked_cubin_ptx(ptx, len(batch), indices) for ptx, indices in unswitched.items()}
    return {mutant_id: (dataclasses.replace(variant, kernel=dataclasses.replace(variant.kernel,
                                                                                  ptx=pruned[variant.kernel.ptx]))
                        if variant is not None and mutant_id not in switches else variant)
            for mutant_id, variant in compiled.items()}


def code_status(digests: dict[str, str | None], digest: str, mutant_id: str):
    """Equivalent or Duplicate when `digest` is known (None stands for the unmutated source), else
    None, and the mutant's code is recorded as `mutant_id`'s for those that come after it."""
    from harness.engine.report import MutantStatus

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


def trial_checksum(trial: "Trial") -> tuple[int, ...]:
    """A sum of each tensor of a trial (inputs and official output), taken where it lives.

    The bytes are summed as 64-bit words (wrapping), the last few as bytes: one read of the trial,
    about 5 ms per 100 MB on this project's 2-core CPU (summing single bytes took 50 times that), so
    cheap enough to take for every trial when a worker starts and again when a kill is found. A
    stray write that changes a trial changes its sums, except by a coincidence no fault pattern makes.
    """
    return trial_checksums([trial])[0]


def trial_checksums(trials: list["Trial"]) -> list[tuple[int, ...]]:
    """trial_checksum of each trial, read from the device in one transfer where they share one (a wait for the
    device each, not one a tensor: a checked campaign sums every trial after each fault the check foresees)."""
    import torch

    from harness.guards import checksum_parts, read_together

    tensors = [[x for x in (*trial.inputs, trial.expected) if isinstance(x, torch.Tensor)] for trial in trials]
    read = iter(read_together([checksum_parts(x) for group in tensors for x in group]))
    return [tuple(sum(next(read)) for _ in group) for group in tensors]


def input_sums(trial: "Trial", checksum: tuple[int, ...]) -> list:
    """Each input's part of `trial_checksum` (None for a non-tensor input): what run_kernel compares the
    inputs' guarded copies with after each run, so a mutant's trial need not sum its fresh copies again."""
    import torch

    sums = iter(checksum)
    return [next(sums) if isinstance(x, torch.Tensor) else None for x in trial.inputs]


def trial_bytes(trial: "Trial") -> int:
    """What a trial moves: the bytes of its tensor inputs and of the official output."""
    import torch

    tensors = [x for x in (*trial.inputs, trial.expected) if isinstance(x, torch.Tensor)]
    return sum(x.numel() * x.element_size() for x in tensors)


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
    from harness.phases import PhaseClock

    phases, mutant_parts, setup_parts = Counter(), PhaseClock(), PhaseClock()
    backend = None
    try:
        backend = _run_campaign_job(job, conn, phases, mutant_parts, setup_parts, wait_for_job, processor_since)
    finally:
        conn.send(("timings", timings(phases, mutant_parts, setup_parts, processor_since)))
    if backend is None or not backend.end_job():
        return False
    _made_ahead[(job.backend, backend_settings(job.backend, job.cache_dir, job.check_addresses))] = backend
    return True


# A campaign's backends, by name: the CPU backend's NVRTC stops at PTX (ptxas's GPU limits are the gate's to hold);
# a GPU worker's waits for its GPU sleep (harness.backends.cuda: CudaBackend's blocking_sync).
CAMPAIGN_BACKEND_SETTINGS = {"cpu": {"ptxas": False}, "cuda": {"blocking_sync": True}}
# Where a worker's time goes, in the order the campaign prints them.
PHASES = ("start-up", "trials and references", "unmutated runs", "compiling", "mutants")
# The parts of the mutants' time (loading each, and run_kernel's phases), reported beside PHASES under this
# prefix: the campaign's speed is the mutants' time, and these say what in it to make faster.
MUTANT_PART = "mutants: "
# A worker's processor time (all its threads), beside its phases: what of its wall time it left to other processes
# (the compile pool's), waiting on the GPU without spinning, say.
PROCESSOR_TIME = "processor time"


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


def backend_settings(backend: str, cache_dir: str | None, check_addresses: bool) -> tuple:
    """The settings a campaign worker's backend is made with, as create_backend takes them (key, value pairs)."""
    settings = {"cache_dir": Path(cache_dir) if cache_dir else None, **CAMPAIGN_BACKEND_SETTINGS.get(backend, {}),
                **({"check_addresses": True} if check_addresses else {})}
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

    for module in ("torch", "cuda.bindings.nvrtc", "harness.batches", "harness.engine.compile", "harness.cache", "harness.pipeline",
                   "harness.compare", "harness.candidates", "harness.problems", "harness.engine.mutants",
                   f"harness.backends.{backend}", *(("cuda.bindings.driver",) if backend == "cuda" else ())):
        importlib.import_module(module)


def _run_campaign_job(job: CampaignJob, conn, phases: Counter, mutant_parts, setup_parts, wait_for_job: bool,
                      processor_since: float):
    """The job (run_campaign_job); returns its backend where every mutant was judged and no fault ended the job,
    else None."""
    from harness.backends import KernelFault, create_backend
    from harness.cache import address_checked_cubin, compile_cached, compile_program_cached
    from harness.batches import ptx_digest
    from harness.engine.compile import compile_variants, group_by_batch, to_load
    from harness.engine.mutants import generate
    from harness.engine.report import MutantStatus
    from harness.engine.schema import schema, switch_symbol
    from harness.guards import GuardedBuffers
    from harness.nvrtc import CompileError
    from harness.pipeline import run_kernel
    from harness.problems import ProblemSearch, load_problem, model_state

    # What a worker started after a fault pays again, in parts: where to look to make that cheaper.
    with _Phase(phases, "start-up"):
        with setup_parts.timing("start-up: candidate imported"):
            entry = _load_entry(job)
        with setup_parts.timing("start-up: backend"):
            settings = backend_settings(job.backend, job.cache_dir, job.check_addresses)
            backend = _made_ahead.pop((job.backend, settings), None) or create_backend(job.backend, **dict(settings))
        with setup_parts.timing("start-up: official model"):
            search = ProblemSearch.for_candidate(entry.file, Path(job.kb_root) if job.kb_root else None)
            official = load_problem(entry.kb_file, search).build_model(backend.device)
            state = model_state(official, entry.model_state)
    conn.send(("step", "building the trials"))
    with _Phase(phases, "trials and references"):
        trials = prepare_trials(entry, official, backend.device, setup_parts, tuple(state))
    program = f"{entry.name}.cu"
    cache_dir = Path(job.cache_dir) if job.cache_dir else None
    def compile_batch_ptx(source: str, name_expressions: tuple[str, ...], arch: str, program_name: str):
        """Through the cache, which holds what the pool compiled ahead. Alone where a schema runs some of the batch:
        the checked cubin of the rest is assembled (or found, the pool's) as they load (checked_cubin_ptx)."""
        with setup_parts.timing("compiling: NVRTC, or the cache"):
            return compile_program_cached(source, name_expressions, arch, program_name, cache_dir)

    def compile_batch(source: str, name_expressions: tuple[str, ...], arch: str, program_name: str):
        """compile_batch_ptx; checked, with the batch's checked cubin too, so that a batch ptxas refuses fails here
        (and is split) rather than as it loads."""
        compiled = compile_batch_ptx(source, name_expressions, arch, program_name)
        if job.check_addresses:
            with setup_parts.timing("compiling: the address-checked cubin, assembled or from the cache"):
                address_checked_cubin(compiled.ptx, arch, cache_dir)
        return compiled

    def compile_digest(source: str) -> str:
        # For the backend's own architecture: its load() then finds this compile in the cache.
        compiled, _ = compile_cached(source, entry.kernel_name, backend.nvrtc_arch, cache_dir, program)
        return ptx_digest(compiled.ptx)

    loaded = {}

    def original():
        if "kernel" not in loaded:
            conn.send(("step", "compiling the unmutated source"))
            # Batch form when the worker batches: the digest's compile is the one that runs.
            loaded["kernel"] = backend.load(entry.cuda, entry.kernel_name, program,
                                            compiled=original_variant.kernel if original_variant else None)
        return loaded["kernel"]

    # Digests of batch-compiled code and of code compiled alone differ; a worker uses one form throughout.
    conn.send(("step", "compiling the unmutated source"))
    with _Phase(phases, "compiling"):
        original_variant = compile_variants([entry.cuda], entry, backend.nvrtc_arch, program, compile_batch)[0] \
            if job.batch_size > 1 else None
        batching = original_variant is not None
        original_digest = ((original_variant.digest if batching else compile_digest(entry.cuda))
                           if job.check_equivalence else None)

    costs = [trial_bytes(trial) for trial in trials]
    checksums = trial_checksums(trials)
    sums_of_inputs = [input_sums(trial, checksum) for trial, checksum in zip(trials, checksums)]

    if wait_for_job:
        conn.send(("step", "warmed ahead, waiting for its job"))
        _target, (given,) = conn.recv()
        # What was built ahead is for this substrate, compiled this way; the parent keys its spares so.
        same = ("file", "name", "backend", "batch_size", "check_equivalence", "cache_dir", "kb_root", "check_addresses",
                "schemata")
        if any(getattr(given, field) != getattr(job, field) for field in same):
            raise ValueError(f"a worker warmed for {job.name} ({job.file}, batch size {job.batch_size}) was given a "
                             f"job for {given.name} ({given.file}, batch size {given.batch_size})")
        job = given
    digests = {}
    if job.check_equivalence:
        digests.update(dict(job.known_digests))
        digests[original_digest] = None

    # Mutants change the CUDA source, never launch: whether launch initialises out is found once per trial, and what
    # launch returns is recorded then and reused (harness.pipeline.LaunchRecord).
    initialised: dict[int, bool] = {}
    launches: dict = {}  # trial -> LaunchRecord
    buffers = GuardedBuffers()  # one trial's guarded copies and output, kept from run to run

    def run_trial(kernel, i: int, runs: int = 2, clock=None) -> str:
        run = run_kernel(entry, kernel, backend, trials[i].inputs, trials[i].expected, initialised=initialised.get(i),
                         input_sums=sums_of_inputs[i], runs=runs, clock=clock,
                         expected_poison=trials[i].expected_poison, buffers=buffers, launched=launches.get(i),
                         record_launch=i not in launches)
        if not run.argument_problems:
            initialised.setdefault(i, run.initialised_by_launch)
        if run.launch is not None:
            launches[i] = run.launch
        return first_failure(run, trials[i].expected, entry)

    mutants = {m.id: m for m in generate(entry.cuda, entry.name)}
    # Of every mutant of the substrate, not only this job's: the same schema, compiled once, in every worker and pool.
    made_schema = (schema(entry.cuda, list(mutants.values()))
                   if job.schemata and batching and backend.switches_schemata else None)
    switches = made_schema.switches if made_schema else {}

    def schema_kernel():
        """The schema's kernel, loaded once (None where it does not compile or load: its mutants then load alone)."""
        if "schema" not in loaded:
            conn.send(("step", "compiling the schema"))
            loaded["schema"] = None
            with _Phase(phases, "compiling"):
                (variant,) = compile_variants([made_schema.source()], entry, backend.nvrtc_arch, program, compile_batch)
            if variant is not None:
                try:
                    with mutant_parts.timing(loading):
                        loaded["schema"] = backend.load(made_schema.source(), entry.kernel_name, program,
                                                        compiled=variant.kernel)
                except CompileError:
                    pass
        return loaded["schema"]
    if batching and job.batches:  # the plan's batches, the same in every worker: compiled ahead, in the cache
        chunks = group_by_batch(job.mutant_ids, job.batches)
    else:
        per_compile = job.batch_size if batching else 1
        chunks = [(chunk, chunk) for chunk in
                  (job.mutant_ids[first:first + per_compile] for first in range(0, len(job.mutant_ids), per_compile))]

    def prepare(chunk) -> tuple[list[str], list]:
        """The sources and NVRTC variants of a chunk's mutants, their g++ build (on the CPU backend) started
        beside what follows. The whole batch is compiled, as the plan made it, so that it is the program
        compiled ahead; a worker after a fault may have only part of it to run.

        NVRTC runs here, in this thread, between the ("batch", ...) and ("compiled",) messages:
        a compiler that crashes the worker is then seen as the batch's doing, not a mutant's.
        """
        batch, members = chunk
        batch_sources = {mutant_id: mutants[mutant_id].apply(entry.cuda) for mutant_id in batch}
        sources = [batch_sources[mutant_id] for mutant_id in members]
        variants = [None] * len(members)
        if batching:
            conn.send(("batch", members))
            conn.send(("step", f"compiling {len(batch)} mutants as one program"))
            with _Phase(phases, "compiling"):
                compiled = dict(zip(batch, compile_variants(list(batch_sources.values()), entry, backend.nvrtc_arch,
                                                            program, compile_batch_ptx if switches else compile_batch)))
                if switches and job.check_addresses:
                    compiled = _unswitched_cubins(compiled, batch, switches)
                variants = [compiled[mutant_id] for mutant_id in members]
                unswitched = [i for i, mutant_id in enumerate(members) if mutant_id not in switches]
                backend.compile_ahead(to_load([sources[i] for i in unswitched], [variants[i] for i in unswitched],
                                              digests if job.check_equivalence else None),
                                      entry.kernel_name, program)
            conn.send(("compiled",))
        return sources, variants

    # Where the backend builds beside this worker (g++), the schema and the first batch are started before the
    # unmutated source runs and each next batch before the mutants of the one before; elsewhere the compile is in this
    # thread, and a batch is compiled when its mutants come, which leaves the compile pool the time to have made it.
    ahead = backend.builds_beside
    if ahead and switches and any(mutant_id in switches for mutant_id in job.mutant_ids):
        backend.compile_ahead([made_schema.source()], entry.kernel_name, program)
    prepared = prepare(chunks[0]) if chunks and ahead else None

    # The unmutated source goes through the same trials and must survive every one. One run each: the
    # gate admitted it (plans() takes only admitted substrates) with both runs on these trials; one run
    # still shows the campaign's copy of the trials intact and times a mutant's step (two runs).
    slowest = 0.0
    if job.run_baseline:
        started = time.perf_counter()
        with _Phase(phases, "unmutated runs"):
            for i, trial in enumerate(trials):
                conn.send(("step", f"unmutated {trial.where}"))
                began = time.perf_counter()
                try:
                    failure = run_trial(original(), i, runs=1)
                except KernelFault as fault:
                    if not fault.foreseen:
                        raise
                    conn.send(("baseline", False, f"{BASELINE_STOPPED_BY_CHECK} on {trial.where}: {fault}",
                               time.perf_counter() - started))
                    return
                slowest = max(slowest, 2 * (time.perf_counter() - began))
                if failure:
                    conn.send(("baseline", False, f"the unmutated source fails {trial.where}: {failure}",
                               time.perf_counter() - started))
                    return
        conn.send(("baseline", True, "", time.perf_counter() - started))
        conn.send(("timings", timings(phases, mutant_parts, setup_parts, processor_since)))
    conn.send(("step_timeout", job.step_timeout or STEP_TIMEOUT_ALLOWANCE + STEP_TIMEOUT_FACTOR * slowest))

    def trials_damaged() -> bool:
        """Whether any of the worker's trials differs from what it was built as (a stray write's doing)."""
        return trial_checksums(trials) != checksums

    def judge(kernel, mutant_id: str) -> tuple[MutantStatus | None, str, bool, bool, bool]:
        """Run the trials, those that kill soonest first, until one fails: (status, detail, end the worker,
        a memory fault the CPU shim caught, a GPU fault the address check foresaw).

        A kill stands only if the worker's copy of the trial is intact (its byte sums are those it was
        built with; a stray write of this or an earlier mutant may have changed it: status None, the
        worker must end), and, for an atomic kernel, which may sum in another order, only if the
        unmutated kernel passes the trial again (else the trial is skipped).
        """
        for i in trial_order(kills, costs):
            trial = trials[i]
            conn.send(("step", f"{mutant_id} {trial.where}"))
            try:
                failure = run_trial(kernel, i, clock=mutant_parts)
                if failure:
                    with mutant_parts.timing("the trial's checksum after a kill"):
                        damaged = trial_checksum(trial) != checksums[i]
                    if damaged:
                        return None, f"{trial.where}: {failure}", True, False, False
                if failure and entry.accumulates:
                    conn.send(("step", f"{mutant_id} {trial.where}: the unmutated kernel again"))
                    if run_trial(original(), i, clock=mutant_parts):
                        continue
            except KernelFault as fault:
                end = fault.poisons_context
                if fault.foreseen:
                    # The GPU would have ended this worker, and with it whatever the kernel wrote before the
                    # access the check stopped. Writes into the worker's trials end it still.
                    with mutant_parts.timing("the trials' checksums after a foreseen fault"):
                        end = trials_damaged()
                return MutantStatus.RUNTIME_ERROR, f"{trial.where}: {fault}", end, fault.memory_fault, fault.foreseen
            except RuntimeError as error:  # torch meeting a context the mutant broke
                if "CUDA" not in str(error):
                    raise
                return MutantStatus.RUNTIME_ERROR, f"{trial.where}: {error}", True, False, False
            if failure:
                kills[i] += 1
                return MutantStatus.KILLED, f"{trial.where}: {failure}", False, False, False
        return MutantStatus.SURVIVED, f"passed all {len(trials)} trials", False, False, False

    # Where nvJitLink does not load, the driver assembles each checked module as it loads it: named apart.
    loading = "loading (nvJitLink not loadable in the worker)" if getattr(backend, "assembles_checked_ptx", False) \
        else "loading"
    kills = Counter()
    started_here = 0  # mutants this worker has started: trials damaged after the first may be an earlier one's doing
    for index, (_batch, members) in enumerate(chunks):
        sources, variants = prepared if prepared is not None else prepare(chunks[index])
        prepared = prepare(chunks[index + 1]) if ahead and index + 1 < len(chunks) else None
        for mutant_id, source, variant in zip(members, sources, variants):
            started = time.perf_counter()
            started_here += 1
            conn.send(("mutant", mutant_id))

            def report(status: MutantStatus, detail: str = "", digest: str = "") -> None:
                seconds = time.perf_counter() - started
                phases["mutants"] += seconds
                conn.send(("result", {"mutant_id": mutant_id, "status": status.value, "detail": detail,
                                      "seconds": round(seconds, 4), "ptx_sha256": digest,
                                      **({"schema": True} if from_schema else {})}))
                # So far: a worker that dies later has said this much.
                conn.send(("timings", timings(phases, mutant_parts, setup_parts, processor_since)))

            digest = ""
            from_schema = False  # run from the substrate's schema, its switch set to this mutant
            try:
                # Code compared first: an equivalent or duplicate mutant is never loaded (nor, on the CPU,
                # built by g++). A mutant that compiles alone but not in a batch is run without comparison.
                if job.check_equivalence and (variant or not batching):
                    if not batching:
                        conn.send(("step", f"compiling {mutant_id}"))
                    digest = variant.digest if variant else compile_digest(source)
                    same_code = code_status(digests, digest, mutant_id)
                    if same_code is not None:
                        twin = digests[digest]
                        report(same_code, "compiled code identical to the unmutated source's" if twin is None
                               else f"compiled code identical to {twin}'s", digest)
                        continue
                conn.send(("step", f"loading {mutant_id}"))
                kernel = schema_kernel() if mutant_id in switches else None
                with mutant_parts.timing(loading):
                    if kernel is not None:
                        backend.set_switch(kernel, switch_symbol(), switches[mutant_id])
                        from_schema = True
                    else:
                        # A switched mutant is in no checked cubin of its batch: alone, as one that failed to batch.
                        batched = variant.kernel if variant is not None and mutant_id not in switches else None
                        try:
                            kernel = backend.load(source, entry.kernel_name, program, compiled=batched)
                        except CompileError:
                            if batched is None or not switches:
                                raise
                            # ptxas refused the batch's pruned cubin (one of its mutants' doing): this one alone says.
                            kernel = backend.load(source, entry.kernel_name, program)
            except CompileError as error:
                report(MutantStatus.COMPILE_ERROR, str(error).splitlines()[0])
                continue
            except KernelFault as fault:
                report(MutantStatus.RUNTIME_ERROR, f"loading the mutant: {fault}")
                if fault.poisons_context:
                    return
                continue
            status, detail, end_worker, memory_fault, foreseen = judge(kernel, mutant_id)
            if from_schema and status is MutantStatus.RUNTIME_ERROR and not (foreseen or memory_fault or end_worker):
                # The schema's kernel, not the mutant's, may be what failed (a block that fits the mutant's registers
                # and not the schema's): the mutant compiled alone says. A memory fault (the CPU shim's) is the
                # mutant's own code faulting, which the schema runs as it is.
                conn.send(("step", f"{mutant_id}: judged again, compiled alone"))
                try:
                    with mutant_parts.timing(loading):
                        alone = backend.load(source, entry.kernel_name, program)
                except (CompileError, KernelFault):
                    alone = None  # the schema's verdict stands
                if alone is not None:
                    from_schema = False
                    status, detail, end_worker, memory_fault, foreseen = judge(alone, mutant_id)
                    detail += " (judged again compiled alone: it failed to run from the schema)"
            if memory_fault and started_here > 1:
                # Such a fault used to end the process, and a death is a mutant's own only when it is the
                # first mutant of a fresh worker (an earlier one may have damaged the process). With the
                # trials intact, this worker becomes that: its trial order forgotten, the mutant judged again.
                if trials_damaged():
                    conn.send(("retry", mutant_id, f"{detail}; a trial changed before it: judged in a fresh worker"))
                    return
                kills.clear()
                started_here = 1
                status, detail, end_worker, memory_fault, foreseen = judge(kernel, mutant_id)
                detail += " (judged again as the first mutant of a fresh worker)"
            if status is None and started_here > 1:
                # The damage may be an earlier mutant's: judge this one again, first in a fresh worker.
                conn.send(("retry", mutant_id, f"{detail}; the worker's copy of that trial has changed"))
                return
            if status is None:
                status, detail = MutantStatus.KILLED, (
                    f"{detail} (and its stray writes changed the worker's copy of the trial)")
            report(status, detail, digest)
            if end_worker:
                return  # the parent starts a fresh worker for the rest
            if foreseen:
                # A fault the address check foresaw: the GPU would have ended this worker, and the next mutant would
                # start in a fresh one, its trial order not yet learnt. So it does here, and is judged as it would be.
                kills.clear()
                started_here = 0
    return backend
