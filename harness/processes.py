"""Worker processes, for the gate and the campaign alike: started fresh, spoken to over a pipe, ended in time.

A fresh process (forked from a fork server that has imported torch and the harness and never
touched a device, or spawned where there is no fork server) is what makes three guarantees hold:
the import-safety proof starts from a process with no CUDA state; a fault that poisons the CUDA
context, a crash or a hang takes down only the substrate that caused it; and the parent, which
never touches CUDA, can always kill a worker that stops making progress (a GPU without a watchdog
runs a stuck kernel forever).

A worker gets its job over its pipe, as (function, arguments), so that it can be started before
the job is known (a campaign keeps one started ahead per worker slot: `WorkerStarter`), and reports
over the same pipe (`converse`): the gate's messages are in harness.gate.worker, the campaign's in
harness.engine.run.
"""
from __future__ import annotations

import functools
import multiprocessing
import multiprocessing.context
import os
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from harness.watch import watch_starter

DEFAULT_STEP_TIMEOUT = 120.0


# Until a worker's first message it is starting Python and importing torch, which on a cold
# machine can take far longer than any step; a hang is only judged after that.
STARTUP_TIMEOUT = 300.0


def quiet_openmp(environment=os.environ) -> None:
    """Make OpenMP threads sleep, not spin, between parallel regions, in processes started after this (or, given
    `environment`, in one started with it).

    libgomp reads it once, when torch loads it, and a spawned worker imports torch before its
    target runs (it re-imports the parent's __main__), so it must be in the environment the
    worker inherits. Its default (spin a while after each region) lets the CPU backend's kernel
    threads starve torch's on a small machine: a gate ran ten times slower. A user's setting wins.
    """
    environment.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class WorkerLost(Exception):
    """The worker stopped without a result: it died, or it made no progress in time (timed_out)."""

    def __init__(self, message: str, timed_out: bool = False, exitcode: int | None = None):
        super().__init__(message)
        self.timed_out = timed_out
        self.exitcode = exitcode  # of a worker that died: negative, the signal that killed it


def exit_description(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _run_watched(target, parent_pid: int, *args) -> None:
    """Run target(*args) in a worker that exits as soon as the process that started it is gone.

    That process is `parent_pid`; a worker forked by the fork server has the server as its parent,
    and the server exits when that process does: either going ends the worker. A Ctrl-C at the
    terminal reaches every process of its group: the worker ends at once and says nothing, while
    the parent reports the interruption. Its job's own code said so too, but a worker still waiting
    for its job (one started ahead) printed a KeyboardInterrupt traceback under bench_gate's table.
    """
    from harness.interrupt import die_quietly_on_interrupt

    die_quietly_on_interrupt()
    watch_starter(parent_pid)
    target(*args)


@dataclass
class StartedWorker:
    """A worker process, waiting for its job on `connection` (the parent's end of its pipe)."""

    process: multiprocessing.process.BaseProcess
    connection: Connection
    warmed: bool = False  # it was sent work ahead (WorkerStarter.warm), done or under way, for the job it is given
    kept: bool = False  # it ran an earlier job of its slot and was kept for this one (WorkerStarter.keep)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10)
        self.connection.close()


# Imported once by the fork server, so that a worker forked from it has them already. None of them
# touches a device: the server has no CUDA state to hand on (cuda.bindings' driver module is left to
# the workers that need it). Not torch._dynamo (800 modules, 1 to 2 s, on the path of every gate and campaign
# before its first worker can start): the poisoned allocations opt out of it (harness.gate.checks.guards), and only discovery,
# building get_inputs() on the meta device, imports it; the workers are handed what it found (GateJob.official_inputs).
# Campaigns too: nothing their workers do imports it or sympy (compare.coords_of, not torch.unravel_index), and on the
# H200 a campaign ran as fast without it as with it (MEASUREMENTS.md, twenty-sixth session).
FORK_SERVER_PRELOAD = ("torch", "numpy", "harness.gate.pipeline", "harness.candidates", "harness.problems",
                       "harness.gate.trial_inputs", "harness.gate.checks.suite_safety", "harness.gate.checks.compare", "harness.gate.checks.guards",
                       "harness.compiler.nvrtc", "harness.compiler.cache", "harness.compiler.batches", "harness.engine.compile", "harness.engine.mutants",
                       "harness.engine.worker", "harness.backends.cpu")


START_METHOD_ENV = "SUBSTRATE_WORKER_START"  # "spawn": every worker spawned, as before the fork server


@functools.cache
def worker_context(method: str | None = None) -> multiprocessing.context.BaseContext:
    """How workers start: forked from a fork server where the platform has one, else spawned; `method` "spawn"
    spawns them whatever the platform (a campaign's --naive mode: each mutant pays a fresh Python's start).

    A spawned worker starts Python and imports torch and the harness, seconds each time, and a
    campaign starts a worker per substrate and again after every fault. The fork server (started
    once, with the first worker, from this process's environment) imports them once and forks each
    worker from itself in milliseconds. It never touches a device, so a worker still starts with
    no CUDA state and the import-safety proof holds as with spawn. SUBSTRATE_WORKER_START=spawn
    spawns every worker instead.
    """
    spawned = "spawn" in (method, os.environ.get(START_METHOD_ENV))
    if spawned or "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(FORK_SERVER_PRELOAD))
    return context


def start_worker(env: dict[str, str] | None = None, prepare=None, method: str | None = None) -> StartedWorker:
    """Start a worker that runs prepare() (imports, say) and then waits for its job; `method` as worker_context's.

    The worker runs in this process's current environment and folder, `env` added (CUDA_VISIBLE_DEVICES,
    say): a forked worker inherits the fork server's, so it is handed them.
    """
    quiet_openmp()  # before the fork server starts: libgomp reads it once, when torch loads it
    context = worker_context(method)
    parent_end, child_end = context.Pipe()
    environment = {**os.environ, **(env or {})}
    process = context.Process(target=_run_watched, daemon=True,
                              args=(_serve, os.getpid(), environment, os.getcwd(), prepare, child_end))
    try:
        process.start()
    except (EOFError, OSError) as error:  # the fork server ended (Ctrl-C kills it with every other descendant)
        parent_end.close()
        child_end.close()
        raise WorkerLost(f"the worker could not be started: {type(error).__name__}: {error or 'the fork server ended'}")
    child_end.close()  # else the parent would never see the pipe close when the worker dies
    return StartedWorker(process, parent_end)


def _serve(environment: dict[str, str], folder: str, prepare, conn) -> None:
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(folder)
    if prepare is not None:
        prepare()
    target, args = conn.recv()
    target(*args, conn)


class WorkerStarter:
    """Starts a worker slot's workers; with `ahead`, keeps one started ahead of need.

    Starting Python and importing torch take seconds, and a campaign starts a worker for every
    substrate and again after every fault; a worker started ahead does that while the slot's
    current worker runs. One that died while it waited is replaced by a fresh start.
    """

    def __init__(self, env: dict[str, str] | None = None, prepare=None, ahead: bool = True, method: str | None = None,
                 stopped=None):
        self.env, self.prepare, self.ahead, self.method = env, prepare, ahead, method
        self.stopped = stopped  # a command's interruption (Interruption.stopped): once it says so, no worker is given
        self._spare: StartedWorker | None = None
        self._spare_key = None  # what the spare was warmed for (WorkerStarter.warm), or None
        self._kept: StartedWorker | None = None  # a worker whose job ended well, waiting for the slot's next (keep)

    def adopt(self, worker: StartedWorker) -> None:
        """Take `worker`, started before this starter existed (a campaign's first workers, started while it plans),
        as the spare the next take() gives out."""
        if self._spare is not None:
            self._spare.stop()
        self._spare, self._spare_key = worker, None

    def keep(self, worker: StartedWorker) -> bool:
        """Hold `worker`, which finished its job and waits for another, for the next take(); False (and it is
        not held) where it has died."""
        if not worker.process.is_alive():
            return False
        if self._kept is not None:
            self._kept.stop()
        self._kept = worker
        return True

    def take(self, key=None) -> StartedWorker:
        """A worker for a job: the kept one (keep), if alive and no spare is warmed for `key`; else the spare, if it
        is alive and cold or warmed for `key`; else one started now.

        A spare warmed for another key is of no use (it holds another substrate's trials) and is stopped. WorkerLost,
        and nothing left running, where `stopped` says the command was interrupted.
        """
        self._refuse_if_stopped()
        kept, self._kept = self._kept, None
        if kept is not None:
            if kept.process.is_alive() and not (key is not None and self._spare_key == key):
                kept.warmed, kept.kept = False, True
                return kept
            kept.stop()
        worker, warmed_for = self._spare, self._spare_key
        self._spare, self._spare_key = None, None
        if worker is None or not worker.process.is_alive() or warmed_for not in (None, key):
            if worker is not None:
                worker.stop()
            worker, warmed_for = start_worker(self.env, self.prepare, self.method), None
        worker.warmed = warmed_for is not None
        if self.ahead:
            self._spare = start_worker(self.env, self.prepare, self.method)
        self._refuse_if_stopped(worker)
        return worker

    def _refuse_if_stopped(self, taken: StartedWorker | None = None) -> None:
        """WorkerLost where the command was interrupted, every worker held (and `taken`) stopped: the interruption's
        kill of every descendant may have come before they existed (the fork server, killed with the rest, is started
        again by the next worker's start), and nothing else would stop them."""
        if self.stopped is None or not self.stopped():
            return
        if taken is not None:
            taken.stop()
        stop_all([self])
        raise WorkerLost("no worker given: the command was interrupted")

    def warm(self, key, target, args) -> None:
        """Send the cold spare `target(*args, conn)`: work it does ahead for a job keyed `key` (a campaign
        worker's trials, say), after which it reads its job as any worker does. take(key) then gives it out."""
        if self._spare is None or self._spare_key is not None:
            return
        try:
            self._spare.connection.send((target, args))
        except OSError:  # died while it waited: take() replaces it
            return
        self._spare_key = key

    def close(self) -> None:
        """Stop the worker started ahead and the one kept, if any."""
        stop_all([self])

    def release(self) -> list[StartedWorker]:
        """The workers this starter holds (started ahead, kept), which it then no longer holds."""
        held = [worker for worker in (self._spare, self._kept) if worker is not None]
        self._spare = self._kept = None
        return held


def stop_all(starters: list[WorkerStarter]) -> None:
    """Stop every worker the `starters` hold, killed all at once and then waited for: a GPU worker's exit destroys its
    CUDA context, which takes a while, and the exits of many go on side by side rather than one after another."""
    workers = [worker for starter in starters for worker in starter.release()]
    for worker in workers:
        if worker.process.is_alive():
            worker.process.kill()
    for worker in workers:
        worker.stop()


def _died(worker: StartedWorker, step: str) -> WorkerLost:
    worker.process.join(10)
    return WorkerLost(f"the worker process died during {step} ({exit_description(worker.process.exitcode)})",
                      exitcode=worker.process.exitcode)


def oom_kills(vmstat: Path = Path("/proc/vmstat")) -> int | None:
    """Processes the kernel's out-of-memory killer has ended since boot (Linux 4.13+), or None where unknown."""
    try:
        for line in vmstat.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return None


def converse(target, args, step_timeout: float, on_message, worker: StartedWorker | None = None,
              keep: bool = False, first=None):
    """Run `target(*args, conn)` in a worker; hand each message to on_message until it returns True.

    `worker` is one already started (`WorkerStarter`); without one a worker is started now. `first`, if given,
    is sent instead of (target, args): the next job of a worker kept waiting (`keep`). Raises WorkerLost naming
    the last step if the worker dies or is silent for step_timeout s. A ("step_timeout", s) message from the
    worker sets step_timeout from then on; a ("step", what, s) message gives that step its own limit, until the next
    step. The worker is stopped however this ends, except that with `keep` one whose conversation ended as
    on_message wished is left running.
    """
    worker = worker or start_worker()
    connection = worker.connection
    step, timeout = "start-up", max(step_timeout, STARTUP_TIMEOUT)
    step_limit = None  # the current step's own limit, where it has one
    finished = False
    try:
        try:
            connection.send((target, args) if first is None else first)
        except OSError:  # a spare that died after it was taken
            raise _died(worker, step)
        while True:
            if not connection.poll(timeout):
                raise WorkerLost(f"timed out after {timeout:g} s during {step} (the worker was killed)", timed_out=True)
            try:
                message = connection.recv()
            except (EOFError, ConnectionResetError):
                # A socket pair's peer that dies with bytes unread (a job sent as it was killed) resets it.
                raise _died(worker, step)
            if message[0] == "step":
                step, step_limit = message[1], (float(message[2]) if len(message) > 2 else None)
            elif message[0] == "step_timeout":
                step_timeout = float(message[1])
            timeout = step_limit or step_timeout
            if on_message(message):
                finished = True
                return
    finally:
        if not (keep and finished):
            worker.stop()


def abandon_pool(pool, pending: dict) -> None:
    """A ProcessPoolExecutor given up on: its `pending` futures cancelled (the dict emptied), no wait for the tasks
    running, its processes killed (a helper drawing gigabytes would go on for seconds, holding them)."""
    for future in pending.values():
        future.cancel()
    pending.clear()
    if pool is None:
        return
    pool.shutdown(wait=False, cancel_futures=True)
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            os.kill(process.pid, 9)
