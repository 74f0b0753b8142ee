"""harness.backends.address_check without a GPU: which instructions it checks, the code it writes (every
substrate's and example's PTX, checked, must assemble), the table of mapped memory, and the fault it reports."""

import re

import pytest

from harness.backends import address_check as check
from harness.compiler.nvrtc import compile_cuda
from tests.conftest import registered_entries


@pytest.mark.parametrize("opcode, operands, expected", [
    ("ld.global.nc.f32", "%f1, [%rd7]", check.Access("%rd7", 0, 4, generic=False)),
    ("st.global.u32", "[%rd130+-64], %r55", check.Access("%rd130", -64, 4, generic=False)),
    ("ld.global.nc.v4.u32", "{%r1, %r2, %r3, %r4}, [%rd2+16]", check.Access("%rd2", 16, 16, generic=False)),
    ("st.global.v2.f64", "[%rd3], {%fd1, %fd2}", check.Access("%rd3", 0, 16, generic=False)),
    ("atom.global.add.f32", "%f2, [%rd19], %f1", check.Access("%rd19", 0, 4, generic=False)),
    ("atom.cas.b32", "%r17, [%rd87], %r111, %r70", check.Access("%rd87", 0, 4, generic=True)),
    ("ld.u16", "%rs1, [%rd4+2]", check.Access("%rd4", 2, 2, generic=True)),
    ("red.global.add.u64", "[%rd9], %rd10", check.Access("%rd9", 0, 8, generic=False)),
    ("ld.volatile.global.u32", "%r18, [%rd3]", check.Access("%rd3", 0, 4, generic=False)),
    ("ld.relaxed.gpu.global.b16", "%rs2, [%rd5]", check.Access("%rd5", 0, 2, generic=False)),
    ("st.global.b8", "[%rd1+3], %rs1", check.Access("%rd1", 3, 1, generic=False)),
    # Not checked: other state spaces, a variable of the module named in the address, what is not an access.
    ("ld.param.u64", "%rd74, [pad_const_b4_param_0]", None),
    ("ld.shared.f32", "%f8, [%rd8]", None),
    ("st.shared.f32", "[%rd8], %f36", None),
    ("ld.local.u32", "%r1, [%rd1]", None),
    ("ld.const.u32", "%r1, [%rd1]", None),
    ("atom.shared.add.u32", "%r1, [%rd1], 1", None),
    ("ld.global.f32", "%f1, [table+4]", None),
    ("add.s64", "%rd2, %rd1, 4", None),
    ("cvta.to.global.u64", "%rd2, %rd1", None),
])
def test_which_instructions_are_checked_and_how_many_bytes_they_touch(opcode, operands, expected):
    assert check.memory_access(opcode, operands) == expected


PTX = """.version 9.0
.target sm_90
.address_size 64

.global .align 4 .b8 table[16];
.global .align 1 .u8 unused;
.visible .entry k(.param .u64 k_param_0)
{
\t.reg .pred %p<2>;
\t.reg .b64 %rd<4>;
\t.reg .f32 %f<3>;
\tld.param.u64 %rd1, [k_param_0];
\tmov.u64 %rd3, table;
\tcvta.to.global.u64 %rd2, %rd1;
\tsetp.eq.s64 %p1, %rd2, 0;
\t@!%p1 ld.global.nc.v2.f32 {%f1, %f2}, [%rd2+-8];
\tld.global.f32 %f1, [table+4];
\tst.global.f32 [%rd3+4], %f1;
\tret;
}
"""


def test_each_checked_access_is_made_only_where_its_own_guard_holds_and_it_would_not_fault():
    checked = check.instrument(PTX)
    lines = checked.splitlines()
    # Before the module's first variable, once: the state's pointer and the table, in constant memory, and the check.
    assert lines[4:7] == [f".const .align 8 .u64 {check.STATE_SYMBOL};",
                          f".const .align 8 .u64 {check.TABLE_SYMBOL}[{2 * check.TABLE_ENTRIES}];",
                          f".func (.param .b32 {check.CHECK_FUNCTION}_ok) {check.CHECK_FUNCTION}(.param .b64 "
                          f"{check.CHECK_FUNCTION}_address, .param .b32 {check.CHECK_FUNCTION}_kind)"]
    assert checked.count(check.TABLE_SYMBOL + "[") == 1 and checked.count(".func") == 1
    # Seven halvings of the table, once in the module: each a read of constant memory, a compare and a predicated step.
    assert len(re.findall(r"ld\.const\.u64 %ac_lo, \[%ac_p\+\d+\];", checked)) == 7
    # The guarded load: the check called where its guard (@!%p1) holds, the access made where the check says so.
    assert "\t\tmov.u32 %ac_ok, 0;" in lines
    assert f"\t\t@!%p1 call (ac_ok), {check.CHECK_FUNCTION}, (ac_address, ac_kind);" in lines
    assert f"\t\tst.param.b32 [ac_kind], {8 | check.GENERIC_FLAG * 0};" in lines  # v2.f32: 8 bytes, global
    assert "\t\t@%ac_run ld.global.nc.v2.f32 {%f1, %f2}, [%rd2+-8];" in lines
    # The unguarded store: a call every active thread makes.
    assert f"\t\tcall.uni (ac_ok), {check.CHECK_FUNCTION}, (ac_address, ac_kind);" in lines
    assert "\t\t@%ac_run st.global.f32 [%rd3+4], %f1;" in lines
    assert "\tld.global.f32 %f1, [table+4];" in lines  # names its variable: left as it was
    assert checked.count("\t{\n") == 2 and checked.count("@%ac_run") == 2
    # Straight-line: the check adds no branch and no label.
    assert not re.search(r"\bbra\b|^\s*\$", checked, re.MULTILINE)


def test_a_generic_access_says_so_to_the_check():
    checked = check.instrument(PTX.replace("st.global.f32 [%rd3+4]", "st.f32 [%rd3+4]"))
    assert f"\t\tst.param.b32 [ac_kind], {4 | check.GENERIC_FLAG};" in checked.splitlines()


def test_the_table_holds_the_variables_whose_address_the_code_takes():
    assert check.address_taken_globals(PTX) == ["table"]


def test_the_table_holds_a_constant_array_whose_address_the_code_takes():
    # `weights` is read through a generic pointer (`cvta.const`): a generic load the check judges.
    from harness.compiler.nvrtc import compile_cuda as compile_for

    ptx = compile_for(WEIGH_CONSTANT, "weigh", "compute_90").ptx
    assert "cvta.const.u64" in ptx
    assert check.address_taken_globals(ptx) == ["weights"]
    assert check.address_taken_globals(ptx.replace("mov.u64 \t%rd5, weights;", "")) == []


WEIGH_CONSTANT = r"""
__constant__ float weights[4] = {1.f, 2.f, 3.f, 4.f};
extern "C" __global__ void weigh(const float* in, float* out, int which)
{
    const float* w = which ? weights : in;  // either: a generic pointer
    out[threadIdx.x] = w[threadIdx.x % 4] * in[threadIdx.x];
}
"""


def test_ptx_with_no_module_scope_directive_is_refused():
    with pytest.raises(ValueError, match="no module-scope directive"):
        check.instrument(".version 9.0\n.target sm_90\n.address_size 64\n")


def test_ranges_are_sorted_merged_where_they_touch_and_padded():
    firsts, ends = check.ranges_table([(40, 50), (10, 20), (20, 30), (5, 8), (45, 60), (70, 70)])
    assert firsts[:3] == [5, 10, 40] and ends[:3] == [8, 30, 60]
    assert firsts[3:] == [check.UNUSED_LO] * (check.TABLE_ENTRIES - 3) and ends[3:] == [0] * (check.TABLE_ENTRIES - 3)


def test_more_ranges_than_the_table_holds_is_none():
    apart = [(100 * i, 100 * i + 10) for i in range(check.TABLE_ENTRIES + 1)]
    assert check.ranges_table(apart[:-1]) is not None
    assert check.ranges_table(apart) is None


def test_a_stopped_access_reads_as_the_fault_the_gpu_would_raise():
    assert check.describe_stop(1, 0x7F0000001000, 4 | check.ILLEGAL_ADDRESS << 16) == (
        "CUDA error 700 CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered (foreseen by the "
        "address check: a 4-byte access at 0x7f0000001000, outside every allocation of the process; not made)")
    assert check.describe_stop(3, 0x11, 8 | check.MISALIGNED_ADDRESS << 16) == (
        "CUDA error 716 CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address (foreseen by the address check: a 8-byte "
        "access at 0x11, not aligned to its size, and 2 more; not made)")


needs_assembler = pytest.mark.skipif(check.assembler_version() is None, reason="nvJitLink is not installed")


def _example_entries():
    from pathlib import Path

    from harness.candidates import candidate_files, import_candidate, make_entry, register_candidate

    entries = []
    for path in candidate_files(Path(__file__).resolve().parent.parent / "examples" / "substrates"):
        for name, raw in register_candidate(import_candidate(path), path).items():
            entries.append(make_entry(name, raw, path)[0])
    return entries


@needs_assembler
@pytest.mark.parametrize("entry", registered_entries() + _example_entries(), ids=lambda e: e.name)
def test_every_substrate_and_example_assembles_checked(entry):
    compiled = compile_cuda(entry.cuda, entry.kernel_name, "sm_90")
    checked = check.instrument(compiled.ptx)
    assert checked.count("@%ac_run") >= 2  # at least a load and a store
    assert check.assemble(checked, "sm_90")[:4] == b"\x7fELF"


@needs_assembler
def test_ptx_the_assembler_refuses_is_reported_with_its_log():
    with pytest.raises(check.AssemblyError, match=r"nvJitLink could not assemble the PTX for sm_90: .*\n"
                                                 r"(.|\n)*Unknown symbol '%r9'") as refused:
        check.assemble(PTX.replace("ret;", "mov.u32 %r9, 1;\n\tret;"), "sm_90")
    assert "Unknown symbol '%r9'" in refused.value.log


def test_a_campaign_says_who_assembles_its_checked_modules(monkeypatch):
    monkeypatch.setattr(check, "assembler", lambda: ("13.0", ""))
    assert check.describe_assembly(ahead=True) == (
        "address check: on, the checked cubins assembled by nvJitLink 13.0 ahead")
    monkeypatch.setattr(check, "assembler", lambda: (None, "RuntimeError: libnvJitLink.so.13 not found"))
    assert check.describe_assembly(ahead=True) == (
        "address check: on, nvJitLink cannot be loaded here (RuntimeError: libnvJitLink.so.13 not found): the driver "
        "assembles each checked module from its PTX as a worker loads it")
    assert check.assembler_version() is None


@needs_assembler
def test_a_process_without_nvjitlink_finds_the_checked_cubin_another_assembled(tmp_path, monkeypatch):
    from harness.compiler import cache

    ptx = compile_cuda(registered_entries()[0].cuda, registered_entries()[0].kernel_name, "sm_90").ptx
    made = cache.address_checked_cubin(ptx, "sm_90", tmp_path)
    assert made[:4] == b"\x7fELF"
    monkeypatch.setattr(check, "assembler", lambda: (None, "OSError: libnvJitLink.so.13: cannot open shared object"))
    assert cache.address_checked_cubin(ptx, "sm_90", tmp_path) == made
    assert cache.address_checked_cubin(ptx, "sm_90", tmp_path / "empty") is None  # the driver assembles it then


TOO_MUCH_SHARED = r'''
extern "C" __global__ void k(float* out) {
    __shared__ float big[100000];  // 400,000 bytes: more than a block of an sm_90 may have
    big[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = big[(threadIdx.x + 1) % blockDim.x];
}
'''
FITS = TOO_MUCH_SHARED.replace("100000", "1024")


@pytest.mark.parametrize("entry", registered_entries(), ids=lambda e: e.name)
def test_a_checked_campaign_compiles_to_the_ptx_an_unchecked_one_assembles(entry):
    # Checked, NVRTC stops at the PTX: the code digests that class equivalent and duplicate mutants must not move.
    from harness.compiler.nvrtc import compile_cuda as compile_for

    assert compile_for(entry.cuda, entry.kernel_name, "compute_90").ptx == \
        compile_for(entry.cuda, entry.kernel_name, "sm_90").ptx


@needs_assembler
def test_a_kernel_ptxas_refuses_fails_its_checked_compile_as_it_fails_nvrtc_for_the_real_arch(tmp_path):
    from harness.compiler import cache, nvrtc

    with pytest.raises(nvrtc.CompileError, match="too much shared data"):
        nvrtc.compile_program(TOO_MUCH_SHARED, ("k",), "sm_90")
    cache.compile_program_cached(TOO_MUCH_SHARED, ("k",), "compute_90", "k.cu", tmp_path)  # no ptxas, no error
    with pytest.raises(nvrtc.CompileError, match=r"^ptxas \(sm_90\): .*too much shared data") as refused:
        cache.compile_program_cached(TOO_MUCH_SHARED, ("k",), "compute_90", "k.cu", tmp_path, address_checked=True)
    assert "too much shared data" in refused.value.log


@needs_assembler
def test_a_checked_batch_holding_a_kernel_ptxas_refuses_is_compiled_a_kernel_at_a_time(tmp_path):
    import functools
    from types import SimpleNamespace

    from harness.compiler import cache
    from harness.engine.compile import compile_variants

    compile_checked = functools.partial(cache.compile_program_cached, cache_dir=tmp_path, address_checked=True)
    variants = compile_variants([FITS, TOO_MUCH_SHARED, FITS.replace("+ 1", "+ 2")], SimpleNamespace(kernel_name="k"),
                                "compute_90", "k.cu", compile_checked)
    assert [v is None for v in variants] == [False, True, False]
    assert variants[0].kernel.cubin == b"" and variants[0].kernel.arch == "compute_90"
    assert cache.address_checked_cubin(variants[2].kernel.ptx, "compute_90", tmp_path)[:4] == b"\x7fELF"


@needs_assembler
def test_an_unchecked_launch_of_a_kernel_compiled_to_ptx_loads_the_ptx_assembled_for_the_real_arch(tmp_path):
    # (Not NVRTC's cubin byte for byte: nvJitLink's ptxas may pick other instructions of the same meaning.)
    from harness.compiler import cache, nvrtc

    entry = registered_entries()[0]
    compiled = nvrtc.compile_cuda(entry.cuda, entry.kernel_name, "compute_90")
    cubin = cache.assembled_cubin(compiled.ptx, "compute_90", tmp_path)
    assert cubin[:4] == b"\x7fELF" and compiled.lowered_name.encode() in cubin
    assert cache.assembled_cubin(compiled.ptx, "sm_90", tmp_path) == cubin  # one cache entry for both spellings
