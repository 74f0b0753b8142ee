"""The CPU backend: refusals, each shim feature against torch, and substrates run on the CPU."""

import ctypes
import dataclasses
import re

import pytest
import torch

from harness.backends import cpu_stacks
from harness.backends.base import KernelFault
from harness.backends.cpu import SHIM_DIR, CpuBackend, unsupported_constructs
from harness.compiler import signature
from harness.compiler.nvrtc import CompileError
from tests import shim_kernels


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    return CpuBackend(cache_dir=tmp_path_factory.mktemp("cpu-cache"))


@pytest.mark.parametrize("line, message", [
    ('asm volatile("membar.gl;");', "the CPU backend cannot run inline PTX (asm) (k.cu:2: asm volatile(\"membar.gl;\");)"),
    ("cooperative_groups::this_grid().sync();",
     "the CPU backend cannot run cooperative groups (k.cu:2: cooperative_groups::this_grid().sync();)"),
    ("child<<<1, 1>>>(o);", "the CPU backend cannot run dynamic parallelism (a kernel launch inside a kernel) "
                            "(k.cu:2: child<<<1, 1>>>(o);)"),
    ("extern __shared__ float dyn[];", "the CPU backend cannot run dynamic shared memory (extern __shared__); use a "
                                       "fixed-size __shared__ array (k.cu:2: extern __shared__ float dyn[];)"),
    ("long long t = clock64();", "the CPU backend cannot run GPU clocks and sleeps (k.cu:2: long long t = clock64();)"),
    ("#include <cuda_runtime.h>", "the CPU backend provides only cuda_fp16.h, cuda_bf16.h, math_constants.h, not "
                                  "<cuda_runtime.h> (k.cu:2: #include <cuda_runtime.h>)"),
])
def test_constructs_the_shim_cannot_run_are_refused_by_name(line, message):
    source = f'extern "C" __global__ void k(int* o) {{\n{line}\n}}\n'
    assert unsupported_constructs(source, "k.cu") == [message]


def test_constructs_in_comments_are_not_refused():
    source = '// asm("x"); extern __shared__\n/* child<<<1,1>>>() */\n__global__ void k() {}\n'
    assert unsupported_constructs(source, "k.cu") == []


def test_a_refused_construct_fails_load_before_compiling(backend):
    with pytest.raises(CompileError, match=r"cannot run inline PTX \(asm\) \(k.cu:1: "):
        backend.load('extern "C" __global__ void k() { asm("trap;"); }\n', "k", "k.cu")


@pytest.mark.parametrize("case", [c for c in shim_kernels.CASES if c.expected is not None], ids=lambda c: c.name)
def test_shim_feature_matches_torch(backend, case):
    inputs, out = shim_kernels.execute(backend, case)
    expected = case.expected(inputs)
    if case.exact:
        assert torch.equal(out, expected)
    else:
        torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)


def test_half_and_bfloat16_conversions_round_like_cuda(backend):
    case = next(c for c in shim_kernels.CASES if c.name == "conversions")
    (x,), out = shim_kernels.execute(backend, case)
    h, b, hf, bf = shim_kernels.split_conversions(out, x.numel())
    nan = torch.isnan(x)
    # torch's own float->half and float->bfloat16 round to nearest even too; NaNs are compared below.
    assert torch.equal(h[~nan], x[~nan].half().view(torch.int16))
    assert torch.equal(b[~nan], x[~nan].bfloat16().view(torch.int16))
    assert torch.equal(hf[~nan].view(torch.int32), x[~nan].half().float().view(torch.int32))
    assert torch.equal(bf[~nan].view(torch.int32), x[~nan].bfloat16().float().view(torch.int32))
    # Every NaN becomes the canonical NaN, 0x7FFF, as sm_90's conversions give.
    assert set(h[nan].tolist()) == {0x7FFF} and set(b[nan].tolist()) == {0x7FFF}
    assert torch.isnan(hf[nan]).all() and torch.isnan(bf[nan]).all()


def test_half_and_bfloat16_widen_exactly_with_canonical_nans(backend):
    case = next(c for c in shim_kernels.CASES if c.name == "widening")
    (bits,), out = shim_kernels.execute(backend, case)
    from_half, from_bf16 = out[:65536], out[65536:]
    half_nan, bf16_nan = torch.isnan(bits.view(torch.float16)), torch.isnan(bits.view(torch.bfloat16))
    assert torch.equal(from_half[~half_nan], bits.view(torch.float16)[~half_nan].float())
    assert torch.equal(from_bf16[~bf16_nan], bits.view(torch.bfloat16)[~bf16_nan].float())
    # sm_90: cvt.f32.f16 turns every half NaN into 0x7FFFFFFF; bfloat16 widens by a shift, payload kept.
    assert set(from_half[half_nan].view(torch.int32).tolist()) == {0x7FFFFFFF}
    assert torch.equal(from_bf16[bf16_nan].view(torch.int32), bits[bf16_nan].to(torch.int32) << 16)


def test_a_partial_warp_mask_is_a_fault_not_a_wrong_answer(backend):
    source = ('extern "C" __global__ void k(int* o) {\n'
              '    o[threadIdx.x] = __shfl_sync(0x0000ffffu, (int)threadIdx.x, 0);\n}\n')
    kernel = backend.load(source, "k", "k.cu")
    out = torch.zeros(32, dtype=torch.int32)
    from harness.compiler import signature
    import ctypes
    with pytest.raises(KernelFault, match="^CPU backend: ") as caught:
        backend.launch(kernel, (1, 1, 1), (32, 1, 1), signature.to_ctypes([(ctypes.c_void_p, out.data_ptr())]))
    assert not caught.value.poisons_context


def test_the_compiled_object_is_cached(tmp_path):
    source = shim_kernels.GRID3D
    first = CpuBackend(cache_dir=tmp_path).load(source, "ids3d", "g.cu")
    again = CpuBackend(cache_dir=tmp_path).load(source, "ids3d", "g.cu")
    assert (first.from_cache, again.from_cache) == (False, True)
    assert len(list(tmp_path.glob("*.so"))) == 1


def _tree_sum_variants():
    case = next(c for c in shim_kernels.CASES if c.name == "tree_sum")
    doubled = case.source.replace("s[t] = x[blockIdx.x * 256 + t];", "s[t] = 2 * x[blockIdx.x * 256 + t];")
    # Each entry point keeps its own threading: without its barriers the kernel still runs under contention (its
    # `s[t] += ...` is a read-modify-write), and without the read-modify-write too as a plain loop.
    unsynced = re.sub(r"__syncthreads\(\);[^\n]*", "", case.source)
    plain = unsynced.replace("s[t] += s[t + stride];", "s[t] = s[t + stride];")
    assert len({case.source, doubled, unsynced, plain}) == 4
    return case, [case.source, doubled, unsynced, plain]


def test_sources_compiled_ahead_in_one_g_plus_plus_run_run_as_each_compiled_alone(tmp_path):
    case, sources = _tree_sum_variants()
    ahead, alone = CpuBackend(cache_dir=tmp_path / "ahead"), CpuBackend(cache_dir=tmp_path / "alone")
    ahead.compile_ahead(sources, case.kernel_name, "t.cu")  # g++ runs beside; a load waits for it
    outputs = []
    for source in sources[:2]:  # the unsynced one races: its output is not compared
        variant = dataclasses.replace(case, source=source)
        outputs.append(shim_kernels.execute(ahead, variant)[1])
        assert torch.equal(outputs[-1], shim_kernels.execute(alone, variant)[1])
    assert torch.equal(outputs[1], 2 * outputs[0])  # each source has its own entry point
    unsynced = ahead.load(sources[2], case.kernel_name, "t.cu")
    assert "threads=fibers,contended" in unsynced.options
    plain = ahead.load(sources[3], case.kernel_name, "t.cu")
    assert "threads=loop" in plain.options
    assert len(list((tmp_path / "ahead").glob("*.so"))) == 1  # every load found its source compiled ahead


def test_a_batch_that_does_not_compile_leaves_each_source_to_compile_alone(tmp_path):
    case, (good, doubled, *_) = _tree_sum_variants()
    broken = good.replace("int t = threadIdx.x;", "int t = threadIdx.x")
    backend = CpuBackend(cache_dir=tmp_path)
    backend.compile_ahead([good, broken, doubled], case.kernel_name, "t.cu")
    assert torch.equal(shim_kernels.execute(backend, dataclasses.replace(case, source=doubled))[1],
                       2 * shim_kernels.execute(backend, case)[1])
    with pytest.raises(CompileError, match=r'^t\.cu:6: error: expected a ";"'):
        backend.load(broken, case.kernel_name, "t.cu")
    assert len(list(tmp_path.glob("*.so"))) == 2  # the two good sources, each alone: the batch made none


FAULTS = r"""
extern "C" __global__ void faults(const int* __restrict__ x, int* __restrict__ out, long long where, int divisor)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t == 37) out[where] = x[t];         // where: far past every mapping
    else if (t == 41) out[t] = x[t] / divisor;  // divisor 0: an integer division by zero
    else out[t] = x[t];
    #ifdef SYNCED
    __syncthreads();
    #endif
}
"""


def _launch_faults(backend, source, where, divisor):
    kernel = backend.load(source, "faults", "faults.cu")
    x = torch.arange(64, dtype=torch.int32)
    out = torch.zeros(64, dtype=torch.int32)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, where),
            (ctypes.c_int, divisor)]
    backend.launch(kernel, (2, 1, 1), (32, 1, 1), signature.to_ctypes(args))
    return out


@pytest.mark.parametrize("synced", [False, True], ids=["loop", "fibers"])
def test_a_kernel_that_faults_fails_its_launch_and_the_process_goes_on(backend, synced):
    source = ("#define SYNCED\n" if synced else "") + FAULTS
    with pytest.raises(KernelFault, match=r"^CPU backend: memory fault: SIGSEGV \(an address outside every mapping\) "
                                          r"at address 0x[0-9a-f]+ in block \(1,0,0\), thread \(5,0,0\)$"):
        _launch_faults(backend, source, 1 << 42, 1)
    with pytest.raises(KernelFault, match=r"^CPU backend: memory fault: SIGFPE \(an integer division by zero\) "
                                          r"at address 0x[0-9a-f]+ in block \(1,0,0\), thread \(9,0,0\)$"):
        _launch_faults(backend, source, 37, 0)
    assert torch.equal(_launch_faults(backend, source, 37, 1), torch.arange(64, dtype=torch.int32))


RUNAWAY = """extern "C" __global__ void runaway(float* out, long long n) {
    for (long long j = threadIdx.x + n; j >= n; j += 256) out[j] = 1.0f;  // the bound negated: on past out
}
"""


def test_a_write_running_on_past_a_guarded_output_faults_at_its_fence_and_leaves_the_heap_alone(backend):
    # kb_softmax's mutant with its loop bound negated strode through the worker's heap 1 KiB at a time before it met
    # an unmapped page: glibc then aborted ("corrupted double-linked list") and a checker raised TypeError. A guarded
    # tensor on the CPU lies between fences: the run stops at the first page past the band after out.
    import mmap

    from harness.gate.checks.guards import GUARD_BYTES, GuardedTensor

    kernel = backend.load(RUNAWAY, "runaway", "runaway.cu")
    guarded = GuardedTensor((1000,), torch.float32, "cpu")
    guarded.tensor.zero_()
    end = guarded.buffer.data_ptr() + guarded.buffer.numel()
    args = [(ctypes.c_void_p, guarded.tensor.data_ptr()), (ctypes.c_longlong, 1000)]
    with pytest.raises(KernelFault) as fault:
        backend.launch(kernel, (1, 1, 1), (256, 1, 1), signature.to_ctypes(args))
    assert fault.value.memory_fault
    assert str(fault.value).startswith("CPU backend: memory fault: SIGSEGV (an address its page forbids: a fence "
                                       "past a buffer, or read-only) at address 0x"), str(fault.value)
    address = int(re.search(r"at address (0x[0-9a-f]+)", str(fault.value)).group(1), 16)
    fence = -(-end // mmap.PAGESIZE) * mmap.PAGESIZE  # the buffer's last page ends where the fence begins
    assert fence <= address < fence + 1024, (hex(fence), hex(address))  # the first store past it, not the heap's end
    assert [d.side for d in guarded.damage()] == ["after"]
    # The first thread's stores, a float every KiB through the band (the block stops at its fault)
    assert guarded.damage()[0].changed_bytes == 4 * (GUARD_BYTES // 1024)
    assert torch.equal(guarded.tensor, torch.zeros(1000))  # from out[n] on: out itself untouched


SHARED_ARRAYS = """extern "C" __global__ void sums(const float* x, float* out) {
    __shared__ float partial[256];
    __shared__ double wide[32];
    partial[threadIdx.x] = x[threadIdx.x];
    if (threadIdx.x < 32) wide[threadIdx.x] = partial[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) out[0] = partial[255] + (float)wide[31];
}
"""


def _thread_locals(shared_object) -> dict[str, tuple[int, int]]:
    """Each thread-local symbol of the shared object: (offset in its thread-local block, size)."""
    import subprocess

    listed = subprocess.run(["readelf", "-sW", str(shared_object)], capture_output=True, text=True, check=True).stdout
    fields = [line.split() for line in listed.splitlines()]
    return {f[7]: (int(f[1], 16), int(f[2])) for f in fields if len(f) >= 8 and f[3] == "TLS"}


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
def test_shared_arrays_lie_between_margins_in_their_units_thread_local_block(tmp_path, batched):
    # A __shared__ array is a thread_local in the shim, and a loaded library's thread-local block comes from malloc:
    # over 925 corpus mutants, one wrote past a shared array into the heap (malloc(): unaligned tcache chunk detected).
    # The unit's shared arrays lie between two margins, the shim's own thread-locals (blockDim, the fault's jump
    # buffer) beyond them.
    from harness.backends.cpu import FIBERS, batch_translation_unit, compile_shared_object, cpp_translation_unit

    unit = (batch_translation_unit([SHARED_ARRAYS, SHARED_ARRAYS.replace("255", "254")], "sums", "sums.cu") if batched
            else cpp_translation_unit(SHARED_ARRAYS, "sums", "sums.cu", FIBERS))
    (tmp_path / "unit.so").write_bytes(compile_shared_object(unit, "sums.cu"))
    blocks = _thread_locals(tmp_path / "unit.so")
    (below,) = [span for name, span in blocks.items() if "harness_cpu_margin_below" in name]
    (above,) = [span for name, span in blocks.items() if "harness_cpu_margin_above" in name]
    arrays = {name: span for name, span in blocks.items() if "partial" in name or "wide" in name}
    assert len(arrays) == (4 if batched else 2), blocks
    for name, (offset, size) in arrays.items():
        assert below[0] + below[1] <= offset and offset + size <= above[0], (name, offset, size, below, above)
    shim = {name: span for name, span in blocks.items() if name not in arrays and "harness_cpu_margin" not in name}
    assert "t_fault_jump" in " ".join(shim), shim
    assert all(offset + size <= below[0] or offset >= above[0] + above[1] for offset, size in shim.values()), shim


TOO_MUCH_SHARED = '''extern "C" __global__ void big(float* o) {
    __shared__ float s[16384];  // 64 KiB: past the 48 KiB a block may declare statically
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    o[threadIdx.x] = s[255 - threadIdx.x];
}
'''


def test_ptxas_limits_hold_unless_a_campaign_leaves_ptxas_out(tmp_path):
    """The gate's CPU backend refuses what the GPU's assembler refuses; a campaign's (ptxas=False) stops at PTX."""
    from harness.engine.worker import CAMPAIGN_BACKEND_SETTINGS

    with pytest.raises(CompileError) as refused:
        CpuBackend(cache_dir=tmp_path).load(TOO_MUCH_SHARED, "big", "big.cu")
    assert str(refused.value) == "ptxas error   : Entry function 'big' uses too much shared data (0x10000 bytes, 0xc000 max)"
    campaign = CpuBackend(cache_dir=tmp_path, **CAMPAIGN_BACKEND_SETTINGS["cpu"])
    assert campaign.nvrtc_arch == "compute_90"
    kernel = campaign.load(TOO_MUCH_SHARED, "big", "big.cu")
    out = torch.zeros(256)
    campaign.launch(kernel, (1, 1, 1), (256, 1, 1), signature.to_ctypes([(ctypes.c_void_p, out.data_ptr())]))
    assert torch.equal(out, torch.arange(255, -1, -1, dtype=torch.float32))


def test_a_schema_s_switch_runs_each_of_its_mutants_as_that_mutant_compiled_alone(tmp_path):
    from harness.engine.mutants import generate
    from harness.engine.schema import UNMUTATED, schema, switch_symbol

    source = ('extern "C" __global__ void k(const float* x, float* out, long long n)\n{\n'
              "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
              "    if (i >= n) return;\n    out[i] = x[i] * 2.0f + 1;\n}\n")
    mutants = generate(source, "k")
    made = schema(source, mutants)
    assert len(made.switches) >= 5
    backend = CpuBackend(cache_dir=tmp_path)
    switched = backend.load(made.source(), "k", "k.cu")
    # Whole blocks, the arrays in the middle of room enough for every index a mutant makes (a swapped thread and
    # block index reaches 127 * 128, a swapped `+` reaches -127): what a mutant writes anywhere is compared.
    n, margin = 256, 20000
    x = torch.arange(2 * margin + n, dtype=torch.float32)

    def run(kernel) -> torch.Tensor:
        out = torch.full((2 * margin + n,), -7.0)
        backend.launch(kernel, (2, 1, 1), (128, 1, 1), [ctypes.c_void_p(x[margin:].data_ptr()),
                                                        ctypes.c_void_p(out[margin:].data_ptr()), ctypes.c_longlong(n)])
        return out

    by_id = {m.id: m for m in mutants}
    for mutant_id, value in made.switches.items():
        backend.set_switch(switched, switch_symbol(), value)  # named as in a batch; the schema alone has it bare
        alone = backend.load(by_id[mutant_id].apply(source), "k", "k.cu")
        assert torch.equal(run(switched), run(alone)), mutant_id
    backend.set_switch(switched, switch_symbol(), UNMUTATED)
    assert torch.equal(run(switched), run(backend.load(source, "k", "k.cu")))
    with pytest.raises(ValueError, match=r"the CPU backend's k has no switch '_ZN2ns4elseE'"):
        backend.set_switch(switched, "_ZN2ns4elseE", 0)


def _scaled_tree_sums(count: int):
    """tree_sum (256 fibers a block, barriers) with its load scaled by 1 .. count: an object each."""
    case = next(c for c in shim_kernels.CASES if c.name == "tree_sum")
    return [dataclasses.replace(case, source=case.source.replace("s[t] = x[", f"s[t] = {k} * x["))
            for k in range(1, count + 1)]


def _warm_objects_of_this_test(backend, cases) -> tuple[list, int]:
    """Launch WARM_OBJECTS of `cases`: every object launched earlier in this process gives its stacks back, so the
    ledger holds these objects' alone; (their outputs, the guard pages one object holds)."""
    outputs = [shim_kernels.execute(backend, case)[1] for case in cases[:cpu_stacks.WARM_OBJECTS]]
    held = cpu_stacks.guard_pages_held()
    assert held % cpu_stacks.WARM_OBJECTS == 0
    return outputs, held // cpu_stacks.WARM_OBJECTS


def test_objects_launched_long_ago_give_their_fiber_stacks_back(tmp_path):
    # A campaign's worker loads an object per batch of mutants and never unloads one: their stacks' guard pages
    # reached the process's cap on mappings (vm.max_map_count) and a fence's mprotect failed (ENOMEM), ending it.
    backend = CpuBackend(cache_dir=tmp_path)
    cases = _scaled_tree_sums(cpu_stacks.WARM_OBJECTS + 2)
    outputs, one = _warm_objects_of_this_test(backend, cases)
    assert one >= 256  # a block's 256 stacks, each guarded, counted in the process's ledger
    outputs += [shim_kernels.execute(backend, case)[1] for case in cases[cpu_stacks.WARM_OBJECTS:]]
    assert cpu_stacks.guard_pages_held() == cpu_stacks.WARM_OBJECTS * one
    assert torch.equal(shim_kernels.execute(backend, cases[0])[1], outputs[0])  # its stacks mapped again
    assert cpu_stacks.guard_pages_held() == cpu_stacks.WARM_OBJECTS * one
    assert all(torch.equal(out, k * outputs[0]) for k, out in enumerate(outputs, 1))


def test_the_guard_page_budget_is_the_process_s_not_each_object_s(tmp_path):
    budget = int(re.search(r"#define HARNESS_CPU_GUARD_BUDGET (\d+)", (SHIM_DIR / "cuda_cpu.h").read_text())[1])
    backend = CpuBackend(cache_dir=tmp_path)
    cases = _scaled_tree_sums(cpu_stacks.WARM_OBJECTS + 1)
    outputs, one = _warm_objects_of_this_test(backend, cases)
    ledger = ctypes.c_long.from_address(cpu_stacks.ledger())
    ledger.value += budget  # as if other objects held the whole budget
    try:
        # A new object: the oldest warm one gives its stacks back, and the new one's go unguarded (their canaries
        # still watch them), uncounted.
        out = shim_kernels.execute(backend, cases[-1])[1]
        assert ledger.value == budget + (cpu_stacks.WARM_OBJECTS - 1) * one
    finally:
        ledger.value -= budget
    assert torch.equal(out, len(cases) * outputs[0])



def test_a_backend_made_to_time_kernels_adds_up_their_runs_and_one_not_made_to_says_none(tmp_path):
    # --kernel-times: a campaign's device time is the sum of its kernels' runs, and a short run counts little.
    shim_kernels.check_kernel_times(CpuBackend(cache_dir=tmp_path, time_kernels=True), CpuBackend(cache_dir=tmp_path),
                                    long_run=30_000_000)
