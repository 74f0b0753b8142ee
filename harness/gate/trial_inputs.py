"""Where a trial's inputs come from: built in the worker, or (a T0 of 16 MiB a trial or more) drawn ahead.

Every trial is built by its builder under a fixed global RNG state (`DETERMINISM_SEEDS[0]`); a
builder must not depend on that state, so a trial that is not T0 bit-identical to get_inputs() is
built a second time under another state and must come out the same. T0 trial t is also set
beside get_inputs() under `torch.manual_seed(1000 + t)` (harness.gate.checks.suite_rules compares them).

A KernelBench level-1 get_inputs() draws gigabytes with the CPU generator, one value after
another (about 10 s for 6.4 GB), and each T0 trial needs two such draws: the candidate's and the
official one. Both use the process's one global generator, so they cannot share a process's
threads; `TrialInputs` draws them in helper processes, trials ahead of the one the worker
runs (as many as `helper_plan` finds room for in host memory), and hands them back through shared
memory while the worker's GPU work and the CPU references go on (their large draws are made in shared memory from
the start, harness.gate.shared_draws: handing a trial back copies nothing). Once a trial came out identical to
get_inputs()'s, each next one goes to one helper (`_combined_task`) that draws get_inputs() and gives the builder
those draws where it makes the same calls: one draw a trial, held once, so that twice as many trials fit ahead. A
trial that is not identical (a T0 drawn from get_inputs()'s distribution) sends the next to two helpers again,
which draw them at once.
A helper that cannot start or hand a trial back (no shared memory, a crash) makes the worker build that trial
itself, and the report is the same either way.

How the helpers start decides when they pay. A gate worker forks them (`start_early`) before it
creates its backend: it has no CUDA state to hand on, and a forked helper has torch and the
candidate already, so it starts in milliseconds, and from FORKED_HELPERS_FROM_BYTES on (a few
hundred milliseconds of draws per trial) drawing in parallel gains. A T0 reached without that
(its problem would not load early) gets spawned helpers, which import torch (seconds each), and
only from HELPERS_FROM_BYTES on. A builder of the form builder(t, device)
is given device cpu in a helper (a helper holds no CUDA state): the trial is the same tensors.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch

from harness.candidates import builder_output
from harness.gate.checks.guards import tensor_checksum
from harness.gate.scheduling import FORKED_HELPERS_FROM_BYTES
from harness.gate.shared_draws import DrawLog, draws_in_shared_memory

DETERMINISM_SEEDS = (0x5EED, 0xD1CE)
HELPERS_FROM_BYTES = 256 * 2**20  # spawned helpers
SUMS_FROM_BYTES = 256 * 2**20  # a rebuilt trial this large is compared by byte sums, not element by element
SHARED_DRAWS_FROM_BYTES = 16 * 2**20  # a helper's draws this large are made in shared memory (gate.shared_draws)
MAX_TRIALS_AHEAD = 3
HOST_MEMORY_SHARE = 0.5  # of the host's available memory, for the trials the helpers hold (the rest: the worker's
#                          own trial, the CPU second references, other jobs)


def host_memory_available() -> int | None:
    """MemAvailable of /proc/meminfo in bytes, or None where the system does not say."""
    return _meminfo("MemAvailable:")


def host_memory_total() -> int | None:
    """MemTotal of /proc/meminfo in bytes, or None where the system does not say."""
    return _meminfo("MemTotal:")


# Of the host's memory, the share a campaign worker leaves available beside what it holds there past its trials on
# the device (the checkers' kept draws, its parked trials): its next draws, the other workers', the system's.
HOST_RESERVE_SHARE = 0.25


def keeps_host_reserve(taking: int = 0, reserve_share: float = HOST_RESERVE_SHARE) -> tuple[bool, int, int] | None:
    """(whether the host's available memory less `taking` bytes is still `reserve_share` of the whole, what it would
    be, the whole), or None where the system does not say."""
    available, total = host_memory_available(), host_memory_total()
    if available is None or not total:
        return None
    return available - taking >= reserve_share * total, available - taking, total


def _meminfo(field: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def helper_plan(trial_bytes: int, cores: int | None, available: int | None, draws: int = 2) -> tuple[int, int]:
    """(helper processes, trials ahead) for a T0 whose trials are `trial_bytes` each.

    While the worker waits for a trial, the helpers hold it and the trials ahead of it (TrialInputs.t0 hands out
    the next before it waits), `draws` each in shared memory: two (the candidate's and get_inputs()'s), or one where
    the builder is given get_inputs()'s draws (_combined_task). As many are held as fit in HOST_MEMORY_SHARE of the
    available memory: up to MAX_TRIALS_AHEAD ahead, and none ahead where the trial waited for fills it alone (a
    16 GiB get_inputs() of 45_Average_Pooling_2D, two trials at once, took a 128 GiB host's memory: the system killed
    a helper). Three helpers per trial held, at most half the cores (a helper is one thread: the rest serve the CPU
    references and the worker).
    """
    held = MAX_TRIALS_AHEAD + 1
    if available and trial_bytes:
        held = max(1, min(held, int(HOST_MEMORY_SHARE * available) // (draws * trial_bytes)))
    ahead = held - 1
    processes = max(1, min((cores or 2) // 2, 3 * max(1, ahead)))
    return processes, ahead


def ahead_by_draws(trial_bytes: int, cores: int | None, available: int | None, processes: int) -> dict[int, int]:
    """Trials ahead for a T0 drawn twice a trial (helper_plan's) and once ({draws: ahead}).

    Drawn once, twice as many trials fit in the bytes the two-draw plan gives the helpers, and no more: the rest of the
    host holds the worker's trial and the CPU's second references, which for the largest T0s outgrow the plan's other
    half (kb_avgpool2d's float64 route on the CPU, about 64 GiB beside its 16 GiB draws, ran on a 128 GiB host with
    the two-draw plan). A trial drawn once is one helper's task: no more in flight than `processes`."""
    two = helper_plan(trial_bytes, cores, available)[1]
    one = min(helper_plan(trial_bytes, cores, available, draws=1)[1], 2 * (two + 1) - 1, processes - 1)
    return {2: two, 1: max(two, one)}


@dataclass
class BuiltTrial:
    """One trial's inputs (on whatever device the builder chose), or the error building them raised."""

    inputs: list | None = None
    error: Exception | None = None
    official: list | None = None  # T0 only: get_inputs() under torch.manual_seed(1000 + t)
    official_error: Exception | None = None
    difference: str = ""  # not deterministic: how the second build differed
    identical: bool = False  # T0: bit-identical to get_inputs() under its seed (found while building)


def _build(builder, t: int, device, seed: int) -> list:
    """The trial's inputs, built under global RNG state `seed` (restored afterwards)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return builder_output(builder, t, device)


def build_trial(builder, t: int, device) -> list:
    """Trial t's inputs as the gate builds them: under its first determinism seed."""
    return _build(builder, t, device, DETERMINISM_SEEDS[0])


def _same_values(first: list, second: list) -> bool:
    from harness.gate.checks.suite_rules import first_difference

    return not first_difference(first, second)


def _sums(inputs: list) -> list:
    return [tensor_checksum(x) if isinstance(x, torch.Tensor) else repr(x) for x in inputs]


def _sum_difference(first_sums: list, second_sums: list) -> str:
    if len(first_sums) != len(second_sums):
        return f"{len(first_sums)} inputs, then {len(second_sums)}"
    for i, (a, b) in enumerate(zip(first_sums, second_sums)):
        if a != b:
            return f"input {i} has other contents the second time (byte sums {a} and {b})"
    return ""


def build_here(builder, t: int, device, problem=None) -> BuiltTrial:
    """Build trial t in this process; with `problem`, it is a T0 trial and get_inputs() is drawn beside it."""
    from harness.gate.checks.suite_rules import first_difference, official_inputs

    try:
        inputs = _build(builder, t, device, DETERMINISM_SEEDS[0])
    except Exception as error:
        return BuiltTrial(error=error)
    built = BuiltTrial(inputs)
    if problem is not None:
        try:
            built.official = official_inputs(problem, t)
        except Exception as error:
            built.official_error = error
    # A T0 trial equal to get_inputs() under its seed is deterministic already.
    built.identical = built.official is not None and _same_values(inputs, built.official)
    if not built.identical:
        try:
            again = _build(builder, t, device, DETERMINISM_SEEDS[1])
        except Exception as error:
            return BuiltTrial(error=error)
        big = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor)) >= SUMS_FROM_BYTES
        # A gigabyte trial is compared by its byte sums; a small one element by element, to say where.
        built.difference = _sum_difference(_sums(inputs), _sums(again)) if big else first_difference(inputs, again)
        del again
    return built


def t0_bytes(problem, known: tuple | None = None) -> int:
    """The bytes of get_inputs()'s tensors (`known`: its portable_signature, where discovery made one)."""
    from harness.gate.checks.suite_rules import official_signature

    try:
        inputs = official_signature(problem, known)
    except Exception:
        return 0
    return inputs_bytes(inputs)


def inputs_bytes(inputs: list) -> int:
    return sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))


# ---------------------------------------------------------------- in a helper process

_helper: dict = {}


def _helper_start(worker_pid: int, candidate_file: str, name: str, kb_file: str, problem_path: str,
                  worker_fds: tuple[int, ...] = ()) -> None:
    from harness.candidates import import_candidate, register_candidate
    from harness.interrupt import die_quietly_on_interrupt
    from harness.problems import load_problem_file
    from harness.watch import watch_parent

    die_quietly_on_interrupt()  # Ctrl-C at the terminal: its gate or campaign says so once, not a traceback a helper
    watch_parent(worker_pid)  # a worker killed for a hang takes its helpers with it
    for fd in worker_fds:  # a forked helper's copy of the worker's pipe would keep its death from the gate
        try:
            os.close(fd)
        except OSError:
            pass
    torch.set_num_threads(1)  # a helper draws with one generator: its threads would only compete
    path = Path(candidate_file)
    registered = register_candidate(import_candidate(path), path)
    suites = registered[name]["suites"]()
    _helper["builder"] = dict((n, b) for n, _count, b in suites)["T0_original"]
    _helper["problem"] = load_problem_file(kb_file, Path(problem_path))


def _plain_error(error: Exception) -> Exception:
    # A candidate's own exception class may not unpickle in the worker: hand back its words.
    return RuntimeError(f"{type(error).__name__}: {error}")


def _official_task(t: int, record: DrawLog | None = None):
    from harness.gate.checks.suite_rules import official_inputs

    try:
        with draws_in_shared_memory(SHARED_DRAWS_FROM_BYTES, record=record):  # handed back without a copy
            return official_inputs(_helper["problem"], t), None
    except Exception as error:
        return None, _plain_error(error)


def _builder_task(t: int, seed: int, sums_only: bool):
    try:  # only what is handed back is drawn in shared memory
        with draws_in_shared_memory(SHARED_DRAWS_FROM_BYTES) if not sums_only else contextlib.nullcontext():
            inputs = _build(_helper["builder"], t, torch.device("cpu"), seed)
    except Exception as error:
        return None, _plain_error(error)
    return (_sums(inputs) if sums_only else inputs), None


def _combined_task(t: int):
    """T0 trial t's get_inputs() and the builder's trial in one helper, the builder given get_inputs()'s draws where it
    makes the same ones (harness.gate.shared_draws.DrawLog): one draw serves both, held once. Where the builder
    changed a draw it was given, get_inputs() is drawn again. ((inputs, error), (official, error), draws given)."""
    log = DrawLog()
    official = _official_task(t, record=log)
    try:
        with draws_in_shared_memory(SHARED_DRAWS_FROM_BYTES, replay=log if official[1] is None else None):
            built = _build(_helper["builder"], t, torch.device("cpu"), DETERMINISM_SEEDS[0]), None
    except Exception as error:
        built = None, _plain_error(error)
    if not log.intact():
        official = _official_task(t)
    elif built[1] is None and official[1] is None and _same_values(built[0], official[0]):
        official = built  # drawn alike by other calls: held once all the same (the worker sees the same objects)
    return built, official, log.given if log.intact() else 0


# ---------------------------------------------------------------- in the worker


class TrialInputs:
    """T0's trials, built ahead of need in helper processes when T0 is large (else in the worker)."""

    def __init__(self, candidate_file: str, name: str, builder_device, processes: int | None = None,
                 ahead: int | None = None, from_bytes: int | None = None, worker_fds: tuple[int, ...] = (),
                 memory_share: float = 1.0, official_inputs: tuple | None = None):
        """`processes` and `ahead` default to helper_plan's for this host and the T0's size, in
        `memory_share` of the host's available memory (1 / the gate jobs running at once: jobs that
        start together each see all of it); `from_bytes` to FORKED_HELPERS_FROM_BYTES or
        HELPERS_FROM_BYTES, as the helpers start; `worker_fds` are the worker's own (its pipe to the
        gate), which a forked helper closes; `official_inputs`, get_inputs()'s portable_signature where known."""
        self.candidate_file, self.name, self.device = candidate_file, name, builder_device
        self.processes, self.ahead, self.from_bytes = processes, ahead, from_bytes
        self.memory_share = memory_share
        self.official_inputs = official_inputs
        self.worker_fds = tuple(worker_fds)
        self.problem = None
        self.builder = None
        self.started = False
        self.forked = False
        self._pool: ProcessPoolExecutor | None = None
        self._pending: dict[tuple, Future] = {}
        self._rebuild_eagerly = False
        self._submitted = 0  # trials handed to the helpers: 0 .. _submitted - 1
        # After a trial identical to get_inputs()'s, the next go to one combined task each (_combined_task), as far
        # ahead as a trial of one draw allows (_ahead_by_draws[1]) where `ahead` was planned here. Trial 0 is drawn by
        # two helpers at once where there are two: a T0 drawn from get_inputs()'s distribution (kb_sum_dim's, 8 GiB)
        # would draw its two one after the other in a combined task (start).
        self._combined = False
        self._ahead_by_draws: dict[int, int] | None = None
        self.draws_given = 0  # T0 draws the builder was given from get_inputs()'s, not drawn again
        self.last_drawn_once = False  # whether the last trial handed out came from one combined task
        self.fallback = ""  # why the helpers stopped, when they did

    def start_early(self, entry, search) -> None:
        """Fork T0's helpers now, in a worker that has no CUDA state yet (before its backend exists).

        Whatever keeps T0 from being found here (no kb_file, a problem that does not load, suites()
        raising) leaves the start to the pipeline, which reports it.
        """
        from harness.gate.checks.suite_rules import T0_NAME
        from harness.problems import load_problem

        try:
            problem = load_problem(entry.kb_file, search)
            t0 = [(n, builder) for name, n, builder in entry.suites() if name == T0_NAME]
        except Exception:
            return
        if torch.cuda.is_initialized():  # the candidate's register() or suites() did: a fork would inherit it
            return
        if len(t0) == 1 and type(t0[0][0]) is int and t0[0][0] >= 1 and callable(t0[0][1]):
            self.start(problem, t0[0][1], t0[0][0], fork=True)

    def start(self, problem, builder, n_trials: int, fork: bool = False) -> None:
        """Start the helpers for a T0 of `n_trials` trials by `builder`, if its size calls for them.

        `fork`: only from a process with no CUDA state (start_early); else they are spawned. Once
        started (or found not needed), a later call changes nothing.
        """
        if self.started:
            return
        self.started = True
        self.problem, self.builder, self.n_trials = problem, builder, n_trials
        size = t0_bytes(problem, self.official_inputs)
        from_bytes = self.from_bytes if self.from_bytes is not None else (
            FORKED_HELPERS_FROM_BYTES if fork else HELPERS_FROM_BYTES)
        if (self.processes is not None and self.processes < 1) or size < from_bytes:
            return
        available = host_memory_available()
        budget = int(available * self.memory_share) if available is not None else None
        processes, ahead = helper_plan(size, os.cpu_count(), budget)
        if self.ahead is None:
            self._ahead_by_draws = ahead_by_draws(size, os.cpu_count(), budget, self.processes or processes)
        self.processes = processes if self.processes is None else self.processes
        self.ahead = ahead if self.ahead is None else self.ahead
        self._combined = self.processes < 2  # one helper draws both builds in turn anyway: one task gives one draw
        # A gate worker is a daemonic process, to which multiprocessing refuses children; its helpers
        # watch it instead (_helper_start) and exit when it is gone, as it does for its own parent.
        multiprocessing.current_process().daemon = False
        try:
            self._pool = ProcessPoolExecutor(
                max_workers=self.processes, mp_context=multiprocessing.get_context("fork" if fork else "spawn"),
                initializer=_helper_start,
                initargs=(os.getpid(), self.candidate_file, self.name, problem.kb_file, str(problem.path),
                          self.worker_fds if fork else ()))
            self.forked = fork
        except Exception as error:
            self._stop(f"the helper processes could not start ({type(error).__name__}: {error})")
            return
        self._submit_through(self.ahead - 1)

    @property
    def helping(self) -> bool:
        """Whether T0's trials come from helper processes (else the worker builds them itself)."""
        return self._pool is not None

    _TASKS = {"official": lambda t: (_official_task, t),
              "built": lambda t: (_builder_task, t, DETERMINISM_SEEDS[0], False),
              "again": lambda t: (_builder_task, t, DETERMINISM_SEEDS[1], True),  # sums only
              "combined": lambda t: (_combined_task, t)}

    def _hand_over(self, t: int, kinds: tuple[str, ...]) -> None:
        """Give the helpers trial t's tasks of these kinds; a pool that refuses ends the helping."""
        if self._pool is None or t >= self.n_trials:
            return
        try:
            for kind in kinds:
                self._pending[(kind, t)] = self._pool.submit(*self._TASKS[kind](t))
        except Exception as error:
            self._stop(f"a helper could not take trial {t} ({type(error).__name__}: {error})")

    def _submit_through(self, last: int) -> None:
        """Hand the helpers every trial up to `last` not handed over yet."""
        for t in range(self._submitted, min(last, self.n_trials - 1) + 1):
            if self._combined:
                kinds = ("combined",)
            else:
                kinds = ("official", "built", "again") if self._rebuild_eagerly else ("official", "built")
            self._hand_over(t, kinds)
            self._submitted = t + 1

    def _submit_rebuilds(self) -> None:
        built = [t for kind, t in self._pending if kind in ("built", "combined")]
        for t in [t for t in built if ("again", t) not in self._pending]:
            self._hand_over(t, ("again",))

    def _draw_once(self, identical: bool) -> None:
        """After a trial identical to get_inputs()'s, the next are drawn once each (_combined_task), held once, and
        planned ahead so; after one that is not, both draws apart again, in two helpers at once. (A T0 identical on
        one trial and not on the next, none of the corpus's, holds two draws a trial for those already handed over
        one-draw ahead.)"""
        if self._ahead_by_draws is not None:
            self.ahead = self._ahead_by_draws[1 if identical else 2]
        self._combined = identical

    def _drawn(self, t: int) -> BuiltTrial:
        """Trial t as the helpers drew it: by one combined task where it went to one, else by two."""
        self.last_drawn_once = ("combined", t) in self._pending
        if self.last_drawn_once:
            built, official, given = self._pending.pop(("combined", t)).result()
            self.draws_given += given
            return BuiltTrial(*built, *official)
        inputs, error = self._result("built", t)
        official, official_error = self._result("official", t)
        return BuiltTrial(inputs, error, official, official_error)

    def _result(self, kind: str, t: int):
        """Trial t's task of this kind: the one handed over ahead, else handed over now."""
        future = self._pending.pop((kind, t), None)
        if future is None and self._pool is not None:
            future = self._pool.submit(*self._TASKS[kind](t))
        return future.result()

    def t0(self, t: int) -> BuiltTrial:
        """T0 trial t with get_inputs() beside it, as build_here would give it."""
        if self._pool is None:
            return build_here(self.builder, t, self.device, self.problem)
        self._submit_through(t + self.ahead)
        try:
            built = self._drawn(t)
            inputs, error, official = built.inputs, built.error, built.official
            built.identical = error is None and official is not None and _same_values(inputs, official)
            self._draw_once(built.identical)
            self._submit_through(t + self.ahead)  # where drawing once let more trials ahead, they start now
            if error is None and not built.identical:
                if not self._rebuild_eagerly:
                    self._rebuild_eagerly = True
                    self._submit_rebuilds()  # the trials already handed out need their second builds too
                again, error = self._result("again", t)
                if error is not None:
                    return BuiltTrial(error=error)
                built.difference = _sum_difference(_sums(inputs), again)
            return built
        except Exception as error:  # the pool broke, or a trial could not be handed back: build it here
            self._stop(f"trial {t} could not come from a helper ({type(error).__name__}: {error}); built in the "
                       f"worker from then on")
            return build_here(self.builder, t, self.device, self.problem)

    def _stop(self, why: str) -> None:
        self.fallback = why
        print(f"gate: {why}", file=sys.stderr, flush=True)
        self.close()

    def close(self) -> None:
        from harness.processes import abandon_pool

        pool, self._pool = self._pool, None
        abandon_pool(pool, self._pending)
