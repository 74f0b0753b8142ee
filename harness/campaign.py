"""`python -m harness.campaign`: seed faults into admitted substrates and record which suites catch them.

Phases: discover the candidates (in a worker, as the gate does); refuse substrates that are not
admitted at their current source hash on this backend; make every mutant of each CUDA source
(`harness.engine.mutants`, a pure function); skip mutants whose result is stored for this source hash
and backend (`harness.engine.store`); run the rest in warm workers, one substrate per worker,
workers spread over every GPU (`harness.engine.worker`); store each result as it arrives;
print a table per substrate and every survivor; write the mutation-testing-elements report.

Exit status: 0 the campaign ran (whatever the scores), 1 some substrate could not be run (its
unmutated source failed a trial, or its worker could not start), a substrate named was refused, a
candidate file did not import, or nothing was left to run; 2 bad usage; 130 interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import preflight
from harness.backends import BACKEND_NAMES, address_check, gpu_count, gpu_visible, resolve_backend_name
from harness.candidates import SUBSTRATES_DIR, candidate_files
from harness.cluster.campaign import run_on_cluster
from harness.cluster.connect import INSTALL, LOCAL, ClusterUnavailable, cluster_client, require_gpu_workers
from harness.engine import judge as oracles
from harness.engine import survivors
from harness.engine.large_index import LARGE_AT_ONCE
from harness.engine.compile import POOL_NICENESS, CompilePool, compile_ahead
from harness.engine.mutants import Operator
from harness.engine.page import report_page
from harness.engine.plan import Plan, Refused, UsageError, shards
from harness.engine.plan import plans as make_plans
from harness.engine.report import (NOT_VALID, OWN_KEY, SubstrateCampaign, describe_schemata, format_survivors,
                                   format_table, outcomes, report_html, report_json)
from harness.engine.run import (Progress, StartTimes, WorkerTime, checker_key, checks_addresses, default_workers,
                                interrupted, judged_apart, judges_every_trial, prepare_campaign_worker, run_plan,
                                run_plan_naively, spare_mode, times_kernels, uses_schemata, worker_environment,
                                worker_log, workers_that_fit)
from harness.engine.store import DEFAULT_STORE, ResultKey, ResultStore
from harness.engine.worker import BATCH_SIZE, backend_settings
from harness.gate.scheduling import device_memory_bytes, estimate_bytes
from harness.interrupt import EXIT_INTERRUPTED, Interruption, caught, kill_descendants
from harness.oracles import sanitizer as sanitizer_tools
from harness.oracles.memory_turns import BACKFILL_SECONDS
from harness.problems import KB_ROOT_ENV, kb_root_from_env, kb_root_usage_error
from harness.processes import WorkerStarter, stop_all

EXIT_RAN, EXIT_SUBSTRATE_FAILED, EXIT_USAGE = 0, 1, 2


class NothingToRun(Exception):
    """No substrate could be planned (none admitted, none imported): exit 1, saying why."""


SPARE_MODES = ("auto", "always", "never", "warm")
REMOTE_ITEMS_PER_GPU = 4  # a remote Dask cluster's items at once per GPU


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness.campaign",
        description="Seed faults into admitted substrates' CUDA sources and record which suites catch them.",
        epilog="Exit status: 0 the campaign ran (whatever the scores); 1 a substrate could not be run, one named was "
               "refused, a candidate file did not import, or nothing was left to run; 2 bad usage; 130 interrupted.")
    parser.add_argument("names", nargs="*", metavar="NAME", help="substrates (default: every admitted one)")
    parser.add_argument("--backend", choices=("auto",) + BACKEND_NAMES, default="auto",
                        help="where mutants run; auto picks cuda when a GPU is visible (default: auto)")
    _add_worker_arguments(parser)
    parser.add_argument("--operator", action="append", choices=[o.value for o in Operator], metavar="OP",
                        help="only mutants of this operator (repeatable; default: all): "
                             + ", ".join(o.value for o in Operator))
    parser.add_argument("--sample", type=int, metavar="N",
                        help="only N mutants, drawn uniformly over every substrate chosen (after --operator), the same "
                             "N for the same --seed: a quick estimate, or --naive timed on a share of a campaign's "
                             "mutants")
    parser.add_argument("--sample-per-substrate", type=int, metavar="N",
                        help="only N mutants of each substrate chosen (all of one with fewer), drawn as --sample draws: "
                             "every substrate's figures where a campaign over all of them is too long (real sizes); a "
                             "larger N keeps the smaller's mutants, so a resumed store goes on from it")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help="the seed of --sample's and --sample-per-substrate's draw (default: 0)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the mutation-testing-elements report")
    parser.add_argument("--html", type=Path, metavar="PATH",
                        help="write the report as one self-contained page: every mutant on its source line, our "
                             "scores; it loads nothing, so it opens offline")
    parser.add_argument("--elements-js", type=Path, metavar="FILE",
                        help="with --html: write instead the page of the mutation-testing-elements web component, FILE "
                             "(a local copy of the npm package's dist/mutation-test-elements.js) inlined")
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
                        help="for comparison: a freshly spawned Python process, a fresh compile cache and freshly "
                             "built references for every mutant, the way KernelBench-style tools evaluate a kernel "
                             "(results are not stored)")
    parser.add_argument("--spare-workers", choices=SPARE_MODES, default="auto",
                        help="keep a worker started ahead for each worker slot, so a new worker (for the next "
                             "substrate, or after a fault) has already imported torch; warm: each spare also builds "
                             "the trials and references of its slot's substrate and compiles its unmutated source "
                             "while the worker runs, so the worker after a fault starts with them ready (trials of "
                             "at most 256 MiB: the spare holds a second copy); auto: when each worker and its spare "
                             "can have a CPU core, warm on the cuda backend (whose workers a fault ends) and always "
                             "on the cpu backend (default: auto)")
    parser.add_argument("--address-check", choices=("on", "off"), default="on",
                        help="on (cuda): each mutant runs address-checked (harness/backends/address_check.py): a "
                             "global load, store or atomic that would fault is not made and is reported as the "
                             "fault the GPU would raise, and the worker goes on; off: such a fault ends the worker, "
                             "whose replacement starts a process, a CUDA context and the trials again (default: on)")
    parser.add_argument("--schemata", choices=("on", "off"), default="on",
                        help="on (cuda address-checked, and cpu): most of each substrate's mutants (not its "
                             "`long long` narrowings) are compiled once, as one kernel that chooses the mutant by "
                             "a constant (a mutant schema, harness/engine/schema.py), and run from it; the others "
                             "compile in batches as before; off: every mutant compiles in its batch (default: on)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_oracle_arguments(parser)
    _add_judging_arguments(parser)
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run each substrate as an item of a Dask distributed cluster: a scheduler's address "
                             "(tcp://host:8786), or local for a cluster on this host, one Dask worker per GPU "
                             f"(--workers on the CPU backend); needs {INSTALL}")
    return parser


def _add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes, each running one substrate at a time, spread over every GPU "
                             "(default: 12 per GPU on cuda, at most three quarters of the CPU cores and as many as "
                             "the largest substrates' trials fit in a GPU's memory; 1 on cpu)")
    parser.add_argument("--worker-memory", type=float, default=None, metavar="GIB",
                        help="each worker's share of its device's memory: its substrate's trials stay on the device "
                             "up to the share less room for its runs (four times its largest trial), and the rest wait "
                             "in host memory, copied in when a kernel runs on them: slower, the same verdicts (but that "
                             "an access outside every allocation may meet other memory) (default: the GPU's memory "
                             "over the workers on it; on cpu, and for a --scheduler's items, every trial is kept)")
    parser.add_argument("--compilers", type=int, default=None, metavar="N",
                        help="processes compiling batches ahead of the workers of a local run (default: every CPU "
                             "core on cuda, whose workers sleep while they wait for the GPU; the cores the workers "
                             "leave on cpu); those beyond the cores the workers leave run at a lower "
                             "priority (nice 10). A cluster item's pool has its host's cores shared among its items")


def _add_oracle_arguments(parser: argparse.ArgumentParser) -> None:
    """The oracles past the value suites: which, and how they run."""
    parser.add_argument("--oracles", default=",".join(survivors.ORACLES), metavar="LIST",
                        help=f"what judges the mutants, comma-separated: values (the suites), then on their "
                             f"survivors sanitizers (compute-sanitizer's tools) and large-index (trials past 2^31 "
                             f"elements), both cuda only (default: {','.join(survivors.ORACLES)})")
    parser.add_argument("--sanitizer", type=Path, metavar="PATH",
                        help="the compute-sanitizer to use (default: from PATH, then the CUDA toolkit's folders)")
    parser.add_argument("--sanitize-tools", default=",".join(sanitizer_tools.TOOLS), metavar="LIST",
                        help=f"the sanitizers oracle's tools (default: {','.join(sanitizer_tools.TOOLS)})")
    sanitizer_tools.add_processes_argument(parser)
    parser.add_argument("--large-index-processes", type=int, default=LARGE_AT_ONCE, metavar="N",
                        help=f"substrates the large-index oracle judges side by side, a process each on the GPU; one "
                             f"the device's memory falls short of beside the others is judged again alone, so N "
                             f"changes no verdict (default: {LARGE_AT_ONCE})")
    parser.add_argument("--large-index-backfill", type=float, default=BACKFILL_SECONDS, metavar="SECONDS",
                        help=f"side by side, how long a large-index process waiting for room lets later ones whose "
                             f"trials fit go first; 0: first come, first served (default: {BACKFILL_SECONDS:g})")


def _add_judging_arguments(parser: argparse.ArgumentParser) -> None:
    """--matrix and --checker: what a campaign says of its suites' trials, and of checkers beside them."""
    parser.add_argument("--matrix", action="store_true",
                        help="the full kill matrix: every mutant on every trial of every suite, past its first failure "
                             "(a fault or a timeout ends its row); prints and stores what each suite and trial kills, "
                             "minimal sets of suites and trials and the subsuming mutants (slower: every trial runs)")
    parser.add_argument("--kernel-times", action="store_true",
                        help="time every kernel run on its device (CUDA events on cuda) and print their sum in the "
                             "worker time line: with --workers 1, the device time the campaign's kernels need, the "
                             "floor of its wall on one GPU (beside other workers, a GPU's time slices for their "
                             "contexts count too)")
    parser.add_argument("--checker", action="append", metavar="NAME",
                        help="judge every mutant again with a correctness checker and report which of the mutants the "
                             "suites detect it accepts (repeatable): kernelbench (KernelBench's own check, 1e-4), "
                             "kernelbench-v0 (1e-2), t0 (the substrate's T0_original alone), or a function(problem, "
                             "kernel, device) -> bool as path/to/file.py:FUNCTION or MODULE:FUNCTION")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if problem := preflight.packages_problem():
        print(f"campaign: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    args.interruption = Interruption()  # what the worker slots' threads read (harness.engine.run.interrupted)
    try:
        # From the main thread only (a cluster's item runs a campaign in a thread, whose interruption never stops).
        with caught(args.interruption, raising=True):
            return _run(args)
    except UsageError as error:
        print(f"campaign: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except NothingToRun as nothing:
        print(f"campaign: {nothing}", file=sys.stderr)
        return EXIT_SUBSTRATE_FAILED
    except KeyboardInterrupt as interrupt:
        # Stopped at once, in the main thread, before a killed worker could be judged: the store holds only what was
        # judged whole, and the same command goes on from it.
        kill_descendants()
        print(f"campaign: interrupted by {interrupt.args[0] if interrupt.args else 'SIGINT'}: every mutant judged "
              f"before it is in {args.store}; run the same command to go on from there", file=sys.stderr)
        return EXIT_INTERRUPTED


def default_workers_that_fit(workers: int, gpus: int, plans: list[Plan], gpu_bytes: int | None) -> int:
    """The default `workers` over `gpus`, fewer where the largest substrates' workers would not fit in a GPU's
    `gpu_bytes` side by side (harness.engine.run.workers_that_fit), saying so."""
    per_gpu = workers // gpus
    fit = workers_that_fit(per_gpu, [estimate_bytes(plan.t0_bytes) for plan in plans], gpu_bytes)
    if fit < per_gpu:
        print(f"campaign: {fit} worker(s) a GPU, not {per_gpu}: each keeps its substrate's trials on the device, "
              f"and the largest substrates' would not fit in its {gpu_bytes / 2**30:.0f} GiB side by side "
              f"(--workers to choose)", flush=True)
    return fit * gpus


def worker_share_bytes(worker_memory: float | None, gpu_bytes: int | None, workers: int, gpus: int,
                       remote: bool) -> int | None:
    """Each worker's share of its device's memory (harness.engine.trials parks the trials past it less what its runs
    need): --worker-memory's GiB where given, else the GPU's memory over the workers on it; None (every trial kept)
    where neither is known, on the CPU backend, and for a cluster's items (their hosts' GPUs are not known here)."""
    if worker_memory is not None:
        return int(worker_memory * 2**30)
    if remote or not gpus or not gpu_bytes:
        return None
    return gpu_bytes // -(-workers // gpus)


def _check_substrates_dir(folder: Path) -> None:
    if not folder.is_dir():
        raise UsageError(f"--substrates-dir {folder}: {'not a folder' if folder.exists() else 'no such folder'}")
    if not candidate_files(folder):
        raise UsageError(f"--substrates-dir {folder}: no candidate_*.py file in it")


def _check_outputs(args) -> None:
    """Every file the campaign will write, checked before any work (the store's folder made, as a fresh store's is):
    a report that cannot be written after the mutants ran is the run lost."""
    try:
        args.store.parent.mkdir(parents=True, exist_ok=True)  # the workers' log is beside the store
    except OSError as error:
        raise UsageError(f"--store {args.store}: its folder {args.store.parent} cannot be made ({error.strerror})")
    paths = [(args.store, "--store"), (args.store.parent / "workers.log", "--store's workers.log")]
    paths += [(path, option) for path, option in ((args.json, "--json"), (args.html, "--html")) if path]
    problems = [problem for path, option in paths if (problem := preflight.unwritable(path, option))]
    if args.elements_js and (problem := _unreadable(args.elements_js, "--elements-js")):
        problems.append(problem)
    if problems:
        raise UsageError("; ".join(problems))


def _unreadable(path: Path, option: str) -> str:
    """Why `path`, a file the campaign reads at its end, cannot be read; "" when it can."""
    if path.is_dir():
        return f"{option} {path}: is a folder; give the file"
    if not path.is_file():
        return f"{option} {path}: no such file"
    return "" if os.access(path, os.R_OK) else f"{option} {path}: not readable (permission denied)"


def _run(args) -> int:
    started = time.perf_counter()
    backend = resolve_backend_name(args.backend)
    remote = bool(args.scheduler) and args.scheduler != LOCAL  # the GPUs are the cluster's, not this host's
    if backend == "cuda" and not gpu_visible() and not remote:
        raise UsageError("backend cuda: no GPU is visible")
    if args.scheduler and args.naive:
        raise UsageError("--naive runs on this host only: leave out --scheduler")
    # A cluster's items are given the arguments run_plan reads (harness.cluster.item.ItemArgs), and these are not
    # among them: their items would run a plain campaign.
    local_only = [flag for flag, given in (("--matrix", args.matrix), ("--checker", args.checker),
                                           ("--kernel-times", args.kernel_times)) if given]
    if args.scheduler and local_only:
        raise UsageError(f"{' and '.join(local_only)} {'runs' if len(local_only) == 1 else 'run'} on this host only: "
                         f"leave out --scheduler")
    gpus = gpu_count() if backend == "cuda" and not remote else 0
    cores = os.cpu_count() or 1
    workers = args.workers if args.workers is not None else default_workers(gpus, cores)
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, not {workers}")
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    if args.worker_memory is not None and not args.worker_memory >= 0:  # NaN too
        raise UsageError(f"--worker-memory must be at least 0 GiB, not {args.worker_memory}")
    for option, value in (("--sample", args.sample), ("--sample-per-substrate", args.sample_per_substrate)):
        if value is not None and value < 1:
            raise UsageError(f"{option} must be at least 1, not {value}")
    if args.sample is not None and args.sample_per_substrate is not None:
        raise UsageError("--sample and --sample-per-substrate draw differently: give one of them")
    chosen = tuple(o.strip() for o in args.oracles.split(",") if o.strip())
    if survivors.VALUES not in chosen or any(o not in survivors.ORACLES for o in chosen):
        raise UsageError(f"--oracles: {args.oracles!r}: values, and any of {', '.join(survivors.ORACLES[1:])}")
    chosen = tuple(sorted(set(chosen), key=survivors.ORACLES.index))  # a kill is credited in ORACLES order
    tools = tuple(t.strip() for t in args.sanitize_tools.split(",") if t.strip())
    if not tools or any(t not in sanitizer_tools.TOOLS for t in tools):
        raise UsageError(f"--sanitize-tools: {args.sanitize_tools!r}: choose from {', '.join(sanitizer_tools.TOOLS)}")
    if problem := sanitizer_tools.processes_problem(args.sanitize_processes):
        raise UsageError(problem)
    if args.large_index_processes < 1:
        raise UsageError(f"--large-index-processes must be at least 1, not {args.large_index_processes}")
    if not args.large_index_backfill >= 0:
        raise UsageError(f"--large-index-backfill must be 0 or more seconds, not {args.large_index_backfill:g}")
    if kb_root_error := kb_root_usage_error(args.kb_root):
        raise UsageError(kb_root_error)
    if args.compilers is not None and args.compilers < 0:
        raise UsageError("--compilers must be 0 or more")
    check_judging_usage(args)
    if args.elements_js and not args.html:
        raise UsageError("--elements-js chooses the page --html writes: give --html PATH too")
    _check_substrates_dir(args.substrates_dir)
    _check_outputs(args)
    # Each slot's first worker starts now, beside the plans: its CUDA context (the driver makes them one at a time:
    # 2 s for 12 on the H200) is made while the substrates are imported and their mutants generated.
    first_workers = [] if args.scheduler or args.naive else start_first_workers(args, backend, workers, gpus)
    # By default the cores the workers leave; on cuda every core, those beyond at nice 10: a GPU worker's waits sleep
    # (blocking sync), and the cores it leaves idle compile (12 workers: 91.60 to 95.77 mutants/s; while the waits
    # spun, 89.64 to 82.03; MEASUREMENTS.md, twenty-first and twenty-second sessions). Its processes start now too,
    # beside the plans: the first batches are what the first workers wait for.
    spare_cores = max(0, cores - workers)
    compilers = (0 if args.naive or args.scheduler or args.batch_size < 2
                 else args.compilers if args.compilers is not None
                 else cores if backend == "cuda" else spare_cores)
    compile_pool = CompilePool(compilers, lowered=max(0, compilers - spare_cores)).start()
    try:
        return _plan_and_run(args, started, backend, remote, gpus, cores, workers, chosen, tools, first_workers,
                             compile_pool)
    finally:
        compile_pool.close()  # where the run did not (nothing to run, an error)
        for worker in first_workers:
            worker.stop()  # those no slot took (fewer workers fit, nothing to run, an error); the rest are done


def check_judging_usage(args) -> None:
    """--matrix and --checker: on this host, not naive, and every checker one that resolves (the workers resolve
    them again, each for its substrate)."""
    if not (args.matrix or args.checker):
        return
    if args.scheduler or args.naive:
        raise UsageError(f"--matrix and --checker run on this host's workers: leave out "
                         f"{'--scheduler' if args.scheduler else '--naive'}")
    from harness.checkers import CheckerError, resolve

    for spec in args.checker or ():
        try:
            resolve(spec)
        except CheckerError as error:
            raise UsageError(str(error))
    if len(set(args.checker or ())) != len(args.checker or ()):
        raise UsageError(f"--checker: a checker named twice: {', '.join(args.checker)}")


def _to_run(plan: Plan, store: ResultStore, backend: str, args) -> list[str]:
    """The plan's mutants this campaign runs: those not stored (every one in the naive mode, which stores nothing),
    or under --matrix and --checker those needs_run says."""
    if args.matrix or args.checker:
        return [m.id for m in plan.mutants if needs_run(store.get(ResultKey(plan.source_sha256, backend, m.id)), args)]
    return [m.id for m in plan.mutants if args.naive or ResultKey(plan.source_sha256, backend, m.id) not in store]


def _naive_summary(results: dict[str, dict], pending: int, run_seconds: float) -> str:
    statuses = {}
    for outcome in results.values():
        statuses[outcome.get("status", "?")] = statuses.get(outcome.get("status", "?"), 0) + 1
    return (f"naive: {pending} mutants in {run_seconds:.1f} s, {pending / run_seconds:.2f} mutants/s; "
            f"statuses {dict(sorted(statuses.items()))}")


def needs_run(record: dict | None, args) -> bool:
    """Whether a mutant runs again: none stored, or (under --matrix or --checker) a valid mutant stored without its
    cells or without a verdict of a checker asked for, or (--checker) one the checkers are still to judge apart."""
    if record is None:
        return True
    if record.get("status") in {s.value for s in NOT_VALID}:
        return False
    return bool(args.matrix and "cells" not in record
                or any(spec not in record.get("checkers", {}) for spec in args.checker or ())
                or args.checker and judged_apart(record))


def start_first_workers(args, backend: str, workers: int, gpus: int) -> list:
    """A worker for each of the `workers` slots, started now with its backend made (its CUDA context, on cuda), for
    _run_here's slots to adopt as their first."""
    from harness.processes import start_worker

    prepare = _worker_prepare(args, backend, make_backend=True)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    slots = min(workers, len(args.names)) if args.names else workers  # a substrate named is a slot at most
    return [start_worker(worker_environment(slot, gpus, visible), prepare) for slot in range(slots)]


def _worker_prepare(args, backend: str, make_backend: bool):
    """What a campaign worker does before its job (prepare_campaign_worker); with `make_backend`, on cuda, its backend
    (its CUDA context) made then too."""
    settings = (backend_settings(backend, str(args.cache_dir) if args.cache_dir else None,
                                 checks_addresses(args, backend), times_kernels(args))
                if make_backend and backend == "cuda" else None)
    return functools.partial(prepare_campaign_worker, backend, str(worker_log(args)), settings)


def _plan_and_run(args, started: float, backend: str, remote: bool, gpus: int, cores: int, workers: int,
                  chosen: tuple, tools: tuple, first_workers: list, compile_pool: CompilePool) -> int:
    """The campaign once its command is known good: plans, the run (`first_workers` the slots' first, `compile_pool`
    compiling its batches), the oracles, the report."""
    try:
        plans, refused = make_plans(args, backend)
    except ValueError as error:  # an unreadable admission record
        raise UsageError(str(error))
    for refusal in refused:
        print(refusal.line(), flush=True)
    if not plans:
        raise NothingToRun(nothing_to_run(args, backend, refused))
    gpu_bytes = device_memory_bytes(backend) if gpus else None
    if args.workers is None and gpus and not args.scheduler:
        workers = default_workers_that_fit(workers, gpus, plans, gpu_bytes)
    args.device_share_bytes = worker_share_bytes(args.worker_memory, gpu_bytes, workers, gpus, bool(args.scheduler))
    store = ResultStore(args.store)
    log_size = worker_log(args).stat().st_size if worker_log(args).is_file() else 0
    for plan in plans:
        plan.to_run = _to_run(plan, store, backend, args)
    pending = sum(len(p.to_run) for p in plans)
    # The naive mode starts each worker when it is needed, as a KernelBench-style tool would.
    spares = "never" if args.naive or args.scheduler else spare_mode(args.spare_workers, backend, workers, cores)
    _announce(args, plans, backend, workers, gpus, compile_pool if pending else None, spares)
    run = _Run(pending=pending, progress=Progress(pending, args.no_progress))
    where = f"{gpus} GPU(s)" if gpus else "the CPU"
    try:
        _run_stage(args, plans, backend, store, run, (gpus, workers, spares), compile_pool, first_workers)
        if args.naive:
            print(run.worker_time.describe())
            print(_naive_summary(run.naive_results, pending, run.seconds))
            return EXIT_RAN
        judged = _judge_stage(args, plans, backend, store, remote, chosen, tools)
    except KeyboardInterrupt as interrupt:
        # What was judged whole is in the store; the report says what that is, marked incomplete, before main's line.
        kill_descendants()
        run.progress.close()
        _report_interrupted(args, plans, store, backend, chosen, where, log_size, interrupt)
        for line in run.start_times.describe_unfinished():
            print(line, file=sys.stderr, flush=True)
        if run.worker_time.workers:  # where the time went until then: what a run cut short is measured by
            print(run.worker_time.describe(), flush=True)
        raise
    campaigns = _campaigns(plans, store, backend, chosen, where)
    judged = judged_view(plans, campaigns, store, backend, args) if args.matrix or args.checker else None
    _print_and_write_report(args, plans, campaigns, judged, log_size)
    _print_times(args, plans, backend, store, run, workers, started)
    if judged:  # last: what a --matrix or --checker campaign is run for
        print(format_judged(judged), flush=True)
    return _exit_status(plans, refused)


@dataclass
class _Run:
    """The run stage's clocks and counters, which the report and the lines after it read."""

    pending: int
    progress: Progress
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0
    worker_time: WorkerTime = field(default_factory=WorkerTime)
    start_times: StartTimes = field(init=False)  # each worker's start, counted from `started`
    naive_results: dict = field(default_factory=dict)

    def __post_init__(self):
        self.start_times = StartTimes(self.started)


def _announce(args, plans: list[Plan], backend: str, workers: int, gpus: int, compile_pool: CompilePool | None,
              spares: str) -> None:
    """The campaign's first line: what runs, on what, with which helpers."""
    total = sum(len(p.mutants) for p in plans)
    pending = sum(len(p.to_run) for p in plans)
    compilers, lowered = (compile_pool.processes, compile_pool.lowered) if compile_pool else (0, 0)
    running = (f"one item per substrate on the Dask cluster {args.scheduler}" if args.scheduler
               else f"{workers} worker(s) over {f'{gpus} GPU(s)' if gpus else 'the CPU'}")
    print(f"campaign: {len(plans)} substrate(s), {total} mutants, {pending} to run ({total - pending} stored) on "
          f"backend {backend}, {running}"
          + (f", {compilers} process(es) compiling batches ahead" if compilers else "")
          + (f" ({lowered} at nice {POOL_NICENESS})" if lowered else "")
          + {"never": "", "always": ", a spare worker started ahead per slot",
             "warm": ", a spare worker per slot warmed ahead with its substrate"}[spares], flush=True)
    if checks_addresses(args, backend):
        print(address_check.describe_assembly(ahead=compilers > 0), flush=True)


def _run_stage(args, plans: list[Plan], backend: str, store: ResultStore, run: _Run, slots: tuple,
               compile_pool: CompilePool, first_workers: list) -> None:
    """Every plan's mutants run and stored: on this host's workers, or an item per substrate on a Dask cluster.
    `slots`: (GPUs, workers, spare workers' mode)."""
    gpus, workers, spares = slots
    if args.scheduler:
        # Items at once per GPU; a remote cluster's GPUs keep the 4 its campaigns were measured with (each item's
        # device memory share is 1 / per_gpu, and a worker there is a Dask worker's, not one of this host's cores').
        per_gpu = max(1, workers // gpus) if gpus else REMOTE_ITEMS_PER_GPU
        try:
            with cluster_client(args.scheduler, gpus, args.workers or 1, per_gpu,
                                os.environ.get("CUDA_VISIBLE_DEVICES")) as client:
                if backend == "cuda":
                    require_gpu_workers(client, args.scheduler)
                run_on_cluster(client, sorted(plans, key=lambda plan: -len(plan.to_run)), args, backend, store,
                               run.progress, run.worker_time, gpu_share=1 / per_gpu if backend == "cuda" else 0)
        except ClusterUnavailable as error:
            raise UsageError(str(error))
    else:
        _run_here(plans, argparse.Namespace(**{**vars(args), "spare_workers": spares}), backend, store, run.progress,
                  run.worker_time, run.naive_results, workers, gpus, compile_pool, run.start_times, first_workers)
    run.progress.close()
    run.seconds = time.perf_counter() - run.started


def _judge_stage(args, plans: list[Plan], backend: str, store: ResultStore, remote: bool, chosen: tuple,
                 tools: tuple) -> str:
    """The value survivors judged by the chosen oracles, here; what they said ("" when nothing)."""
    if remote and backend == "cuda" and not gpu_visible() and len(chosen) > 1:
        # The oracles run here, after the items: a host without a GPU leaves the survivors to a later run.
        print("\n".join(f"oracle {o}: skipped (the oracles run on the client's host, which has no GPU: run the "
                        f"campaign again on a GPU host to judge the survivors; the value results are stored)"
                        for o in chosen[1:]), flush=True)
        return ""
    judged = oracles.judge_survivors(plans, args, backend, store, chosen, tools, checks_addresses(args, backend))
    if judged:
        print(judged, flush=True)
    return judged


def _campaigns(plans: list[Plan], store: ResultStore, backend: str, chosen: tuple, where: str):
    return [SubstrateCampaign(name=p.name, source=p.source, source_sha256=p.source_sha256, backend=backend,
                              device=where, outcomes=outcomes(p, store, backend, chosen)) for p in plans]


def _print_times(args, plans: list[Plan], backend: str, store: ResultStore, run: _Run, workers: int,
                 started: float) -> None:
    """Where the run's time went, and its rate."""
    if uses_schemata(args, backend):
        print(describe_schemata(plans, store, backend))
    if run.worker_time.workers:
        print(run.worker_time.describe())
    if said := run.start_times.describe(workers):
        print(said)
    if said := run.start_times.describe_end(workers):
        print(said)
    rate = f", {run.pending / run.seconds:.2f} mutants/s" if run.pending and run.seconds else ""
    print(f"{run.pending} mutants run in {run.seconds:.1f} s{rate} ({time.perf_counter() - started:.1f} s in all)",
          flush=True)


def _report_interrupted(args, plans: list[Plan], store: ResultStore, backend: str, chosen: tuple, where: str,
                        log_size: int, interrupt: KeyboardInterrupt) -> None:
    """The table and the reports of what was judged before the interrupt, the JSON marked incomplete: which signal,
    and how many mutants have no verdict yet."""
    if args.naive:
        return  # the naive mode stores nothing: there is nothing judged to report
    campaigns = _campaigns(plans, store, backend, chosen, where)
    judged = sum(len(c.outcomes) for c in campaigns)
    incomplete = {"interrupted_by": interrupt.args[0] if interrupt.args else "SIGINT",
                  "not_judged": sum(len(p.mutants) for p in plans) - judged}
    print(f"campaign: interrupted: {judged} mutant(s) judged, {incomplete['not_judged']} not; the table and "
          f"reports below hold the judged ones", file=sys.stderr, flush=True)
    begun = _judged_whole(plans, campaigns, store, backend, args) if args.matrix or args.checker else []
    views = judged_view([p for p, _ in begun], [c for _, c in begun], store, backend, args) if begun else None
    _print_and_write_report(args, plans, campaigns, views, log_size, incomplete)
    if views:
        print(format_judged(views), flush=True)


def _judged_whole(plans: list[Plan], campaigns: list, store: ResultStore, backend: str, args) -> list[tuple]:
    """(plan, campaign) of each substrate an interrupted --matrix or --checker run reports the matrix and checkers of:
    its mutants judged whole in this mode (each with its cells and every checker's verdict; one an earlier, plainer
    run stored has neither), where its unmutated kernel's verdicts of every checker are stored (a substrate not
    reached has none, which would read as its checker rejecting a correct kernel)."""
    kept = []
    for plan, campaign in zip(plans, campaigns):
        whole = [o for o in campaign.outcomes
                 if not needs_run(store.get(ResultKey(plan.source_sha256, backend, o.mutant_id)), args)]
        unmutated = (store.get(checker_key(plan.source_sha256, backend)) or {}).get("checkers", {})
        if whole and all(spec in unmutated for spec in args.checker or ()):
            kept.append((plan, dataclasses.replace(campaign, outcomes=whole)))
    return kept


def _exit_status(plans: list[Plan], refused: list) -> int:
    """1 where a substrate could not be run, a named one was refused or a candidate file did not import; the last
    line says which."""
    failed = [p.name for p in plans if p.failure]
    named = [r.what for r in refused if r.named]
    unimported = [r.what for r in refused if r.reason is Refused.DID_NOT_IMPORT]
    said = [f"not run: {', '.join(failed)}" if failed else "",
            f"refused, though named: {', '.join(named)}" if named else "",
            f"did not import: {', '.join(unimported)}" if unimported else ""]
    if not any(said):
        return EXIT_RAN
    print("campaign: " + "; ".join(s for s in said if s) + " (exit 1)", file=sys.stderr, flush=True)
    return EXIT_SUBSTRATE_FAILED


def nothing_to_run(args, backend: str, refused: list) -> str:
    """Why a campaign has no substrate to mutate, the refusals above having said each one's reason."""
    where = args.substrates_dir
    if not refused:
        return f"nothing to run: {where} registers no substrate"
    if all(r.reason is Refused.DID_NOT_IMPORT for r in refused):
        return f"nothing to run: no candidate file in {where} imported"
    asked = "none of the substrates named" if args.names else f"no substrate in {where}"
    return f"nothing to run: {asked} is admitted on {backend} (each refusal above says why and what to run)"


def _print_and_write_report(args, plans, campaigns, judged, log_size: int, incomplete: dict | None = None) -> None:
    """The table (a column per checker), the survivors, what did not run, and the JSON and HTML reports (marked
    `incomplete`, when the campaign was interrupted, under the report's own key)."""
    print(format_table(campaigns, judged.columns if judged else None))
    survivors = format_survivors(plans, campaigns)
    if survivors:
        print("survivors:\n" + survivors)
    for plan in plans:
        if plan.failure:
            print(f"not run: {plan.name}: {plan.failure}")
    if worker_log(args).is_file() and worker_log(args).stat().st_size > log_size:
        print(f"the workers' own messages (tracebacks of those that died) are in {worker_log(args)}")
    if args.json or args.html:
        report = report_json(campaigns, tests=judged.view if judged else None)
        if incomplete:
            report[OWN_KEY]["incomplete"] = incomplete
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n")
        if args.html:
            page = report_html(report, elements_js=args.elements_js) if args.elements_js else report_page(report)
            args.html.write_text(page, encoding="utf-8")


def judged_view(plans, campaigns, store, backend: str, args):
    """What --matrix and --checker add to the report and the terminal (harness.engine.tests_view)."""
    from harness.engine import tests_view

    substrates = [tests_view.substrate_records(plan, campaign, store, backend, checker_key)
                  for plan, campaign in zip(plans, campaigns)]
    return tests_view.judged(substrates, args.matrix, tuple(args.checker or ()))


def format_judged(judged) -> str:
    """The matrix's analyses, then a line per checker and one per error of a checker's own."""
    from harness.engine.matrix import format_matrix

    lines = [format_matrix(judged.matrix)] if judged.matrix else []
    lines += [f"checker {verdicts.headline()}" for verdicts in judged.checkers]
    lines += [f"checker error: {error}" for error in judged.errors]
    return "\n".join(lines)


def _run_here(plans, args, backend, store, progress, worker_time, naive_results, workers, gpus,
              compile_pool: CompilePool, start_times: StartTimes, first_workers: list = ()) -> None:
    """The plans on this host's workers, one substrate per worker slot, slots spread over the GPUs; args.spare_workers
    is resolved (never, always or warm); `first_workers` (start_first_workers) are the slots' first."""
    slots = threading.Semaphore(workers)
    free_devices = list(range(workers))
    devices_lock = threading.Lock()
    # Read once, before any worker starts: starting one sets the variable for a moment, under a lock.
    environments = [worker_environment(slot, gpus, os.environ.get("CUDA_VISIBLE_DEVICES")) for slot in range(workers)]
    ahead = args.spare_workers != "never"
    # A GPU worker started ahead makes its backend (its CUDA context) ahead too.
    prepare = _worker_prepare(args, backend, make_backend=ahead)
    # The naive mode's workers are spawned, each a fresh Python importing torch, as KernelBench's own evaluation
    # starts its (scripts/eval_from_generations.py: a spawned pool per batch of kernels), and as every worker here
    # was when the engine's speed was first compared with it; forked from the fork server, they would share the
    # engine's own remedy for that cost.
    starters = [WorkerStarter(env, prepare, ahead=ahead, method="spawn" if args.naive else None,
                              stopped=lambda: interrupted(args)) for env in environments]
    for starter, worker in zip(starters, first_workers):
        starter.adopt(worker)
    for worker in first_workers[len(starters):]:  # fewer workers fit in the device's memory
        worker.stop()

    given = 0  # plans given a slot so far
    items = work_items(plans, args, workers)

    def run_one(plan: Plan) -> None:
        nonlocal given
        if interrupted(args):
            return
        with slots:
            with devices_lock:
                slot = free_devices.pop(0)  # the first slots first: those hold the workers started ahead
                given += 1
            try:
                starter = starters[slot]
                if plan.to_run and args.naive:
                    run_plan_naively(plan, args, backend, naive_results, progress, starter, worker_time)
                elif plan.to_run:
                    start_times.given(plan.name)
                    if run_plan(plan, args, backend, store, progress, starter, worker_time, start_times):
                        start_times.ended(plan.name)
            finally:
                with devices_lock:
                    free_devices.append(slot)
                    nothing_waits = given == len(items)
                if nothing_waits:
                    # No plan is left for this slot: its workers end now, their exits (a CUDA context destroyed each,
                    # one at a time in the driver) beside the other slots' last substrates, not all after them.
                    stop_all([starters[slot]])

    # Batches compiled ahead on the cores the workers leave.
    compile_ahead(compile_pool.processes, sorted(plans, key=lambda plan: -len(plan.to_run)), args.batch_size, backend,
                  args.cache_dir, checks_addresses(args, backend), slots=workers, schemata=uses_schemata(args, backend),
                  pool=compile_pool)
    try:
        in_slots([item for _plan, item in work_order(items)], run_one, workers)
        if again := short_of_memory_again(items, workers, args):
            print(f"campaign: {', '.join(sorted({item.name for item in again}))}: the memory ran out beside the "
                  f"campaign's other workers: judged again, alone on the device", flush=True)
            in_slots(again, run_one, 1)
        for _plan, item in items:
            if item.short_of_memory is not None and not interrupted(args):
                item.failure += ("; it ran alone on the device: a smaller --worker-memory keeps fewer of its trials "
                                 "there, or it needs a device (or a host) with more memory")
    finally:
        for plan, item in items:
            if item is not plan:  # a shard: what it learnt is its plan's
                plan.failure = plan.failure or item.failure
                plan.step_timeout = plan.step_timeout or item.step_timeout
        if said := compile_pool.close():
            print(said, flush=True)
        stop_all(starters)


def short_of_memory_again(items: list[tuple[Plan, Plan]], workers: int, args) -> list[Plan]:
    """The work items a worker ran out of the device's memory on beside the campaign's others (Plan.short_of_memory),
    made ready to run again one at a time, the device to themselves: their failure cleared, their mutants not judged
    to run. None where the campaign had one worker (it ran alone already) or was interrupted.

    What ran out is the harness's own allocations (trials, outputs, guards) beside other substrates' (kb_conv2d and
    kb_conv1d_dilated_strided beside eleven others on an H100): no verdict of its mutants, and nothing to leave out."""
    if workers == 1 or interrupted(args):
        return []
    again = [item for _plan, item in items if item.short_of_memory is not None]
    for item in again:
        item.to_run, item.failure, item.short_of_memory = item.short_of_memory, "", None
    return again


# How long an interrupted campaign waits for its slots' threads before its report: their workers were killed with the
# signal, so each reads what its worker sent before it (results judged whole, stored) and ends at once.
SLOTS_STOP_SECONDS = 5.0


def in_slots(items: list, run_one, workers: int) -> None:
    """run_one(item) for each of `items`, in order, on `workers` threads; the error of the first item (in `items`'
    order) to raise one is raised here once every item ran. Interrupted (KeyboardInterrupt in this, the main thread),
    the threads are waited for SLOTS_STOP_SECONDS at most.

    Daemon threads, not a ThreadPoolExecutor: its threads are joined as its `with` ends and again at the interpreter's
    exit, and one still waiting on a worker's pipe held an interrupted campaign's report back, then its exit. Each
    says it is done by an Event: a Thread.join that a signal's KeyboardInterrupt cuts short marks its thread stopped,
    running or not (Python 3.11), and a join after it returns at once."""
    queue, errors, lock = list(enumerate(items)), {}, threading.Lock()
    done = [threading.Event() for _ in range(min(workers, len(items)))]

    def slot(finished: threading.Event) -> None:
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    index, item = queue.pop(0)
                try:
                    run_one(item)
                except BaseException as error:  # as a future keeps it, to raise in the main thread
                    errors[index] = error
        finally:
            finished.set()

    for n, finished in enumerate(done):
        threading.Thread(target=slot, args=(finished,), name=f"campaign-slot-{n}", daemon=True).start()
    try:
        # Waited for with a timeout: the terminal's SIGINT may reach a slot's thread, and only a main thread that wakes
        # runs its handler.
        while waiting := [finished for finished in done if not finished.is_set()]:
            waiting[0].wait(0.2)
    except KeyboardInterrupt:
        deadline = time.monotonic() + SLOTS_STOP_SECONDS
        for finished in done:
            finished.wait(max(0.0, deadline - time.monotonic()))
        raise
    if errors:
        raise errors[min(errors)]


def work_order(items: list[tuple[Plan, Plan]]) -> list[tuple[Plan, Plan]]:
    """work_items' items in the order the worker slots are given them. Longest first: one substrate runs in one
    worker, so a big one started last would finish alone. A substrate's shards together, in the order of their
    batches, as the compile pool makes them: given every substrate's first shard before any second one, the
    accumulations (the most mutants, the slowest rows) had their later shards start last and run alone at the end."""
    return sorted(items, key=lambda pair: (-len(pair[0].to_run), pair[0].name, len(pair[1].learn_batches)))


def work_items(plans: list[Plan], args, workers: int) -> list[tuple[Plan, Plan]]:
    """(plan, what a worker slot is given of it): the plan itself, or, where every mutant runs every trial (--matrix,
    --checker) and several workers compile in batches, each of its shards (harness.engine.plan.shards): a substrate
    then takes a worker minutes, and whole substrates would leave the last ones running alone."""
    if not (judges_every_trial(args) and workers > 1 and args.batch_size > 1 and not args.naive):
        return [(plan, plan) for plan in plans]
    return [(plan, shard) for plan in plans for shard in shards(plan, args.batch_size)]


if __name__ == "__main__":
    sys.exit(main())
