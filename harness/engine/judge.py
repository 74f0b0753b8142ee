"""A campaign's survivors judged again by oracles that see more than the suites' values, side by side.

A mutant that every value suite lets through may still race, overrun a buffer into harmless bytes or leave a barrier
half-reached (the sanitizers oracle: each survivor, and first its unmutated substrate, under compute-sanitizer's tools
on the substrate's small cases, harness.oracles.sanitizer), or narrow an index that only an input of more than 2^31
elements overflows (the large-index oracle, harness.engine.large_index). An oracle judges a substrate's mutants only
if the unmutated substrate passes it. What is judged and where it is stored: harness.engine.survivors.
"""

from __future__ import annotations

import functools
import os
import threading
import time

from harness.engine.large_index import LargeSettings, judge_on_large_trial
from harness.engine.store import ResultStore
from harness.engine.survivors import (LARGE_INDEX, SANITIZERS, Survivor, Unmutated, oracle_key, program_label,
                                      value_survivors)
from harness.gate.records import CheckStatus
from harness.interrupt import kill_descendants
from harness.oracles.memory_turns import BACKFILL_SECONDS
from harness.oracles import sanitizer as sanitizer_tools
from harness.oracles.sanitizer import SanitizerTarget, sanitize


def judge_with_sanitizers(unmutated: list[Unmutated], survivors: list[Survivor], store: ResultStore, backend: str,
                          tools: tuple[str, ...], sanitizer, cache_dir: str | None = None,
                          processes: int = 1, kb_root: str | None = None,
                          stop: threading.Event | None = None, timings: list[str] | None = None) -> dict[str, str]:
    """Run the tools over the survivors (and their unmutated substrates) and store a judgement per survivor.

    Returns, per substrate, why a tool could not judge its mutants (the unmutated substrate fails it), if so. Once
    `stop` is set (the campaign interrupted, its processes killed) nothing is stored: the tools' findings may be their
    deaths'. `timings`, where given, gets where each tool's time went (harness.oracles.sanitizer.ToolRun.timing).
    """
    # Each substrate's unmutated kernel, then its survivors: a tool's process builds a substrate's cases once for the
    # targets of it that come in a row (harness.oracles.sanitized_run.Prepared).
    order = {u.substrate: place for place, u in enumerate(unmutated)}
    targets = [SanitizerTarget(u.file, u.substrate, u.kernel_name, u.t0_bytes, u.source, kb_root=kb_root or "")
               for u in unmutated]
    targets += [SanitizerTarget(s.file, s.substrate, s.kernel_name, s.t0_bytes, s.source, kb_root=kb_root or "",
                                label=program_label(s.mutant_id), replaces_cuda=True) for s in survivors]
    targets.sort(key=lambda target: order.get(target.name, len(order)))  # stable: the unmutated kernel first
    ahead = _survivors_compiled_ahead(targets, backend, cache_dir)
    try:
        checks = sanitize(targets, tools, sanitizer, backend, cache_dir, processes=processes, timings=timings)
    finally:
        if ahead is not None:
            ahead.shutdown(wait=False, cancel_futures=True)
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


# Processes that compile the survivors for the tools while the tools start (seconds each under compute-sanitizer).
COMPILE_AHEAD_PROCESSES = 8


def _survivors_compiled_ahead(targets: list[SanitizerTarget], backend: str, cache_dir: str | None):
    """The survivors' sources compiled alone, as the tools' program loads them, by processes of their own while the
    tools start (harness.engine.compile.compile_alone_ahead; the executor, or None on the CPU backend)."""
    if backend != "cuda":
        return None
    from harness.backends import gpu_arch
    from harness.compiler.nvrtc import DEFAULT_ARCH
    from harness.engine.compile import compile_alone_ahead

    kernels = [(t.cuda, t.kernel_name, f"{t.label}.cu") for t in targets if t.replaces_cuda]
    if not kernels:
        return None
    processes = min(COMPILE_AHEAD_PROCESSES, max(1, (os.cpu_count() or 2) // 2), len(kernels))
    return compile_alone_ahead(kernels, gpu_arch() or DEFAULT_ARCH, cache_dir, processes)


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
        unmutated, survivors = ([], []) if backend == "cpu" else value_survivors(plans, store, backend, oracle,
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
                          at_once=getattr(args, "large_index_processes", 1),
                          backfill=getattr(args, "large_index_backfill", BACKFILL_SECONDS))
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
    started, timings = time.perf_counter(), []
    if oracle == SANITIZERS:
        tools, sanitizer, processes = tools_run
        notes = judge_with_sanitizers(unmutated, survivors, store, backend, tools, sanitizer, large.cache_dir,
                                      processes, large.kb_root, large.stop, timings)
    else:
        notes = judge_on_large_trial(
            unmutated, survivors, store, backend, large,
            on_substrate=lambda name, outcome: print(f"  {oracle}: {name}: {outcome.describe()}", flush=True))
    killed = sum(1 for s in survivors if (r := store.get(oracle_key(s.source_sha256, backend, s.mutant_id, oracle)))
                 and r.get("killed_by"))
    return ([f"oracle {oracle}: {len(survivors)} survivor(s) judged, {killed} killed, in "
             f"{time.perf_counter() - started:.1f} s"] + [f"  {oracle}' time: {'; '.join(timings)}"] * bool(timings)
            + [f"  {name}: {why}" for name, why in notes.items()])
