"""Worker processes: every substrate is imported and gated in a fresh process with a time limit.

A fresh spawned process per substrate is what makes three guarantees hold: the import-safety
proof starts from a process with no CUDA state; a fault that poisons the CUDA context, a crash
or a hang takes down only that substrate; and the parent, which never touches CUDA, can always
kill a worker that stops making progress (a GPU without a watchdog runs a stuck kernel forever).

The worker reports over a pipe: ("step", what), ("plan", n_steps), ("device", text),
("checks", [...]) and finally ("report", {...}) or ("entries", ...) for discovery.
"""

from __future__ import annotations

import multiprocessing
import signal
from dataclasses import dataclass, field
from pathlib import Path

from harness.records import CheckName, CheckResult, CheckStatus, SubstrateReport, with_not_run

DEFAULT_STEP_TIMEOUT = 120.0
# Until a worker's first message it is starting Python and importing torch, which on a cold
# machine can take far longer than any step; a hang is only judged after that.
STARTUP_TIMEOUT = 300.0


@dataclass(frozen=True)
class GateJob:
    file: str
    name: str
    backend: str
    cache_dir: str | None = None
    problems_dir: str | None = None


@dataclass
class EntrySummary:
    """What discovery learns of one registered substrate without running it."""

    name: str
    file: str
    kb_file: str = ""
    kernel_name: str = ""
    source_sha256: str = ""
    problems: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- in the worker process


def _import_checks(path: Path, name: str):
    """Import and register the candidate, proving no CUDA work happens; returns (entry or None, checks)."""
    from harness.backends import cuda_activity
    from harness.candidates import CandidateError, import_candidate, make_entry, register_candidate

    checks = []
    before = cuda_activity()
    if before:
        raise RuntimeError(f"harness bug: the worker held CUDA state before importing the candidate ({before})")
    try:
        module = import_candidate(path)
        after_import = cuda_activity()
        registered = register_candidate(module, path)
        after_register = cuda_activity()
    except CandidateError as error:
        checks.append(CheckResult(CheckName.IMPORT_SAFE, CheckStatus.FAILED, str(error)))
        return None, checks
    if after_import:
        checks.append(CheckResult(CheckName.IMPORT_SAFE, CheckStatus.FAILED,
                                  f"{path.name}: importing the file did CUDA work: {after_import}"))
    elif after_register:
        checks.append(CheckResult(CheckName.IMPORT_SAFE, CheckStatus.FAILED,
                                  f"{path.name}: register() did CUDA work: {after_register}"))
    else:
        checks.append(CheckResult(CheckName.IMPORT_SAFE, CheckStatus.PASSED,
                                  "no CUDA context or torch.cuda state after import and register()"))
    if name not in registered:
        checks.append(CheckResult(CheckName.REGISTRATION, CheckStatus.FAILED,
                                  f"{path.name} registers {sorted(registered)}, not {name!r}"))
        return None, checks
    entry, problems = make_entry(name, registered[name], path)
    checks.append(CheckResult(CheckName.REGISTRATION, CheckStatus.FAILED if problems else CheckStatus.PASSED,
                              "; ".join(problems) or "the spec's seven keys, each of the right type"))
    return entry, checks


def _gate_in_worker(job: GateJob, conn) -> None:
    import torch  # noqa: F401  (imported before the first message: start-up, not the candidate's import)

    from harness.backends import BackendUnavailable, create_backend
    from harness.pipeline import count_cases, gate_entry
    from harness.problems import PROBLEMS_DIR

    path = Path(job.file)
    conn.send(("step", "import"))
    entry, checks = _import_checks(path, job.name)
    conn.send(("checks", [c.to_json() for c in checks]))
    if entry is None or any(c.status is CheckStatus.FAILED for c in checks):
        report = SubstrateReport(name=job.name, file=job.file, checks=checks)
        if entry is not None:
            report.kb_file, report.source_sha256 = entry.kb_file, entry.source_sha256()
        report.checks = with_not_run(checks, "not run: the candidate did not import and register cleanly")
        conn.send(("report", report.to_json()))
        return
    conn.send(("plan", count_cases(entry) + 1))
    try:
        backend = create_backend(job.backend, cache_dir=Path(job.cache_dir) if job.cache_dir else None)
    except BackendUnavailable as error:
        conn.send(("unavailable", str(error)))
        return
    conn.send(("device", backend.describe_device()))
    report = gate_entry(entry, backend, checks, progress=lambda step: conn.send(("step", step)),
                        problems_dir=Path(job.problems_dir) if job.problems_dir else PROBLEMS_DIR)
    conn.send(("report", report.to_json()))


def _discover_in_worker(files: list[str], problems_dir: str | None, conn) -> None:
    from harness.candidates import CandidateError, import_candidate, make_entry, register_candidate
    from harness.problems import PROBLEMS_DIR

    for file in files:
        path = Path(file)
        conn.send(("step", file))
        try:
            registered = register_candidate(import_candidate(path), path)
        except CandidateError as error:
            conn.send(("error", file, str(error)))
            continue
        summaries = []
        for name, raw in registered.items():
            entry, problems = make_entry(name, raw, path)
            summary = EntrySummary(name=name, file=file, problems=problems)
            if entry is not None:
                summary.kb_file, summary.kernel_name = entry.kb_file, entry.kernel_name
                summary.source_sha256 = entry.source_sha256(Path(problems_dir) if problems_dir else PROBLEMS_DIR)
            summaries.append(summary)
        conn.send(("entries", file, summaries))


# ---------------------------------------------------------------- in the parent


class WorkerLost(Exception):
    """The worker stopped without a result: it died, or it made no progress in time."""


def _exit_description(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _converse(target, args, step_timeout: float, on_message):
    """Run `target(*args, conn)` in a spawned process; hand each message to on_message until it returns True.

    Raises WorkerLost naming the last step if the worker dies or is silent for step_timeout s.
    """
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=target, args=(*args, sender), daemon=True)
    process.start()
    sender.close()
    step, timeout = "start-up", max(step_timeout, STARTUP_TIMEOUT)
    try:
        while True:
            if not receiver.poll(timeout):
                raise WorkerLost(f"timed out after {timeout:g} s during {step} (the worker was killed)")
            timeout = step_timeout
            try:
                message = receiver.recv()
            except EOFError:
                process.join(10)
                raise WorkerLost(f"the worker process died during {step} ({_exit_description(process.exitcode)})")
            if message[0] == "step":
                step = message[1]
            if on_message(message):
                return
    finally:
        if process.is_alive():
            process.kill()
        process.join(10)
        receiver.close()


def run_gate_job(job: GateJob, step_timeout: float = DEFAULT_STEP_TIMEOUT, on_message=lambda m: None):
    """Gate one substrate in its own process. Returns a SubstrateReport, or raises BackendUnavailable."""
    from harness.backends import BackendUnavailable

    outcome: dict = {"checks": []}

    def handle(message) -> bool:
        on_message(message)
        kind = message[0]
        if kind == "checks":
            outcome["checks"] = [CheckResult(CheckName(c["check"]), CheckStatus(c["status"]), c["detail"])
                                 for c in message[1]]
        elif kind == "report":
            outcome["report"] = SubstrateReport.from_json(message[1])
        elif kind == "unavailable":
            outcome["unavailable"] = message[1]
        return kind in ("report", "unavailable")

    try:
        _converse(_gate_in_worker, (job,), step_timeout, handle)
    except WorkerLost as lost:
        checks = outcome["checks"] + [CheckResult(CheckName.RUNS_TO_COMPLETION, CheckStatus.FAILED, str(lost))]
        return SubstrateReport(name=job.name, file=job.file, checks=with_not_run(checks, f"not run: {lost}"))
    if "unavailable" in outcome:
        raise BackendUnavailable(outcome["unavailable"])
    return outcome["report"]


def discover(files: list[Path], step_timeout: float = DEFAULT_STEP_TIMEOUT, problems_dir: Path | None = None):
    """Import every candidate file in a worker; returns ({file: [EntrySummary]}, {file: error})."""
    entries: dict[str, list[EntrySummary]] = {}
    errors: dict[str, str] = {}
    remaining = [str(f) for f in files]
    while remaining:
        current = {"file": remaining[0]}

        def handle(message) -> bool:
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
            _converse(_discover_in_worker, (list(remaining), str(problems_dir) if problems_dir else None),
                      step_timeout, handle)
        except WorkerLost as lost:
            # The file being imported took the worker down; the others get a fresh worker.
            errors[current["file"]] = f"{current['file']}: importing it {lost}"
            remaining.remove(current["file"])
    return entries, errors
