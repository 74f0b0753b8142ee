"""compute-sanitizer as an oracle: memcheck, racecheck, synccheck and initcheck over each substrate's small cases.

A value check cannot see a race the scheduler happened not to expose, an out-of-bounds read that
found harmless bytes, or a barrier only part of a block reached. compute-sanitizer can. For each
tool, one process runs every substrate of the gate run (`sanitized_run`) under
`compute-sanitizer --tool TOOL --error-exitcode 9 --log-file LOG`; the tools run side by side.
Reports in the log are given to the substrate whose program (`<name>.cu`, with the line info every
kernel is compiled with) or kernel they name; reports about other code (torch's own kernels, host
API calls) are counted and set aside. A substrate whose kernel loses the CUDA context is finished
with what the log says of it, and a new process takes the substrates after it.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from harness.candidates import locate_line
from harness.gate.records import CheckName, CheckResult, CheckStatus
from harness.interrupt import descendants
from harness.oracles import last_line, program_env
from harness.processes import DEFAULT_STEP_TIMEOUT, exit_description

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
CHECK_OF_TOOL = {tool: CheckName(tool) for tool in TOOLS}  # each tool's check bears its name
FINDINGS_EXIT = 9
MAX_CASE_BYTES = 64 * 2**20  # a suite whose smallest trial is larger is left out (the probe stands for T0)
PROCESS_TIMEOUT = 300.0  # seconds one sanitized process may run, start-up included
# Seconds a sanitized process may go without a case done (its start-up, a kernel that hangs): the gate's
# default --timeout; a gate gives its own --timeout, but never less than MIN_STALL (a tool slows a kernel).
STALL_TIMEOUT = DEFAULT_STEP_TIMEOUT
MIN_STALL = 60.0
SHOWN_FINDINGS = 3
# A process started ahead (prestart) finds its backend, cache and watched process here, as JSON.
START_ENV = "HARNESS_SANITIZED_START"


def add_processes_argument(parser) -> None:
    """--sanitize-processes, as the gate and the campaign take it."""
    parser.add_argument("--sanitize-processes", type=int, default=1, metavar="N",
                        help="processes per tool, the substrates shared out among them: each pays the tool's "
                             "start-up and runs its share one after another (default: 1)")


def processes_problem(processes: int) -> str:
    """What is wrong with a --sanitize-processes value, or ""."""
    return "" if processes >= 1 else f"--sanitize-processes must be at least 1, not {processes}"


def find_sanitizer(path_env: str | None = None, cuda_home: str | None = None) -> Path | None:
    """compute-sanitizer from PATH, else the CUDA toolkit's folders ($CUDA_HOME, /usr/local/cuda, the newest
    /usr/local/cuda-*); None when there is none."""
    on_path = shutil.which("compute-sanitizer", path=path_env)
    if on_path:
        return Path(on_path)
    homes = [h for h in (cuda_home, os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")) if h]
    homes += ["/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for home in homes:
        for candidate in (Path(home) / "bin" / "compute-sanitizer",
                          Path(home) / "compute-sanitizer" / "compute-sanitizer"):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    return None


# ---------------------------------------------------------------- the log


@dataclass(frozen=True)
class Finding:
    """One report of one tool: its first line (the hazard), where in which program, and how many times."""

    tool: str
    hazard: str
    program: str = ""  # 'name.cu', from the line info
    line: int | None = None
    kernel: str = ""
    count: int = 1

    def describe(self, locate=None) -> str:
        at = f"{self.program}:{self.line}" if self.program and self.line else (self.kernel or "unknown code")
        there = locate(self.line) if locate and self.line else None
        return f"{self.tool}: {at}{f' ({there})' if there else ''}: {self.hazard}" + (
            f" [{self.count} times]" if self.count > 1 else "")


_PREFIX = "========="
_NOT_FINDINGS = re.compile(r"^(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Target application|"
                           r"Saved host backtrace|Host Frame|Device Frame|Program hit|This might|Error: process didn)")
_WHERE = re.compile(r"\bin (?:.*/)?([\w.+-]+\.cu):(\d+)(?::(\w+))?")  # 'in name.cu:23' or 'in name.cu:23:kernel(...)'
_KERNEL_AT = re.compile(r"\bat (?:0x[0-9a-f]+ in )?(\w+)\(")  # 'at kernel(float*)+0x1c0' / 'at 0x1c0 in kernel('
_HAZARDS = re.compile(r"\[(\d+) hazards?\]")


def parse_log(text: str, tool: str) -> tuple[list[Finding], int]:
    """The findings in a compute-sanitizer log, and how many of its blocks were host-side notes.

    A report is a block: a line '========= <what>' and the indented '=========     ...' lines under
    it. Summaries, host backtraces and host API errors ('Program hit ...') are not kernel findings.
    """
    blocks: list[list[str]] = []
    for raw in text.splitlines():
        if not raw.startswith(_PREFIX):
            continue
        body = raw[len(_PREFIX):]
        if not body.strip():
            continue
        if body.startswith("  ") and blocks:
            blocks[-1].append(body.strip())
        else:
            blocks.append([body.strip()])
    findings, host_notes = [], 0
    for block in blocks:
        head = re.sub(r"^(Error|ERROR|Warning|WARNING):\s*", "", block[0])
        if _NOT_FINDINGS.match(head):
            host_notes += head.startswith("Program hit")
            continue
        text_of_block = " ".join(block)
        where = _WHERE.search(text_of_block)
        kernel = (where.group(3) if where and where.group(3) else "") or next(
            (m.group(1) for m in _KERNEL_AT.finditer(text_of_block)), "")
        hazards = _HAZARDS.search(text_of_block)
        findings.append(Finding(tool, re.sub(r"\s*\[\d+ hazards?\]", "", " ".join([head] + block[1:2])).strip(),
                                where.group(1) if where else "", int(where.group(2)) if where else None, kernel,
                                int(hazards.group(1)) if hazards else 1))
    return _merge(findings), host_notes


def _merge(findings: list[Finding]) -> list[Finding]:
    """The same hazard at the same line, reported by many threads or blocks, counted once."""
    merged: dict[tuple, Finding] = {}
    for f in findings:
        key = (f.tool, f.program, f.line, f.kernel, re.sub(r"0x[0-9a-f]+|\(\d+,\d+,\d+\)", "#", f.hazard))
        if key in merged:
            old = merged[key]
            merged[key] = Finding(old.tool, old.hazard, old.program, old.line, old.kernel, old.count + f.count)
        else:
            merged[key] = f
    return list(merged.values())


# ---------------------------------------------------------------- running the tools


@dataclass
class SanitizerTarget:
    """One substrate to run under the tools: as registered, or (a campaign's mutant) with other CUDA source."""

    file: str
    name: str  # as registered
    kernel_name: str
    t0_bytes: int = 0
    cuda: str = ""  # its CUDA source, to say which line a report names
    label: str = ""  # the program's name and the key of its results, when not `name` (a mutant's)
    replaces_cuda: bool = False  # run `cuda` instead of the registered source
    kb_root: str = ""  # where the official problem lives, for an entry that reads the Model's state (model_state)
    # Run only once the gate's own verdict on it is known, and only if it admitted it (write_verdict): a gate of
    # new candidates, most of them broken, spends no tool's time (nor, on a kernel that faults, the tool's start
    # again) on a substrate already rejected, whose verdict no finding could change.
    awaits_verdict: bool = False

    @property
    def key(self) -> str:
        return self.label or self.name


def _verdict_file(verdicts: Path, key: str) -> Path:
    return verdicts / hashlib.sha256(key.encode()).hexdigest()[:32]


def write_verdict(verdicts: Path, key: str, skip_why: str = "") -> None:
    """Tell the sanitized programs what the gate decided of an awaited target: run it (no `skip_why`), or not,
    and why. Written whole, by rename: a program polling for it reads it the moment it exists."""
    path = _verdict_file(verdicts, key)
    partial = path.with_suffix(".tmp")
    try:
        partial.write_text(f"skip: {skip_why}" if skip_why else "go")
        os.replace(partial, path)
    except FileNotFoundError:
        pass  # the folder goes once the tools' run has ended (an interrupt's kill, say): no program waits any more


def read_verdict(verdicts: Path, key: str) -> str | None:
    """"go", "skip: why", or None while the gate has not decided."""
    try:
        return _verdict_file(verdicts, key).read_text()
    except FileNotFoundError:
        return None


@dataclass
class ToolRun:
    """What one tool found over the targets: per substrate, its findings, cases and notes."""

    tool: str
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    cases: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # a substrate that could not be set up, or was lost
    skipped: dict[str, str] = field(default_factory=dict)  # a substrate the tool could find nothing in, and why
    not_run: dict[str, str] = field(default_factory=dict)
    elsewhere: int = 0  # reports about code that is no substrate's
    seconds: float = 0.0
    substrate_seconds: dict[str, float] = field(default_factory=dict)  # start to done, under the tool
    load_seconds: dict[str, float] = field(default_factory=dict)  # of those, importing and loading its kernel
    # From starting compute-sanitizer to the sanitized program's first substrate (the tool's start, Python's
    # imports, the CUDA context under the tool), summed over the processes one after another.
    start_seconds: float = 0.0
    started_ahead: bool = False  # its first process started before the substrates were known (prestart)

    def timing(self) -> str:
        """`memcheck 12.1 s (start 3.0 s, loading 5.2 s, cases 3.6 s; slowest pad_const_b8 1.9 s)`: where a tool's
        time went."""
        slowest = max(self.substrate_seconds.items(), key=lambda item: item[1], default=None)
        if not slowest:
            return f"{self.tool} {self.seconds:.1f} s"
        loading = sum(self.load_seconds.values())
        cases = sum(self.substrate_seconds.values()) - loading
        ahead = ", ahead" if self.started_ahead else ""
        return (f"{self.tool} {self.seconds:.1f} s (start {self.start_seconds:.1f} s{ahead}, loading {loading:.1f} s, "
                f"cases {cases:.1f} s; slowest {slowest[0]} {slowest[1]:.1f} s)")


def merged(tool: str, runs: list[ToolRun]) -> ToolRun:
    """One tool's runs over disjoint shares of the targets, as one run: its time is the longest share's."""
    whole = ToolRun(tool)
    for run in runs:
        for name, found in run.findings.items():
            whole.findings.setdefault(name, []).extend(found)
        whole.cases.update(run.cases)
        whole.notes.update(run.notes)
        whole.errors.update(run.errors)
        whole.skipped.update(run.skipped)
        whole.not_run.update(run.not_run)
        whole.elsewhere += run.elsewhere
        whole.seconds = max(whole.seconds, run.seconds)
        whole.substrate_seconds.update(run.substrate_seconds)
        whole.load_seconds.update(run.load_seconds)
        whole.start_seconds = max(whole.start_seconds, run.start_seconds)  # the shares start side by side
        whole.started_ahead = whole.started_ahead or run.started_ahead
    return whole


def shares(targets: list, processes: int, key=lambda target: getattr(target, "name", target)) -> list[list]:
    """The targets dealt out to at most `processes` processes (their order kept in each), none empty: each run of
    targets of one substrate (`key`; a campaign's survivors follow their unmutated kernel) as blocks of at most an
    even share, each block to the process with the fewest targets so far. A process then builds a substrate's cases
    once a block (harness.oracles.sanitized_run.Prepared); targets of substrates all their own are dealt in turn."""
    count = max(1, min(processes, len(targets)))
    most = -(-len(targets) // count)
    blocks: list[list] = []
    for target in targets:
        if blocks and key(blocks[-1][-1]) == key(target) and len(blocks[-1]) < most:
            blocks[-1].append(target)
        else:
            blocks.append([target])
    dealt: list[list] = [[] for _ in range(count)]
    for block in blocks:
        min(dealt, key=len).extend(block)
    return dealt


def _owner(finding: Finding, targets: list[SanitizerTarget]) -> str | None:
    if finding.program:
        for t in targets:
            if finding.program == f"{t.key}.cu":
                return t.key
    by_kernel = [t.key for t in targets if finding.kernel and finding.kernel == t.kernel_name]
    return by_kernel[0] if len(by_kernel) == 1 else None


def process_tree(pid: int) -> list[int]:
    """`pid` and every (live) process below it, from /proc (Linux, where the tools run); [pid] without /proc."""
    return [pid, *descendants(pid)]


def run_watched(command: list[str], env: dict, output: Path, events: Path, timeout: float,
                 stall: float) -> tuple[int | None, str]:
    """watch() over `command`, started now with its output to `output`."""
    return watch(_spawn(command, env, output), events, timeout, stall)


def _spawn(command: list[str], env: dict, output: Path) -> subprocess.Popen:
    with open(output, "w") as sink:
        return subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)


def _last_event(events: Path, seen: int) -> tuple[int, str | None]:
    """(the events file's size, the kind of the last whole event written past `seen` bytes, or None)."""
    try:
        with open(events, "rb") as stream:
            stream.seek(seen)
            added = stream.read()
    except FileNotFoundError:
        return seen, None
    last = None
    for line in added.decode(errors="replace").splitlines():
        try:
            last = json.loads(line).get("event", last)
        except json.JSONDecodeError:
            pass
    return seen + len(added), last


def watch(process: subprocess.Popen, events: Path, timeout: float, stall: float) -> tuple[int | None, str]:
    """Wait for a sanitized program until it exits (its status, ""), or end it with everything it started
    (None, why): past `timeout` in all, or `stall` seconds without a new event in `events` (a hung kernel
    is found after `stall` s, not the process's `timeout`). Time the program spends waiting for the gate's
    verdict on a target (its last event `waiting`) counts towards neither. The tool stays in the gate's process
    group, so Ctrl-C still reaches it and its program."""
    began = progressed = tick = time.monotonic()
    seen, waiting = 0, False
    while True:
        try:
            return process.wait(timeout=0.25), ""
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if waiting:  # the gate's own work, not the tool's: the clocks stand still
            began, progressed = began + (now - tick), now
        tick = now
        size, last = _last_event(events, seen)
        if size != seen:
            seen, progressed = size, now
            waiting = last == "waiting" if last is not None else waiting
        why = (f"after {timeout:g} s" if now - began > timeout else
               f"with no case done for {stall:g} s" if now - progressed > stall else "")
        if why:  # the tool's program too: killed with the tool alone, a hung kernel would hold the GPU
            _kill_tree(process)
            return None, why


def _kill_tree(process: subprocess.Popen) -> None:
    for pid in process_tree(process.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def _attempt_files(work: Path, attempt: int) -> tuple[Path, Path, Path, Path]:
    """An attempt's plan, events, the tool's log and the program's output."""
    return tuple(work / f"{kind}-{attempt}{ext}" for kind, ext in
                 (("plan", ".json"), ("events", ".jsonl"), ("log", ".txt"), ("output", ".txt")))


def _command(sanitizer: Path, tool: str, plan: Path, events: Path, log: Path) -> list[str]:
    return [str(sanitizer), "--tool", tool, "--error-exitcode", str(FINDINGS_EXIT), "--print-limit", "1000",
            "--log-file", str(log), sys.executable, "-m", "harness.oracles.sanitized_run", str(plan), str(events)]


def _program_env(**extra: str) -> dict:
    # No caching allocator: every tensor is an allocation of its own, as memcheck needs to see an overrun.
    return program_env(PYTORCH_NO_CUDA_MEMORY_CACHING="1", PYTHONUNBUFFERED="1", **extra)


@dataclass
class Prestarted:
    """A tool's first process, started before its substrates are known: the tool's start, Python's imports and
    the CUDA context under the tool (3 to 5 s on the H200) are paid beside the gate's discovery of the candidates.
    It waits for its plan (START_ENV) and is then watched like any other."""

    process: subprocess.Popen
    work: Path
    launched: float  # wall clock, as the program's `ready` event


def prestart(tools: tuple[str, ...], sanitizer: Path, backend: str = "cuda", cache_dir: str | None = None,
             processes: int = 1) -> dict[str, list[Prestarted]]:
    """`processes` waiting processes per tool; each is used by sanitize(), or ended by discard()."""
    start = json.dumps({"backend": backend, "cache_dir": cache_dir, "watch_pid": os.getpid()})
    started: dict[str, list[Prestarted]] = {}
    for tool in tools:
        for _ in range(processes):
            work = Path(tempfile.mkdtemp(prefix=f"sanitize-{tool}-"))
            plan, events, log, printed = _attempt_files(work, 1)
            launched = time.time()
            process = _spawn(_command(sanitizer, tool, plan, events, log), _program_env(**{START_ENV: start}),
                             printed)
            started.setdefault(tool, []).append(Prestarted(process, work, launched))
    return started


def discard(prestarted: dict[str, list[Prestarted]]) -> None:
    """End the started-ahead processes still running once the tools are done: those no tool run took (a gate with
    nothing to sanitize, or fewer shares than processes)."""
    for waiting in prestarted.values():
        for early in waiting:
            if early.process.poll() is None:
                _kill_tree(early.process)


def run_tool(tool: str, targets: list[SanitizerTarget], sanitizer: Path, backend: str = "cuda",
             cache_dir: str | None = None, timeout: float = PROCESS_TIMEOUT, work_dir: Path | None = None,
             stall: float = STALL_TIMEOUT, prestarted: Prestarted | None = None,
             verdicts: Path | None = None) -> ToolRun:
    """Every target under one tool, in as few processes as the kernels allow; the first is `prestarted` when
    given. A target that awaits its verdict waits for it in `verdicts` (write_verdict)."""
    started = time.perf_counter()
    result = ToolRun(tool, started_ahead=prestarted is not None)
    remaining = list(targets)
    work = prestarted.work if prestarted else Path(work_dir or tempfile.mkdtemp(prefix=f"sanitize-{tool}-"))
    attempt = 0
    while remaining:
        attempt += 1
        plan, events, log, printed = _attempt_files(work, attempt)
        listed = [{"file": t.file, "name": t.name, "label": t.key, "cuda": t.cuda if t.replaces_cuda else None,
                   "t0_bytes": t.t0_bytes, "max_bytes": MAX_CASE_BYTES, "kb_root": t.kb_root,
                   "await": bool(t.awaits_verdict and verdicts)} for t in remaining]
        # Written whole and renamed: a program started ahead reads it the moment it exists.
        unrenamed = plan.with_suffix(".tmp")
        unrenamed.write_text(json.dumps({"backend": backend, "cache_dir": cache_dir, "watch_pid": os.getpid(),
                                         "tool": tool, "targets": listed,
                                         "verdicts": str(verdicts) if verdicts else None}))
        os.replace(unrenamed, plan)
        if attempt == 1 and prestarted:
            process, launched = prestarted.process, prestarted.launched
        else:
            launched = time.time()  # wall clock: the sanitized program reports when it is ready in the same terms
            process = _spawn(_command(sanitizer, tool, plan, events, log), _program_env(), printed)
        status, ended = watch(process, events, timeout, stall)
        output = printed.read_text(errors="replace")
        started_names, done = [], set()
        for line in (events.read_text().splitlines() if events.exists() else []):
            record = json.loads(line)
            name = record.get("substrate", "")
            if record["event"] == "ready":
                result.start_seconds += max(0.0, record["wall"] - launched)
            elif record["event"] == "start":
                started_names.append(name)
            elif record["event"] == "done":
                done.add(name)
                result.cases[name], result.notes[name] = record["cases"], record["notes"]
                if "seconds" in record:
                    result.substrate_seconds[name] = record["seconds"]
                    result.load_seconds[name] = record.get("load_seconds", 0.0)
                if record.get("error"):
                    result.errors[name] = f"could not be set up under {tool}: {record['error']}"
                if record.get("skipped"):
                    result.skipped[name] = record["skipped"]
            elif record["event"] == "lost":
                done.add(name)
                result.errors[name] = (f"{record['where']}: the kernel broke the CUDA context under {tool} "
                                       f"({record['error']})")
        findings, _host = parse_log(log.read_text(errors="replace") if log.exists() else "", tool)
        for finding in findings:
            owner = _owner(finding, remaining)
            if owner is None:
                result.elsewhere += 1
            else:
                result.findings.setdefault(owner, []).append(finding)
        unfinished = [n for n in started_names if n not in done]
        if unfinished:  # the process died or hung inside this substrate
            why = (f"timed out under {tool} {ended}" if ended else
                   f"the sanitized process died ({exit_description(status)}): {last_line(output)}")
            result.not_run[unfinished[-1]] = why
            done.add(unfinished[-1])
        if not started_names:  # nothing started: the tool or the process could not run at all
            why = (f"timed out under {tool} {ended}" if ended else
                   f"compute-sanitizer --tool {tool} did not run the program "
                   f"({exit_description(status)}): "
                   f"{last_line(output)}")
            for t in remaining:
                result.not_run[t.key] = why
            break
        remaining = [t for t in remaining if t.key not in done]
    result.seconds = time.perf_counter() - started
    return result


def checks_for(target: SanitizerTarget, run: ToolRun, locate=None) -> CheckResult:
    """The check of one tool for one substrate."""
    check, name = CHECK_OF_TOOL[run.tool], target.key
    findings = run.findings.get(name, [])
    if findings:
        shown = "; ".join(f.describe(locate) for f in findings[:SHOWN_FINDINGS])
        more = f" (and {len(findings) - SHOWN_FINDINGS} more)" if len(findings) > SHOWN_FINDINGS else ""
        return CheckResult(check, CheckStatus.FAILED, f"{len(findings)} report(s): {shown}{more}")
    if name in run.errors:
        return CheckResult(check, CheckStatus.FAILED if "broke the CUDA context" in run.errors[name]
                           else CheckStatus.NOT_RUN, run.errors[name])
    if name in run.not_run:
        return CheckResult(check, CheckStatus.NOT_RUN, f"not run: {run.not_run[name]}")
    if name in run.skipped:
        return CheckResult(check, CheckStatus.SKIPPED, f"skipped: {run.skipped[name]}")
    cases = run.cases.get(name, [])
    if not cases:
        return CheckResult(check, CheckStatus.NOT_RUN, "not run: no case could be launched" + "".join(
            f"; {n}" for n in run.notes.get(name, [])))
    note = f"no reports over {len(cases)} launches ({', '.join(cases)})"
    note += "".join(f"; {n}" for n in run.notes.get(name, []))
    if run.elsewhere:
        note += f"; {run.elsewhere} report(s) of this run about code that is no substrate's kernel set aside"
    return CheckResult(check, CheckStatus.PASSED, note)


def cuda_line_locator(cuda: str, locate_text):
    """line -> 'candidate.py:N' for a line of the CUDA source, where the candidate file holds it once."""
    lines = cuda.splitlines()

    def locate(line: int) -> str | None:
        return locate_text(lines[line - 1]) if 0 < line <= len(lines) and lines[line - 1].strip() else None

    return locate


def sanitize_found_here(targets: list[SanitizerTarget], tools: tuple[str, ...], sanitizer: Path | None,
                        backend: str = "cuda", cache_dir: str | None = None,
                        timeout: float = PROCESS_TIMEOUT, stall: float = STALL_TIMEOUT,
                        processes: int = 1) -> dict[str, list[CheckResult]]:
    """sanitize() with the tool found on this host when none is named (a cluster's item: the client's host may
    have none); where none is found, every check says so, not run."""
    sanitizer = sanitizer or find_sanitizer()
    if sanitizer is None:
        return {target.key: skipped(tools, "compute-sanitizer not found on the cluster's host "
                                           "(PATH, $CUDA_HOME, /usr/local/cuda*)") for target in targets}
    return sanitize(targets, tools, sanitizer, backend, cache_dir, timeout, stall, processes)


def sanitize(targets: list[SanitizerTarget], tools: tuple[str, ...], sanitizer: Path, backend: str = "cuda",
             cache_dir: str | None = None, timeout: float = PROCESS_TIMEOUT,
             stall: float = STALL_TIMEOUT, processes: int = 1,
             timings: list[str] | None = None,
             prestarted: dict[str, list[Prestarted]] | None = None,
             verdicts: Path | None = None) -> dict[str, list[CheckResult]]:
    """Every tool over every target, the tools side by side, each over `processes` processes that share the
    targets out (a process pays the tool's start-up, and runs its targets one after another): per substrate,
    one check per tool. `timings`, when given, gets each tool's ToolRun.timing(). `prestarted` (from prestart(),
    with the same backend and cache): each share's first process, where there is one; those left are discarded.
    `verdicts`: where the gate writes its verdicts on the targets that await them (write_verdict); a target the
    gate rejected is not run, and its checks say so (skipped)."""
    parts = shares(targets, processes)
    waiting = prestarted or {}

    def first_process(tool: str, share: int) -> Prestarted | None:
        ahead = waiting.get(tool, [])
        return ahead[share] if share < len(ahead) else None

    try:
        with ThreadPoolExecutor(max_workers=len(tools) * len(parts) or 1) as pool:
            pending = {tool: [pool.submit(run_tool, tool, part, sanitizer, backend, cache_dir, timeout, stall=stall,
                                          prestarted=first_process(tool, i), verdicts=verdicts)
                              for i, part in enumerate(parts)] for tool in tools}
            runs = [merged(tool, [f.result() for f in futures]) for tool, futures in pending.items()]
    finally:
        discard(waiting)
    if timings is not None:
        timings.extend(run.timing() for run in runs)
    results: dict[str, list[CheckResult]] = {}
    for target in targets:
        locate = None
        if target.cuda:
            locate = cuda_line_locator(target.cuda, lambda text, file=target.file: locate_line(Path(file), text))
        results[target.key] = [checks_for(target, run, locate) for run in runs]
    return results


def skipped(tools: tuple[str, ...], why: str) -> list[CheckResult]:
    """The checks of tools that are not run here, each saying why."""
    return [CheckResult(CHECK_OF_TOOL[t], CheckStatus.SKIPPED, f"skipped: {why}") for t in tools]
