"""harness/gate/checks/source_rules.py: the spec's CUDA-source rules, checked statically on small sources and on every
registered substrate."""

import pytest

from harness.candidates import candidate_files, import_candidate, register_candidate
from harness.gate.checks.source_rules import RULE_SUMMARIES, SourceRule, SourceViolation, check_source
from harness.problems import REPO_ROOT
from tests import shim_kernels

DEVICE_ONLY, INCLUDES, KERNEL_IS_GLOBAL = SourceRule.DEVICE_ONLY, SourceRule.INCLUDES, SourceRule.KERNEL_IS_GLOBAL
WIDE, GUARDS, CEIL, SYNCS = (SourceRule.WIDE_INDICES, SourceRule.ONE_LINE_GUARDS, SourceRule.CEIL_DIVISION,
                             SourceRule.LABELLED_SYNCS)
HEAD = 'extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ out, long long n, int cols)'


def kernel(*body, before=(), after=(), head=HEAD):
    """A kernel `k` with the given body lines: with nothing before it, body line i is source line i + 3."""
    return "\n".join([*before, head, "{", *("    " + line for line in body), "}", *after]) + "\n"


def found(source, kernel_name="k"):
    return [(v.rule, v.line) for v in check_source(source, kernel_name)]


GUARD_MESSAGE = "bounds guard spans lines {}-{}; keep it on one line: `if (...) return;` or `if (...) {{ ... }}`"
HOST_CODE = ("{} has neither `__global__` nor `__device__`, so it is host code; a substrate is device code only: "
             "mark it `__device__` (host work belongs in the Python `launch`)")
UNLABELLED = ("repeated `__syncthreads();` without a label; add a distinct trailing comment, e.g. "
              "`__syncthreads(); // sync-after-load`")

# (source, kernel_name, the one violation expected: rule, line, message)
EXACT = {
    "host_function": (kernel("out[0] = 1.0f;", before=["float twice(float v) { return 2.0f * v; }"]), "k",
                      DEVICE_ONLY, 1, HOST_CODE.format("function `twice`")),
    "host_qualifier": (kernel("out[0] = 1.0f;", before=["__host__ __device__ float twice(float v) { return v; }"]),
                       "k", DEVICE_ONLY, 1, "`__host__` makes host code; a substrate is device code only: drop "
                       "`__host__` (keep `__device__`)"),
    "launch": (kernel("if (n > 1) k<<<1, 1>>>(x, out, n - 1, cols);"), "k", DEVICE_ONLY, 3,
               "kernel launch `<<<...>>>` in the source; launches belong in the Python `launch`, which returns grid "
               "and block"),
    "main": (kernel("out[0] = 1.0f;", after=["int main() { return 0; }"]), "k", DEVICE_ONLY, 5,
             "defines `main`; a substrate is device code only: the launch lives in the Python `launch`, which returns "
             "grid, block and arguments"),
    "host_variable": (kernel("out[0] = scale;", before=["float scale = 2.0f;"]), "k", DEVICE_ONLY, 1,
                      "namespace-scope variable `scale` is host memory; declare it `__device__` or `__constant__` "
                      "(or `constexpr` if it is a compile-time number)"),
    "member_function": (kernel("out[0] = 1.0f;", before=["struct Acc {", "    float v;",
                                                          "    float get() { return v; }", "};"]), "k", DEVICE_ONLY, 3,
                        HOST_CODE.format("member function `get`")),
    "torch_header": (kernel("out[0] = 1.0f;", before=["#include <torch/extension.h>"]), "k", INCLUDES, 1,
                     "`#include <torch/extension.h>` is a host (PyTorch) header; host headers cannot be in a "
                     "substrate, which NVRTC compiles alone as device code: drop it"),
    "other_header": (kernel("out[0] = 1.0f;", before=['#include "stdio.h"']), "k", INCLUDES, 1,
                     '`#include "stdio.h"` is not allowed; a substrate may include only <cuda_fp16.h>, <cuda_bf16.h> '
                     "and <math_constants.h>"),
    "kernel_missing": (kernel("out[0] = 1.0f;"), "kk", KERNEL_IS_GLOBAL, 0,
                       "`kk` is not defined in the source; kernel_name must name a `__global__` function defined "
                       'there, e.g. `extern "C" __global__ void kk(...)`'),
    "kernel_is_device": (kernel("out[0] = 1.0f;", head='extern "C" __device__ void k(float* out)'), "k",
                         KERNEL_IS_GLOBAL, 1, '`k` is a `__device__` function, not a kernel; declare it '
                         '`extern "C" __global__ void k(...)`'),
    "narrow_index": (kernel("int i = blockIdx.x * blockDim.x + threadIdx.x;", "if (i < n) out[i] = x[i];"), "k",
                     WIDE, 3,
                     "`int i` holds a global thread index (blockIdx.x * blockDim.x); declare it long long"),
    "narrow_grid_stride": (kernel("int stride = blockDim.x * gridDim.x;"), "k", WIDE, 3,
                           "`int stride` holds the grid-stride step (blockDim.x * gridDim.x); declare it long long"),
    "narrow_derived": (kernel("int row = blockIdx.x;", "int base = row * cols;", "out[base] = 0.0f;"), "k", WIDE, 4,
                       "`int base` holds a product of a blockIdx-derived index (row * cols); declare it long long"),
    "narrow_cast_inside": (kernel("unsigned int i = (long long)blockIdx.x * blockDim.x;"), "k", WIDE, 3,
                           "`unsigned int i` holds a global thread index ((long long)blockIdx.x * blockDim.x); "
                           "declare it long long"),
    "guard_two_lines": (kernel("long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;", "if (i >= n)",
                               "    return;"), "k", GUARDS, 4, GUARD_MESSAGE.format(4, 5)),
    "ceil_literal": (kernel("long long tiles = (n + 255) / 256;"), "k", CEIL, 3,
                     "ceil division spelled `(n + 255) / 256`; spell it `(n + 256 - 1) / 256`"),
    "sync_unlabelled": (kernel("__syncthreads(); // sync-a", "__syncthreads();"), "k", SYNCS, 4, UNLABELLED),
    "sync_shared_label": (kernel("__syncthreads(); // sync", "__syncthreads();  //  sync"), "k", SYNCS, 4,
                          "shares the label `// sync` with line 3; give each barrier its own label"),
}


@pytest.mark.parametrize("source, kernel_name, rule, line, message", EXACT.values(), ids=EXACT.keys())
def test_flags_the_one_violation_with_its_message(source, kernel_name, rule, line, message):
    violations = check_source(source, kernel_name)
    assert [(v.rule, v.line, v.message) for v in violations] == [(rule, line, message)]
    assert violations[0].text == (source.split("\n")[line - 1].strip() if line else "")


# (source, kernel_name, every (rule, line) expected)
FLAGGED = {
    "host_in_extern_c_block": (kernel("out[0] = 1.0f;", before=['extern "C" {', "int one() { return 1; }", "}"]),
                               [(DEVICE_ONLY, 2)]),
    "host_function_template": (kernel("out[0] = 1.0f;", before=["template <typename T>", "T twice(T v)", "{",
                                                                "    return v + v;", "}"]), [(DEVICE_ONLY, 2)]),
    "host_array": (kernel("out[0] = w[0];", before=["float w[2] = {1.0f, 2.0f};"]), [(DEVICE_ONLY, 1)]),
    "const_pointer_variable": (kernel("out[0] = 1.0f;", before=["const float* table = 0;"]), [(DEVICE_ONLY, 1)]),
    "header_angle": (kernel("out[0] = 1.0f;", before=["#include <stdio.h>", "#include <ATen/ATen.h>"]),
                     [(INCLUDES, 1), (INCLUDES, 2)]),
    "kernel_is_host": (kernel("out[0] = 1.0f;", head="void k(float* out)"),
                       [(DEVICE_ONLY, 1), (KERNEL_IS_GLOBAL, 1)]),
    "narrow_blockidx_times_param": (kernel("int i = blockIdx.x * n;"), [(WIDE, 3)]),
    "narrow_int32_t": (kernel("int32_t i = blockIdx.x * blockDim.x + threadIdx.x;"), [(WIDE, 3)]),
    "narrow_grid_stride_loop": (kernel("for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; "
                                       "i += blockDim.x * gridDim.x) out[i] = x[i];"), [(WIDE, 3)]),
    "narrow_step_only": (kernel("int i = threadIdx.x;", "for (; i < n; i += blockDim.x * gridDim.x) out[i] = x[i];"),
                         [(WIDE, 4)]),
    "narrow_later_assignment": (kernel("int i;", "i = blockIdx.x * blockDim.x + threadIdx.x;"), [(WIDE, 4)]),
    "narrow_transitively_derived": (kernel("long long r = blockIdx.y;", "long long r2 = r + 1;", "int off = r2 * n;"),
                                    [(WIDE, 5)]),
    "narrow_second_declarator": (kernel("int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;"), [(WIDE, 3)]),
    "guard_block": (kernel("long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;", "if (i < n) {",
                           "    out[i] = x[i];", "}"), [(GUARDS, 4)]),
    "guard_condition_two_lines": (kernel("long long i = threadIdx.x;", "if (i < n &&", "    i >= 0) out[i] = 0.0f;"),
                                  [(GUARDS, 4)]),
    "guard_inside_a_loop": (kernel("for (int j = 0; j < 4; ++j) {", "    if (j < n)", "        out[j] = 0.0f;", "}"),
                            [(GUARDS, 4)]),
    "ceil_divisor_differs": (kernel("long long t = (n + 256 - 1) / 128;"), [(CEIL, 3)]),
    "ceil_grouped": (kernel("long long t = (n + (256 - 1)) / 256;"), [(CEIL, 3)]),
    "ceil_minus_one_plus_one": (kernel("long long t = (n - 1) / 256 + 1;"), [(CEIL, 3)]),
    "ceil_remainder_test": (kernel("long long t = n / 256 + (n % 256 != 0);"), [(CEIL, 3)]),
    "ceil_remainder_ternary": (kernel("long long t = n / 256 + ((n % 256) ? 1 : 0);"), [(CEIL, 3)]),
    "ceil_shift": (kernel("long long t = (n + 256 - 1) >> 8;"), [(CEIL, 3)]),
    "ceil_shift_literal": (kernel("long long t = (n + 255) >> 8;"), [(CEIL, 3)]),
    "ceil_member_divisor_differs": (kernel("long long t = (n + blockDim.x - 1) / 256;"), [(CEIL, 3)]),
    "syncs_both_unlabelled": (kernel("__syncthreads();", "__syncthreads();"), [(SYNCS, 3), (SYNCS, 4)]),
    "syncs_block_comment_is_no_label": (kernel("__syncthreads(); /* a */", "__syncthreads(); // b"), [(SYNCS, 3)]),
    "syncs_two_on_one_line": (kernel("__syncthreads(); __syncthreads(); // both"), [(SYNCS, 3)]),
}


@pytest.mark.parametrize("source, expected", FLAGGED.values(), ids=FLAGGED.keys())
def test_flags(source, expected):
    assert found(source) == expected


FINE = {
    "thread_index": kernel("int tid = threadIdx.x;", "out[tid] = 0.0f;"),
    "block_index": kernel("int row = blockIdx.x;", "out[row] = 0.0f;"),
    "block_times_literal": kernel("int row = blockIdx.y * 32 + threadIdx.y;", "out[row] = 0.0f;"),
    "block_times_define": kernel("int row = blockIdx.y * TILE + threadIdx.y;", before=["#define TILE 32"]),
    "block_times_constexpr": kernel("constexpr int T = 32;", "int row = blockIdx.y * T + threadIdx.y;"),
    "wide_with_cast": kernel("long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
                             "if (i < n) out[i] = 0;"),
    "wide_grid_stride": kernel("long long stride = (long long)gridDim.x * blockDim.x;",
                               "for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
                               "i += stride) out[i] = x[i];"),
    "narrow_from_data": kernel("int v = (int)x[blockIdx.x * blockDim.x] * cols;", "out[0] = v;"),
    "narrow_shadowed_by_wide": kernel("{ int i = threadIdx.x; out[i] = 0.0f; }",
                                      "long long i = (long long)blockIdx.x * cols;", "i = i * n;"),
    "guard_one_line": kernel("long long i = threadIdx.x;", "if (i < n) { out[i] = x[i]; }", "if (i >= n) return;"),
    "branch_with_else": kernel("long long i = threadIdx.x;", "if (i < n) {", "    out[i] = x[i];", "} else {",
                               "    out[0] = 0.0f;", "}"),
    "branch_else_if": kernel("long long i = threadIdx.x;", "if (i < n) {", "    out[i] = x[i];",
                             "} else if (i < 2 * n) {", "    out[0] = 0.0f;", "}"),
    "equality_over_lines": kernel("int tid = threadIdx.x;", "if (tid == 0) {", "    out[0] = 1.0f;", "}"),
    "shift_over_lines": kernel("if (n >> 4) {", "    out[0] = 1.0f;", "}"),
    "ceil_canonical": kernel("long long a = (n + 256 - 1) / 256;", "long long b = (n+TILE-1)/TILE;",
                             "long long c = (n + blockDim.x - 1) / blockDim.x;", "long long d = (n + (T) - 1) / (T);",
                             before=["#define TILE 32", "#define T 8"]),
    "plain_divisions": kernel("long long mid = (n + cols) / 2;", "long long f = fminf(n + 255, 9) / 256;"),
    "single_unlabelled_sync": kernel("__syncthreads();", "out[0] = 1.0f;"),
    "syncs_labelled": kernel("__syncthreads(); // sync-after-load", "__syncthreads();  // sync-after-step"),
    "sync_in_comment_not_counted": kernel("__syncthreads();", "// __syncthreads();"),
    "allowed_headers": kernel("out[0] = 1.0f;", before=["#include <cuda_fp16.h>", '#include "cuda_bf16.h"',
                                                        "#include <math_constants.h>  // CUDART_INF_F"]),
    "device_declarations": kernel("out[0] = scale * w[0] + twice(1.0f);", before=[
        "typedef unsigned int word_t;", "using index_t = long long;", "struct Geometry { int rank; long long n[8]; };",
        "__device__ float w[2] = {1.0f, 2.0f};", "__constant__ float scale = 2.0f;", "constexpr int BLOCK = 256;",
        "static const float HALF = 0.5f;", "extern __shared__ float dynamic[];", "__device__ float twice(float v);",
        "template <typename T> __device__ __forceinline__ T twice(T v) { return v + v; }",
        "struct Pair { float a; __device__ float sum() const { return a; } };", "#pragma once"]),
    "launch_bounds_kernel": kernel("out[0] = 1.0f;", head="__global__ void __launch_bounds__(256) k(float* out)"),
    "template_kernel": kernel("out[0] = (T)1;", head="template <typename T> __global__ void k(T* out)"),
    "comments_and_strings_blanked": kernel('/* int i = blockIdx.x * blockDim.x;', "   if (i < n)", "   return; */",
                                           'const char* s = "(n + 255) / 256 <<<";', "// float host(float v) { }"),
}


@pytest.mark.parametrize("source", FINE.values(), ids=FINE.keys())
def test_not_flagged(source):
    assert check_source(source, "k") == []


def test_a_template_kernel_is_named_with_its_arguments():
    assert check_source(FINE["template_kernel"], "k<float>") == []


def test_line_numbers_survive_multiline_comments():
    source = kernel("/* one", "   two */ int i = blockIdx.x * blockDim.x;")
    assert found(source) == [(WIDE, 4)]


def test_a_source_breaking_several_rules_reports_every_one():
    source = kernel("int i = blockIdx.x * blockDim.x + threadIdx.x;", "if (i >= n)", "    return;",
                    "int tiles = (n + 255) / 256;", "__syncthreads();", "__syncthreads();",
                    before=["#include <torch/extension.h>", "float host_scale = 2.0f;"],
                    head='extern "C" __device__ void k(float* out, long long n)')
    violations = check_source(source, "k")
    assert {v.rule for v in violations} == set(SourceRule)
    assert [v.line for v in violations] == sorted(v.line for v in violations)


def test_describe():
    assert SourceViolation(CEIL, 4, "x", "spell it so").describe() == "[ceil_division] line 4: spell it so"
    assert SourceViolation(KERNEL_IS_GLOBAL, 0, "", "missing").describe() == "[kernel_is_global] missing"


def test_every_rule_has_a_one_sentence_summary():
    assert set(RULE_SUMMARIES) == set(SourceRule)
    assert all(s.endswith(".") and s.count(". ") == 0 for s in RULE_SUMMARIES.values())


def _registered(directory):
    for path in candidate_files(directory):
        for name, raw in register_candidate(import_candidate(path), path).items():
            yield pytest.param(raw["cuda"], raw["kernel_name"], id=f"{directory.name}/{name}")


FAMILY = [*_registered(REPO_ROOT / "substrates"), *_registered(REPO_ROOT / "examples" / "substrates")]


@pytest.mark.parametrize("cuda, kernel_name", FAMILY)
def test_every_registered_substrate_follows_every_rule(cuda, kernel_name):
    assert [v.describe() for v in check_source(cuda, kernel_name)] == []


# The shim's test kernels are not substrates: some use 32-bit global indices or a multi-line guard
# on purpose. What they break is pinned here, as a check of the rules on real kernels.
SHIM_BREAKS = {"warp_sums": [(WIDE, 6)], "atomics": [(WIDE, 6), (GUARDS, 15)], "conversions": [(WIDE, 9)],
               "widening": [(WIDE, 7)], "grid3d": [(WIDE, 4)]}


@pytest.mark.parametrize("case", shim_kernels.CASES, ids=lambda c: c.name)
def test_shim_kernels(case):
    assert found(case.source, case.kernel_name) == SHIM_BREAKS.get(case.name, [])
