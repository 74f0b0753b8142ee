"""The campaign's compile stage: each substrate's mutants in batches fixed by the plan, every batch compiled
as one NVRTC program (harness.compiler.batches composes it and cuts out each mutant's own code) through the compile
cache, by a pool ahead of the workers and by the worker that needs it where the pool has not got there."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from harness.compiler.batches import batch_program, code_digests, variant_index


def to_load(sources: list[str], variants: list, digests: dict | None) -> list[str]:
    """The sources of a batch that will be loaded: not those whose code is known already (equivalent
    to the unmutated source, or a duplicate of a mutant before them), when code is compared."""
    wanted, seen = [], set(digests or ())
    for source, variant in zip(sources, variants):
        if digests is not None and variant is not None:
            if variant.digest in seen:
                continue
            seen.add(variant.digest)
        wanted.append(source)
    return wanted


@dataclass(frozen=True)
class Variant:
    kernel: object  # harness.compiler.nvrtc.CompiledKernel, sharing its batch's PTX and cubin
    digest: str     # harness.compiler.batches.code_digest: comparable across batches


def compile_variants(sources: list[str], entry, arch: str, program: str, compile_program=None) -> list[Variant | None]:
    """Every source compiled as one NVRTC program; a failed batch is compiled one source at a time.

    None stands for a source that does not compile in batch form (a compile error, which compiling
    it alone then reports, or a construct the batch's composition cannot take). `compile_program`
    is harness.compiler.nvrtc's, or one through the cache (a campaign's workers: the batch compiled ahead).
    """
    from harness.compiler import nvrtc  # here: the pure part above needs no NVRTC

    compile_program = compile_program or nvrtc.compile_program

    def attempt(batch: list[str]) -> list[Variant]:
        composed = batch_program(batch, entry.kernel_name, program)
        compiled = compile_program(composed.source, composed.name_expressions, arch, program)
        digests = code_digests(compiled.ptx, len(composed.name_expressions))
        return [Variant(compiled.kernel(name, entry.kernel_name), digest)
                for name, digest in zip(composed.name_expressions, digests)]

    try:
        return attempt(sources)
    except nvrtc.CompileError:
        if len(sources) == 1:
            return [None]
        return [compile_variants([source], entry, arch, program, compile_program)[0] for source in sources]


def batches(mutant_ids: list[str], size: int) -> list[tuple[str, ...]]:
    """A substrate's mutants cut into batches of `size`, in order: fixed by the plan, so a worker started
    after a fault compiles the same batches (and finds them compiled ahead) whatever is left to run."""
    return [tuple(mutant_ids[first:first + size]) for first in range(0, len(mutant_ids), size)]


def group_by_batch(mutant_ids: tuple[str, ...], fixed: tuple[tuple[str, ...], ...]) -> list[tuple[tuple[str, ...],
                                                                                                   tuple[str, ...]]]:
    """(a fixed batch, the mutants of `mutant_ids` in it) for each run of consecutive mutants of one batch,
    in the order of `mutant_ids`; a mutant in no fixed batch is a batch of its own."""
    batch_of = {mutant_id: batch for batch in fixed for mutant_id in batch}
    groups: list[tuple[tuple[str, ...], list[str]]] = []
    for mutant_id in mutant_ids:
        batch = batch_of.get(mutant_id, (mutant_id,))
        if groups and groups[-1][0] == batch:
            groups[-1][1].append(mutant_id)
        else:
            groups.append((batch, [mutant_id]))
    return [(batch, tuple(members)) for batch, members in groups]


def precompile_batch(sources: list[str], kernel_name: str, program: str, arch: str, cache_dir: str | None,
                     address_checked: bool = False, checked_variants: tuple[int, ...] | None = None) -> bool:
    """Compile one batch into the cache (a compile pool's task), and with `address_checked` assemble its
    address-checked cubin too, of the variants `checked_variants` alone where given (the others run from their
    substrate's schema: checked_cubin_ptx); False where it does not compile as a batch (the worker then compiles its
    mutants one at a time, as it would have) or another process is compiling it."""
    from pathlib import Path

    from harness.compiler import cache, nvrtc

    composed = batch_program(sources, kernel_name, program)
    folder = Path(cache_dir) if cache_dir else None
    try:
        # Not waiting: a batch a worker is compiling (it needed it before the pool got there) is left to it.
        compiled = cache.compile_program_cached(composed.source, composed.name_expressions, arch, program, folder,
                                                address_checked and checked_variants is None, wait=False)
        if address_checked and checked_variants:
            cache.address_checked_cubin(checked_cubin_ptx(compiled.ptx, len(sources), checked_variants), arch, folder,
                                        wait=False)
    except (nvrtc.CompileError, cache.Busy):
        return False
    return True


def checked_cubin_ptx(ptx: str, count: int, checked_variants) -> str:
    """The PTX whose address-checked cubin runs a batch's `checked_variants` (indices into its `count`): the batch's
    own where that is every one of them, else the batch's without the others (harness.compiler.batches.pruned_ptx)."""
    from harness.compiler.batches import pruned_ptx

    return pruned_ptx(ptx, count, set(checked_variants))


def kernels_of_their_own(kernels: dict, count: int) -> dict:
    """`kernels` ({key: CompiledKernel} of programs of `count` variants each), each made to load from the checked
    cubin of the kernels given from its program alone (checked_cubin_ptx): what a program assembles is what runs.
    Pure."""
    kept: dict[str, set] = {}  # each program's PTX: its variants given
    for kernel in kernels.values():
        kept.setdefault(kernel.ptx, set()).add(variant_index(kernel.lowered_name))
    pruned = {ptx: checked_cubin_ptx(ptx, count, variants) for ptx, variants in kept.items()}
    return {key: replace(kernel, ptx=pruned[kernel.ptx]) for key, kernel in kernels.items()}


class CompilePool:
    """Processes that compile a campaign's batches into the cache ahead of its workers.

    NVRTC needs no GPU, and a worker that compiles its next batch itself leaves its GPU idle meanwhile; the
    cores the workers leave compile every batch ahead instead, the first batch of each substrate first. A worker
    that needs a batch not compiled yet compiles it itself, or waits for the pool process compiling it
    (harness.compiler.cache.lookup_or_make).

    The processes are spawned, not forked from the workers' fork server: NVRTC and nvJitLink need neither
    torch nor the CUDA libraries torch loads, so a pool process imports no torch.
    """

    def __init__(self, processes: int, lowered: int = 0):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.processes, self.lowered = processes, lowered
        # `lowered` of them at a lower priority than the workers: they take only the cores the workers leave idle.
        context = multiprocessing.get_context("spawn")
        self.executor = (ProcessPoolExecutor(max_workers=processes, mp_context=context, initializer=_lower_some,
                                             initargs=(context.Value("i", lowered),))
                         if processes else None)
        self.futures = []
        self.firsts: list[bool] = []  # of each task, whether a substrate's worker waits for it before its first result
        self.started = time.time()  # the wall clock: the pool's processes say when they finished a task by it

    def start(self) -> "CompilePool":
        """Start every process now, each importing the compilers, before its work is known: a campaign's plans take
        seconds, and the first batches of its substrates are what its first workers wait for."""
        for _ in range(self.processes if self.executor else 0):
            self.executor.submit(_ready)
        return self

    def submit(self, work: list[PoolTask]) -> None:
        """Each task in order; close() says when those marked first were done."""
        for task in work if self.executor else []:
            self.firsts.append(task.first)
            self.futures.append(self.executor.submit(_timed_precompile, *task.args))

    def close(self, finish: bool = False) -> str:
        """Batches not started are dropped (the campaign is over), or with `finish` compiled first; returns,
        once no process of the pool is left, what the pool did ("" for a pool of no process)."""
        if not self.executor:
            return ""
        self.executor.shutdown(wait=True, cancel_futures=not finish)
        # Each task's (compiled, processor seconds, when it finished), or None where it did not run to its end.
        done = [f.result() if f.done() and not f.cancelled() and f.exception() is None else None
                for f in self.futures]
        finished = [d for d in done if d is not None]
        said = (f"compile pool: {len(finished)} of {len(self.futures)} batches in {sum(d[1] for d in finished):.1f} s "
                f"of processor time over {self.processes} process(es)")
        firsts = [d for d, first in zip(done, self.firsts) if first]
        if firsts and None not in firsts:
            said += (f"; each substrate's unmutated source and first batch done "
                     f"{max(d[2] for d in firsts) - self.started:.1f} s after the pool started, every batch "
                     f"{max(d[2] for d in finished) - self.started:.1f} s")
        return said


POOL_NICENESS = 10


def _lower_some(still_to_lower) -> None:
    """A pool process's start: the first `still_to_lower` (shared) to start lower their priority."""
    import os

    from harness.interrupt import die_quietly_on_interrupt

    die_quietly_on_interrupt()  # Ctrl-C ends the campaign, which says so once: no traceback per pool process
    with still_to_lower.get_lock():
        if still_to_lower.value > 0:
            still_to_lower.value -= 1
            os.nice(POOL_NICENESS)


def _ready() -> None:
    """A pool process's first task where the pool was started ahead (CompilePool.start): what precompile_batch
    imports, imported."""
    from harness.backends import address_check  # noqa: F401
    from harness.compiler import cache, nvrtc  # noqa: F401


def _timed_precompile(*task) -> tuple[bool, float, float]:
    """precompile_batch's answer, the processor time it took (the pool's share of a campaign's work) and when it
    finished (the wall clock)."""
    started = time.process_time()
    return precompile_batch(*task), time.process_time() - started, time.time()


@dataclass(frozen=True)
class PoolTask:
    args: tuple  # precompile_batch's: (sources, kernel name, program name, arch, cache folder, address-checked
    #              too, the variants the checked cubin holds: None for all)
    first: bool  # a substrate's unmutated source or first batch: what its worker waits for before its first result
    needed_at: float  # when a worker will want it, in mutant runs from the campaign's start (need_times)


# A worker's start on a substrate (process, CUDA context, trials, the unmutated runs) in mutant runs of one slot: on
# the H200, 2.3 s before the baseline's end against 0.12 s a mutant (MEASUREMENTS.md, twenty-third session).
START_IN_MUTANT_RUNS = 16


def precompile_order(plans: list, size: int, arch: str, cache_dir: str | None, address_checked: bool = False,
                     slots: int | None = None, schemata: bool = False) -> list[PoolTask]:
    """The batches of every plan with mutants to run, as CompilePool tasks, in the order the campaign's `slots`
    workers (None: one per plan) will want them: each plan's unmutated source (in the batch form a worker compiles it
    in) when its worker starts, each batch when the mutants before it have run. The plans are taken in the order the
    campaign gives them to its slots; a pool that compiled the batches round robin over all plans made the first
    workers compile their own first batch while it compiled those of plans no worker had started. With `schemata`,
    each plan's schema (harness.engine.schema) comes with its unmutated source, and a batch's checked cubin (where
    `address_checked`) holds only the mutants the schema leaves out."""
    from harness.engine.mutants import generate
    from harness.engine.schema import schema

    def task(plan, sources: list[str], first: bool, needed_at: float, checked: tuple[int, ...] | None = None):
        return PoolTask((sources, plan.kernel_name, f"{plan.name}.cu", arch, cache_dir, address_checked, checked),
                        first, needed_at)

    started = need_times([len(plan.to_run) for plan in plans], slots or len(plans) or 1)
    tasks = []
    for plan, start in zip(plans, started):
        by_id = {m.id: m for m in plan.mutants}
        made = schema(plan.source, generate(plan.source, plan.name)) if schemata else None
        waiting = set(plan.to_run)
        before = 0  # mutants to run in the batches before this one
        mutated = []
        for batch in batches(list(by_id), size):
            if to_run := len(waiting & set(batch)):
                checked = tuple(i for i, m in enumerate(batch) if m not in made.switches) if made else None
                mutated.append(task(plan, [by_id[m].apply(plan.source) for m in batch], not mutated,
                                    start + START_IN_MUTANT_RUNS + before, checked))
                before += to_run
        if mutated:
            ahead = [task(plan, [made.source()], True, start)] if made and made.switches else []
            tasks += [task(plan, [plan.source], True, start)] + ahead + mutated
    return sorted(tasks, key=lambda t: t.needed_at)  # stable: at one time, the plans' order, the unmutated first


def need_times(lengths: list[int], slots: int) -> list[float]:
    """When each plan's worker starts, in mutant runs from the campaign's start: plans handed out in their order to
    whichever of `slots` is free first, each holding its slot for START_IN_MUTANT_RUNS and its mutants (a plan with
    none is never started: it holds no slot)."""
    import heapq

    free = [(0.0, slot) for slot in range(slots)]
    starts = []
    for length in lengths:
        if not length:
            starts.append(0.0)
            continue
        at, slot = heapq.heappop(free)
        starts.append(at)
        heapq.heappush(free, (at + START_IN_MUTANT_RUNS + length, slot))
    return starts


# A campaign's backends, by name: the CPU backend's NVRTC stops at PTX (ptxas's GPU limits are the gate's to hold);
# a GPU worker's waits for its GPU sleep (harness.backends.cuda: CudaBackend's blocking_sync).
CAMPAIGN_BACKEND_SETTINGS = {"cpu": {"ptxas": False}, "cuda": {"blocking_sync": True}}


def compile_ahead(processes: int, plans: list, size: int, backend: str, cache_dir,
                  address_checked: bool = False, lowered: int = 0, slots: int | None = None,
                  schemata: bool = False, pool: CompilePool | None = None) -> CompilePool:
    """A CompilePool of `processes` given every batch of `plans` (for the workers' arch: the first GPU's, or
    NVRTC's default; PTX alone for the CPU backend's workers; `address_checked`: PTX alone and its
    address-checked cubin, where nvJitLink loads), in the order the campaign's `slots` workers will want them; the
    caller closes it. The cache folder is named, not left to each pool process to work out. `lowered` of the
    processes run at nice POOL_NICENESS (those beyond the cores the workers leave). `pool`: one made (and started)
    already with those, given the batches instead of a new one."""
    from harness.backends import address_check, gpu_arch
    from harness.compiler.cache import default_cache_dir
    from harness.compiler.nvrtc import DEFAULT_ARCH, arch_without_gpu, ptx_only

    pool = pool or CompilePool(processes, lowered)
    arch = ((gpu_arch() or DEFAULT_ARCH) if backend == "cuda"
            else arch_without_gpu(**CAMPAIGN_BACKEND_SETTINGS.get(backend, {})))
    if address_checked and address_check.assembler_version():
        arch = ptx_only(arch)  # what the checked workers compile (harness.backends.cuda: CudaBackend.nvrtc_arch)
    pool.submit(precompile_order(plans, size, arch, str(cache_dir or default_cache_dir()), address_checked, slots,
                                 schemata))
    return pool


def compile_alone_ahead(kernels: list[tuple[str, str, str]], arch: str, cache_dir: str | None, processes: int):
    """Each (source, kernel name, program name) compiled alone into the cache by `processes` spawned processes, in
    order, for programs about to load them as they are: the sanitizers' tools load each survivor alone, where the
    campaign compiled it in a batch, and each compile was in the path of the first tool to reach it (about 0.06 s
    of NVRTC a family kernel). A program that reaches one being compiled waits for it (lookup_or_make); a source
    that does not compile alone is left to the program, which says so. Returns the executor: shut it down, its
    tasks not begun cancelled, once the programs are done."""
    executor = CompilePool(max(1, processes)).executor  # spawned, importing no torch, quiet on Ctrl-C
    for source, kernel_name, program_name in kernels:
        executor.submit(_compile_alone, source, kernel_name, program_name, arch, cache_dir)
    return executor


def _compile_alone(source: str, kernel_name: str, program_name: str, arch: str, cache_dir: str | None) -> bool:
    from pathlib import Path

    from harness.compiler import cache, nvrtc

    try:
        cache.compile_cached(source, kernel_name, arch, Path(cache_dir) if cache_dir else None, program_name)
    except nvrtc.CompileError:
        return False
    return True
