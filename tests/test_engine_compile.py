"""harness.compiler.batches and harness.engine.compile: many variants of a source in one NVRTC program, each variant's
code comparable; batches planned, compiled ahead in a pool, found in the cache.

NVRTC runs without a GPU, so every test here runs in CI.
"""

from types import SimpleNamespace

import re

import pytest

from harness.compiler.batches import batch_program, code_digest, variant_code
from harness.compiler.nvrtc import compile_program
from harness.engine.compile import CompilePool, batches, compile_variants, group_by_batch, need_times, precompile_order
from tests.conftest import registered_entries

SOURCE = r"""#include <cuda_fp16.h>
#define SCALE 0.5f
extern "C" __global__ void scale_half(const __half* __restrict__ x, float* __restrict__ out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = __half2float(x[i]) * SCALE;
}
"""
MOVED = SOURCE.replace("    if (i >= n) return;", "\n\n    // a comment and two blank lines: the same code\n    if (i >= n) return;")
BOUNDARY = SOURCE.replace("i >= n", "i > n")
NOT_CUDA = SOURCE.replace("return;", "return")
ENTRY = SimpleNamespace(kernel_name="scale_half")


def test_a_batch_holds_each_source_in_a_namespace_with_shared_includes_and_its_own_macros():
    program = batch_program([SOURCE, BOUNDARY], "scale_half", "scale_half.cu")
    assert program.name_expressions == ("harness_batch_0000::scale_half", "harness_batch_0001::scale_half")
    assert program.source.count("#include <cuda_fp16.h>") == 1
    assert program.source.count("#undef SCALE") == 2
    assert 'extern "C"' not in program.source
    assert '#line 1 "scale_half.cu (variant 1)"' in program.source


def test_the_same_source_anywhere_in_a_batch_has_one_digest_and_a_mutant_another():
    program = batch_program([SOURCE, BOUNDARY, MOVED, SOURCE], "scale_half", "scale_half.cu")
    compiled = compile_program(program.source, program.name_expressions)
    digests = [code_digest(compiled.ptx, i) for i in range(4)]
    assert digests[0] == digests[2] == digests[3]
    assert digests[1] != digests[0]
    assert "harness_batch_0003" not in variant_code(compiled.ptx, 3)  # the tag is blanked
    assert variant_code(compiled.ptx, 3).count(".entry") == 1  # only its own entry


def test_each_kernel_of_a_batch_has_its_own_entry_in_the_shared_cubin():
    program = batch_program([SOURCE, BOUNDARY], "scale_half", "scale_half.cu")
    compiled = compile_program(program.source, program.name_expressions)
    first, second = (compiled.kernel(name, "scale_half") for name in program.name_expressions)
    assert first.cubin is second.cubin
    assert first.lowered_name != second.lowered_name
    assert f".entry {first.lowered_name}(" in compiled.ptx


def test_a_batch_with_a_source_that_does_not_compile_falls_back_to_one_compile_each():
    variants = compile_variants([SOURCE, NOT_CUDA, BOUNDARY], ENTRY, "sm_90", "scale_half.cu")
    assert variants[1] is None
    alone = compile_variants([SOURCE], ENTRY, "sm_90", "scale_half.cu")
    assert variants[0].digest == alone[0].digest
    assert variants[2].digest != variants[0].digest


def test_a_source_the_composition_cannot_take_has_no_variant_but_compiles_alone():
    # An extern "C" block keeps its C name inside the namespace, where no name expression finds it;
    # the worker then compiles every mutant of that substrate alone (run_campaign_job's `batching`).
    block = SOURCE.replace('extern "C" __global__ void scale_half(', 'extern "C" {\n__global__ void scale_half(') + "}\n"
    assert compile_variants([block, block], ENTRY, "sm_90", "scale_half.cu") == [None, None]
    assert compile_program(block, ("scale_half",)).lowered_names == {"scale_half": "scale_half"}


def _plan(to_run_from: int = 0):
    from harness.engine.mutants import generate

    mutants = [m for m in generate(SOURCE, "scale_half")][:5]
    return SimpleNamespace(name="scale_half", source=SOURCE, kernel_name="scale_half", mutants=mutants,
                           to_run=[m.id for m in mutants[to_run_from:]])


def test_the_plans_batches_come_as_their_mutants_to_run_do_and_only_where_a_mutant_is_left():
    first, second = _plan(), _plan(to_run_from=3)
    second.name = "other"
    order = precompile_order([first, second], 2, "sm_90", None)
    # Each plan's unmutated source first, then first: batches (0,1) (2,3) (4); second: only (2,3) and (4) hold
    # mutants left to run, one in (2,3): its (4) is wanted after one mutant run, the first plan's (2,3) after two.
    assert [(task.args[2], len(task.args[0]), task.first) for task in order] == [
        ("scale_half.cu", 1, True), ("other.cu", 1, True),
        ("scale_half.cu", 2, True), ("other.cu", 2, True), ("other.cu", 1, False), ("scale_half.cu", 2, False),
        ("scale_half.cu", 1, False)]
    assert order[0].args[0] == order[1].args[0] == [SOURCE]
    assert order[2].args[0] == [m.apply(SOURCE) for m in first.mutants[:2]]
    finished = _plan()
    finished.to_run = []
    assert precompile_order([finished], 2, "sm_90", None) == []  # nothing to run: not even its unmutated source


def test_the_pool_compiles_in_the_order_the_campaign_s_slots_will_want_the_batches():
    # Three plans of 5 mutants over one slot: the second and third start only when the one before has run through.
    plans = [_plan() for _ in range(3)]
    for plan, name in zip(plans, "abc"):
        plan.name = name
    order = precompile_order(plans, 2, "sm_90", None, slots=1)
    assert [(task.args[2], len(task.args[0])) for task in order] == [
        ("a.cu", 1), ("a.cu", 2), ("a.cu", 2), ("a.cu", 1), ("b.cu", 1), ("b.cu", 2), ("b.cu", 2), ("b.cu", 1),
        ("c.cu", 1), ("c.cu", 2), ("c.cu", 2), ("c.cu", 1)]
    # Two slots: a and b start at once, c when a's slot is free; a's last batch is wanted after c's unmutated source
    # only if the start of a substrate costs less than its mutants: it costs START_IN_MUTANT_RUNS.
    order = precompile_order(plans, 2, "sm_90", None, slots=2)
    assert [(task.args[2], len(task.args[0])) for task in order] == [
        ("a.cu", 1), ("b.cu", 1), ("a.cu", 2), ("b.cu", 2), ("a.cu", 2), ("b.cu", 2), ("a.cu", 1), ("b.cu", 1),
        ("c.cu", 1), ("c.cu", 2), ("c.cu", 2), ("c.cu", 1)]
    assert [round(t.needed_at) for t in order] == [0, 0, 16, 16, 18, 18, 20, 20, 21, 37, 39, 41]


def test_a_plan_s_start_waits_for_the_first_slot_free_and_one_with_nothing_to_run_takes_none():
    assert need_times([10, 4, 0, 3, 5], 2) == [0, 0, 0, 20, 26]


def test_mutants_left_after_a_fault_are_grouped_by_the_plans_batches_in_their_own_order():
    fixed = batches(["a", "b", "c", "d", "e"], 2)
    assert fixed == [("a", "b"), ("c", "d"), ("e",)]
    # b was judged again first (moved to the front), then c, d, e: b's batch is compiled whole for b alone.
    assert group_by_batch(("b", "c", "d", "e", "z"), tuple(fixed)) == [
        (("a", "b"), ("b",)), (("c", "d"), ("c", "d")), (("e",), ("e",)), (("z",), ("z",))]


def test_a_batch_compiled_ahead_in_the_pool_is_what_the_worker_finds_in_the_cache(tmp_path, monkeypatch):
    import functools

    from harness.compiler import cache, nvrtc

    plan = _plan()
    pool = CompilePool(1)
    pool.submit(precompile_order([plan], 4, "sm_90", str(tmp_path)))
    said = pool.close(finish=True)
    assert re.fullmatch(r"compile pool: 3 of 3 batches in [0-9.]+ s of processor time over 1 process\(es\); each "
                        r"substrate's unmutated source and first batch done [0-9.]+ s after the pool started, every "
                        r"batch [0-9.]+ s", said)
    assert len(list(tmp_path.glob("*.cubin"))) == 3  # the unmutated source, batches of 4 and 1

    def compiled_again(*args, **kwargs):
        raise AssertionError("the batch was compiled again")

    monkeypatch.setattr(nvrtc, "compile_program", compiled_again)
    found = compile_variants([m.apply(SOURCE) for m in plan.mutants[:4]], ENTRY, "sm_90", "scale_half.cu",
                             functools.partial(cache.compile_program_cached, cache_dir=tmp_path))
    assert all(found) and len({v.digest for v in found}) == 4


def test_ptx_alone_gives_every_variant_the_digest_the_gpus_compile_gives():
    """A CPU campaign's NVRTC stops at PTX (no ptxas): its equivalent and duplicate mutants are the same ones."""
    from harness.compiler.nvrtc import DEFAULT_ARCH, PTX_ONLY_ARCH

    sources = [SOURCE, MOVED, BOUNDARY]
    assembled = compile_variants(sources, ENTRY, DEFAULT_ARCH, "k.cu")
    ptx_alone = compile_variants(sources, ENTRY, PTX_ONLY_ARCH, "k.cu")
    assert [v.digest for v in ptx_alone] == [v.digest for v in assembled]
    assert ptx_alone[0].digest == ptx_alone[1].digest != ptx_alone[2].digest
    assert assembled[0].kernel.cubin and not ptx_alone[0].kernel.cubin


@pytest.mark.parametrize("entry", registered_entries()[:3] + registered_entries()[-2:], ids=lambda e: e.name)
def test_a_batchs_digests_read_at_once_are_each_variants_own(entry):
    from harness.compiler.batches import code_digests
    from harness.engine.mutants import generate
    from harness.compiler.nvrtc import PTX_ONLY_ARCH, compile_program

    sources = [m.apply(entry.cuda) for m in list(generate(entry.cuda, entry.name))[:12]]
    composed = batch_program(sources, entry.kernel_name, "k.cu")
    ptx = compile_program(composed.source, composed.name_expressions, PTX_ONLY_ARCH).ptx
    assert code_digests(ptx, len(sources)) == [code_digest(ptx, i) for i in range(len(sources))]


def test_the_pool_processes_beyond_the_cores_the_workers_leave_run_below_the_workers_priority():
    import os
    import time

    pool = CompilePool(3, lowered=2)
    try:
        for _ in range(6):
            pool.executor.submit(time.sleep, 0.3)
        time.sleep(1.5)
        base = os.getpriority(os.PRIO_PROCESS, 0)
        pids = list(pool.executor._processes)
        assert len(pids) == 3
        assert sorted(os.getpriority(os.PRIO_PROCESS, pid) - base for pid in pids) == [0, 10, 10]
    finally:
        pool.close()


def test_a_pool_started_ahead_has_every_process_up_before_its_first_batch_and_counts_no_batch_for_it():
    import multiprocessing
    import time

    pool = CompilePool(2).start()
    try:
        deadline = time.monotonic() + 60
        while len(multiprocessing.active_children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(pool.executor._processes) == 2  # spawned before any batch was given
        pool.submit([])
    finally:
        said = pool.close()
    assert said == "compile pool: 0 of 0 batches in 0.0 s of processor time over 2 process(es)"
