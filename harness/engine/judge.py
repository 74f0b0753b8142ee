"""A campaign's survivors judged again by oracles that see more than the suites' values.

A mutant that every value suite lets through may still race, overrun a buffer into harmless bytes
or leave a barrier half-reached (the sanitizers oracle: each survivor, and first its unmutated
substrate, under compute-sanitizer's tools on the substrate's small cases, harness.oracles.sanitizer),
or narrow an index that only an input of more than 2^31 elements overflows (the large-index
oracle: LARGE_TRIALS, each tiled past MIN_LARGE_ELEMENTS, harness.oracles.large_index_run). An oracle
judges a substrate's mutants only if the unmutated substrate passes it. Every value survivor is
judged by every chosen oracle, and the first in ORACLES order that kills it is named. Judgements
are stored beside the value results, under the mutant's id and the oracle's name (`oracle_key`),
so a resumed campaign judges only what is not stored, and a report still knows what the value
suites alone decided.
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from harness.engine.store import ResultKey, ResultStore
from harness.interrupt import kill_descendants
from harness.gate.records import CheckStatus
from harness.oracles import last_line, program_env
from harness.oracles import sanitizer as sanitizer_tools
from harness.oracles.sanitizer import SanitizerTarget, sanitize

VALUES = "values"
SANITIZERS = "sanitizers"
LARGE_INDEX = "large-index"
ORACLES = (VALUES, SANITIZERS, LARGE_INDEX)  # a kill is credited to the first of these that makes it
MIN_LARGE_ELEMENTS = 2**31 + 2**20  # past int's range, within the contract's u32 counts
MAX_LARGE_ELEMENTS = 2**32 - 1  # the contract's counts are u32
LARGE_TIMEOUT = 600.0  # seconds one large-index process may run
# The large trials, in turn: (what is tiled, along which axis, to what size); what survives one goes to the next.
# The last gives a kernel the most threads the u32 counts allow: a thread index computed in 32 bits wraps only in
# a grid of more than 2^32 threads, which a block size that does not divide 2^32 gives there and nowhere below.
LARGE_TRIALS = (("t0", 0, "least"), ("t0", -1, "least"), ("lowest-rank", 0, "least"), ("lowest-rank", 0, "largest"))
TRIAL_WORDS = {"t0": "T0 trial 0", "lowest-rank": "the suites' lowest-rank trial"}
# Substrates judged on their large trials at once: a trial of 2^31 float32 elements takes about 32 GiB of the device
# (its input and three outputs' worth: large_index_run.needed_bytes), an H200 has 139; one the memory falls short of
# beside the others is judged again alone. Its speed against 1 is not measured yet.
LARGE_AT_ONCE = 3
HANG_FLOOR_SECONDS, HANG_FACTOR = 10.0, 50.0  # a mutant past both (x the unmutated kernel's time) is hung


def oracle_key(source_sha256: str, backend: str, mutant_id: str, oracle: str) -> ResultKey:
    return ResultKey(source_sha256, backend, f"{mutant_id}|{oracle}")


def program_label(mutant_id: str) -> str:
    """A mutant's program name under the tools: its id with what a file name should not hold replaced."""
    return re.sub(r"[^\w.+-]", "_", mutant_id)


@dataclass(frozen=True)
class Survivor:
    """A mutant the value suites let through, with what it runs."""

    substrate: str
    file: str
    kernel_name: str
    t0_bytes: int
    source_sha256: str
    mutant_id: str
    source: str  # the mutated CUDA source
    # The sources of the batch the campaign compiled it in (the plan's fixed batches; empty where none), and its
    # place there: the large-index program finds that program in the compile cache rather than compiling it alone.
    batch: tuple[str, ...] = ()
    index: int = 0


@dataclass(frozen=True)
class Unmutated:
    substrate: str
    file: str
    kernel_name: str
    t0_bytes: int
    source: str


def judge_with_sanitizers(unmutated: list[Unmutated], survivors: list[Survivor], store: ResultStore, backend: str,
                          tools: tuple[str, ...], sanitizer, cache_dir: str | None = None,
                          processes: int = 1, kb_root: str | None = None,
                          stop: threading.Event | None = None) -> dict[str, str]:
    """Run the tools over the survivors (and their unmutated substrates) and store a judgement per survivor.

    Returns, per substrate, why a tool could not judge its mutants (the unmutated substrate fails it), if so. Once
    `stop` is set (the campaign interrupted, its processes killed) nothing is stored: the tools' findings may be their
    deaths'.
    """
    targets = [SanitizerTarget(u.file, u.substrate, u.kernel_name, u.t0_bytes, u.source, kb_root=kb_root or "")
               for u in unmutated]
    targets += [SanitizerTarget(s.file, s.substrate, s.kernel_name, s.t0_bytes, s.source, kb_root=kb_root or "",
                                label=program_label(s.mutant_id), replaces_cuda=True) for s in survivors]
    checks = sanitize(targets, tools, sanitizer, backend, cache_dir, processes=processes)
    if stop is not None and stop.is_set():
        return {}
    unusable: dict[str, str] = {}
    judging: dict[str, set[str]] = {}
    for u in unmutated:
        passed = {c.check.value for c in checks.get(u.substrate, []) if c.status is CheckStatus.PASSED}
        judging[u.substrate] = passed
        # A tool skipped (racecheck of a kernel without shared memory) has nothing to judge: it is no refusal.
        refused = [f"{c.check.value} ({c.detail})" for c in checks.get(u.substrate, [])
                   if c.status not in (CheckStatus.PASSED, CheckStatus.SKIPPED)]
        if refused:
            unusable[u.substrate] = "the unmutated substrate does not pass " + "; ".join(refused)
    for s in survivors:
        results = checks.get(program_label(s.mutant_id), [])
        killed = [c for c in results if c.check.value in judging.get(s.substrate, set())
                  and c.status is CheckStatus.FAILED]
        record = {"oracle": SANITIZERS, "killed_by": killed[0].check.value if killed else "",
                  "killer": f"{killed[0].check.value} (compute-sanitizer)" if killed else "",
                  "detail": killed[0].detail if killed else "; ".join(
                      f"{c.check.value}: {c.status.value}" for c in results),
                  "tools": {c.check.value: c.status.value for c in results},
                  "judged_by": sorted(judging.get(s.substrate, set()))}
        store.put(oracle_key(s.source_sha256, backend, s.mutant_id, SANITIZERS), record)
    return unusable


@dataclass(frozen=True)
class LargeSettings:
    """How the large-index trials run: what the program reads (the campaign's compile cache, KernelBench checkout),
    their sizes, limits and checking, and how many substrates' processes run at once."""

    kb_root: str | None = None
    cache_dir: str | None = None
    min_elements: int = MIN_LARGE_ELEMENTS
    max_elements: int = MAX_LARGE_ELEMENTS
    timeout: float = LARGE_TIMEOUT
    hang_floor: float = HANG_FLOOR_SECONDS
    check_addresses: bool = False
    at_once: int = 1
    # Set when the campaign is interrupted: no trial or process is started after it, and nothing is stored that a
    # killed process may have decided.
    stop: threading.Event = field(default_factory=threading.Event, compare=False)


@dataclass
class TrialRun:
    """One large trial over some kernels, in one or more processes: {key: (killed, detail)}, the trial's
    description, why none ran ("" when they did; None for a trial along an axis already run), and whether the
    device's memory fell short of it (a trial skipped or a launch refused for it). The processes and their time are
    the substrate's (_Progress)."""

    results: dict
    trial: str
    why: str | None
    short_of_memory: bool = False


@dataclass
class SubstrateJudged:
    """One substrate's survivors through its large trials: what they judged, and what that took."""

    judged: dict = field(default_factory=dict)   # mutant id: (killed, detail, the trial)
    trials: list = field(default_factory=list)   # the trials run
    why_not: list = field(default_factory=list)  # why a trial judged nothing
    processes: int = 0
    short_of_memory: bool = False
    seconds: float = 0.0
    parts: dict = field(default_factory=dict)    # seconds: building the trials, compiling, loading, running, checking

    def killed(self) -> int:
        return sum(1 for killed, _detail, _trial in self.judged.values() if killed)

    def describe(self) -> str:
        """`N survivor(s) judged, K killed, in S s, P process(es) (building the trials 1.2 s, ...)`."""
        parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.parts.items())
        return (f"{len(self.judged)} survivor(s) judged, {self.killed()} killed, in {self.seconds:.1f} s, "
                f"{self.processes} process(es)" + (f" ({parts})" if parts else ""))


def judge_on_large_trial(unmutated: list[Unmutated], survivors: list[Survivor], store: ResultStore, backend: str,
                         settings: LargeSettings = LargeSettings(),
                         on_substrate=lambda name, outcome: None) -> dict[str, str]:
    """Each substrate's survivors on its large trials, stored as judged; returns, per substrate, why a trial could
    not judge them (the device's memory, the unmutated kernel failing it), if so. `on_substrate` hears each
    substrate's SubstrateJudged as it is done (minutes each at 2^31 elements): survivors judged and killed, the
    processes that built a trial for them, and where the time went.

    `settings.check_addresses` (cuda): the kernels run address-checked, so a fault that would have ended the process
    is foreseen and the next survivor runs on the trial already built. `settings.at_once` substrates run side by
    side; one the device's memory fell short of beside the others is judged again alone afterwards, so that running
    them together changes no verdict.

    LARGE_TRIALS in turn, what survives one going to the next: T0 trial 0 tiled along axis 0, along the last axis,
    then the suites' lowest-rank trial tiled (one long axis: a coordinate past 2^31, which T0's shape spreads over
    axes that each stay short), then that trial cut to the largest legal count."""
    work = [(u, mine) for u in unmutated if (mine := [s for s in survivors if s.substrate == u.substrate])]
    notes: dict[str, str] = {}

    def conclude(u: Unmutated, mine: list[Survivor], outcome: SubstrateJudged) -> None:
        if settings.stop.is_set():
            return
        if outcome.why_not:
            notes[u.substrate] = "; ".join(outcome.why_not)
        _store_judged(mine, outcome, store, backend)
        on_substrate(u.substrate, outcome)

    alone = []
    with ThreadPoolExecutor(max_workers=max(1, settings.at_once)) as pool:
        running = {pool.submit(_judge_substrate, u, mine, backend, settings): (u, mine) for u, mine in work}
        for done in as_completed(running):
            outcome = done.result()
            if outcome.short_of_memory and settings.at_once > 1:
                alone.append(running[done])
            else:
                conclude(*running[done], outcome)
    for u, mine in sorted(alone, key=lambda item: unmutated.index(item[0])):
        if not settings.stop.is_set():
            conclude(u, mine, _judge_substrate(u, mine, backend, settings))
    return {u.substrate: notes[u.substrate] for u in unmutated if u.substrate in notes}


def _judge_substrate(u: Unmutated, mine: list[Survivor], backend: str, settings: LargeSettings) -> SubstrateJudged:
    """One substrate's survivors through LARGE_TRIALS, what survives one going to the next; nothing stored."""
    started = time.perf_counter()
    progress = _drive_processes(u, mine, backend, settings)
    outcome = SubstrateJudged(processes=progress.processes, parts=progress.parts)
    for (source, axis, size), run in zip(LARGE_TRIALS, progress.runs):
        outcome.short_of_memory |= run.short_of_memory
        base = run.results.get(u.substrate)
        if run.why is None or not (run.why or run.trial or run.results):  # redundant, or never reached
            continue
        if run.why or base is None or base[0]:
            outcome.why_not.append(f"{TRIAL_WORDS[source]} along axis {axis}"
                                   + (" at the largest legal count" if size == "largest" else "") + ": "
                                   + (run.why or ("the unmutated substrate fails its large trial: "
                                                  + (base[1] if base else "it did not run"))))
            continue
        outcome.trials.append(run.trial)
        for s in mine:
            found = run.results.get(program_label(s.mutant_id))
            if found is not None and not outcome.judged.get(s.mutant_id, (False,))[0]:  # None: not judged here
                outcome.judged[s.mutant_id] = (found[0], found[1], run.trial)
    outcome.seconds = time.perf_counter() - started
    return outcome


def compiled_batches(u: Unmutated, survivors: list[Survivor]) -> list[dict]:
    """The NVRTC programs the campaign compiled `survivors` in, once each, and the unmutated source's (a batch of
    one), as the large-index program compiles them: the same program name and sources, so the compile cache has
    them; {"program", "sources", "members": {kernel key: its place}}. A survivor with no batch is compiled alone."""
    found: dict[tuple[str, ...], dict] = {}
    for key, batch, index in [(u.substrate, (u.source,), 0)] + [(program_label(s.mutant_id), s.batch, s.index)
                                                                  for s in survivors if s.batch]:
        found.setdefault(batch, {"program": f"{u.substrate}.cu", "sources": list(batch), "members": {}})
        found[batch]["members"][key] = index
    return list(found.values())


def _store_judged(mine: list[Survivor], outcome: SubstrateJudged, store: ResultStore, backend: str) -> None:
    for s in mine:
        if s.mutant_id not in outcome.judged:
            continue
        killed, detail, trial = outcome.judged[s.mutant_id]
        store.put(oracle_key(s.source_sha256, backend, s.mutant_id, LARGE_INDEX),
                  {"oracle": LARGE_INDEX, "killed_by": LARGE_INDEX if killed else "",
                   "killer": f"the large-index trial ({trial})" if killed else "", "detail": detail,
                   "trial": trial if killed else "; ".join(outcome.trials)})


def hang_limit(unmutated_seconds: float, floor: float = HANG_FLOOR_SECONDS) -> float:
    """How long a mutant may run on the large trial before it counts as hung (and is killed for it)."""
    return max(floor, HANG_FACTOR * unmutated_seconds)


def _events(path: Path) -> list[dict]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.endswith("}")]  # a line half-written is read next time


@dataclass
class _Progress:
    """Where one substrate's processes have got to over LARGE_TRIALS: each trial's TrialRun, the survivors not
    killed on a trial the unmutated kernel passed, the trial the next process starts on and the kernels judged on
    it already, the unmutated kernel's time on each trial (a hang's limit), and the processes' count and time."""

    runs: list[TrialRun]
    alive: list[Survivor]
    position: int = 0
    judged_here: set = field(default_factory=set)
    unmutated_seconds: dict = field(default_factory=dict)
    processes: int = 0
    parts: dict = field(default_factory=dict)

    def move_to(self, index: int) -> None:
        if index != self.position:
            self.position, self.judged_here = index, set()

    def kernels(self, u: Unmutated) -> list[tuple[str, str]]:
        return [(u.substrate, u.source)] + [(program_label(s.mutant_id), s.source) for s in self.alive]


def _drive_processes(u: Unmutated, mine: list[Survivor], backend: str, settings: LargeSettings) -> _Progress:
    """LARGE_TRIALS over `mine` in as few processes as the kernels allow: a process builds each trial in turn and
    judges the kernels on it, and a fresh one takes over, on the trial where it ended, after a kernel that ends it
    (a fault that poisoned the context or wrote into the trial, a hang, a death)."""
    from harness.processes import start_worker

    progress = _Progress([TrialRun({}, "", "") for _ in LARGE_TRIALS], list(mine))
    work = Path(tempfile.mkdtemp(prefix=f"large-index-{u.substrate}-"))
    programs = compiled_batches(u, mine)
    # Forked from the fork server: a kernel that faults ends its process, and the next starts in milliseconds.
    spare = [start_worker(env=program_env())]  # the process started ahead, replaced as each is used
    try:
        while progress.position < len(LARGE_TRIALS) and progress.alive and not settings.stop.is_set():
            if all(program_label(s.mutant_id) in progress.judged_here for s in progress.alive):
                progress.move_to(progress.position + 1)  # the last kernel of the trial ended the process
                continue
            progress.processes += 1
            worker, spare[0] = spare[0], start_worker(env=program_env())
            _run_process(worker, work / str(progress.processes), u, backend, settings, progress, programs)
    finally:
        spare[0].stop()
    return progress


def _run_process(worker, prefix: Path, u: Unmutated, backend: str, settings: LargeSettings, progress: _Progress,
                 programs: list[dict]) -> None:
    """One process of the large-index program from `progress.position` on, its events read into `progress`; where it
    ended inside a trial, the kernel it was judging is killed for that (or the trial said unbuilt)."""
    from harness.oracles.large_index_run import run_in_worker

    plan, events, stderr = (Path(f"{prefix}-{name}") for name in ("plan.json", "events.jsonl", "stderr.txt"))
    kernels = progress.kernels(u)
    plan.write_text(json.dumps({
        "backend": backend, "cache_dir": settings.cache_dir, "kb_root": settings.kb_root, "file": u.file,
        "watch_pid": os.getpid(), "name": u.substrate, "min_elements": settings.min_elements,
        "max_elements": settings.max_elements, "check_addresses": settings.check_addresses, "batches": programs,
        "trials": [list(t) for t in LARGE_TRIALS[progress.position:]], "first_trial": progress.position,
        "kernels": kernels, "judged": sorted(progress.judged_here)}))
    try:
        worker.connection.send((run_in_worker, (str(plan), str(events), str(stderr))))
    except OSError:  # it died before it took the job: judged as any other end
        worker.process.join(10)
    ended, clean = _watched(worker, events, stderr, u.substrate, progress.unmutated_seconds, settings)
    deliberate_end, built = _read_events(events, progress, u.substrate)
    if settings.stop.is_set() or progress.position >= len(LARGE_TRIALS) or deliberate_end or clean:
        return
    here = progress.runs[progress.position]
    if progress.position not in built:
        here.why = f"the large trial could not be built: {ended}"
        progress.move_to(progress.position + 1)
        return
    # The kernels of the trial it ended on, in order: those a trial before killed are not among them.
    left = [key for key, _source in progress.kernels(u) if key not in progress.judged_here]
    if not left:
        return
    # The process died (or hung) inside the next kernel: its doing.
    here.results[left[0]] = (True, f"the kernel {ended}" if ended.startswith("hung")
                             else f"the oracle's process died while it ran: {ended}")
    progress.judged_here.add(left[0])
    if left[0] == u.substrate:
        progress.move_to(progress.position + 1)
    else:
        progress.alive = [s for s in progress.alive if program_label(s.mutant_id) != left[0]]


def _watched(worker, events: Path, stderr: Path, unmutated: str, unmutated_seconds: dict,
             settings: LargeSettings) -> tuple[str, bool]:
    """Wait for the process to end, killing it where a mutant hangs (past hang_limit of the unmutated kernel's time
    on that trial: `unmutated_seconds`' or the events') or nothing is heard from it for `settings.timeout`; how it
    ended, and whether it ended of itself with nothing left to do (exit status 0)."""
    from harness.processes import exit_description

    heard, ended, size = time.monotonic(), "", -1
    while worker.process.is_alive():
        worker.process.join(0.2)
        if events.exists() and events.stat().st_size != size:
            heard, size = time.monotonic(), events.stat().st_size
        running = [r for r in _events(events) if r["event"] in ("start", "result")]
        seconds = dict(unmutated_seconds)
        seconds.update({r.get("trial", 0): r["seconds"] for r in running
                        if r["event"] == "result" and r["key"] == unmutated and "seconds" in r})
        last = running[-1] if running else None
        took = seconds.get(last.get("trial", 0)) if last else None
        if last and last["event"] == "start" and last["key"] != unmutated and took is not None \
                and time.time() - last["at"] > hang_limit(took, settings.hang_floor):
            ended = (f"hung: ran past {hang_limit(took, settings.hang_floor):.0f} s on the large trial, where the "
                     f"unmutated kernel took {took:.3f} s")
            break
        if time.monotonic() - heard > settings.timeout:
            ended = f"timed out after {settings.timeout:g} s"
            break
    clean = not ended and worker.process.exitcode == 0
    if not ended:
        errors = stderr.read_text() if stderr.exists() else ""
        ended = f"the process ended ({exit_description(worker.process.exitcode)}): {last_line(errors)}"
    worker.stop()
    return ended, clean


def _read_events(events: Path, progress: _Progress, unmutated: str) -> tuple[bool, set]:
    """A process's events read into `progress`: each trial's description and results, where the process got to,
    and the time of its parts; whether its last kernel ended it on purpose, and the trials it built."""
    deliberate_end, built = False, set()
    for record in _events(events):
        index = record.get("trial", progress.position)
        run = progress.runs[index]
        if record["event"] == "skipped":  # redundant: nothing new to judge (the trial along another axis was it)
            run.why = None if record.get("redundant") else record["why"]
            run.short_of_memory |= bool(record.get("memory"))
            progress.move_to(index + 1)
        elif record["event"] == "compiled":
            _add(progress.parts, "compiling kernels", record.get("seconds", 0.0))
        elif record["event"] == "trial":
            progress.move_to(index)
            built.add(index)
            _add(progress.parts, "building the trials", record.get("seconds", 0.0))
            run.trial = (f"{record['source']} tiled {record['factor']}x along axis {record['axis']}"
                         + (f" and cut to {record['cut']}" if record.get("cut") else "") + ": "
                         f"{'x'.join(map(str, record['shapes'][0]))}, out {'x'.join(map(str, record['out']))}")
        elif record["event"] == "result":
            deliberate_end = _read_result(record, run, progress, unmutated)
        elif record["event"] == "done":
            progress.move_to(index + 1)
    return deliberate_end, built


def _read_result(record: dict, run: TrialRun, progress: _Progress, unmutated: str) -> bool:
    """One kernel's result read into `run` and `progress`; whether it ended its process on purpose."""
    key, index = record["key"], record.get("trial", progress.position)
    progress.judged_here.add(key)
    if "error" not in record:
        run.results[key] = (record["killed"], record.get("detail", ""))
    run.short_of_memory |= bool(record.get("memory"))
    for name, seconds in record.get("parts", {}).items():
        _add(progress.parts, f"{name} kernels", seconds)
    if key == unmutated:
        if "seconds" in record:
            progress.unmutated_seconds[index] = record["seconds"]
        if "error" in record or record["killed"]:  # the trial judges nothing: the program went on to the next
            progress.move_to(index + 1)
    elif record["killed"]:
        progress.alive = [s for s in progress.alive if program_label(s.mutant_id) != key]
    return bool(record.get("ends"))


def _add(parts: dict, name: str, seconds: float) -> None:
    parts[name] = parts.get(name, 0.0) + seconds


def decided(value_record: dict, oracle_records: list[dict]) -> tuple[str, str, str]:
    """(status, detail, oracle) of a mutant: the value suites' verdict, unless a later oracle killed a survivor.

    `oracle_records` in ORACLES order; `oracle` is "" when the value suites decided, else what killed it
    (a tool's name, or "large-index").
    """
    if value_record["status"] == "survived":
        for record in oracle_records:
            if record.get("killed_by"):
                killer = record.get("killer") or record["killed_by"]
                return "killed", f"killed by {killer}: {record['detail']}", record["killed_by"]
    return value_record["status"], value_record.get("detail", ""), ""


def judge_survivors(plans: list, args, backend: str, store: ResultStore, chosen: tuple[str, ...],
                    tools: tuple[str, ...], check_addresses: bool = False) -> str:
    """Every chosen oracle after the values over every value survivor it has not judged; lines saying what each did.

    The oracles run side by side, each in a thread of its own driving its processes: each judges every survivor
    (the first in ORACLES order that kills one is credited), so neither waits for the other's verdicts, and the
    sanitizers' small cases run on the device beside the large-index trials. `check_addresses`: the large-index
    kernels run address-checked (harness.engine.run.checks_addresses)."""
    lines: dict[str, list[str]] = {}
    work = []
    sanitizer = args.sanitizer or sanitizer_tools.find_sanitizer()
    for oracle in chosen[1:]:
        # The large-index program finds each survivor's batch in the compile cache; the tools compile their own.
        batched = oracle == LARGE_INDEX and not getattr(args, "naive", False)
        batch_size = getattr(args, "batch_size", 1) if batched else 1
        unmutated, survivors = ([], []) if backend == "cpu" else _value_survivors(plans, store, backend, oracle,
                                                                                 batch_size)
        said = _not_judging(oracle, backend, sanitizer, survivors)
        if said:
            lines[oracle] = [said]
            continue
        print(f"oracle {oracle}: {len(survivors)} survivor(s) of {len(unmutated)} substrate(s)"
              + (f" under {', '.join(tools)}" if oracle == SANITIZERS else ""), flush=True)
        work.append((oracle, unmutated, survivors))
    large = LargeSettings(kb_root=str(args.kb_root) if args.kb_root else None,
                          cache_dir=str(args.cache_dir) if args.cache_dir else None, check_addresses=check_addresses,
                          at_once=getattr(args, "large_index_processes", 1))
    tools_run = (tools, sanitizer, args.sanitize_processes)
    lines.update(_side_by_side({oracle: functools.partial(_judge_by, oracle, unmutated, survivors, store, backend,
                                                          large, tools_run)
                                for oracle, unmutated, survivors in work}, large.stop))
    return "\n".join(line for oracle in chosen[1:] for line in lines.get(oracle, []))


def _side_by_side(jobs: dict, stop: threading.Event) -> dict:
    """{name: job()} with each job in a thread of its own; an exception of a job is raised here once all have ended.

    Ctrl-C reaches the main thread only, wherever it is (starting the threads, or waiting): the jobs are told to stop
    (`stop`), every process below this one is killed (a verdict read from a killed process would be its death's),
    and the interrupt goes on once every thread has ended."""
    results, errors = {}, []
    ended = {name: threading.Event() for name in jobs}  # not Thread.join: interrupted, a join may not wait again

    def run(name, job):
        try:
            results[name] = job()
        except BaseException as error:  # handed to the main thread, which raises it
            errors.append(error)
        finally:
            ended[name].set()

    threads = {name: threading.Thread(target=run, args=(name, job), daemon=True) for name, job in jobs.items()}
    try:
        for thread in threads.values():
            thread.start()
        for name in jobs:
            while not ended[name].wait(0.2):  # a timeout: the terminal's SIGINT may reach another thread, and only
                pass                          # a main thread that wakes runs its handler
    except KeyboardInterrupt:
        stop.set()
        kill_descendants()
        raise
    finally:
        for name, thread in threads.items():
            if thread.ident is not None:  # started (a Ctrl-C may have come before some were)
                ended[name].wait()
    if errors:
        raise errors[0]
    return results


def _not_judging(oracle: str, backend: str, sanitizer, survivors: list) -> str:
    """Why `oracle` judges nothing in this campaign ("" when it has survivors to judge)."""
    if backend == "cpu":
        return (f"oracle {oracle}: skipped (CPU backend; "
                + ("compute-sanitizer checks CUDA kernels)" if oracle == SANITIZERS
                   else "a trial of more than 2^31 elements is for the GPU)"))
    if oracle == SANITIZERS and sanitizer is None:
        return "oracle sanitizers: skipped (compute-sanitizer not found: PATH, $CUDA_HOME, /usr/local/cuda*)"
    return "" if survivors else f"oracle {oracle}: every survivor is judged already"


def _judge_by(oracle: str, unmutated: list[Unmutated], survivors: list[Survivor], store: ResultStore,
              backend: str, large: LargeSettings, tools_run: tuple) -> list[str]:
    """One oracle over its survivors, stored as judged; its lines for the campaign's output. `large` holds what both
    oracles read (the KernelBench checkout, the compile cache, the stop), `tools_run` the sanitizers' (tools,
    compute-sanitizer, processes)."""
    started = time.perf_counter()
    if oracle == SANITIZERS:
        tools, sanitizer, processes = tools_run
        notes = judge_with_sanitizers(unmutated, survivors, store, backend, tools, sanitizer, large.cache_dir,
                                      processes, large.kb_root, large.stop)
    else:
        notes = judge_on_large_trial(
            unmutated, survivors, store, backend, large,
            on_substrate=lambda name, outcome: print(f"  {oracle}: {name}: {outcome.describe()}", flush=True))
    killed = sum(1 for s in survivors if (r := store.get(oracle_key(s.source_sha256, backend, s.mutant_id, oracle)))
                 and r.get("killed_by"))
    return [f"oracle {oracle}: {len(survivors)} survivor(s) judged, {killed} killed, in "
            f"{time.perf_counter() - started:.1f} s"] + [f"  {name}: {why}" for name, why in notes.items()]


def _value_survivors(plans: list, store: ResultStore, backend: str, oracle: str, batch_size: int = 1):
    """The substrates and the survivors of the value suites that `oracle` has not judged yet, each with the batch
    the campaign compiled it in (batches of `batch_size`, as the plan fixes them; none for 1)."""
    from harness.engine.compile import batches

    unmutated, survivors = [], []
    for plan in plans:
        mine = [m for m in plan.mutants
                if (r := store.get(ResultKey(plan.source_sha256, backend, m.id))) and r["status"] == "survived"
                and oracle_key(plan.source_sha256, backend, m.id, oracle) not in store]
        if not mine:
            continue
        unmutated.append(Unmutated(plan.name, plan.file, plan.kernel_name, plan.t0_bytes, plan.source))
        by_id = {m.id: m for m in plan.mutants}
        batch_of = ({i: batch for batch in batches(list(by_id), batch_size) for i in batch} if batch_size > 1
                    else {})
        sources: dict[tuple, tuple[str, ...]] = {}  # each batch's sources, made once for all its survivors
        for m in mine:
            batch = batch_of.get(m.id, ())
            if batch not in sources:
                sources[batch] = tuple(by_id[i].apply(plan.source) for i in batch)
            survivors.append(Survivor(plan.name, plan.file, plan.kernel_name, plan.t0_bytes, plan.source_sha256,
                                      m.id, m.apply(plan.source), sources[batch], batch.index(m.id) if batch else 0))
    return unmutated, survivors
