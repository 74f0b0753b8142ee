"""A campaign worker's large draws made at once in helper processes: T0's trials and the KernelBench checkers' inputs.

KernelBench's get_inputs() draws with the CPU generator, one value after another: at real sizes seconds a gigabyte
(kb_argmax: 8 GiB a trial, about 13 s a draw on the H200's host). A campaign worker at real size drew its five T0
trials, then the KernelBench checkers' five trials, then the t0 checker's five, one after the other: 131.7 s of
checkers' draws and 77.6 s of T0 for kb_argmax's first mutant. Here each draw is one task of a helper process, its
large tensors made in shared memory (harness.gate.shared_draws) so that handing them back copies nothing, a few
at a time (as many as fit in HOST_SHARE of the host's available memory, at most half the cores) and the next
started as one is taken. The values are the worker's own: a T0 trial is its builder under the gate's first
determinism seed (on the CPU, as the gate's helpers build it), a checker's trial get_inputs() under eval.py's seed,
and torch's CPU draws are a function of the seed alone. A draw that fails in a helper (a get_inputs() that asks for
a GPU, which a helper does not have) is made in the worker, as before.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Callable

AHEAD_FROM_BYTES = 256 * 2**20  # a trial's draw: below, a helper's start (it imports torch) costs more than it saves
HOST_SHARE = 0.25  # of the host's available memory, for the draws helpers hold until the worker takes them

_helper: dict = {}


def helpers_for(trial_bytes: int, draws: int, cores: int | None, available: int | None) -> int:
    """How many draws to make at once, one helper each: within half the cores and HOST_SHARE of the available memory;
    none below AHEAD_FROM_BYTES a trial, or where fewer than two would run."""
    if trial_bytes < AHEAD_FROM_BYTES or not available:
        return 0
    count = min(draws, max(1, (cores or 2) // 2), int(HOST_SHARE * available) // trial_bytes)
    return count if count >= 2 else 0


class DrawsAhead:
    """`task(key)` for each of `keys`, in order, in `helpers` processes started with `initializer(*initargs)`; at most
    `helpers` drawn and not yet taken. `take(key)` hands one over once, None where no helper drew it."""

    def __init__(self, keys: list, helpers: int, initializer: Callable, initargs: tuple, task: Callable,
                 start_method: str = "spawn"):
        self._keys, self._next, self._task = list(keys), 0, task
        self._futures: dict = {}
        self._pool: ProcessPoolExecutor | None = None
        self.failures: list[str] = []  # why a draw was made in the worker after all
        if helpers < 1:
            return
        # A campaign worker is a daemonic process, to which multiprocessing refuses children; the helpers watch it.
        multiprocessing.current_process().daemon = False
        try:
            self._pool = ProcessPoolExecutor(max_workers=helpers, mp_context=multiprocessing.get_context(start_method),
                                             initializer=initializer, initargs=initargs)
            for _ in range(helpers):
                self._submit_next()
        except Exception as error:
            self._failed(f"the helpers could not start ({type(error).__name__}: {error})")
            self.close()

    def _failed(self, why: str) -> None:
        """Said on stderr (a campaign's workers' log) and kept: the draw is made in the worker instead."""
        self.failures.append(why)
        print(f"draws ahead: {why}; drawn in the worker instead", file=sys.stderr, flush=True)

    def _submit_next(self) -> None:
        if self._pool is not None and self._next < len(self._keys):
            key = self._keys[self._next]
            self._next += 1
            self._futures[key] = self._pool.submit(self._task, key)

    def take(self, key) -> list | None:
        future: Future | None = self._futures.pop(key, None)
        if future is None:
            return None
        self._submit_next()  # the next draw starts while this one is handed over
        try:
            values, error = future.result()
        except Exception as lost:  # the helper died, or what it drew could not be handed back
            values, error = None, f"{type(lost).__name__}: {lost}"
        if error is not None:
            self._failed(f"{key}: {error}")
        if not self._futures:
            self.close()  # every draw handed over: the helpers are done
        return values

    def close(self) -> None:
        from harness.processes import abandon_pool

        pool, self._pool = self._pool, None
        abandon_pool(pool, self._futures)


# ---------------------------------------------------------------- the KernelBench checkers' trials


def _problem_helper_start(worker_pid: int, kb_file: str, path: str) -> None:
    # No GPU here: a draw made on one (a get_inputs() that asks for it) is the worker's, on its own device.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import torch

    from harness.interrupt import die_quietly_on_interrupt
    from harness.problems import load_problem_file
    from harness.watch import watch_parent

    die_quietly_on_interrupt()  # Ctrl-C at the terminal: the campaign says so once, not a traceback a helper
    watch_parent(worker_pid)  # a worker that ends takes its helpers with it
    torch.set_num_threads(1)  # one generator draws: more threads would only compete with the worker's
    _helper["problem"] = load_problem_file(kb_file, Path(path))


def _kernelbench_draw(seed: int):
    """(get_inputs() under eval.py's trial `seed`, None), or (None, why it could not be drawn here)."""
    import torch

    from harness.checkers.kernelbench import set_seed
    from harness.gate.shared_draws import draws_in_shared_memory
    from harness.gate.trial_inputs import SHARED_DRAWS_FROM_BYTES

    try:
        set_seed(torch, seed, on_gpu=False)
        with draws_in_shared_memory(SHARED_DRAWS_FROM_BYTES):
            return list(_helper["problem"].get_inputs()), None
    except Exception as error:
        return None, f"{type(error).__name__}: {error}"


def kernelbench_draws(problem, seeds: list[int], helpers: int, start_method: str = "spawn") -> DrawsAhead:
    """get_inputs() under each of `seeds`, drawn by `helpers` processes."""
    return DrawsAhead(seeds, helpers, _problem_helper_start, (os.getpid(), problem.kb_file, str(problem.path)),
                      _kernelbench_draw, start_method)


KERNELBENCH_CHECKERS = ("kernelbench", "kernelbench-v0")


def for_kernelbench_checkers(checkers, problem, trial_bytes: int) -> DrawsAhead | None:
    """Where a campaign's `checkers` (their --checker names) include a KernelBench one, its trials' draws started for
    `problem` by helpers, where a draw of about `trial_bytes` (T0's first trial's: a draw of get_inputs()'s) gains;
    None otherwise (the worker draws them)."""
    if not any(spec in KERNELBENCH_CHECKERS for spec in checkers):
        return None
    from harness.checkers.kernelbench import trial_seeds
    from harness.gate.trial_inputs import host_memory_available

    seeds = trial_seeds()
    helpers = helpers_for(trial_bytes, len(seeds), os.cpu_count(), host_memory_available())
    return kernelbench_draws(problem, seeds, helpers) if helpers else None


# ---------------------------------------------------------------- T0's trials


def _t0_helper_start(worker_pid: int, candidate_file: str, name: str, kb_file: str, path: str) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    from harness.gate.trial_inputs import _helper_start

    _helper_start(worker_pid, candidate_file, name, kb_file, path)


def _t0_build(t: int):
    """(T0 trial t as the gate's helpers build it, None), or (None, why it could not be built here)."""
    from harness.gate.trial_inputs import DETERMINISM_SEEDS, _builder_task

    inputs, error = _builder_task(t, DETERMINISM_SEEDS[0], False)
    return (inputs, None) if error is None else (None, str(error))


def for_t0(entry, problem, n_trials: int, trial_bytes: int, start_method: str = "spawn") -> DrawsAhead | None:
    """T0's trials after its first (built in the worker, `trial_bytes` large) built by helpers, where a trial that
    large gains; None otherwise. (The first trial's size, not get_inputs() on the meta device: some of its ops import
    torch._dynamo there, 1 to 2 s of every campaign worker's start.)"""
    from harness.gate.trial_inputs import host_memory_available

    helpers = helpers_for(trial_bytes, n_trials - 1, os.cpu_count(), host_memory_available())
    if helpers < 1:
        return None
    return DrawsAhead(list(range(1, n_trials)), helpers, _t0_helper_start,
                      (os.getpid(), str(entry.file), entry.name, problem.kb_file, str(problem.path)), _t0_build,
                      start_method)
