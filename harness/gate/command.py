"""`python gate.py`: gate registered substrates (or new candidate files) and say which are admitted.

Exit status: 0 every requested substrate admitted, 1 any rejected, 2 bad usage (unknown name,
unreadable file, a backend this machine cannot run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness import preflight
from harness.backends import (BACKEND_NAMES, BackendUnavailable, cpu_compiler, gpu_count, gpu_visible,
                              resolve_backend_name)
from harness.candidates import candidate_files
from harness.cluster.connect import INSTALL, LOCAL, ClusterUnavailable, cluster_client, require_gpu_workers
from harness.cluster.item import ITEM_RETRIES
from harness.gate import admissions
from harness.gate.records import CheckName, CheckResult, CheckStatus, GateReport, SubstrateReport, with_not_run
from harness.gate.scheduling import (AUTO_CPU_JOBS, AUTO_GPU_JOBS, JobQueue, MemoryBudget, auto_jobs,
                                     device_memory_bytes, estimate_bytes, may_reuse_worker)
from harness.gate.worker import FileWorker, GateJob, WorkersAhead, discover, run_gate_job
from harness.interrupt import EXIT_INTERRUPTED, Interruption, caught, kill_descendants
from harness.oracles import sanitizer
from harness.problems import KB_ROOT_ENV, kb_root_from_env, kb_root_usage_error
from harness.processes import DEFAULT_STEP_TIMEOUT, WorkerLost

EXIT_ADMITTED, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _jobs(text: str) -> int | str:
    """--jobs: a whole number from 1, or auto (resolved once the backend is known)."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number of at least 1, or auto; not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gate.py",
        description="Run every suite of each substrate against its official PyTorch reference and admit it as a "
                    "mutation target only if it is right everywhere.",
        epilog="Exit status: 0 all admitted, 1 any rejected (with --list: a candidate did not import), 2 bad usage "
               "(checked before any work: the packages installed, every path to be written), 130 interrupted.",
    )
    parser.add_argument("targets", nargs="*", metavar="NAME_OR_FILE",
                        help="registered substrate names, or paths to candidate_<name>.py files (default: every "
                             "candidate in substrates/)")
    parser.add_argument("--list", action="store_true", help="list registered substrates and their admission, then exit")
    parser.add_argument("--backend", choices=("auto",) + BACKEND_NAMES, default="auto",
                        help="where kernels run; auto picks cuda when a GPU is visible (default: auto)")
    parser.add_argument("--json", metavar="PATH", type=Path, help="write the full report as JSON to PATH")
    parser.add_argument("--timeout", type=float, default=DEFAULT_STEP_TIMEOUT, metavar="S",
                        help=f"kill a worker that makes no progress for S seconds: one import, compile or trial "
                             f"(default: {DEFAULT_STEP_TIMEOUT:g})")
    parser.add_argument("--jobs", type=_jobs, default="auto", metavar="N|auto",
                        help="substrates gated at once, as many as the device's memory holds (default: auto: on a "
                             f"GPU half this machine's cores, at most {AUTO_GPU_JOBS}; on the CPU backend "
                             f"{AUTO_CPU_JOBS}, at most one a core)")
    parser.add_argument("--record", type=Path, metavar="PATH",
                        help="admission record to update (default: admissions.json in each candidate's folder, "
                             "substrates/admissions.json for the family)")
    parser.add_argument("--no-record", action="store_true", help="do not update the admission record")
    parser.add_argument("--kb-root", type=Path, metavar="DIR", default=kb_root_from_env(),
                        help=f"a KernelBench checkout: a kb_file such as 19_ReLU.py not found in problems/ resolves in "
                             f"its level1 folder (default: ${KB_ROOT_ENV})")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR",
                        help="compiled-kernel cache (default: $SUBSTRATE_CACHE_DIR or ~/.cache/substrate-harness)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-sanitize", action="store_true",
                        help="do not run the kernels under compute-sanitizer (on by default on the cuda backend "
                             "wherever compute-sanitizer is found)")
    parser.add_argument("--sanitizer", type=Path, metavar="PATH",
                        help="the compute-sanitizer to use (default: from PATH, then the CUDA toolkit's folders)")
    parser.add_argument("--sanitize-tools", default=",".join(sanitizer.TOOLS), metavar="LIST",
                        help=f"compute-sanitizer tools to run, comma-separated (default: {','.join(sanitizer.TOOLS)})")
    sanitizer.add_processes_argument(parser)
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="gate each substrate as an item of a Dask distributed cluster: a scheduler's address "
                             "(tcp://host:8786), or local for a cluster on this host, one Dask worker per GPU "
                             f"(--jobs items at once on each); needs {INSTALL}")
    return parser


def _resolve_targets(targets: list[str], entries: dict, errors: dict) -> list[tuple[str, str]]:
    """(file, name) pairs to gate; raises UsageError for an unknown name."""
    by_name = {s.name: file for file, summaries in entries.items() for s in summaries}
    chosen = []
    for target in targets or [None]:
        if target is None or target.endswith(".py"):
            files = [str(Path(target))] if target else sorted(set(entries) | set(errors))
            for file in files:
                chosen += [(file, s.name) for s in entries.get(file, [])] or [(file, Path(file).stem)]
        elif target in by_name:
            chosen.append((by_name[target], target))
        else:
            known = ", ".join(sorted(by_name)) or "none"
            raise UsageError(f"unknown substrate {target!r}; registered: {known}")
    return list(dict.fromkeys(chosen))


def _import_failure(file: str, name: str, error: str) -> SubstrateReport:
    checks = [CheckResult(CheckName.IMPORT_SAFE, CheckStatus.FAILED, error)]
    return SubstrateReport(name=name, file=file, checks=with_not_run(checks, "not run: the file did not import"))


MEMORY_CHECKS = {CheckName.FITS_DEVICE_MEMORY: "device", CheckName.FITS_HOST_MEMORY: "host"}


def _ran_out_of_memory(report: SubstrateReport) -> bool:
    return any(c.check in MEMORY_CHECKS and c.status is CheckStatus.FAILED for c in report.checks)


def _note_rerun(report: SubstrateReport, first: SubstrateReport) -> None:
    """Say, on the run alone's memory checks, that the first run (beside other jobs) ran out of memory."""
    short = [MEMORY_CHECKS[c.check] for c in first.checks if c.check in MEMORY_CHECKS and c.status is CheckStatus.FAILED]
    note = f" (run again alone: beside other jobs it ran out of {' and '.join(short)} memory)"
    for i, c in enumerate(report.checks):
        if c.check in MEMORY_CHECKS:
            report.checks[i] = CheckResult(c.check, c.status, c.detail + note)


class ClusterGate:
    """Gate jobs as items of a Dask cluster, each taking `gpu_share` of a GPU (none on the CPU backend)."""

    def __init__(self, client, step_timeout: float, gpu_share: float, remote: bool):
        self.client, self.step_timeout, self.gpu_share, self.remote = client, step_timeout, gpu_share, remote

    def gate(self, job: GateJob, report: GateReport, progress) -> SubstrateReport:
        progress.total += 1
        progress.refresh()
        result = self._run(job, report, self.gpu_share)
        if self.gpu_share and self.gpu_share < 1 and _ran_out_of_memory(result):
            # Other items held part of the memory: the candidate is judged on a GPU to itself.
            first, result = result, self._run(job, report, 1.0)
            _note_rerun(result, first)
        progress.set_description_str(f"{job.name}: gated on the cluster", refresh=False)
        progress.update(1)
        return result

    def _run(self, job: GateJob, report: GateReport, share: float) -> SubstrateReport:
        from harness.cluster.item import client_thread_caps, run_gate_item

        future = self.client.submit(run_gate_item, job, self.step_timeout, client_thread_caps(),
                                    key=f"gate-{job.name}-{uuid.uuid4().hex[:8]}",
                                    resources={"GPU": share} if share else None, retries=ITEM_RETRIES,
                                    pure=False)
        try:
            summary = future.result()
        except Exception as error:  # retries spent, or the scheduler gave up on it (KilledWorker)
            why = f"its item failed on the cluster: {type(error).__name__}: {error}"
            return SubstrateReport(name=job.name, file=job.file, checks=with_not_run(
                [CheckResult(CheckName.RUNS_TO_COMPLETION, CheckStatus.FAILED, why)], f"not run: {why}"))
        if "unavailable" in summary:
            raise BackendUnavailable(summary["unavailable"])
        report.device = report.device or summary["device"]
        return SubstrateReport.from_json(summary["report"])


class SanitizerStage:
    """compute-sanitizer's tools over the run's substrates, beside the gate jobs; their checks join each report."""

    def __init__(self, args, backend: str, tools: tuple[str, ...], jobs: list, entries: dict, errors: dict,
                 cluster=None, prestarted: dict | None = None, records: "RecordBook | None" = None):
        self.tools, self.backend, self.cluster = tools, backend, cluster
        self.prestarted = prestarted or {}  # sanitizer.prestart()'s processes, started beside discovery
        # On a cluster of other hosts the tools are found where they run, not here.
        self.path = args.sanitizer or (None if cluster is not None and cluster.remote else sanitizer.find_sanitizer())
        self.why_not = ("--no-sanitize" if args.no_sanitize else "no tools chosen" if not tools
                        else "CPU backend (compute-sanitizer checks CUDA kernels)" if backend == "cpu"
                        else "compute-sanitizer not found (PATH, $CUDA_HOME, /usr/local/cuda*)"
                        if self.path is None and not (cluster is not None and cluster.remote) else "")
        summaries = {(file, s.name): s for file, found in entries.items() for s in found}
        kb_root = str(args.kb_root) if args.kb_root else ""
        self.targets = [sanitizer.SanitizerTarget(file, name, s.kernel_name, s.t0_bytes, s.cuda, kb_root=kb_root)
                        for file, name in jobs if file not in errors and (s := summaries.get((file, name)))
                        and s.kernel_name]
        # Where the verdicts can be shared with the tools' programs (this host), a substrate not admitted before at
        # its present source waits for the gate's verdict, and runs under the tools only if admitted: the others
        # (admitted before, likely again) run beside their jobs, first, as they always did.
        self.verdicts: Path | None = None
        if records is not None and not (cluster is not None and cluster.remote):
            for target in self.targets:
                source = summaries[(target.file, target.name)].source_sha256
                target.awaits_verdict = not admissions.is_admitted(records.record_for(Path(target.file)),
                                                                   target.name, source, backend)
            self.targets.sort(key=lambda target: target.awaits_verdict)  # stable: the jobs' order within each
        self._undecided = {t.key for t in self.targets if t.awaits_verdict}
        self._target_names = {t.name for t in self.targets}
        self.cache_dir = str(args.cache_dir) if args.cache_dir else None
        self.timeout = max(args.timeout, sanitizer.PROCESS_TIMEOUT)
        self.stall = max(args.timeout, sanitizer.MIN_STALL)  # no case done for so long: a hung kernel
        self.processes = args.sanitize_processes
        self._future = None
        self._seconds = 0.0
        self._timings: list[str] = []

    def start(self) -> None:
        """Run the tools in a thread of their own, beside the gate jobs (they share the GPU)."""
        if self.why_not or not self.targets:
            return
        started = time.perf_counter()
        if self._undecided:
            self.verdicts = Path(tempfile.mkdtemp(prefix="gate-verdicts-"))

        def run():
            try:
                return sanitizer.sanitize(self.targets, self.tools, self.path, self.backend, self.cache_dir,
                                          self.timeout, self.stall, self.processes, self._timings, self.prestarted,
                                          verdicts=self.verdicts)
            finally:
                self._seconds = time.perf_counter() - started
                if self.verdicts is not None:
                    shutil.rmtree(self.verdicts, ignore_errors=True)

        if self.cluster is not None and self.cluster.remote:  # an item of its own, on a GPU of the cluster
            self._future = self.cluster.client.submit(
                sanitizer.sanitize_found_here, self.targets, self.tools, self.path, self.backend, self.cache_dir,
                self.timeout, self.stall, self.processes, resources={"GPU": self.cluster.gpu_share}, pure=False)
            return
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sanitizers")
        self._future = pool.submit(run)
        pool.shutdown(wait=False)  # the thread ends with its one task

    def decided(self, report: SubstrateReport) -> None:
        """The gate's verdict on a substrate, told to the tools' programs if they wait for it: an admitted one runs
        under them, a rejected one does not (its checks say why)."""
        if report.name in self._undecided and self.verdicts is not None:
            self._undecided.discard(report.name)
            why = ("" if report.admitted else "the gate rejected it before it ran under the tool, and no finding "
                                              "could change that verdict")
            sanitizer.write_verdict(self.verdicts, report.name, why)

    def undecided_left(self) -> None:
        """Every target still awaiting a verdict (its job ended without a report: an interrupt, a harness fault)
        told not to run, so no tool's program waits for ever."""
        for name in list(self._undecided):
            self._undecided.discard(name)
            if self.verdicts is not None:
                sanitizer.write_verdict(self.verdicts, name, "its gate job ended without a verdict")

    def waiting_note(self) -> str:
        return f"compute-sanitizer ({', '.join(self.tools)})" if self._future is not None else ""

    def judge(self, report: SubstrateReport) -> SubstrateReport:
        if self.why_not:
            return report.with_checks(sanitizer.skipped(self.tools, self.why_not))
        if self._future is None:
            return report
        try:
            checks = self._future.result()
        except Exception as error:  # a fault of the harness itself: the gate's own checks still stand
            why = f"not run: the sanitizer stage failed ({type(error).__name__}: {error})"
            return report.with_checks([CheckResult(sanitizer.CHECK_OF_TOOL[t], CheckStatus.NOT_RUN, why)
                                       for t in self.tools])
        found = checks.get(report.name)
        if found is None:  # the candidate did not import: nothing could run under the tools
            return report
        return report.with_checks(found)

    def pending(self, report: SubstrateReport) -> SubstrateReport:
        """A copy of `report` as the --json written while the gate runs holds it: the tools' checks not run yet, where
        the tools will judge it at the end (so no substrate reads as admitted before they have)."""
        if self.why_not or self._future is None or report.name not in self._target_names:
            return report
        pending = [CheckResult(sanitizer.CHECK_OF_TOOL[t], CheckStatus.NOT_RUN, "pending: the sanitizers judge it "
                                                                                 "before the gate ends")
                   for t in self.tools]
        return replace(report, checks=list(report.checks)).with_checks(pending)

    def cut_short(self, report: SubstrateReport, why: str) -> SubstrateReport:
        """`report` with the sanitizer checks an interrupt kept from finishing skipped, saying so."""
        if self.why_not or self._future is None:
            return self.judge(report)
        return report.with_checks(sanitizer.skipped(self.tools, why))

    def summary(self) -> str:
        if self.why_not:
            return f"sanitizers: skipped ({self.why_not})"
        if self._future is None:
            return "sanitizers: no substrate to run"
        if self.cluster is not None and self.cluster.remote:
            return f"sanitizers: {', '.join(self.tools)} over {len(self.targets)} substrate(s) on the cluster"
        timings = f"; {', '.join(self._timings)}" if self._timings else ""
        return (f"sanitizers: {', '.join(self.tools)} over {len(self.targets)} substrate(s) in {self._seconds:.1f} s "
                f"({self.path}{timings})")


@dataclass
class Timeline:
    """Where a gate run's wall time went, stage by stage: what to shorten when a gate is slow."""

    discovery: float = 0.0  # importing every candidate file, in a worker
    worker_ready: float = 0.0  # of which until that worker first spoke: the fork server's start (torch imported)
    jobs: float = 0.0  # from the first job's start to the last job's end
    work: float = 0.0  # the substrates' own seconds, summed
    # Each worker's start to its backend made (the candidate's import and its proof, T0's helpers, the CUDA
    # context, which the driver makes one at a time), summed: the jobs' time that is not the substrates' work.
    worker_starts: float = 0.0
    start_parts: dict = field(default_factory=dict)  # worker_starts by part, as the workers measured them
    workers: int = 0  # worker processes started (a worker gates further substrates of its file)
    sanitizer_wait: float = 0.0  # after the last job, waiting for the sanitizer stage
    ahead: int = 0  # workers started beside discovery (WorkersAhead), not counted in `workers`
    ahead_used: int = 0  # of which a job took
    ahead_unneeded: int = 0  # of which stopped after discovery: no job of their files would take them

    def describe(self, at_once: int) -> str:
        whose = "worker's" if self.workers == 1 else "workers'"
        parts = ""
        if self.start_parts:
            rest = max(0.0, self.worker_starts - sum(self.start_parts.values()))
            parts = " (" + ", ".join(f"{name} {seconds:.1f}" for name, seconds in
                                     [*self.start_parts.items(), ("the rest", rest)]) + ")"
        ahead = (f", {self.ahead} worker(s) started beside it, {self.ahead_used} of them used" if self.ahead else "")
        if self.ahead_unneeded:
            ahead += f", {self.ahead_unneeded} stopped after it (their files' T0s are drawn by helpers)"
        return (f"timeline: discovery {self.discovery:.1f} s (its worker ready after {self.worker_ready:.1f} s{ahead}), "
                f"then the jobs {self.jobs:.1f} s ({self.work:.1f} s of substrate work after "
                f"{self.worker_starts:.1f} s of {self.workers} {whose} start{parts}, {at_once} at once), "
                f"then {self.sanitizer_wait:.1f} s waiting for the sanitizers")


def _suite_summary(report: SubstrateReport) -> str:
    return " · ".join(f"{s.name} {s.passed}/{s.trials}" for s in report.suites) or "no suite ran"


UNDECIDED = "not decided on the CPU backend"


def undecided(substrate: SubstrateReport) -> list[str]:
    """What a check says the backend could not decide for the substrate ('not decided on the CPU backend: races
    between blocks'), so that an admission is never shown without it."""
    return [c.detail[c.detail.index(UNDECIDED):].split(")")[0] for c in substrate.checks if UNDECIDED in c.detail]


def format_summary(report: GateReport, seconds: float) -> str:
    width = max([len(s.name) for s in report.substrates] + [9])
    lines = [f"{'substrate':<{width}}  {'verdict':<8}  {'seconds':>7}  suites (trials passed)"]
    for s in report.substrates:
        lines.append(f"{s.name:<{width}}  {s.verdict.value:<8}  {s.seconds:7.1f}  {_suite_summary(s)}")
        if not s.admitted:
            lines.append(f"{'':<{width}}    in {s.file}")
        lines += [f"{'':<{width}}    - {reason}" for reason in s.reasons()]
        if s.admitted:
            lines += [f"{'':<{width}}    - {text}" for text in undecided(s)]
    admitted = sum(s.admitted for s in report.substrates)
    lines.append(f"{admitted} admitted, {len(report.substrates) - admitted} rejected in {seconds:.1f} s "
                 f"(backend {report.backend}, {report.device})")
    return "\n".join(lines)


class RecordBook:
    """The admission records a run reads and updates: one given with --record, or one per candidate folder."""

    def __init__(self, path: Path | None):
        self.path = path
        self._records: dict[Path, dict] = {}
        if path is not None:
            self.record_for(Path("."))  # a broken --record is a usage error before any work

    def path_for(self, candidate_file: Path) -> Path:
        return self.path or admissions.record_path_for(candidate_file)

    def record_for(self, candidate_file: Path) -> dict:
        path = self.path_for(candidate_file)
        if path not in self._records:
            try:
                self._records[path] = admissions.load_record(path)
            except ValueError as error:
                raise UsageError(str(error))
        return self._records[path]

    def add(self, result: SubstrateReport, backend: str, device: str) -> None:
        path = self.path_for(Path(result.file))
        try:  # onto the record as it is now: another gate may have recorded into it since this run read it
            self._records[path] = admissions.update_record(
                path, lambda record: admissions.with_result(record, result, backend, device))
        except ValueError as error:
            raise UsageError(str(error))


CHANGED = "source or problem file changed"


def _list(entries: dict, errors: dict, records: RecordBook) -> str:
    rows = []
    for file, summaries in sorted(entries.items()):
        for s in summaries:
            status = admissions.admission_status(records.record_for(Path(file)), s.name, s.source_sha256)
            if s.problems:
                status = "invalid entry: " + "; ".join(s.problems)
            rows.append((s.name, Path(file).name, s.kb_file, status))
    rows += [(Path(file).stem, Path(file).name, "", f"import failed: {error}") for file, error in sorted(errors.items())]
    width = [max([len(r[i]) for r in rows] + [len(h)]) for i, h in enumerate(("substrate", "file", "kb_file"))]
    lines = [f"{'substrate':<{width[0]}}  {'file':<{width[1]}}  {'kb_file':<{width[2]}}  admission"]
    lines += [f"{n:<{width[0]}}  {f:<{width[1]}}  {k:<{width[2]}}  {st}" for n, f, k, st in rows]
    if any(k and CHANGED in st for _n, _f, k, st in rows):
        lines.append(f"({CHANGED}: the recorded hash covers the candidate and its problem file; a substrate gated "
                     f"against a KernelBench checkout reads as changed unless --kb-root names that checkout)")
    return "\n".join(lines)


def _make_progress(disabled: bool):
    from tqdm import tqdm

    # disable=None: tqdm turns itself off when stderr is not a terminal (CI logs stay readable).
    return tqdm(total=0, unit="step", disable=True if disabled else None, dynamic_ncols=True, leave=False,
                file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if problem := preflight.packages_problem():
        print(f"gate.py: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    # Read by discovery and the job slots (args travels through every stage of the run); set by Ctrl-C and SIGTERM.
    args.interruption = Interruption()
    with caught(args.interruption):
        try:
            return _run(args)
        except UsageError as error:
            print(f"gate.py: error: {error}", file=sys.stderr)
            return EXIT_USAGE


def _expand_folders(targets: list[str]) -> list[str]:
    """The targets with each folder replaced by the candidate files in it; raises UsageError for one holding none."""
    expanded = []
    for target in targets:
        if Path(target).is_dir():
            found = candidate_files(Path(target))
            if not found:
                raise UsageError(f"{target}: a folder with no candidate_*.py file in it")
            expanded += [str(f) for f in found]
        else:
            expanded.append(target)
    return expanded


def _output_problems(args, explicit_files: list[Path]) -> list[str]:
    """Every path the run will write that cannot be written, checked before any work."""
    if args.list:
        return []
    paths = [(args.json, "--json")] if args.json else []
    if not args.no_record:
        gates_family = not explicit_files or any(not t.endswith(".py") for t in args.targets)  # names are its
        folders = sorted({f.resolve().parent for f in explicit_files})
        records = [args.record] if args.record else (
            [admissions.DEFAULT_RECORD] if gates_family else []) + [folder / admissions.RECORD_NAME for folder in folders]
        paths += [(path, "admission record" if args.record is None else "--record") for path in records]
    return [problem for path, option in paths if (problem := preflight.unwritable(path, option))]


def _run(args) -> int:
    started = time.perf_counter()
    args.targets = _expand_folders(args.targets)
    explicit_files = [Path(t) for t in args.targets if t.endswith(".py")]
    for file in explicit_files:
        if not file.is_file():
            raise UsageError(f"cannot read candidate file {file}")
    if problems := _output_problems(args, explicit_files):
        raise UsageError("; ".join(problems) + (" (--no-record gates without writing the admission records)"
                                                if any(p.startswith("admission record") for p in problems) else ""))
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if problem := sanitizer.processes_problem(args.sanitize_processes):
        raise UsageError(problem)
    tools = tuple(t.strip() for t in args.sanitize_tools.split(",") if t.strip())
    if unknown := [t for t in tools if t not in sanitizer.TOOLS]:
        raise UsageError(f"--sanitize-tools: unknown tool {unknown[0]!r} (choose from {', '.join(sanitizer.TOOLS)})")
    if args.sanitizer is not None and not args.sanitizer.is_file():
        raise UsageError(f"--sanitizer: no such file {args.sanitizer}")
    if kb_root_error := kb_root_usage_error(args.kb_root):
        raise UsageError(kb_root_error)
    records = RecordBook(args.record)

    files = list(dict.fromkeys(candidate_files() + [f.resolve() for f in explicit_files]))
    timeline = Timeline()
    early_sanitizers = _prestart_sanitizers(args, tools)
    try:
        return _discover_and_gate(args, started, files, tools, records, timeline, early_sanitizers)
    finally:
        sanitizer.discard(early_sanitizers)


def _prestart_sanitizers(args, tools: tuple[str, ...]) -> dict:
    """The sanitizer stage's processes started now, beside discovery, where the stage will run on this host's
    GPU: each pays the tool's start, the imports and its CUDA context (3 to 5 s) while the candidates are found."""
    if args.no_sanitize or not tools or args.list or args.scheduler or args.backend not in ("auto", "cuda"):
        return {}
    path = args.sanitizer or sanitizer.find_sanitizer()
    if path is None or not gpu_visible():
        return {}
    return sanitizer.prestart(tools, path, "cuda", str(args.cache_dir) if args.cache_dir else None,
                              args.sanitize_processes)


def _discover_and_gate(args, started: float, files: list[Path], tools: tuple[str, ...], records, timeline,
                       early_sanitizers: dict) -> int:
    def first_worker_spoke() -> None:
        timeline.worker_ready = timeline.worker_ready or time.perf_counter() - started

    ahead = _workers_ahead(args, files)
    try:
        found = discover(files, args.timeout, args.kb_root, first_worker_spoke, args.cache_dir,
                         stop=args.interruption.stopped, foresee_outputs=_foresees_outputs(args))
        if args.interruption.stopped():
            print(f"interrupted by {args.interruption.signal_name} while discovery imported the candidates: nothing "
                  f"was gated")
            return EXIT_INTERRUPTED
        return _gate_discovered(args, started, files, tools, records, timeline, early_sanitizers, ahead, *found)
    finally:
        if ahead is not None:
            ahead.close()


def _foresees_outputs(args) -> bool:
    """Whether discovery foresees each official output's shape: for the float64 route on a GPU (harness.gate.foresight),
    not on the CPU backend, whose second references never run ahead."""
    return not args.list and resolve_backend_name(args.backend) == "cuda"


def _workers_ahead(args, files: list[Path]) -> WorkersAhead | None:
    """Workers for the first files the slots will take, started now, beside discovery, where a worker's start is
    long (its CUDA context: 1 to 2 s, eight at once) and the files to be gated are known before discovery: every
    candidate, or the files named. Substrates named by name are found by discovery: nothing is started for them."""
    if args.list or args.scheduler or any(not target.endswith(".py") for target in args.targets):
        return None
    backend = resolve_backend_name(args.backend)
    if backend != "cuda" or not gpu_visible():
        return None
    gated = [str(Path(t).resolve()) for t in args.targets] if args.targets else [str(f) for f in files]
    slots = auto_jobs(backend, os.cpu_count() or 1) if args.jobs == "auto" else args.jobs
    return WorkersAhead(list(dict.fromkeys(gated))[:slots], backend, str(args.cache_dir) if args.cache_dir else None)


def files_taking_workers(jobs: list[tuple[str, str]], entries: dict) -> set[str]:
    """The files (resolved) with a job that a worker started ahead may gate: one whose T0 the worker builds itself."""
    t0_bytes = {(file, summary.name): summary.t0_bytes for file, found in entries.items() for summary in found}
    return {str(Path(file).resolve()) for file, name in jobs if may_reuse_worker(t0_bytes.get((file, name), 0))}


def _gate_discovered(args, started: float, files: list[Path], tools: tuple[str, ...], records, timeline,
                     early_sanitizers: dict, ahead: WorkersAhead | None, entries: dict, errors: dict) -> int:
    timeline.discovery = time.perf_counter() - started
    if args.list:
        print(_list(entries, errors, records))
        if errors:  # a candidate that does not import would be rejected: the listing says so, and so does its exit
            print(f"{len(errors)} of {len(errors) + len(entries)} candidate file(s) did not import", file=sys.stderr)
            return EXIT_REJECTED
        return EXIT_ADMITTED
    # Discovery names files by their resolved path; targets given on the command line are matched the same way.
    targets = [str(Path(t).resolve()) if t.endswith(".py") else t for t in args.targets]
    jobs = _resolve_targets(targets, entries, errors)

    if ahead is not None:
        ahead.keep_only(files_taking_workers(jobs, entries))
    backend = resolve_backend_name(args.backend)
    if args.jobs == "auto":
        args.jobs = auto_jobs(backend, os.cpu_count() or 1)
    why = ""
    if args.backend == "auto":
        why = " (auto: a GPU is visible)" if backend == "cuda" else " (auto: no GPU is visible)"
    remote = bool(args.scheduler) and args.scheduler != LOCAL  # the GPUs are the cluster's, not this host's
    if backend == "cuda" and not gpu_visible() and not remote:
        raise UsageError("backend cuda: no GPU is visible (the CUDA driver is missing or sees no device)")
    if backend == "cpu":
        try:
            cpu_compiler.compiler_version()  # a missing compiler is a usage error here (torch is not imported)
        except BackendUnavailable as error:
            raise UsageError(f"backend {backend}{why}: {error}")
    print(f"gate: {len(jobs)} substrate(s) on backend {backend}{why}"
          + (f", one item per substrate on the Dask cluster {args.scheduler}" if args.scheduler else ""), flush=True)
    if args.scheduler:
        gpus = gpu_count() if backend == "cuda" and not remote else 0
        try:
            with cluster_client(args.scheduler, gpus, args.jobs, args.jobs,
                                os.environ.get("CUDA_VISIBLE_DEVICES")) as client:
                if backend == "cuda":
                    require_gpu_workers(client, args.scheduler)
                return _gate_all(args, backend, jobs, entries, errors, records, tools, started, timeline,
                                 ClusterGate(client, args.timeout, 1 / args.jobs if backend == "cuda" else 0, remote))
        except ClusterUnavailable as error:
            raise UsageError(str(error))
    return _gate_all(args, backend, jobs, entries, errors, records, tools, started, timeline, None, early_sanitizers,
                     ahead)


def _interrupted(args, report: GateReport, jobs: list, results: dict, sanitizing: SanitizerStage) -> int:
    """The end of a gate run Ctrl-C or SIGTERM stopped: what finished before it, printed and written to --json marked
    incomplete, and not to the admission records (its sanitizers were cut short); one line says what did not run."""
    kill_descendants()  # any worker a slot started as the signal came
    interruption = args.interruption
    cut = f"the gate was interrupted by {interruption.signal_name} before the sanitizers finished"
    report.substrates = [sanitizing.cut_short(results[i], cut) for i in sorted(results)]
    report.interrupted = interruption.signal_name
    report.not_gated = [name for i, (_file, name) in enumerate(jobs) if i not in results]
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    if report.substrates:
        print(format_summary(report, 0.0).rsplit("\n", 1)[0])  # the table, without its totals line
    print(interruption.line(len(results), len(jobs), "substrates") + "; nothing was written to the admission records"
          + (f"; {args.json} holds what finished, marked incomplete" if args.json else ""))
    return EXIT_INTERRUPTED


@dataclass
class _GateRun:
    """One gate run's jobs: what its slots (threads) share, and how each gates a job."""

    args: argparse.Namespace
    backend: str
    entries: dict
    errors: dict
    cluster: object  # ClusterGate, or None: here
    ahead: WorkersAhead | None
    at_once: int
    sanitizing: SanitizerStage
    report: GateReport
    progress: object  # tqdm
    budget: MemoryBudget
    results: dict = field(default_factory=dict)  # position in the run -> SubstrateReport
    jobs: list = field(default_factory=list)  # (file, name) by position in the run, once gate() is given them
    worker_starts: list = field(default_factory=list)  # each worker's start: its seconds, and by part
    written: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self):
        self.summaries = {(file, s.name): s for file, found in self.entries.items() for s in found}

    def stopped(self) -> bool:
        return self.args.interruption.stopped()

    def _t0_bytes(self, job: tuple[str, str]) -> int:
        summary = self.summaries.get(job)
        return summary.t0_bytes if summary else 0

    def on_message(self, name: str):
        def handle(message):
            kind = message[0]
            if kind == "device" and message[3]:  # a worker started for this job
                self.worker_starts.append((message[2], message[4]))  # from the jobs' threads: append is atomic
            if kind == "plan":
                self.progress.total += message[1]
                self.progress.refresh()
            elif kind == "step" and message[1] != "import":
                self.progress.set_description_str(f"{name}: {message[1]}", refresh=False)
                self.progress.update(1)
            elif kind == "device" and not self.report.device:
                self.report.device = message[1]
        return handle

    def reuses_worker(self, job: tuple[str, str]) -> bool:
        """Whether the job may be gated by its file's worker, kept from an earlier substrate: not one whose T0 is
        drawn by helpers, nor an item of a cluster (a worker of its own there)."""
        return self.cluster is None and may_reuse_worker(self._t0_bytes(job))

    def gate_one(self, job: tuple[str, str], keeper: FileWorker) -> SubstrateReport | None:
        """The job's report; None where an interrupt came first (no verdict on what did not finish)."""
        file, name = job
        if file in self.errors:
            return _import_failure(file, name, self.errors[file])
        args, summary = self.args, self.summaries.get(job)
        work = GateJob(file=file, name=name, backend=self.backend,
                       cache_dir=str(args.cache_dir) if args.cache_dir else None,
                       kb_root=str(args.kb_root) if args.kb_root else None, jobs_at_once=self.at_once,
                       official_inputs=summary.official_inputs if summary else None,
                       official_output=summary.official_output if summary else None)
        if self.cluster is not None:
            return self.cluster.gate(work, self.report, self.progress)
        if not self.reuses_worker(job):
            keeper.release()
        with self.budget.reserve(estimate_bytes(self._t0_bytes(job))) as shared:
            try:
                result = run_gate_job(work, args.timeout, self.on_message(name),
                                      keeper if self.reuses_worker(job) else None, stop=self.stopped)
            except WorkerLost:  # no worker could start: Ctrl-C killed the fork server, else the machine's fault
                if self.stopped():
                    return None
                raise
            beside_others = shared()
        if self.stopped():
            return None  # the interrupt may have killed its worker
        if beside_others and _ran_out_of_memory(result):
            # Other jobs held part of the memory (the device's, or the host's): the candidate is judged alone,
            # in a fresh worker.
            keeper.release()
            with self.budget.alone():
                first, result = result, run_gate_job(work, args.timeout, self.on_message(name))
            _note_rerun(result, first)
        return result

    def slot(self, queue: JobQueue) -> None:
        """One job slot: takes jobs until none is left, keeping its worker for the next substrate of its file."""
        keeper = FileWorker(self.ahead)
        try:
            while (taken := queue.take(keeper.file)) is not None:
                position, job = taken
                try:
                    result = self.gate_one(job, keeper)
                finally:
                    queue.done(job)
                if result is not None:
                    self.sanitizing.decided(result)
                    self._keep(position, result)
        finally:
            keeper.close()

    def _keep(self, position: int, result: SubstrateReport) -> None:
        with self.written:
            self.results[position] = result
            self.report.substrates = [self.results[i] for i in sorted(self.results)]
            if self.args.json:  # what finished so far, marked as such: a run killed outright leaves no other
                running = replace(
                    self.report, substrates=[self.sanitizing.pending(r) for r in self.report.substrates],
                    running=True, not_gated=[name for i, (_file, name) in enumerate(self.jobs) if i not in self.results])
                self.args.json.write_text(json.dumps(running.to_json(), indent=2) + "\n")

    def gate(self, jobs: list, timeline: Timeline) -> int | None:
        """Every job through the slots, beside the sanitizer stage, the reports judged with its checks; the exit
        status of an interrupted run, or None."""
        self.jobs = jobs
        with ThreadPoolExecutor(max_workers=max(1, self.at_once)) as pool:
            jobs_started = time.perf_counter()
            self.sanitizing.start()
            # A job's key names the worker that can serve it: its file's, or one of its own.
            queue = JobQueue(jobs, key=lambda job: job[0] if self.reuses_worker(job) else job, stopped=self.stopped)
            try:
                for running in [pool.submit(self.slot, queue) for _ in range(max(1, self.at_once))]:
                    running.result()
            finally:
                self.sanitizing.undecided_left()
            jobs_ended = time.perf_counter()
            if not self.stopped():
                self.progress.set_description_str(self.sanitizing.waiting_note(), refresh=True)
                judged = [self.sanitizing.judge(self.results[i]) for i in sorted(self.results)]
            if self.stopped():  # before or while the sanitizers ran: they did not finish
                self.progress.close()
                return _interrupted(self.args, self.report, jobs, self.results, self.sanitizing)
        self.report.substrates = judged
        self._fill(timeline, jobs_ended - jobs_started, time.perf_counter() - jobs_ended)
        return None

    def _fill(self, timeline: Timeline, jobs_seconds: float, sanitizer_wait: float) -> None:
        timeline.jobs, timeline.sanitizer_wait = jobs_seconds, sanitizer_wait
        timeline.work = sum(result.seconds for result in self.report.substrates)
        timeline.worker_starts, timeline.workers = sum(s for s, _ in self.worker_starts), len(self.worker_starts)
        if self.ahead is not None:
            timeline.ahead, timeline.ahead_used = self.ahead.started, self.ahead.used
            timeline.ahead_unneeded = self.ahead.unneeded
        for _seconds, parts in self.worker_starts:
            for part, seconds in parts.items():
                timeline.start_parts[part] = timeline.start_parts.get(part, 0.0) + seconds


def _gate_all(args, backend, jobs, entries, errors, records, tools, started, timeline: Timeline, cluster,
              early_sanitizers: dict | None = None, ahead: WorkersAhead | None = None) -> int:
    """Every job gated (here, or as items of `cluster`), beside the sanitizer stage; the records and the summary."""
    at_once = len(jobs) if cluster is not None else min(args.jobs, len(jobs))  # a cluster's item counts its host's
    run = _GateRun(args, backend, entries, errors, cluster, ahead, at_once,
                   SanitizerStage(args, backend, tools, jobs, entries, errors, cluster, early_sanitizers, records),
                   GateReport(backend=backend, device=""), _make_progress(args.no_progress),
                   MemoryBudget(device_memory_bytes(backend) if args.jobs > 1 and cluster is None else None))
    try:
        interrupted = run.gate(jobs, timeline)
    except BackendUnavailable as error:
        raise UsageError(f"backend {backend}: {error}")
    finally:
        run.progress.close()
    if interrupted is not None:
        return interrupted
    report = run.report
    for result in report.substrates:
        if not args.no_record and result.source_sha256:
            records.add(result, backend, report.device)
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    print(run.sanitizing.summary())
    print(timeline.describe(at_once))
    print(format_summary(report, time.perf_counter() - started))
    return EXIT_ADMITTED if all(s.admitted for s in report.substrates) else EXIT_REJECTED
