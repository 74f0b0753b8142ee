"""`python -m harness.campaign`: seed faults into admitted substrates and record which suites catch them.

Phases: discover the candidates (in a worker, as the gate does); refuse substrates that are not
admitted at their current source hash on this backend; make every mutant of each CUDA source
(`harness.mutants`, a pure function); skip mutants whose result is stored for this source hash
and backend (`harness.campaign_store`); run the rest in warm workers, one substrate per worker,
workers spread over every GPU (`harness.campaign_worker`); store each result as it arrives;
print a table per substrate and every survivor; write the mutation-testing-elements report.

Exit status: 0 the campaign ran (whatever the scores), 1 some substrate could not be run (its
unmutated source failed a trial, or its worker could not start), 2 bad usage.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from harness import admissions
from harness.backends import BACKEND_NAMES, gpu_count, gpu_visible, resolve_backend_name
from harness.campaign_store import DEFAULT_STORE, ResultKey, ResultStore
from harness.campaign_worker import BATCH_SIZE, PHASES, CampaignJob, import_ahead, run_campaign_job
from harness.candidates import SUBSTRATES_DIR, candidate_files
from harness.mutants import Mutant, Operator, generate
from harness.mutation_report import MutantOutcome, MutantStatus, SubstrateCampaign, report_html, report_json
from harness.oracles import sanitizer as sanitizer_tools
from harness.oracles import survivors as oracles
from harness.problems import KB_ROOT_ENV, kb_root_from_env, kb_root_usage_error
from harness.worker import WorkerLost, WorkerStarter, _converse, discover

EXIT_RAN, EXIT_SUBSTRATE_FAILED, EXIT_USAGE = 0, 1, 2
STARTUP_TIMEOUT = 600.0  # building a KernelBench-sized trial set and compiling the original, before any mutant


SPARE_MODES = ("auto", "always", "never")


class UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness.campaign",
        description="Seed faults into admitted substrates' CUDA sources and record which suites catch them.",
        epilog="Exit status: 0 the campaign ran, 1 a substrate could not be run, 2 bad usage.")
    parser.add_argument("names", nargs="*", metavar="NAME", help="substrates (default: every admitted one)")
    parser.add_argument("--backend", choices=("auto",) + BACKEND_NAMES, default="auto",
                        help="where mutants run; auto picks cuda when a GPU is visible (default: auto)")
    parser.add_argument("--workers", type=int, default=0, metavar="N",
                        help="worker processes, each running one substrate at a time, spread over every GPU "
                             "(default: 4 per GPU on cuda, at most one per CPU core; 1 on cpu)")
    parser.add_argument("--operator", action="append", choices=[o.value for o in Operator], metavar="OP",
                        help="only mutants of this operator (repeatable; default: all): "
                             + ", ".join(o.value for o in Operator))
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the mutation-testing-elements report")
    parser.add_argument("--html", type=Path, metavar="PATH", help="write a page that renders the report")
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE, metavar="PATH",
                        help=f"results kept across runs, so a stopped campaign resumes (default: {DEFAULT_STORE})")
    parser.add_argument("--substrates-dir", type=Path, default=SUBSTRATES_DIR, metavar="DIR",
                        help="where the candidates are (default: substrates/)")
    parser.add_argument("--kb-root", type=Path, metavar="DIR", default=kb_root_from_env(),
                        help=f"a KernelBench checkout, as for gate.py (default: ${KB_ROOT_ENV})")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR", help="compiled-kernel cache, as for gate.py")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, metavar="N",
                        help=f"mutants compiled as one NVRTC program (default: {BATCH_SIZE}; 1 compiles each alone)")
    parser.add_argument("--naive", action="store_true",
                        help="for comparison: a fresh process, a fresh compile cache and freshly built references "
                             "for every mutant, the way KernelBench-style tools evaluate a kernel (results are "
                             "not stored)")
    parser.add_argument("--spare-workers", choices=SPARE_MODES, default="auto",
                        help="keep a worker started ahead for each worker slot, so a new worker (for the next "
                             "substrate, or after a fault) has already imported torch; auto: when each worker "
                             "and its spare can have a CPU core (default: auto)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--oracles", default=",".join(oracles.ORACLES), metavar="LIST",
                        help=f"what judges the mutants, comma-separated: values (the suites), then on their "
                             f"survivors sanitizers (compute-sanitizer's tools) and large-index (T0 tiled past 2^31 "
                             f"elements), both cuda only (default: {','.join(oracles.ORACLES)})")
    parser.add_argument("--sanitizer", type=Path, metavar="PATH",
                        help="the compute-sanitizer to use (default: from PATH, then the CUDA toolkit's folders)")
    parser.add_argument("--sanitize-tools", default=",".join(sanitizer_tools.TOOLS), metavar="LIST",
                        help=f"the sanitizers oracle's tools (default: {','.join(sanitizer_tools.TOOLS)})")
    return parser


@dataclass
class Plan:
    """One substrate's part of the campaign."""

    name: str
    file: str
    source: str
    source_sha256: str
    mutants: list[Mutant]
    kernel_name: str = ""
    t0_bytes: int = 0
    to_run: list[str] = field(default_factory=list)
    failure: str = ""
    step_timeout: float | None = None  # set by the first worker from the unmutated run's slowest trial


def _plans(args, backend: str) -> tuple[list[Plan], list[str]]:
    """The substrates to mutate, and why any named one is refused."""
    files = candidate_files(args.substrates_dir)
    entries, errors = discover(files, 120.0, args.kb_root)
    by_name = {s.name: (file, s) for file, summaries in entries.items() for s in summaries if not s.problems}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        raise UsageError(f"unknown substrate(s) {', '.join(unknown)}; registered: {', '.join(sorted(by_name)) or 'none'}")
    plans, refused = [], []
    for name in args.names or sorted(by_name):
        file, summary = by_name[name]
        record = admissions.load_record(admissions.record_path_for(Path(file)))
        if not admissions.is_admitted(record, name, summary.source_sha256, backend):
            refused.append(f"{name}: not admitted on {backend} at its current source hash "
                           f"({admissions.admission_status(record, name, summary.source_sha256)}); "
                           f"run python gate.py --backend {backend} {name}")
            continue
        mutants = [m for m in generate(summary.cuda, name) if not args.operator or m.operator.value in args.operator]
        plans.append(Plan(name, file, summary.cuda, summary.source_sha256, mutants, summary.kernel_name,
                          summary.t0_bytes))
    return plans, refused


class Progress:
    """The tqdm bar: mutants done, killed, survived; safe to update from several threads."""

    def __init__(self, total: int, disabled: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="mutant", disable=True if disabled else None, dynamic_ncols=True,
                        file=sys.stderr)
        self.counts = {"killed": 0, "survived": 0}
        self.lock = threading.Lock()

    def done(self, status: str) -> None:
        with self.lock:
            if status in self.counts:
                self.counts[status] += 1
            self.bar.set_postfix(self.counts, refresh=False)
            self.bar.update(1)

    def close(self):
        self.bar.close()


class WorkerTime:
    """Where the workers' time went, summed over every worker: the phases they report, and the rest
    (starting the process, importing torch, and whatever a worker that died had not reported yet)
    as their wall time less those; safe across threads."""

    def __init__(self):
        self.phases = {name: 0.0 for name in PHASES}
        self.wall = 0.0
        self.workers = 0
        self.lock = threading.Lock()

    def add(self, phases: dict, wall: float) -> None:
        with self.lock:
            for name, seconds in phases.items():
                self.phases[name] = self.phases.get(name, 0.0) + seconds
            self.wall += wall
            self.workers += 1

    def describe(self) -> str:
        rest = max(0.0, self.wall - sum(self.phases.values()))
        parts = [f"{name} {seconds:.1f}" for name, seconds in self.phases.items()]
        return (f"worker time {self.wall:.1f} s over {self.workers} worker(s): " + ", ".join(parts)
                + f", process start, imports and unreported {rest:.1f}")


def _timed_converse(worker_time: WorkerTime, job, handle, starter: WorkerStarter) -> None:
    """_converse with the worker's wall time and reported phases added to worker_time, however it ends."""
    reported = {}

    def keep_timings(message) -> bool:
        if message[0] == "timings":  # cumulative: the last one a worker sent counts
            reported.update(message[1])
        return handle(message)

    started = time.perf_counter()
    try:
        _converse(_campaign_worker_main, (job,), STARTUP_TIMEOUT, keep_timings, worker=starter.take())
    finally:
        worker_time.add(reported, time.perf_counter() - started)


def run_plan(plan: Plan, args, backend: str, store: ResultStore, progress: Progress, starter: WorkerStarter,
             worker_time: WorkerTime) -> None:
    """Run one substrate's remaining mutants in warm workers, restarting one after a fault or a timeout."""
    remaining = list(plan.to_run)
    baseline_needed = True
    batch_size = args.batch_size
    # Every judged mutant's code, so a restarted worker (or a resumed campaign) still finds duplicates.
    known_digests = {}
    for mutant in plan.mutants:
        record = store.get(ResultKey(plan.source_sha256, backend, mutant.id))
        if record is not None:
            _remember_digest(known_digests, record)
    while remaining:
        state = {"current": None, "compiling_batch": False, "started": 0}

        def handle(message) -> bool:
            kind = message[0]
            if kind == "batch":
                state["compiling_batch"], state["current"] = True, None
            elif kind == "compiled":  # the batch's NVRTC run is over (g++ may go on beside, in a process)
                state["compiling_batch"] = False
            elif kind == "mutant":
                state["current"], state["compiling_batch"] = message[1], False
                state["started"] += 1
            elif kind == "baseline":
                _ok, why, _seconds = message[1:]
                if not _ok:
                    plan.failure = why
                    return True
            elif kind == "result":
                result = message[1]
                store.put(ResultKey(plan.source_sha256, backend, result["mutant_id"]), result)
                _remember_digest(known_digests, result)
                remaining.remove(result["mutant_id"])
                progress.done(result["status"])
                state["current"] = None
            elif kind == "retry":  # the worker ends; its next one starts with this mutant
                _move_to_front(remaining, message[1])
                state["current"] = None
            elif kind == "step_timeout":
                plan.step_timeout = float(message[1])
            elif kind == "done":
                return True
            return False

        job = CampaignJob(file=plan.file, name=plan.name, backend=backend, mutant_ids=tuple(remaining),
                          run_baseline=baseline_needed, step_timeout=plan.step_timeout, batch_size=batch_size,
                          known_digests=tuple(known_digests.items()),
                          stderr_log=str(worker_log(args)), cache_dir=str(args.cache_dir) if args.cache_dir else None,
                          kb_root=str(args.kb_root) if args.kb_root else None)
        try:
            _timed_converse(worker_time, job, handle, starter)
        except WorkerLost as lost:
            current = state["current"]
            if state["compiling_batch"]:
                batch_size = 1  # a batch that hangs or crashes the compiler: each mutant alone, with its own limit
                baseline_needed = False
                continue
            if current is None:
                plan.failure = plan.failure or f"the worker was lost outside any mutant: {lost}"
                return
            status = _lost_status(lost)
            if status is MutantStatus.RUNTIME_ERROR and state["started"] > 1:
                # A worker that dies may have been broken by an earlier mutant (on the CPU backend a stray
                # write can corrupt the worker's heap, and the crash comes later): the mutant is run again,
                # first in a fresh worker, and only a death there is its own.
                _move_to_front(remaining, current)
                baseline_needed = False
                continue
            detail = str(lost) + (" (the first mutant of a fresh worker)" if state["started"] == 1 else "")
            store.put(ResultKey(plan.source_sha256, backend, current),
                      {"mutant_id": current, "status": status.value, "detail": detail, "seconds": 0.0,
                       "ptx_sha256": ""})
            remaining.remove(current)
            progress.done(status.value)
        if plan.failure:
            return
        baseline_needed = False


def _lost_status(lost: WorkerLost) -> MutantStatus:
    return MutantStatus.TIMEOUT if lost.timed_out else MutantStatus.RUNTIME_ERROR


def _move_to_front(remaining: list[str], mutant_id: str) -> None:
    remaining.remove(mutant_id)
    remaining.insert(0, mutant_id)


def _remember_digest(known: dict[str, str], result: dict) -> None:
    """Record a judged mutant's code digest (the first mutant with that code keeps it)."""
    if result.get("ptx_sha256") and result["status"] not in (MutantStatus.EQUIVALENT.value,
                                                               MutantStatus.DUPLICATE.value):
        known.setdefault(result["ptx_sha256"], result["mutant_id"])


def run_plan_naively(plan: Plan, args, backend: str, results: dict, progress: Progress, starter: WorkerStarter,
                     worker_time: WorkerTime) -> None:
    """Each mutant alone: a fresh worker, an empty compile cache, the trials and references built again."""
    import tempfile

    for mutant_id in plan.to_run:
        outcome = {}

        def handle(message) -> bool:
            if message[0] == "step_timeout":
                plan.step_timeout = plan.step_timeout or float(message[1])
            elif message[0] == "result":
                outcome.update(message[1])
            return message[0] == "done"

        with tempfile.TemporaryDirectory(prefix="naive-cache-") as cache:
            job = CampaignJob(file=plan.file, name=plan.name, backend=backend, mutant_ids=(mutant_id,),
                              run_baseline=False, step_timeout=plan.step_timeout, cache_dir=cache,
                              check_equivalence=False, batch_size=1, stderr_log=str(worker_log(args)),
                              kb_root=str(args.kb_root) if args.kb_root else None)
            try:
                _timed_converse(worker_time, job, handle, starter)
            except WorkerLost as lost:
                status = _lost_status(lost)
                outcome = {"mutant_id": mutant_id, "status": status.value, "detail": str(lost)}
        results[mutant_id] = outcome
        progress.done(outcome.get("status", ""))


def worker_log(args) -> Path:
    return args.store.parent / "workers.log"


def worker_environment(slot: int, gpus: int, visible: str | None) -> dict[str, str]:
    """The GPU a worker slot runs on, as the CUDA_VISIBLE_DEVICES its process starts with.

    Slots take the GPUs in turn (slot 3 of 2 GPUs runs on the second), named as the parent sees
    them: under CUDA_VISIBLE_DEVICES=2,3 the first GPU is "2".
    """
    if not gpus:
        return {}
    names = [name.strip() for name in visible.split(",")] if visible else [str(i) for i in range(gpus)]
    return {"CUDA_VISIBLE_DEVICES": names[slot % gpus]}


def prepare_campaign_worker(backend: str, stderr_log: str) -> None:
    """What every campaign worker does before its job: its stderr to the log, and the imports."""
    _send_stderr_to(stderr_log)
    import_ahead(backend)


def _send_stderr_to(path: str) -> None:
    log = open(path, "a", buffering=1)
    os.dup2(log.fileno(), 2)
    sys.stderr = log


def _campaign_worker_main(job: CampaignJob, conn) -> None:
    if job.stderr_log:
        _send_stderr_to(job.stderr_log)
    run_campaign_job(job, conn)
    conn.send(("done",))


def outcomes(plan: Plan, store: ResultStore, backend: str, chosen: tuple[str, ...] = (oracles.VALUES,)
             ) -> list[MutantOutcome]:
    """Each stored mutant's outcome: the value suites' verdict, or a chosen later oracle's kill of a survivor."""
    found = []
    for mutant in plan.mutants:
        record = store.get(ResultKey(plan.source_sha256, backend, mutant.id))
        if record is None:
            continue
        later = [store.get(oracles.oracle_key(plan.source_sha256, backend, mutant.id, o)) for o in chosen[1:]]
        status, detail, oracle = oracles.decided(record, [r for r in later if r])
        found.append(MutantOutcome(mutant_id=mutant.id, operator=mutant.operator.value, line=mutant.line,
                                   column=mutant.column, original=mutant.original, replacement=mutant.replacement,
                                   description=mutant.description, status=MutantStatus(status),
                                   detail=detail, seconds=record.get("seconds", 0.0), oracle=oracle))
    return found


def judge_survivors(plans: list[Plan], args, backend: str, store: ResultStore, chosen: tuple[str, ...],
                    tools: tuple[str, ...]) -> str:
    """Every chosen oracle after the values over every value survivor it has not judged; lines saying what each did."""
    lines = []
    cache_dir = str(args.cache_dir) if args.cache_dir else None
    path = args.sanitizer or sanitizer_tools.find_sanitizer()
    for oracle in chosen[1:]:
        if backend == "cpu":
            lines.append(f"oracle {oracle}: skipped (CPU backend; "
                         + ("compute-sanitizer checks CUDA kernels)" if oracle == oracles.SANITIZERS
                            else "a trial of more than 2^31 elements is for the GPU)"))
            continue
        if oracle == oracles.SANITIZERS and path is None:
            lines.append("oracle sanitizers: skipped (compute-sanitizer not found: PATH, $CUDA_HOME, /usr/local/cuda*)")
            continue
        unmutated, survivors = _value_survivors(plans, store, backend, oracle)
        if not survivors:
            lines.append(f"oracle {oracle}: every survivor is judged already")
            continue
        print(f"oracle {oracle}: {len(survivors)} survivor(s) of {len(unmutated)} substrate(s)"
              + (f" under {', '.join(tools)}" if oracle == oracles.SANITIZERS else ""), flush=True)
        started = time.perf_counter()
        if oracle == oracles.SANITIZERS:
            notes = oracles.judge_with_sanitizers(unmutated, survivors, store, backend, tools, path, cache_dir)
        else:
            notes = oracles.judge_on_large_trial(unmutated, survivors, store, backend,
                                                 str(args.kb_root) if args.kb_root else None, cache_dir)
        killed = sum(1 for s in survivors if (r := store.get(oracles.oracle_key(s.source_sha256, backend, s.mutant_id,
                                                                                oracle))) and r.get("killed_by"))
        lines.append(f"oracle {oracle}: {len(survivors)} survivor(s) judged, {killed} killed, in "
                     f"{time.perf_counter() - started:.1f} s")
        lines += [f"  {name}: {why}" for name, why in notes.items()]
    return "\n".join(lines)


def _value_survivors(plans: list[Plan], store: ResultStore, backend: str, oracle: str):
    """The substrates and the survivors of the value suites that `oracle` has not judged yet."""
    unmutated, survivors = [], []
    for plan in plans:
        mine = [m for m in plan.mutants
                if (r := store.get(ResultKey(plan.source_sha256, backend, m.id))) and r["status"] == "survived"
                and oracles.oracle_key(plan.source_sha256, backend, m.id, oracle) not in store]
        if mine:
            unmutated.append(oracles.Unmutated(plan.name, plan.file, plan.kernel_name, plan.t0_bytes, plan.source))
            survivors += [oracles.Survivor(plan.name, plan.file, plan.kernel_name, plan.t0_bytes, plan.source_sha256,
                                           m.id, m.apply(plan.source)) for m in mine]
    return unmutated, survivors


TABLE_STATUSES = (MutantStatus.KILLED, MutantStatus.SURVIVED, MutantStatus.EQUIVALENT, MutantStatus.DUPLICATE,
                  MutantStatus.TIMEOUT, MutantStatus.RUNTIME_ERROR, MutantStatus.COMPILE_ERROR)


def format_table(campaigns: list[SubstrateCampaign]) -> str:
    heads = ["substrate", "mutants", "killed", "survived", "equivalent", "duplicate", "timeout", "runtime",
             "compile", "by oracles", "value score", "score"]
    rows = []
    percent = lambda score: "-" if score is None else f"{score:.1f}%"
    for c in campaigns:
        counts = c.counts()
        rows.append([c.name, str(len(c.outcomes))] + [str(counts.get(s, 0)) for s in TABLE_STATUSES]
                    + [str(sum(1 for o in c.outcomes if o.oracle)), percent(c.value_score()), percent(c.score())])
    widths = [max(len(r[i]) for r in rows + [heads]) for i in range(len(heads))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(heads)] + [line(r) for r in rows])


def format_survivors(plans: list[Plan], campaigns: list[SubstrateCampaign]) -> str:
    lines = []
    for plan, campaign in zip(plans, campaigns):
        by_id = {m.id: m for m in plan.mutants}
        for outcome in campaign.outcomes:
            if outcome.status is MutantStatus.SURVIVED:
                lines.append(f"{outcome.mutant_id}  {by_id[outcome.mutant_id].diff_line(plan.source)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except UsageError as error:
        print(f"campaign: error: {error}", file=sys.stderr)
        return EXIT_USAGE


WORKERS_PER_GPU = 4  # MEASUREMENTS.md: on an H200 with 16 cores, 1, 2 and 4 workers ran 1.20, 2.74 and 5.10 mutants/s


def spares_wanted(mode: str, workers: int, cpu_cores: int) -> bool:
    """Whether each worker slot keeps a worker started ahead.

    A spare's imports take CPU time: on a machine whose cores the workers already fill they only
    slow the workers (measured in MEASUREMENTS.md), so auto starts spares only where each worker
    and its spare can have a core.
    """
    if mode == "auto":
        return 2 * workers <= cpu_cores
    return mode == "always"


def default_workers(gpus: int, cpu_cores: int) -> int:
    """Workers when --workers is not given: several per GPU, since a worker leaves its GPU idle while its
    Python compiles, builds references and compares; but no more than the cores that run that Python."""
    if not gpus:
        return 1
    return max(1, min(WORKERS_PER_GPU * gpus, cpu_cores))


def _run(args) -> int:
    started = time.perf_counter()
    backend = resolve_backend_name(args.backend)
    if backend == "cuda" and not gpu_visible():
        raise UsageError("backend cuda: no GPU is visible")
    gpus = gpu_count() if backend == "cuda" else 0
    cores = os.cpu_count() or 1
    workers = args.workers or default_workers(gpus, cores)
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    chosen = tuple(o.strip() for o in args.oracles.split(",") if o.strip())
    if oracles.VALUES not in chosen or any(o not in oracles.ORACLES for o in chosen):
        raise UsageError(f"--oracles: {args.oracles!r}: values, and any of {', '.join(oracles.ORACLES[1:])}")
    chosen = tuple(sorted(set(chosen), key=oracles.ORACLES.index))  # a kill is credited in ORACLES order
    tools = tuple(t.strip() for t in args.sanitize_tools.split(",") if t.strip())
    if not tools or any(t not in sanitizer_tools.TOOLS for t in tools):
        raise UsageError(f"--sanitize-tools: {args.sanitize_tools!r}: choose from {', '.join(sanitizer_tools.TOOLS)}")
    if kb_root_error := kb_root_usage_error(args.kb_root):
        raise UsageError(kb_root_error)
    try:
        plans, refused = _plans(args, backend)
    except ValueError as error:  # an unreadable admission record
        raise UsageError(str(error))
    for why in refused:
        print(f"refused: {why}", flush=True)
    store = ResultStore(args.store)
    args.store.parent.mkdir(parents=True, exist_ok=True)
    log_size = worker_log(args).stat().st_size if worker_log(args).is_file() else 0
    for plan in plans:
        plan.to_run = [m.id for m in plan.mutants
                       if args.naive or ResultKey(plan.source_sha256, backend, m.id) not in store]
    total = sum(len(p.mutants) for p in plans)
    pending = sum(len(p.to_run) for p in plans)
    where = f"{gpus} GPU(s)" if gpus else "the CPU"
    print(f"campaign: {len(plans)} substrate(s), {total} mutants, {pending} to run ({total - pending} stored) on "
          f"backend {backend}, {workers} worker(s) over {where}", flush=True)

    progress = Progress(pending, args.no_progress)
    naive_results: dict[str, dict] = {}
    worker_time = WorkerTime()
    run_started = time.perf_counter()
    slots = threading.Semaphore(workers)
    free_devices = list(range(workers))
    devices_lock = threading.Lock()
    # Read once, before any worker starts: starting one sets the variable for a moment, under a lock.
    environments = [worker_environment(slot, gpus, os.environ.get("CUDA_VISIBLE_DEVICES")) for slot in range(workers)]
    # The naive mode starts each worker when it is needed, as a KernelBench-style tool would.
    prepare = functools.partial(prepare_campaign_worker, backend, str(worker_log(args)))
    ahead = not args.naive and spares_wanted(args.spare_workers, workers, cores)
    starters = [WorkerStarter(env, prepare, ahead=ahead) for env in environments]

    def run_one(plan: Plan) -> None:
        with slots:
            with devices_lock:
                slot = free_devices.pop()
            try:
                starter = starters[slot]
                if plan.to_run and args.naive:
                    run_plan_naively(plan, args, backend, naive_results, progress, starter, worker_time)
                elif plan.to_run:
                    run_plan(plan, args, backend, store, progress, starter, worker_time)
            finally:
                with devices_lock:
                    free_devices.append(slot)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            # Longest first: one substrate runs in one worker, so a big one started last would finish alone.
            list(pool.map(run_one, sorted(plans, key=lambda plan: -len(plan.to_run))))
    finally:
        for starter in starters:
            starter.close()
    progress.close()
    run_seconds = time.perf_counter() - run_started
    if args.naive:
        statuses = {}
        for outcome in naive_results.values():
            statuses[outcome.get("status", "?")] = statuses.get(outcome.get("status", "?"), 0) + 1
        print(worker_time.describe())
        print(f"naive: {pending} mutants in {run_seconds:.1f} s, {pending / run_seconds:.2f} mutants/s; "
              f"statuses {dict(sorted(statuses.items()))}")
        return EXIT_RAN

    judged = judge_survivors(plans, args, backend, store, chosen, tools)
    if judged:
        print(judged, flush=True)
    campaigns = [SubstrateCampaign(name=p.name, source=p.source, source_sha256=p.source_sha256, backend=backend,
                                   device=where, outcomes=outcomes(p, store, backend, chosen)) for p in plans]
    print(format_table(campaigns))
    survivors = format_survivors(plans, campaigns)
    if survivors:
        print("survivors:\n" + survivors)
    for plan in plans:
        if plan.failure:
            print(f"not run: {plan.name}: {plan.failure}")
    if worker_log(args).is_file() and worker_log(args).stat().st_size > log_size:
        print(f"the workers' own messages (tracebacks of those that died) are in {worker_log(args)}")
    if args.json or args.html:
        report = report_json(campaigns)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n")
        if args.html:
            args.html.write_text(report_html(report))
    if worker_time.workers:
        print(worker_time.describe())
    rate = f", {pending / run_seconds:.2f} mutants/s" if pending and run_seconds else ""
    print(f"{pending} mutants run in {run_seconds:.1f} s{rate} ({time.perf_counter() - started:.1f} s in all)",
          flush=True)
    return EXIT_SUBSTRATE_FAILED if any(p.failure for p in plans) else EXIT_RAN


if __name__ == "__main__":
    sys.exit(main())
