"""The gate's workers: every candidate file is imported, and its substrates gated, in a fresh worker process.

The processes themselves (started from the fork server, spoken to over a pipe, killed when silent) are
harness.processes'. A gate worker reports ("step", what), ("plan", n_steps), ("device", text, seconds from
the job's start to its backend made, whether the worker started for it, those seconds by part), ("checks",
[...]) and finally ("report", {...}) or ("entries", ...) for discovery; a worker whose pipeline raises
sends ("crash", why) before it dies. A gate worker whose substrate did not fault, and whose device is
still sound after its report, says ("ready",) and takes another substrate of the same file
(`FileWorker`): the file was imported, and proven safe, before its backend existed.
"""
from __future__ import annotations

import functools
import gc
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.backends.base import out_of_device_memory
from harness.gate.records import CheckName, CheckResult, CheckStatus, SubstrateReport, with_not_run
from harness.interrupt import die_quietly_on_interrupt
from harness.processes import DEFAULT_STEP_TIMEOUT, StartedWorker, WorkerLost, converse, oom_kills, start_worker


@dataclass(frozen=True)
class GateJob:
    file: str
    name: str
    backend: str
    cache_dir: str | None = None
    kb_root: str | None = None
    # T0s of at least this many bytes are drawn ahead in helper processes (None: harness.gate.trial_inputs' default).
    helpers_from_bytes: int | None = None
    # Gate jobs running at once on this host (--jobs): each draws T0 ahead in its share of the host's memory.
    jobs_at_once: int = 1
    # get_inputs()'s suite_rules.portable_signature, discovery's (None: the worker builds it on the meta device).
    official_inputs: tuple | None = None
    # The official output's signature on those inputs, discovery's (harness.gate.foresight; None: not foreseen).
    official_output: tuple | None = None
    trace: bool = False  # the report keeps every timed call (SubstrateReport.phase_trace): bench_gate's --trace


@dataclass
class EntrySummary:
    """What discovery learns of one registered substrate without running it."""

    name: str
    file: str
    kb_file: str = ""
    kernel_name: str = ""
    source_sha256: str = ""
    problems: list[str] = field(default_factory=list)
    cuda: str = ""  # the CUDA source, from which a campaign's parent makes the mutants
    t0_bytes: int = 0  # the bytes of get_inputs()'s tensors, for scheduling by memory
    official_inputs: tuple | None = None  # get_inputs()'s suite_rules.portable_signature, for the gate's workers
    official_output: tuple | None = None  # the official output's on it, on a GPU (harness.gate.foresight)


@dataclass
class ImportedFile:
    """A candidate file imported and registered once in a worker, proven to have done no CUDA work."""

    checks: list[CheckResult]  # candidate_file and import_safe, the same for every substrate of the file
    registered: dict = field(default_factory=dict)  # name -> the raw entry register() added
    error: str = ""  # why register() failed, if it did
    where: str = ""  # where register() is defined, to name in a registration failure
    imported: bool = True  # False: the import failed, and nothing else could be learnt


def _import_file(path: Path) -> ImportedFile:
    """Import and register the candidate, proving no CUDA work happens (from a process with no CUDA state)."""
    from harness.backends import cuda_activity
    from harness.candidates import (CandidateError, candidate_file_problems, import_candidate, register_candidate,
                                    where_defined)

    before = cuda_activity()
    if before:
        raise RuntimeError(f"harness bug: the worker held CUDA state before importing the candidate ({before})")
    try:
        module = import_candidate(path)
    except CandidateError as error:
        return ImportedFile([CheckResult(CheckName.IMPORT_SAFE, CheckStatus.FAILED, str(error))], imported=False)
    after_import = cuda_activity()
    file_problems = candidate_file_problems(path, module)
    checks = [CheckResult(CheckName.CANDIDATE_FILE, CheckStatus.FAILED if file_problems else CheckStatus.PASSED,
                          "; ".join(file_problems) or f"{path.name} defines register(K, torch, ctypes)")]
    try:
        registered, error = register_candidate(module, path), ""
    except CandidateError as raised:
        registered, error = {}, str(raised)
    after_register = cuda_activity()
    if after_import:
        checks.append(CheckResult(CheckName.IMPORT_SAFE, CheckStatus.FAILED,
                                  f"{path.name}: importing the file did CUDA work: {after_import}"))
    elif after_register:
        checks.append(CheckResult(CheckName.IMPORT_SAFE, CheckStatus.FAILED,
                                  f"{path.name}: register() did CUDA work: {after_register}"))
    else:
        checks.append(CheckResult(CheckName.IMPORT_SAFE, CheckStatus.PASSED,
                                  "no CUDA context or torch.cuda state after import and register()"))
    return ImportedFile(checks, registered, error, where_defined(module.register, path.name))


def _entry_checks(imported: ImportedFile, path: Path, name: str):
    """One substrate of an imported file: (entry or None, checks, raw entry or None).

    The raw entry lets the CUDA source rules run even when the registration is invalid, so every
    broken rule is reported at once.
    """
    from harness.candidates import make_entry

    checks = list(imported.checks)
    if not imported.imported:
        return None, checks, None
    if imported.error or name not in imported.registered:
        why = imported.error or f"{path.name} registers {sorted(imported.registered)}, not {name!r}"
        checks.append(CheckResult(CheckName.REGISTRATION, CheckStatus.FAILED, why))
        return None, checks, None
    raw = imported.registered[name]
    entry, problems = make_entry(name, raw, path, partial=True)
    checks.append(CheckResult(CheckName.REGISTRATION, CheckStatus.FAILED if problems else CheckStatus.PASSED,
                              "; ".join(f"{imported.where}: {p}" for p in problems)
                              or "the spec's seven keys, each of the right type"))
    return entry, checks, raw


def _gate_in_worker(job: GateJob, conn) -> None:
    """Gate `job`; then, while no kernel has faulted, the device is sound and the parent sends more, further
    substrates of the same file.

    The file is imported once, before the backend exists, so its import-safety proof holds for every substrate
    the worker gates. After each report the worker says ("ready",) and waits for the next GateJob, or None.
    """
    began = time.perf_counter()
    die_quietly_on_interrupt()
    import torch  # noqa: F401  imported before the first message: start-up, not the candidate's import

    conn.send(("step", "import"))
    _serve_file(job, *_import_timed(job.file), None, conn, began)


def _import_timed(file: str) -> tuple[ImportedFile, dict]:
    """The file imported and proven (_import_file), and the worker's first start part: how long that took."""
    importing = time.perf_counter()
    imported = _import_file(Path(file))
    return imported, {"candidate imported": time.perf_counter() - importing}


def _make_backend(name: str, cache_dir: str | None):
    from harness.backends import create_backend

    return create_backend(name, cache_dir=Path(cache_dir) if cache_dir else None)


def _serve_file(job: GateJob, imported: ImportedFile, start_parts: dict, backend, conn, began: float) -> None:
    """Gate `job`, then each further substrate of its file the parent sends while the worker stays reusable."""
    path = Path(job.file)
    while True:
        backend, reusable = _gate_one(job, imported, backend, conn, began, start_parts)
        if not reusable:
            return
        conn.send(("ready",))
        job = conn.recv()
        if job is None:
            return
        if job.file != str(path):
            raise RuntimeError(f"harness bug: a worker of {path} was sent {job.file}")
        began = time.perf_counter()


def _gate_ahead_in_worker(file: str, backend_name: str, cache_dir: str | None, conn) -> None:
    """A worker started while discovery runs (WorkersAhead): `file` imported and proven, and the backend made (its
    CUDA context), before any job is known; then it serves the file's substrates as a kept worker does.

    It says nothing until its first job (the parent reads it only from then on, as a kept worker's). Where the
    import failed, or did CUDA work, no backend is made: its first job then reports that as a fresh worker would.
    """
    die_quietly_on_interrupt()
    import torch  # noqa: F401  (imported before the clock starts, as in _gate_in_worker)

    from harness.backends import BackendUnavailable

    imported, start_parts = _import_timed(file)
    backend = None
    if imported.imported and not any(c.status is CheckStatus.FAILED for c in imported.checks):
        try:
            backend = _make_backend(backend_name, cache_dir)
        except BackendUnavailable:
            backend = None  # its first job makes it again, and says why it cannot
    job = conn.recv()
    if job is None:
        return
    if job.file != file:
        raise RuntimeError(f"harness bug: a worker made ready for {file} was sent {job.file}")
    _serve_file(job, imported, start_parts, backend, conn, time.perf_counter())


def _gate_one(job: GateJob, imported: ImportedFile, backend, conn, began: float, start_parts: dict):
    """One substrate's report sent; returns (the backend, made now if it was None; whether the worker can serve
    another substrate). `start_parts`: what the worker's start spent before this, by part, added to in the
    ("device", ...) message of a worker started for the job."""
    import torch

    from harness.backends import BackendUnavailable
    from harness.gate.pipeline import count_cases, cuda_source_check, gate_entry
    from harness.gate.trial_inputs import TrialInputs
    from harness.problems import ProblemSearch

    path = Path(job.file)
    search = ProblemSearch.for_candidate(path, Path(job.kb_root) if job.kb_root else None)
    entry, checks, raw = _entry_checks(imported, path, job.name)
    conn.send(("checks", [c.to_json() for c in checks]))
    if entry is None:
        # Without a valid entry nothing can run, but the CUDA source rules can still be read.
        if isinstance(raw, dict) and isinstance(raw.get("cuda"), str) and isinstance(raw.get("kernel_name"), str):
            checks.append(cuda_source_check(raw["cuda"], raw["kernel_name"], f"{job.name}.cu"))
        report = SubstrateReport(name=job.name, file=job.file,
                                 checks=with_not_run(checks, "not run: the candidate did not import and register cleanly"))
        conn.send(("report", report.to_json()))
        return backend, False
    conn.send(("plan", count_cases(entry) + 1))
    # The helpers that draw T0 are forked before the backend exists: no CUDA state to hand on. A worker's later
    # substrates (the parent sends only those whose T0 needs no helpers) build their trials themselves.
    trial_inputs = TrialInputs(job.file, job.name, torch.device("cpu") if backend is None else backend.device,
                               from_bytes=job.helpers_from_bytes, worker_fds=(conn.fileno(),),
                               memory_share=1 / max(1, job.jobs_at_once), official_inputs=job.official_inputs)
    kept = backend is not None
    parts = {} if kept else dict(start_parts)
    if not kept:
        part_began = time.perf_counter()
        trial_inputs.start_early(entry, search)
        parts["T0's helpers started"] = time.perf_counter() - part_began
        part_began = time.perf_counter()
        try:
            backend = _make_backend(job.backend, job.cache_dir)
        except BackendUnavailable as error:
            trial_inputs.close()
            conn.send(("unavailable", str(error)))
            return None, False
        parts["backend (its CUDA context)" if job.backend == "cuda" else "backend"] = time.perf_counter() - part_began
        trial_inputs.device = backend.device
    conn.send(("device", backend.describe_device(), time.perf_counter() - began, not kept, parts))
    # A full collection walks every object there is, most of them made by torch's import: 0.24 s once in
    # kb_matmul_small_k's 1.8 s pipeline on an H100 (0.11 s in a family substrate's on the development machine).
    # What exists now is kept out of the collector's walks for the job (given back to them after it).
    gc.freeze()
    try:
        report = gate_entry(entry, backend, checks, progress=lambda step: conn.send(("step", step)), search=search,
                            publish=lambda partial: conn.send(("partial", partial.to_json())),
                            trial_inputs=trial_inputs, official_inputs=job.official_inputs,
                            official_output=job.official_output, trace=job.trace)
    except BaseException as error:
        # Say why, and where, before dying, so the rejection names the cause, not only an exit code.
        conn.send(("crash", crash_description(error), out_of_device_memory(error)))
        raise
    conn.send(("report", report.to_json()))
    # Not kept after a failed import proof, or after any fault: a kernel that faulted (even one the CPU backend's
    # shim caught) may have written anywhere first, and the next substrate is owed a process it did not touch.
    clean = not any(c.status is CheckStatus.FAILED and c.check in (CheckName.IMPORT_SAFE, CheckName.RUNS_TO_COMPLETION)
                    for c in report.checks)
    del report, trial_inputs, entry
    gc.unfreeze()  # the job's own objects frozen with the rest: a kept worker's end_job collects them
    return backend, clean and backend.end_job()


def _discover_in_worker(files: list[str], kb_root: str | None, cache_dir: str | None, foresee_outputs: bool,
                        conn) -> None:
    die_quietly_on_interrupt()
    from harness.candidates import CandidateError, import_candidate, make_entry, register_candidate
    from harness.problems import ProblemSearch

    for file in files:
        path = Path(file)
        conn.send(("step", file))
        try:
            module = import_candidate(path)
        except CandidateError as error:
            conn.send(("error", file, str(error)))
            continue
        try:
            registered = register_candidate(module, path)
        except CandidateError as error:
            # It imports, so it can be gated: the gate names what is wrong with its register().
            conn.send(("entries", file, [EntrySummary(name=path.stem, file=file, problems=[str(error)])]))
            continue
        summaries = []
        for name, raw in registered.items():
            entry, problems = make_entry(name, raw, path)
            summary = EntrySummary(name=name, file=file, problems=problems)
            if entry is not None:
                summary.kb_file, summary.kernel_name, summary.cuda = entry.kb_file, entry.kernel_name, entry.cuda
                search = ProblemSearch.for_candidate(path, Path(kb_root) if kb_root else None)
                summary.source_sha256 = entry.source_sha256(search)
                _add_signatures(summary, search, Path(cache_dir) if cache_dir else None, foresee_outputs)
            summaries.append(summary)
        conn.send(("entries", file, summaries))


def _add_signatures(summary: EntrySummary, search, cache_dir: Path | None, foresee_outputs: bool) -> None:
    """get_inputs()'s signature and T0's size into `summary`, and with `foresee_outputs` the official output's
    signature on it; each through the cache. A problem that does not load, or a get_inputs() that raises, adds
    nothing: the gate says why."""
    from harness.compiler.cache import signature_cached
    from harness.gate.checks.suite_rules import official_signature, portable_signature, signature_inputs
    from harness.gate.foresight import official_output_signature
    from harness.gate.trial_inputs import inputs_bytes
    from harness.problems import load_problem_file

    try:
        path = search.resolve(summary.kb_file)
        source = path.read_bytes()
    except Exception:
        return

    @functools.cache
    def problem():  # loaded once, and only where a signature is not in the cache
        return load_problem_file(summary.kb_file, path)

    try:
        signature = signature_cached(source, lambda: portable_signature(official_signature(problem())), cache_dir)
        # Inputs no plain data describes (None) are built again: rare, and not stored.
        inputs = signature_inputs(signature) if signature is not None else official_signature(problem())
    except Exception:
        return
    summary.t0_bytes = inputs_bytes(inputs)
    summary.official_inputs = signature
    if foresee_outputs and signature is not None:
        try:
            summary.official_output = signature_cached(source, lambda: official_output_signature(problem(), inputs),
                                                       cache_dir, "official output signature") or None
        except Exception:
            pass  # the worker runs the Model on the meta device itself


def crash_description(error: BaseException) -> str:
    """What a worker's pipeline raised, and the line that raised it (the innermost frame)."""
    import traceback

    first = str(error).splitlines()[0] if str(error) else ""
    frames = traceback.extract_tb(error.__traceback__)
    at = f" (raised at {frames[-1].filename}:{frames[-1].lineno}, in {frames[-1].name})" if frames else ""
    return f"{type(error).__name__}: {first}{at}"


def classify_death(lost: WorkerLost, oom_kills_before: int | None, oom_kills_after: int | None,
                   out_of_device_memory: bool = False) -> tuple[CheckName, str]:
    """The check a lost worker fails, and what to say of the death beyond `lost` itself.

    A worker SIGKILLed (nothing of ours or of a kernel sends that; a timeout's kill is reported as a
    timeout) while the out-of-memory killer's count rose is the host's doing: fits_host_memory. A worker whose
    pipeline raised torch.OutOfMemoryError where no check caught it (`out_of_device_memory`, said before it died)
    met the device's limit, as one the checks catch does: fits_device_memory. Any other death is
    runs_to_completion's, and a SIGKILL's says what the count showed.
    """
    if out_of_device_memory and not lost.timed_out:
        return CheckName.FITS_DEVICE_MEMORY, " (a limit of this machine, not a fault of the kernel)"
    if lost.timed_out or lost.exitcode != -signal.SIGKILL:
        return CheckName.RUNS_TO_COMPLETION, ""
    if oom_kills_before is None or oom_kills_after is None:
        return CheckName.RUNS_TO_COMPLETION, (" (SIGKILL comes from outside the worker, most often the host's "
                                              "out-of-memory killer; /proc/vmstat's oom_kill count cannot be read "
                                              "here to tell)")
    if oom_kills_after <= oom_kills_before:
        return CheckName.RUNS_TO_COMPLETION, (" (not the host's out-of-memory killer: /proc/vmstat's oom_kill count "
                                              "did not change)")
    from harness.gate.trial_inputs import host_memory_available

    available = host_memory_available()
    now = f"; {available / 2**30:.1f} GiB of host memory available afterwards" if available is not None else ""
    return CheckName.FITS_HOST_MEMORY, (f": the host's out-of-memory killer ended it (/proc/vmstat oom_kill rose by "
                                        f"{oom_kills_after - oom_kills_before} meanwhile{now}): a limit of this "
                                        f"machine, not a fault of the kernel")


def lost_mid_suite(partial: SubstrateReport, why: str,
                   death: CheckName = CheckName.RUNS_TO_COMPLETION) -> SubstrateReport:
    """The report a worker published after its last trial, completed with its death.

    Every failure found before the death stays; the death is a failure of `death` (runs_to_completion,
    or fits_host_memory when the host's out-of-memory killer ended the worker); the checks still
    undecided then (suites_can_fail, say) are not run, for that reason.
    """
    from harness.gate.pipeline import PENDING

    checks = []
    for check in partial.checks:
        if check.check is death:
            detail = "; ".join(d for d in (check.detail if check.status is CheckStatus.FAILED else "", why) if d)
            checks.append(CheckResult(check.check, CheckStatus.FAILED, detail))
        elif check.check is CheckName.RUNS_TO_COMPLETION and check.status is not CheckStatus.FAILED:
            # A snapshot's "ran so far" is no pass when the worker then died, whoever ended it.
            checks.append(CheckResult(check.check, CheckStatus.NOT_RUN, f"not run: {why}"))
        elif check.status is CheckStatus.NOT_RUN and check.detail == PENDING:
            checks.append(CheckResult(check.check, CheckStatus.NOT_RUN, f"not run: {why}"))
        else:
            checks.append(check)
    partial.checks = checks
    return partial


class FileWorker:
    """Where a gate keeps a worker between substrates of one candidate file (one per job slot).

    A worker that gated a substrate, kept its device sound and said ("ready",) is held here; run_gate_job gives
    it the next substrate of the same file, which saves a process, an import and a CUDA context (the driver makes
    contexts one at a time: a gate of 28 substrates spent as long starting workers as gating). It is stopped once
    the slot moves to another file (`release`) or the gate ends (`close`).
    """

    def __init__(self, ahead: "WorkersAhead | None" = None):
        self.file: str | None = None
        self._worker: StartedWorker | None = None
        self.ahead = ahead  # workers started beside discovery, shared by the slots

    def ready_for(self, file: str) -> StartedWorker | None:
        """The worker held for `file`, else one started ahead for it, taken out (None: none, or it died while it
        waited)."""
        worker, held_for = self._worker, self.file
        self.file, self._worker = None, None
        if worker is not None and (held_for != file or not worker.process.is_alive()):
            worker.stop()
            worker = None
        if worker is None and self.ahead is not None:
            worker = self.ahead.take(file)
        return worker

    def hold(self, file: str, worker: StartedWorker) -> None:
        self.release()
        self.file, self._worker = file, worker

    def release(self) -> None:
        if self._worker is not None:
            self._worker.stop()
        self.file, self._worker = None, None

    close = release


class WorkersAhead:
    """Workers started while discovery runs, one for each of the first files the gate's slots will take: each
    imports its file (the import-safety proof, in a process with no CUDA state, as every worker's) and makes its
    backend, the seconds of a CUDA context, before the jobs are known. A slot whose file's first job comes takes
    the file's worker (FileWorker.ready_for); those no job took are stopped at the end (`close`).
    """

    def __init__(self, files: list[str], backend: str, cache_dir: str | None):
        self._lock = threading.Lock()
        self._workers: dict[str, StartedWorker] = {}
        self.used = 0
        self.unneeded = 0  # stopped once discovery showed no job of their files would take them (keep_only)
        for file in files:
            try:
                worker = start_worker()
            except WorkerLost:  # the fork server gone (Ctrl-C): its file's first job, if any comes, starts one
                continue
            try:
                worker.connection.send((_gate_ahead_in_worker, (file, backend, cache_dir)))
            except OSError:  # died at once: its file's first job starts one
                worker.stop()
                continue
            self._workers[file] = worker
        self.started = len(self._workers)

    def take(self, file: str) -> StartedWorker | None:
        """The worker started for `file`, taken out; None if none was, or it died while it waited."""
        with self._lock:
            worker = self._workers.pop(file, None)
            alive = worker is not None and worker.process.is_alive()
            self.used += alive
        if worker is not None and not alive:
            worker.stop()
        return worker if alive else None

    def keep_only(self, files: set[str]) -> None:
        """Stop, at once, the workers started for files none of whose jobs will take one (each T0 drawn by helpers,
        forked before a backend exists): idle, each holds a CUDA context's memory that the jobs' budget does not
        count (eight of 520 MiB beside a real-size batch that ran out of memory on an H100)."""
        with self._lock:
            unneeded = [file for file in self._workers if str(Path(file).resolve()) not in files]
            stopped = [self._workers.pop(file) for file in unneeded]
            self.unneeded += len(stopped)
        for worker in stopped:
            worker.stop()

    def close(self) -> None:
        with self._lock:
            left, self._workers = list(self._workers.values()), {}
        for worker in left:
            worker.stop()


def run_gate_job(job: GateJob, step_timeout: float = DEFAULT_STEP_TIMEOUT, on_message=lambda m: None,
                 keeper: FileWorker | None = None, stop=lambda: False):
    """Gate one substrate in a worker process. Returns a SubstrateReport, or raises BackendUnavailable.

    Without `keeper` the worker is a fresh one, stopped at the end. With it, the worker `keeper` holds for the
    substrate's file is used if there is one (else a fresh one), and a worker that ends ready for more is left
    in `keeper`. Once stop() is true (an interrupt) a kept worker found dead is not replaced by a fresh one.
    """
    from harness.backends import BackendUnavailable

    outcome: dict = {"checks": []}
    worker = keeper.ready_for(job.file) if keeper is not None else None
    first = None if worker is None else job
    worker = worker or start_worker()

    def handle(message) -> bool:
        outcome["heard"] = True
        on_message(message)
        kind = message[0]
        if kind == "checks":
            outcome["checks"] = [CheckResult(CheckName(c["check"]), CheckStatus(c["status"]), c["detail"])
                                 for c in message[1]]
        elif kind == "report":
            outcome["report"] = SubstrateReport.from_json(message[1])
        elif kind == "unavailable":
            outcome["unavailable"] = message[1]
        elif kind == "crash":
            outcome["crash"], outcome["out of device memory"] = message[1], message[2]
        elif kind == "partial":
            outcome["partial"] = message[1]
        elif kind == "ready":
            outcome["ready"] = True
        # Kept, the worker is heard to its ("ready",) or its exit; else the report ends it.
        return kind in ("ready", "unavailable") or (kind == "report" and keeper is None)

    kills_before = oom_kills()
    try:
        converse(_gate_in_worker, (job,), step_timeout, handle, worker=worker, keep=keeper is not None, first=first)
    except WorkerLost as lost:
        if "report" in outcome:
            return outcome["report"]  # it ended (or stuck) after its report rather than wait for more: not kept
        if first is not None and "heard" not in outcome and not stop():
            # The kept worker was gone before it took this substrate (killed while it waited): nothing of the
            # substrate's ran, so a fresh worker gates it, and the death is no verdict on it.
            return run_gate_job(job, step_timeout, on_message, keeper, stop)
        death, said = classify_death(lost, kills_before, oom_kills(), outcome.get("out of device memory", False))
        crash = f": {outcome['crash']}" if "crash" in outcome and death is not CheckName.FITS_HOST_MEMORY else ""
        why = f"{lost}{crash}{said}"
        if "partial" in outcome:
            return lost_mid_suite(SubstrateReport.from_json(outcome["partial"]), why, death)
        checks = outcome["checks"] + [CheckResult(death, CheckStatus.FAILED, why)]
        return SubstrateReport(name=job.name, file=job.file, checks=with_not_run(checks, f"not run: {why}"))
    if keeper is not None and outcome.get("ready"):
        keeper.hold(job.file, worker)
    else:
        worker.stop()
    if "unavailable" in outcome:
        raise BackendUnavailable(outcome["unavailable"])
    return outcome["report"]


def discover(files: list[Path], step_timeout: float = DEFAULT_STEP_TIMEOUT, kb_root: Path | None = None,
             on_first_message=lambda: None, cache_dir: Path | None = None, stop=lambda: False,
             foresee_outputs: bool = False):
    """Import every candidate file in a worker; returns ({file: [EntrySummary]}, {file: error}). Each problem's
    get_inputs() signature comes from the cache in `cache_dir` where it was built before (harness.compiler.cache),
    and so does the official output's on it, made only with `foresee_outputs` (for a GPU's float64 route).

    on_first_message() is called when the first worker first speaks: the fork server started (the first worker
    of a run starts it) and the worker forked. Once stop() is true (an interrupt) no fresh worker is started."""
    entries: dict[str, list[EntrySummary]] = {}
    errors: dict[str, str] = {}
    remaining = [str(f) for f in files]
    while remaining and not stop():
        current = {"file": remaining[0]}

        def handle(message) -> bool:
            on_first_message()
            kind = message[0]
            if kind == "step":
                current["file"] = message[1]
            elif kind == "entries":
                entries[message[1]] = message[2]
                remaining.remove(message[1])
            elif kind == "error":
                errors[message[1]] = message[2]
                remaining.remove(message[1])
            return not remaining

        try:
            converse(_discover_in_worker, (list(remaining), str(kb_root) if kb_root else None,
                                            str(cache_dir) if cache_dir else None, foresee_outputs), step_timeout,
                     handle)
        except WorkerLost as lost:
            if stop():
                break  # the interrupt ended the worker, not the file
            # The file being imported took the worker down; the others get a fresh worker.
            errors[current["file"]] = f"{current['file']}: importing it {lost}"
            remaining.remove(current["file"])
    return entries, errors
