"""KernelBench's trial draws for the checkers, made at once in helper processes while the worker builds its trials.

eval.py draws each trial's get_inputs() under its own seed with the CPU generator, one value after another: at real
sizes that is seconds a gigabyte (kb_argmax: 8 GiB a trial, about 13 s a draw on the H200's host), and a campaign
worker judging with the KernelBench checkers drew five such trials one after the other, 131.7 s of its substrate's
first mutant (with the t0 checker's). Here each seed's draw is made in a helper process of its own, seeded as eval.py
seeds it (harness.checkers.kernelbench.set_seed), its large tensors made in shared memory
(harness.gate.shared_draws), so that handing them back copies nothing: the values are those the worker would draw,
the generator being a function of the seed alone. A draw that fails in a helper (a get_inputs() that needs the GPU,
which a helper does not touch) is made in the worker, as before.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

AHEAD_FROM_BYTES = 256 * 2**20  # a trial's draw: below, a helper's start (it imports torch) costs more than it saves
HOST_SHARE = 0.25  # of the host's available memory, for the draws the helpers hold until the worker takes them

_helper: dict = {}


def _helper_start(worker_pid: int, kb_file: str, path: str) -> None:
    # No GPU here: a draw made on one (a get_inputs() that asks for it) is the worker's, on its own device and stream.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import torch

    from harness.problems import load_problem_file
    from harness.watch import watch_parent

    watch_parent(worker_pid)  # a worker that ends takes its helpers with it
    torch.set_num_threads(1)  # one generator draws: more threads would only compete with the worker's
    _helper["problem"] = load_problem_file(kb_file, Path(path))


def _draw(seed: int):
    """(get_inputs() under `seed`, None), or (None, why it could not be drawn here)."""
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


def helpers_for(trial_bytes: int, seeds: int, cores: int | None, available: int | None) -> int:
    """How many seeds' draws to make ahead, one helper each: every seed, within half the cores and HOST_SHARE of the
    available memory; none below AHEAD_FROM_BYTES a trial, or where fewer than two would run."""
    if trial_bytes < AHEAD_FROM_BYTES or not available:
        return 0
    count = min(seeds, max(1, (cores or 2) // 2), int(HOST_SHARE * available) // trial_bytes)
    return count if count >= 2 else 0


class DrawsAhead:
    """The draws of `seeds` (the first `helpers` of them) started now; `take(seed)` hands one over once."""

    def __init__(self, problem, seeds: list[int], helpers: int, start_method: str = "spawn"):
        self._futures: dict[int, Future] = {}
        self._pool: ProcessPoolExecutor | None = None
        self.failures: list[str] = []  # why a draw was made in the worker after all
        if helpers < 1:
            return
        # A campaign worker is a daemonic process, to which multiprocessing refuses children; the helpers watch it.
        multiprocessing.current_process().daemon = False
        try:
            self._pool = ProcessPoolExecutor(max_workers=helpers, mp_context=multiprocessing.get_context(start_method),
                                             initializer=_helper_start,
                                             initargs=(os.getpid(), problem.kb_file, str(problem.path)))
            self._futures = {seed: self._pool.submit(_draw, seed) for seed in seeds[:helpers]}
        except Exception as error:
            self.failures.append(f"the helpers could not start ({type(error).__name__}: {error})")
            self.close()

    def take(self, seed: int) -> list | None:
        """get_inputs() under `seed` as a helper drew it; None where none did (the worker draws it then)."""
        future = self._futures.pop(seed, None)
        if future is None:
            return None
        try:
            values, error = future.result()
        except Exception as error:  # the helper died, or what it drew could not be handed back
            values, error = None, f"{type(error).__name__}: {error}"
        if error is not None:
            self.failures.append(f"seed {seed}: {error}")
        if not self._futures:
            self.close()  # every draw handed over: the helpers are done
        return values

    def close(self) -> None:
        from harness.processes import abandon_pool

        pool, self._pool = self._pool, None
        abandon_pool(pool, self._futures)


KERNELBENCH_CHECKERS = ("kernelbench", "kernelbench-v0")


def for_kernelbench_checkers(checkers, problem) -> DrawsAhead | None:
    """Where a campaign's `checkers` (their --checker names) include a KernelBench one, its trials' draws started for
    `problem` (made ahead where they are large enough to gain); None otherwise."""
    if not any(spec in KERNELBENCH_CHECKERS for spec in checkers):
        return None
    from harness.checkers.kernelbench import trial_seeds
    from harness.gate.trial_inputs import host_memory_available, t0_bytes

    seeds = trial_seeds()
    return DrawsAhead(problem, seeds, helpers_for(t0_bytes(problem), len(seeds), os.cpu_count(),
                                                  host_memory_available()))
