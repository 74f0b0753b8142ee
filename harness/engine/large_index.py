"""The large-index oracle's parent: each substrate's survivors through LARGE_TRIALS, in processes it drives.

A survivor of the value suites may narrow an index that only an input of more than 2^31 elements overflows. Each
substrate's survivors, and first its unmutated kernel, run on LARGE_TRIALS (each tiled past MIN_LARGE_ELEMENTS) in the
large-index program (harness.oracles.large_index_run), one process taking the substrate through the trials in turn
and a fresh one taking over where a kernel ended the last (a fault, a hang, a death); a substrate's survivors are
judged only on trials its unmutated kernel passes. Several substrates run side by side, their processes taking
turns at the device's memory (harness.oracles.memory_turns): one whose trial does not fit waits for the others to
give memory back. One the memory still fell short of beside the others is judged again alone (not one whose trial
the device is too small for whatever the others give back: alone, it would not fit either).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from harness.backends.base import says_out_of_device_memory
from harness.engine.store import ResultStore
from harness.engine.survivors import LARGE_INDEX, Survivor, Unmutated, oracle_key, program_label
from harness.oracles import last_line, program_env
from harness.oracles.large_index_run import ROOM, TURN
from harness.oracles.memory_turns import BACKFILL_SECONDS

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
MEMORY_WAIT_SECONDS = 300.0  # how long a process side by side with others waits for room for its trial
# A mutant past both (x the unmutated kernel's time on the trial) is hung, killed as such, its process replaced. The
# floor is for a trial the unmutated kernel runs in milliseconds, where 50x would be within a time slice of the other
# processes on the GPU; past 3 s a kernel is 50x slower than one taking 60 ms. Each hang costs the floor (on the
# H200, two each for the four pad_backward_replicate substrates, at 10 s 20 of their 28 to 42 s).
HANG_FLOOR_SECONDS, HANG_FACTOR = 3.0, 50.0


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
    # The file whose lock is the processes' turn at the device's memory, and how long one waits there for room:
    # made for each call of judge_on_large_trial that runs substrates side by side.
    memory_lock: str | None = None
    memory_wait: float = MEMORY_WAIT_SECONDS
    # How long the longest waiter for room lets later processes whose trials fit build first (0: first come, first
    # served; harness.oracles.memory_turns.goes_now).
    backfill: float = BACKFILL_SECONDS
    # Set when the campaign is interrupted: no trial or process is started after it, and nothing is stored that a
    # killed process may have decided.
    stop: threading.Event = field(default_factory=threading.Event, compare=False)


@dataclass
class TrialRun:
    """One large trial over some kernels, in one or more processes: {key: (killed, detail)}, the trial's
    description, why none ran ("" when they did; None for a trial along an axis already run), and whether the
    device's memory fell short of it beside other processes (a trial skipped or a launch refused for it; not one the
    device is too small for alone). The processes and their time are the substrate's (_Progress)."""

    results: dict
    trial: str
    why: str | None
    short_of_memory: bool = False
    unjudged: list = field(default_factory=list)  # kernels a process ran out of memory under: why each was not judged


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
        """`N survivor(s) judged, K killed, in S s, P process(es) (building the trials 1.2 s, ...)`; where no large
        trial judged any (the device too small for each, say), the first reason why, in its place."""
        parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.parts.items())
        nothing = f"none judged: {self.why_not[0]}" if not self.judged and self.why_not else ""
        return (f"{len(self.judged)} survivor(s) judged, {self.killed()} killed, in {self.seconds:.1f} s, "
                f"{self.processes} process(es)" + (f" ({parts or nothing})" if parts or nothing else ""))


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
    # The substrates with most survivors first: side by side, the last to start is not the longest to run.
    work.sort(key=lambda item: -len(item[1]))
    notes: dict[str, str] = {}

    def conclude(u: Unmutated, mine: list[Survivor], outcome: SubstrateJudged) -> None:
        if settings.stop.is_set():
            return
        if outcome.why_not:
            notes[u.substrate] = "; ".join(outcome.why_not)
        _store_judged(mine, outcome, store, backend)
        on_substrate(u.substrate, outcome)

    alone = []
    turns = Path(tempfile.mkdtemp(prefix="large-index-memory-")) if settings.at_once > 1 else None
    side_by_side = dataclasses.replace(settings, memory_lock=str(turns / "turns.lock")) if turns else settings
    with ThreadPoolExecutor(max_workers=max(1, settings.at_once)) as pool:
        running = {pool.submit(_judge_substrate, u, mine, backend, side_by_side): (u, mine) for u, mine in work}
        for done in as_completed(running):
            outcome = done.result()
            if outcome.short_of_memory and settings.at_once > 1:
                alone.append(running[done])
            else:
                conclude(*running[done], outcome)
    if turns:
        shutil.rmtree(turns, ignore_errors=True)
    for u, mine in sorted(alone, key=lambda item: unmutated.index(item[0])):
        if not settings.stop.is_set():
            conclude(u, mine, _judge_substrate(u, mine, backend, dataclasses.replace(settings, memory_lock=None)))
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
        outcome.why_not.extend(run.unjudged)
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
        shutil.rmtree(work, ignore_errors=True)  # the processes' plans and events: read into `progress` already
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
        # Beside others, a process waits its turn, and for room; alone, nothing it could wait for is its own kind's.
        "memory_lock": settings.memory_lock, "memory_wait": settings.memory_wait if settings.memory_lock else 0.0,
        "backfill": settings.backfill,
        "kernels": kernels, "judged": sorted(progress.judged_here)}))
    try:
        worker.connection.send((run_in_worker, (str(plan), str(events), str(stderr))))
    except OSError:  # it died before it took the job: judged as any other end
        worker.process.join(10)
    ended, clean, memory = _watched(worker, events, stderr, u.substrate, progress.unmutated_seconds, settings)
    deliberate_end, built = _read_events(events, progress, u.substrate)
    if settings.stop.is_set() or progress.position >= len(LARGE_TRIALS) or deliberate_end or clean:
        return
    here = progress.runs[progress.position]
    if progress.position not in built and any(index < progress.position for index in built):
        # It died building a trial after judging kernels on one before: a kernel may have broken it (a stray write
        # into the allocator's memory). A fresh process builds the trial again; only a death there is the trial's.
        return
    # A process that ran out of the device's memory (its context, a trial, a comparison) met the device's limit,
    # not a kernel's fault: beside other processes, the substrate is judged again alone.
    here.short_of_memory |= memory and settings.memory_lock is not None
    if progress.position not in built:
        here.why = f"the large trial could not be built: {ended}"
        progress.move_to(progress.position + 1)
        return
    # The kernels of the trial it ended on, in order: those a trial before killed are not among them.
    left = [key for key, _source in progress.kernels(u) if key not in progress.judged_here]
    if not left:
        return
    progress.judged_here.add(left[0])
    if memory:
        if left[0] == u.substrate:
            here.why = f"the device's memory fell short while the unmutated kernel ran: {ended}"
            progress.move_to(progress.position + 1)
        else:
            here.unjudged.append(f"{left[0]} not judged on {here.trial or 'its large trial'}: the device's "
                                 f"memory fell short while it ran: {ended}")
        return
    # The process died (or hung) inside the next kernel: its doing.
    here.results[left[0]] = (True, f"the kernel {ended}" if ended.startswith("hung")
                             else f"the oracle's process died while it ran: {ended}")
    if left[0] == u.substrate:
        progress.move_to(progress.position + 1)
    else:
        progress.alive = [s for s in progress.alive if program_label(s.mutant_id) != left[0]]


def _watched(worker, events: Path, stderr: Path, unmutated: str, unmutated_seconds: dict,
             settings: LargeSettings) -> tuple[str, bool, bool]:
    """Wait for the process to end, killing it where a mutant hangs (past hang_limit of the unmutated kernel's time
    on that trial: `unmutated_seconds`' or the events') or nothing is heard from it for `settings.timeout`; how it
    ended, whether it ended of itself with nothing left to do (exit status 0), and whether it died of the device's
    memory (ran_out_of_device_memory)."""
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
    memory = False
    if not ended:
        errors = stderr.read_text() if stderr.exists() else ""
        ended = f"the process ended ({exit_description(worker.process.exitcode)}): {last_line(errors)}"
        memory = not clean and ran_out_of_device_memory(errors)
    worker.stop()
    return ended, clean, memory


def ran_out_of_device_memory(stderr: str) -> bool:
    """Whether the last traceback a process wrote is the device's memory running out: torch's allocator, or a CUDA
    call's (a context or a library's workspace: `CUDA error: out of memory`, whose last line is torch's advice)."""
    return says_out_of_device_memory(stderr.rsplit("Traceback (most recent call last)", 1)[-1])


def _read_events(events: Path, progress: _Progress, unmutated: str) -> tuple[bool, set]:
    """A process's events read into `progress`: each trial's description and results, where the process got to,
    and the time of its parts; whether its last kernel ended it on purpose, and the trials it built."""
    deliberate_end, built = False, set()
    for record in _events(events):
        index = record.get("trial", progress.position)
        run = progress.runs[index]
        if record["event"] == "skipped":  # redundant: nothing new to judge (the trial along another axis was it)
            run.why = None if record.get("redundant") else record["why"]
            # A trial the device is too small for, whatever the others give back, is no fuller alone: not judged again.
            run.short_of_memory |= bool(record.get("memory")) and not record.get("beyond_device")
            progress.move_to(index + 1)
        elif record["event"] == "compiled":
            _add(progress.parts, "compiling kernels", record.get("seconds", 0.0))
        elif record["event"] == "trial":
            progress.move_to(index)
            built.add(index)
            waited = sum((record.get("parts") or {}).get(name, 0.0) for name in (TURN, ROOM))
            _add(progress.parts, "building the trials", record.get("seconds", 0.0) - waited)
            if waited >= 0.05:  # a turn taken at once, or room there at once, is not worth a word
                _add(progress.parts, "waiting for the device's memory", waited)
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
            if "error" in record:  # not run to the end (its launch, or its check, out of memory): say why
                run.why = f"the unmutated kernel was not judged on it: {record['error']}"
            progress.move_to(index + 1)
    elif record["killed"]:
        progress.alive = [s for s in progress.alive if program_label(s.mutant_id) != key]
    return bool(record.get("ends"))


def _add(parts: dict, name: str, seconds: float) -> None:
    parts[name] = parts.get(name, 0.0) + seconds
