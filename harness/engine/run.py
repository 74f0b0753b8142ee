"""Running a campaign's plans: warm workers, one substrate each, side by side over the GPUs (or the CPU);
a worker restarted after a fault or a timeout, with the mutant it was running judged as the first of the
next one; results stored as they arrive; where the workers' time went."""

from __future__ import annotations

import dataclasses
import itertools
import os
import signal
import sys
import threading
import time
from pathlib import Path

from harness.engine.compile import batches
from harness.engine.plan import Plan
from harness.engine.report import MutantStatus
from harness.engine.store import ResultKey, ResultStore
from harness.engine.trials import parked_note
from harness.engine.worker import (BASELINE_STOPPED_BY_CHECK, KERNEL_TIME, PHASES, PROCESSOR_TIME, CampaignJob,
                                   import_ahead, make_backend_ahead, run_campaign_job)
from harness.processes import WorkerLost, WorkerStarter, converse

STARTUP_TIMEOUT = 600.0  # building a KernelBench-sized trial set and compiling the original, before any mutant


class Progress:
    """The tqdm bar: mutants done, killed, survived, and what a worker is doing; safe to update from several
    threads."""

    STEP_EVERY = 0.5  # s: a worker's step shown at most this often (a campaign's workers say thousands a second)

    def __init__(self, total: int, disabled: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="mutant", disable=True if disabled else None, dynamic_ncols=True,
                        file=sys.stderr)
        self.counts = {"killed": 0, "survived": 0}
        self.lock = threading.Lock()
        self._stepped = float("-inf")

    def step(self, text: str) -> None:
        """What a worker is doing, after the counts: a real-size substrate builds its trials for minutes before its
        first mutant ends, and the bar shows it moving."""
        if self.bar.disable:
            return
        now = time.monotonic()
        with self.lock:
            if now - self._stepped < self.STEP_EVERY:
                return
            self._stepped = now
            self.bar.set_postfix({**self.counts, "now": text})

    def done(self, status: str) -> None:
        with self.lock:
            if status in self.counts:
                self.counts[status] += 1
            self.bar.set_postfix(self.counts, refresh=False)
            self.bar.update(1)

    def note(self, text: str) -> None:
        """A line for the user above the bar, on stderr (a cluster item's stdout carries its results)."""
        with self.lock:
            self.bar.write(text, file=sys.stderr)

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
        self.warmed = 0  # of the workers, those warmed ahead
        self.kept = 0  # of the workers, those that had run their slot's job before (one process, counted again)
        self.lock = threading.Lock()

    def add(self, phases: dict, wall: float, warmed: bool = False, kept: bool = False) -> None:
        """One worker's phases and wall time (from its job's start: a worker warmed ahead did part of its
        phases before, so its wall time falls short of them and its rest counts as none)."""
        with self.lock:
            for name, seconds in phases.items():
                self.phases[name] = self.phases.get(name, 0.0) + seconds
            self.wall += max(wall, sum(s for name, s in phases.items() if _is_phase(name)))
            self.workers += 1
            self.warmed += warmed
            self.kept += kept

    def merge(self, phases: dict, wall: float, workers: int) -> None:
        """Another host's totals (a cluster item's) added to these."""
        with self.lock:
            for name, seconds in phases.items():
                self.phases[name] = self.phases.get(name, 0.0) + seconds
            self.wall += wall
            self.workers += workers

    def describe(self) -> str:
        """The phases and the rest; then, a line each, what the phases reported in parts were spent on (the
        mutants', and the start-up's and the trials' that a worker after a fault pays again)."""
        phases = {name: s for name, s in self.phases.items() if _is_phase(name)}
        rest = max(0.0, self.wall - sum(phases.values()))
        notes = ([f"{self.warmed} warmed ahead"] if self.warmed else []) + (
            [f"{self.kept} kept from their slot's previous substrate"] if self.kept else [])
        noted = f" ({', '.join(notes)})" if notes else ""
        processor = self.phases.get(PROCESSOR_TIME, 0.0)
        on_processor = f", {processor:.1f} s of it on a processor" if processor else ""
        if KERNEL_TIME in self.phases:  # --kernel-times
            on_processor += f", its kernels {self.phases[KERNEL_TIME]:.1f} s on the device"
        text = (f"worker time {self.wall:.1f} s over {self.workers} worker(s){noted}{on_processor}: "
                + ", ".join(f"{name} {seconds:.1f}" for name, seconds in phases.items())
                + f", process start, imports and unreported {rest:.1f}")
        for phase in ("mutants", *(p for p in PHASES if p != "mutants")):  # the mutants' first, as before
            parts = {name[len(phase) + 2:]: s for name, s in self.phases.items() if part_of(name) == phase}
            if parts:
                # "checkers: the kernel's runs" is a part of the part "checkers": counted there once.
                within = sum(s for name, s in parts.items() if ": " in name and name.split(": ", 1)[0] in parts)
                unaccounted = max(0.0, phases.get(phase, 0.0) - sum(parts.values()) + within)
                ranked = sorted(parts.items(), key=lambda part: -part[1])
                whose = phase + ("'" if phase.endswith("s") else "'s")
                text += (f"\n{whose} time: "
                         + ", ".join(f"{name} {seconds:.1f}" for name, seconds in ranked)
                         + f", {REST_OF.get(phase, 'the rest')} {unaccounted:.1f}")
        return text


class StartTimes:
    """When each substrate's first worker reached the milestones of its start, in seconds from the run's start: what
    a campaign's first results wait for (the workers' phases sum over workers; these say what was late). Safe
    across threads."""

    # A milestone, and the worker message that marks it: its start-up over (the backend and official model made), its
    # trials built, its unmutated source compiled and run, its first mutant judged.
    MILESTONES = (("started", ("step", "building the trials")), ("trials", ("step", "compiling the unmutated source")),
                  ("baseline", ("baseline",)), ("first result", ("result",)))

    ORDER = ("given", *(milestone for milestone, _ in MILESTONES))  # "given" first, when its job was given

    # What a substrate's worker does after each milestone until the next: said of a run cut short.
    DOING_AFTER = {"given": "starting its worker", "started": "building its trials",
                   "trials": "compiling and running its unmutated source", "baseline": "judging its first mutant",
                   "first result": "judging its mutants"}

    def __init__(self, started: float | None = None):
        self.started = time.perf_counter() if started is None else started
        self.lock = threading.Lock()
        self.jobs: dict[str, dict[str, float]] = {}  # substrate -> milestone -> seconds; "given" when its job was
        self.steps: dict[str, str] = {}  # substrate -> the last step its worker said (a cut-short run says it)

    def given(self, name: str) -> None:
        with self.lock:
            self.jobs.setdefault(name, {"given": time.perf_counter() - self.started})

    def saw(self, name: str, message: tuple) -> None:
        """Record the milestone `message` marks, the first time a substrate's worker reaches it, and the last step."""
        if message[0] == "step":
            with self.lock:
                self.steps[name] = message[1]
        for milestone, marker in self.MILESTONES:
            if message[:len(marker)] == marker:
                with self.lock:
                    self.jobs.setdefault(name, {}).setdefault(milestone, time.perf_counter() - self.started)

    def ended(self, name: str) -> None:
        """The substrate's last mutant judged (its slot free for the next)."""
        with self.lock:
            self.jobs.setdefault(name, {})["ended"] = time.perf_counter() - self.started

    def describe_unfinished(self, now: float | None = None) -> list[str]:
        """For each substrate given a worker that has not ended, what the worker was doing when the run was cut short
        and for how long (its last milestone's next step): where a long start went, when nothing was judged yet."""
        now = (time.perf_counter() if now is None else now) - self.started
        with self.lock:
            jobs = sorted((job.get("given", 0.0), name, job) for name, job in self.jobs.items() if "ended" not in job)
        lines = []
        for _given, name, job in jobs:
            reached = [m for m in self.ORDER if m in job]
            if reached:
                last = reached[-1]
                step = self.steps.get(name)
                lines.append(f"campaign: {name}: cut short {self.DOING_AFTER[last]}, {now - job[last]:.1f} s into "
                             f"it ({now - job.get('given', job[last]):.1f} s since its worker was given it"
                             + (f"; its last step: {step})" if step else ")"))
        return lines

    def describe_end(self, slots: int) -> str:
        """When the last `slots` substrates to end ended (once no substrate waits for a slot, when each slot fell
        idle), first, median and last, and which ended last: how long the campaign's tail was ("" before any end)."""
        import statistics

        with self.lock:
            ended = sorted((job["ended"], name, job.get("given")) for name, job in self.jobs.items() if "ended" in job)
        if not ended:
            return ""
        last = ended[-slots:]
        ends = [end for end, _, _ in last]
        end, name, given = last[-1]
        return (f"the end, s from the run's start: the last {len(last)} substrate(s) ended at {ends[0]:.1f} (first), "
                f"{statistics.median(ends):.1f} (median), {end:.1f} (last: {name}"
                + (f", given at {given:.1f})" if given is not None else ")"))

    def describe(self, first: int) -> str:
        """The milestones of the `first` substrates given a worker, median and last ("" before any job)."""
        import statistics

        with self.lock:
            jobs = sorted(self.jobs.values(), key=lambda job: job.get("given", float("inf")))[:first]
        parts = []
        for milestone in self.ORDER:
            seconds = sorted(job[milestone] for job in jobs if milestone in job)
            if seconds:
                parts.append(f"{milestone} {statistics.median(seconds):.1f}/{seconds[-1]:.1f}")
        return (f"the start, s from the run's start, median/last of the first {len(jobs)} substrate(s): "
                + ", ".join(parts)) if parts else ""


# What the part of a phase not reported in parts is, where a phase says.
REST_OF = {"mutants": "the rest (compared code, trial order, messages)"}


def _is_phase(name: str) -> bool:
    return not part_of(name) and name not in (PROCESSOR_TIME, KERNEL_TIME)


def part_of(name: str) -> str:
    """The phase that a reported time `name` is part of ("mutants: kernel: runs" -> "mutants"), or ""."""
    return next((phase for phase in PHASES if name.startswith(phase + ": ")), "")


def _timed_converse(worker_time: WorkerTime, job, handle, starter: WorkerStarter, keep_worker: bool = True) -> None:
    """converse with the worker's wall time and reported phases added to worker_time, however it ends; a worker
    that ran its job through and may take another is given back to `starter` for the slot's next job (unless not
    `keep_worker`)."""
    reported, reusable = {}, []

    def keep_timings(message) -> bool:
        if message[0] == "timings":  # cumulative: the last one a worker sent counts
            reported.update(message[1])
        elif message[0] == "done":
            reusable.append(message[1])
        return handle(message)

    started = time.perf_counter()  # a worker started now (no spare) counts its start in its wall time
    worker = starter.take()
    kept = False
    try:
        converse(_campaign_worker_main, (job,), STARTUP_TIMEOUT, keep_timings, worker=worker, keep=True)
        kept = starter.keep(worker) if keep_worker and reusable == [True] else False
    finally:
        if not kept:
            worker.stop()
        worker_time.add(reported, time.perf_counter() - started, warmed=worker.warmed, kept=worker.kept)


# A spare warmed ahead holds a copy of its substrate's trials beside the worker's: only for trials this small.
WARM_SPARE_MAX_T0_BYTES = 256 * 2**20


class WarmingStarter:
    """A worker slot's starter while it runs one plan under `--spare-workers warm`: each worker it gives out is
    the spare warmed for the plan where there is one, and the next spare is warmed for it at once, so that the
    worker after a fault finds the trials and references built and the unmutated source compiled."""

    def __init__(self, starter: WorkerStarter, spec: CampaignJob):
        self.starter, self.spec = starter, spec
        self.key = (spec.file, spec.name, spec.batch_size, spec.check_addresses)

    def take(self):
        worker = self.starter.take(self.key)
        self.starter.warm(self.key, _campaign_worker_warm, (self.spec,))
        return worker

    def keep(self, worker) -> bool:
        return self.starter.keep(worker)


class _PlanMessages:
    """What run_plan hears from one worker, as converse's handler: results stored as they come, and in `state` what
    run_plan needs once the worker is gone (the mutant it ran, whether it was compiling a batch, how many mutants it
    started, and under --matrix the row so far). Returns True where the conversation is over."""

    def __init__(self, plan: Plan, backend: str, store: ResultStore, progress: Progress, remaining: list[str],
                 known_digests: dict, judging: bool, start_times: StartTimes | None, rows_alone: set[str],
                 apart: dict[str, bool] | None = None):
        self.plan, self.backend, self.store, self.progress = plan, backend, store, progress
        self.remaining, self.known_digests, self.judging, self.start_times = remaining, known_digests, judging, \
            start_times
        self.rows_alone = rows_alone  # mutants whose next row runs a trial at a time (harness.engine.row)
        # Mutants the checkers judge apart (CampaignJob.checkers_apart): whether each is still to count as done (a
        # resumed one, not counted when its suites' verdict was stored in an earlier run).
        self.apart = {} if apart is None else apart
        self.state = {"current": None, "compiling_batch": False, "started": 0, "cells": [], "trial": None,
                      "verdict": None, "queued": None}

    def __call__(self, message) -> bool:
        kind, state, plan = message[0], self.state, self.plan
        if self.start_times:
            self.start_times.saw(plan.name, message)
        if kind == "step":
            self.progress.step(f"{plan.name}: {message[1]}")
        if kind == "batch":
            state["compiling_batch"], state["current"] = True, None
        elif kind == "compiled":  # the batch's NVRTC run is over (g++ may go on beside, in a process)
            state["compiling_batch"] = False
        elif kind == "mutant":
            state["current"], state["compiling_batch"] = message[1], False
            state["started"] += 1
            if self.judging:
                state.update(cells=[], trial=None, verdict=None)
        elif kind == "baseline":
            _ok, why, _seconds = message[1:]
            if not _ok:
                if why.startswith(BASELINE_STOPPED_BY_CHECK):
                    state["unchecked_baseline"] = why
                else:
                    plan.failure = why
                return True
        elif kind == "result":
            self.store_result(message[1])
        elif kind == "short_of_memory":  # the worker ends: the substrate is not run on (see _SubstrateRun.short_of_memory)
            plan.ran_out_of_memory(message[1], message[2], self.remaining)
            state["current"] = None
            return True
        elif kind == "retry":  # the worker ends; its next one starts with this mutant
            _move_to_front(self.remaining, message[1])
            if state["queued"] == message[1]:  # its queued trials failed the device: a trial at a time next
                self.rows_alone.add(message[1])
            state["current"] = None
        elif kind == "step_timeout":
            plan.step_timeout = float(message[1])
        elif kind == "parked" and not plan.parked_said:
            plan.parked_said = True
            self.progress.note(parked_note(plan.name, *message[1:]))
        elif kind == "row_timeout":
            plan.row_timeout = float(message[1])
        elif kind in JUDGING_MESSAGES:
            _judging_message(message, state, checker_key(plan.source_sha256, self.backend), self.store)
        elif kind == "done":
            return True
        return False

    def store_result(self, result: dict) -> None:
        mutant_id = result["mutant_id"]
        key = ResultKey(self.plan.source_sha256, self.backend, mutant_id)
        self.remaining.remove(mutant_id)
        self.state["current"] = None
        if result.get("checkers_apart"):
            updated = with_checkers(self.store.get(key), result["checkers"])
            self.store.put(key, updated)
            if self.apart.pop(mutant_id, False):
                self.progress.done(updated.get("status", ""))
            return
        self.store.put(key, merged_result(self.store.get(key), result) if self.judging else result)
        _remember_digest(self.known_digests, result)
        self.progress.done(result["status"])
        if judged_apart(result):  # its fault ended the worker before the checkers: the next worker judges it first
            self.apart[mutant_id] = False
            self.remaining.insert(0, mutant_id)


def run_plan(plan: Plan, args, backend: str, store: ResultStore, progress: Progress, starter: WorkerStarter,
             worker_time: WorkerTime, start_times: StartTimes | None = None) -> bool:
    """Run one substrate's remaining mutants in warm workers, restarting one after a fault or a timeout;
    `start_times` hears of its workers' milestones. Whether the substrate ended: every mutant judged, or a failure
    that stops it (False where an interrupt cut it short)."""
    remaining = list(plan.to_run)
    baseline_needed = True
    check = checks_addresses(args, backend)
    batch_size = args.batch_size
    plan_batches = batches([m.id for m in plan.mutants], batch_size)  # as the compile pool compiled them
    judging = judges_every_trial(args)
    # A stored mutant run again (for its cells or a checker's verdict) is no duplicate of its own stored code.
    known_digests = _known_digests(plan, store, backend, set(remaining) if judging else set())
    rows_alone: set[str] = set()
    # Resumed mutants the checkers are still to judge apart: counted done once they are.
    apart = {m: True for m in remaining
             if judging and judged_apart(store.get(ResultKey(plan.source_sha256, backend, m)))}
    while remaining and not interrupted(args):
        handle = _PlanMessages(plan, backend, store, progress, remaining, known_digests, judging, start_times,
                               rows_alone, apart)
        state = handle.state
        job = _plan_job(plan, args, backend, remaining, plan_batches, batch_size, baseline_needed, known_digests,
                        check, rows_alone, set(apart))
        warm = getattr(args, "spare_workers", "") == "warm" and plan.t0_bytes <= WARM_SPARE_MAX_T0_BYTES
        # What a spare is warmed with: the substrate, as this job names it; the mutants come with the job.
        spec = dataclasses.replace(job, mutant_ids=(), batches=(), known_digests=(), run_baseline=False,
                                   step_timeout=None, learn_batches=())
        try:
            _timed_converse(worker_time, job, handle, WarmingStarter(starter, spec) if warm else starter)
        except WorkerLost as lost:
            if interrupted(args):
                # The signal killed the worker: the mutant it was judging is neither a fault of its own to store nor
                # one to judge again in a fresh worker; the same command judges it when it goes on.
                return False
            if killed_from_outside(lost):
                # No verdict of the mutant: the substrate's mutants not judged go again alone, after the others.
                plan.ran_out_of_memory(plan.name, f"{lost}: {FROM_OUTSIDE}", remaining)
                return True
            current = state["current"]
            if state["compiling_batch"]:
                batch_size = 1  # a batch that hangs or crashes the compiler: each mutant alone, with its own limit
                baseline_needed = False
                continue
            if current is None:
                plan.failure = plan.failure or f"the worker was lost outside any mutant: {lost}"
                return True
            if current in apart and not (_lost_status(lost) is MutantStatus.RUNTIME_ERROR and state["started"] > 1):
                status = _lost_apart(store, ResultKey(plan.source_sha256, backend, current), job, lost)
                remaining.remove(current)
                if apart.pop(current):
                    progress.done(status)
                baseline_needed = False
                continue
            if state["queued"] == current and current not in rows_alone:
                # Lost in a row's queued trials, whichever of them hung or faulted: judged again a trial at a time.
                rows_alone.add(current)
                _move_to_front(remaining, current)
                baseline_needed = False
                continue
            status = _lost_status(lost)
            if status is MutantStatus.RUNTIME_ERROR and state["started"] > 1:
                # A worker that dies may have been broken by an earlier mutant (on the CPU backend a stray
                # write can corrupt the worker's heap, and the crash comes later): the mutant is run again,
                # first in a fresh worker, and only a death there is its own.
                _move_to_front(remaining, current)
                baseline_needed = False
                continue
            detail = str(lost) + (" (the first mutant of a fresh worker)" if state["started"] == 1 else "")
            lost_result = {"mutant_id": current, "status": status.value, "detail": detail, "seconds": 0.0,
                           "ptx_sha256": ""}
            key = ResultKey(plan.source_sha256, backend, current)
            store.put(key, merged_result(store.get(key), lost_row(lost_result, state, job)) if judging else lost_result)
            remaining.remove(current)
            progress.done(status.value)
        if plan.failure:
            return True
        if state.get("unchecked_baseline"):
            # What the check stopped is memory its table does not know of, not a fault: without the check, as
            # before it, a fault ends the worker.
            progress.note(f"{plan.name}: {state['unchecked_baseline']}; its mutants run without the address check")
            check = False
            continue
        baseline_needed = False
    return not remaining


def interrupted(args) -> bool:
    """Whether the campaign was asked to stop: args.interruption (harness.interrupt.Interruption) is set by the
    signal handler of harness.campaign.main, which has killed every worker; a cluster's item has none."""
    interruption = getattr(args, "interruption", None)
    return interruption is not None and interruption.stopped()


def judges_every_trial(args) -> bool:
    """Whether every mutant runs every trial (--matrix) or is judged again by checkers (--checker)."""
    return bool(getattr(args, "matrix", False) or getattr(args, "checker", None))


def _known_digests(plan: Plan, store: ResultStore, backend: str, again: set[str]) -> dict[str, str]:
    """Every judged mutant's code but those of `again` (run again), so a restarted worker (or a resumed campaign)
    still finds duplicates."""
    known = {}
    for mutant in plan.mutants:
        record = store.get(ResultKey(plan.source_sha256, backend, mutant.id))
        if record is not None and mutant.id not in again:
            _remember_digest(known, record)
    return known


def _lost_apart(store: ResultStore, key: ResultKey, job: CampaignJob, lost: WorkerLost) -> str:
    """A mutant the checkers judged apart whose worker was lost: its stored result, the checkers not judged, for
    good (a resumed campaign does not run it again); returns its stored status."""
    from harness.checkers.under_test import CheckerVerdict

    why = CheckerVerdict(None, f"not judged: its worker was lost while a checker ran it apart ({lost})").to_json()
    updated = with_checkers(store.get(key), {spec: why for spec in job.checkers})
    store.put(key, updated)
    return updated.get("status", "")


def _plan_job(plan: Plan, args, backend: str, remaining: list[str], plan_batches: list, batch_size: int,
              baseline_needed: bool, known_digests: dict, check: bool, rows_alone: set[str],
              apart: set[str] = frozenset()) -> CampaignJob:
    """The job for a worker of the plan, as run_plan's state now says."""
    waiting = set(remaining)
    return CampaignJob(file=plan.file, name=plan.name, backend=backend, mutant_ids=tuple(remaining),
                       batches=tuple(b for b in plan_batches if waiting & set(b)) if batch_size > 1 else (),
                       run_baseline=baseline_needed, step_timeout=plan.step_timeout, batch_size=batch_size,
                       known_digests=tuple(known_digests.items()),
                       stderr_log=str(worker_log(args)), cache_dir=str(args.cache_dir) if args.cache_dir else None,
                       kb_root=str(args.kb_root) if args.kb_root else None, check_addresses=check,
                       schemata=uses_schemata(args, backend), matrix=bool(getattr(args, "matrix", False)),
                       checkers=tuple(getattr(args, "checker", None) or ()), learn_batches=plan.learn_batches,
                       row_timeout=plan.row_timeout, rows_alone=tuple(sorted(rows_alone & waiting)),
                       checkers_apart=tuple(sorted(apart & waiting)),
                       device_share_bytes=getattr(args, "device_share_bytes", None),
                       time_kernels=times_kernels(args))


# What a --matrix or --checker worker says beside a campaign's other messages (harness.engine.worker).
JUDGING_MESSAGES = frozenset({"row", "trial", "cell", "suites_verdict", "checkers_unmutated", "queued"})


def _judging_message(message: tuple, state: dict, unmutated_key: ResultKey, store: ResultStore) -> None:
    """The row so far (--matrix), kept in `state` for a worker that dies (lost_row); the checkers' verdicts on the
    unmutated kernel, stored under `unmutated_key`."""
    kind = message[0]
    if kind == "row":
        state["cells"], state["trial"], state["queued"] = [], None, None
    elif kind == "queued":  # the row's trials queued at once: a loss before the next cell is any of theirs
        state["queued"] = message[1]
    elif kind == "trial":
        state["trial"], state["queued"] = message[1:], None
    elif kind == "cell":  # the trial is over: a loss after it is none of the row's
        state["cells"].append(message[1])
        state["trial"], state["queued"] = None, None
    elif kind == "suites_verdict":  # the checkers run next: a loss now is theirs, the suites' verdict stands
        state["verdict"] = message[1:]
    elif kind == "checkers_unmutated":
        store.put(unmutated_key, merged_result(store.get(unmutated_key), {"checkers": message[1]}))


def judged_apart(record: dict | None) -> bool:
    """Whether a stored mutant's checkers are still to judge it apart, in a fresh worker
    (harness.checkers.under_test.CheckerVerdict.apart)."""
    return any(verdict.get("apart") for verdict in (record or {}).get("checkers", {}).values())


def checker_key(source_sha256: str, backend: str) -> ResultKey:
    """Where the checkers' verdicts on a substrate's unmutated kernel are stored."""
    return ResultKey(source_sha256, backend, "|unmutated|checkers")


def merged_result(stored: dict | None, result: dict) -> dict:
    """A mutant's new result over its stored one: the cells and checker verdicts this run did not make are kept (a
    mutant run again for one checker keeps the others' verdicts)."""
    if stored is None:
        return result
    merged = {**result, "checkers": {**stored.get("checkers", {}), **result.get("checkers", {})}}
    if "cells" not in result and "cells" in stored:
        merged["cells"] = stored["cells"]
    if not merged["checkers"]:
        del merged["checkers"]
    return merged


def with_checkers(stored: dict | None, verdicts: dict) -> dict:
    """A stored result with `verdicts` (spec: CheckerVerdict's JSON) over its checkers' own, the rest as stored."""
    stored = stored or {}
    return {**stored, "checkers": {**stored.get("checkers", {}), **verdicts}}


def lost_row(result: dict, state: dict, job: CampaignJob) -> dict:
    """The result of a mutant whose worker was lost, under --matrix and --checker: its row so far ended by a cell of
    the loss on the trial it was running (its status then the row's: matrix.row_verdict), no checker's verdict; lost
    while a checker ran, the suites' verdict, which the worker had sent."""
    from harness.checkers.under_test import CheckerVerdict
    from harness.engine.matrix import Cell, CellStatus, row_verdict

    result = dict(result)
    if job.checkers:
        what = "while a checker ran it" if state.get("verdict") else "on the suites"
        why = f"not judged: its worker was lost {what} ({result['detail']})"
        result["checkers"] = {spec: CheckerVerdict(None, why).to_json() for spec in job.checkers}
    if job.matrix:
        cells = [Cell.from_json(cell) for cell in state["cells"]]
        if state.get("trial"):
            suite, trial = state["trial"]
            lost = CellStatus.TIMEOUT if result["status"] == MutantStatus.TIMEOUT.value else CellStatus.FAULT
            cells.append(Cell(suite, trial, lost, "", result["detail"]))
        if cells:
            result["status"], result["detail"] = row_verdict(cells)
        result["cells"] = [cell.to_json() for cell in cells]
    if state.get("verdict"):
        result["status"], result["detail"] = state["verdict"]
    return result


def checks_addresses(args, backend: str) -> bool:
    """Whether the campaign's mutants run address-checked: on cuda, unless --address-check off or --naive (which
    runs each mutant as KernelBench-style tools do)."""
    return backend == "cuda" and getattr(args, "address_check", "on") == "on" and not getattr(args, "naive", False)


def times_kernels(args) -> bool:
    """Whether the campaign's backends time their kernels (--kernel-times)."""
    return bool(getattr(args, "kernel_times", False))


def uses_schemata(args, backend: str) -> bool:
    """Whether the mutants a substrate's schema switches (harness.engine.schema) run from it: campaigns that batch,
    on the CPU backend and on cuda address-checked, unless --schemata off (or --naive)."""
    return ((checks_addresses(args, backend) or (backend == "cpu" and not getattr(args, "naive", False)))
            and getattr(args, "schemata", "on") == "on" and getattr(args, "batch_size", 2) > 1)


FROM_OUTSIDE = ("SIGKILL comes from outside the worker (nothing of the harness's or of a kernel's sends it), most "
                "often the host's out-of-memory killer")


def killed_from_outside(lost: WorkerLost) -> bool:
    """Whether a worker was SIGKILLed by something other than the campaign's own timeout (which says so): the host's
    out-of-memory killer beside the other workers' draws and parked trials, most often; never the kernel's doing."""
    return not lost.timed_out and lost.exitcode == -signal.SIGKILL


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
        if interrupted(args):
            return
        outcome = {}

        def handle(message) -> bool:
            if message[0] == "step_timeout":
                plan.step_timeout = plan.step_timeout or float(message[1])
            elif message[0] == "result":
                outcome.update(message[1])
            elif message[0] == "short_of_memory":
                plan.ran_out_of_memory(message[1], message[2], plan.to_run[plan.to_run.index(mutant_id):])
            return message[0] in ("done", "short_of_memory")

        with tempfile.TemporaryDirectory(prefix="naive-cache-") as cache:
            job = CampaignJob(file=plan.file, name=plan.name, backend=backend, mutant_ids=(mutant_id,),
                              run_baseline=False, step_timeout=plan.step_timeout, cache_dir=cache,
                              check_equivalence=False, batch_size=1, stderr_log=str(worker_log(args)),
                              kb_root=str(args.kb_root) if args.kb_root else None,
                              device_share_bytes=getattr(args, "device_share_bytes", None),
                              time_kernels=times_kernels(args))
            try:
                _timed_converse(worker_time, job, handle, starter, keep_worker=False)  # a fresh one each
            except WorkerLost as lost:
                if interrupted(args):
                    return
                status = _lost_status(lost)
                outcome = {"mutant_id": mutant_id, "status": status.value, "detail": str(lost)}
        if plan.failure:
            return
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


def prepare_campaign_worker(backend: str, stderr_log: str, settings: tuple | None = None) -> None:
    """What every campaign worker does before its job: its stderr to the log, the imports, and with `settings`
    (harness.engine.worker.backend_settings) its backend made."""
    _send_stderr_to(stderr_log)
    import_ahead(backend)
    if settings is not None:
        make_backend_ahead(backend, settings)


def _send_stderr_to(path: str) -> None:
    log = open(path, "a", buffering=1)
    os.dup2(log.fileno(), 2)
    sys.stderr = log


def _campaign_worker_main(job: CampaignJob, conn) -> None:
    """A worker's jobs: ("done", may take another) after each; one that may waits for its slot's next job, which
    finds its backend (its CUDA context) made, or is stopped."""
    if job.stderr_log:  # one log for every job of a campaign
        _send_stderr_to(job.stderr_log)
    processor_since = 0.0
    while True:
        reusable = run_campaign_job(job, conn, processor_since=processor_since)
        conn.send(("done", reusable))
        if not reusable:
            return
        processor_since = time.process_time()
        _target, (job,) = conn.recv()  # _timed_converse's next (_campaign_worker_main, (job,))


def _campaign_worker_warm(spec: CampaignJob, conn) -> None:
    """A spare warmed ahead (WarmingStarter): `spec`'s substrate made ready, then the job it is given."""
    if spec.stderr_log:
        _send_stderr_to(spec.stderr_log)
    run_campaign_job(spec, conn, wait_for_job=True)
    conn.send(("done", False))


# MEASUREMENTS.md, twenty-fourth session: on an H200 with 16 cores, the checked campaign over the 28 ran 69.43 mutants/s
# with 4 workers and 102.14 with 12 in one call (16: 82.65, an earlier session): 12, leaving the compile pool and the
# parent a quarter of the cores.
WORKERS_PER_GPU = 12
WORKER_CORE_SHARE = 3 / 4


def spares_wanted(mode: str, workers: int, cpu_cores: int) -> bool:
    """Whether each worker slot keeps a worker started ahead.

    A spare's imports take CPU time: on a machine whose cores the workers already fill they only
    slow the workers (measured in MEASUREMENTS.md), so auto starts spares only where each worker
    and its spare can have a core.
    """
    if mode == "auto":
        return 2 * workers <= cpu_cores
    return mode in ("always", "warm")


def spare_mode(requested: str, backend: str, workers: int, cpu_cores: int) -> str:
    """--spare-workers as a local campaign runs it: never, always (started ahead) or warm (started ahead and given
    its slot's substrate). auto, where each worker and its spare can have a core: warm on the CUDA backend, whose
    workers a fault ends (on the H200 over the 28, 4 workers: 24.57 against 22.75 mutants/s, MEASUREMENTS.md),
    started ahead on the CPU backend, whose workers seldom end (a warmed spare's trials would be a cost there).
    Address-checked at 12 workers, spares started ahead with their contexts made and a pool on every core took
    the campaign from 89.64 to 82.03 mutants/s (MEASUREMENTS.md, twenty-first session): no spare there."""
    if requested != "auto":
        return requested
    if not spares_wanted(requested, workers, cpu_cores):
        return "never"
    return "warm" if backend == "cuda" else "always"


def default_workers(gpus: int, cpu_cores: int) -> int:
    """Workers when --workers is not given: several per GPU, since a worker leaves its GPU idle while its
    Python builds references and compares; but no more than three quarters of the cores that run that Python (the
    rest compile ahead, in the pool, and run the parent)."""
    if not gpus:
        return 1
    return max(1, min(WORKERS_PER_GPU * gpus, int(cpu_cores * WORKER_CORE_SHARE)))


def workers_that_fit(per_gpu: int, worker_bytes: list[int], gpu_bytes: int | None) -> int:
    """At most `per_gpu` workers a GPU, fewer where the largest substrates' workers would not fit in its memory
    together: a campaign worker keeps every trial of its substrate on the device, and the slots take the largest
    substrates first, side by side. `worker_bytes`: each substrate's worker's estimate
    (harness.gate.scheduling.estimate_bytes of its T0); `gpu_bytes` None: not known, no limit. At least one. Pure."""
    largest = sorted(worker_bytes, reverse=True)[:per_gpu]
    if gpu_bytes is None or sum(largest) <= gpu_bytes:
        return per_gpu
    return max(1, sum(1 for together in itertools.accumulate(largest) if together <= gpu_bytes))
