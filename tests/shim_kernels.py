"""Test kernels for each feature the CPU backend's shim must support, with their expected results.

Shared by tests/test_cpu_backend.py (CPU result against a torch expectation) and
tests/test_fidelity_gpu.py (CPU result against the GPU's, bit for bit where the GPU is exact).
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from typing import Callable

import torch

from harness.compiler import signature


@dataclass(frozen=True)
class KernelCase:
    name: str
    source: str
    kernel_name: str
    # device -> (inputs, out, grid, block, args); args as (ctypes type, value) pairs
    build: Callable
    # inputs (on the CPU) -> expected out (on the CPU)
    expected: Callable
    exact: bool = True


def execute(backend, case: KernelCase, device=None):
    """Compile, check and launch one case on `backend`; returns (inputs, out) on the CPU."""
    device = device or backend.device
    kernel = backend.load(case.source, case.kernel_name, f"{case.name}.cu")
    inputs, out, grid, block, args = case.build(device)
    assert signature.check_arguments(kernel.params, args) == []
    backend.launch(kernel, grid, block, signature.to_ctypes(args))
    backend.synchronize()
    return [x.cpu() for x in inputs], out.cpu()


def _ptr(t):
    return (ctypes.c_void_p, t.data_ptr())


SPIN = r"""
extern "C" __global__ void spin(float* __restrict__ out, long long n)
{
    volatile float acc = 0.0f;
    for (long long i = 0; i < n; ++i) acc = acc + 1.0f;
    out[0] = acc;
}
"""


def check_kernel_times(timed, plain, long_run: int) -> None:
    """`timed` (a backend made with time_kernels) adds up a short, a long (`long_run` steps, over 10 ms) and a short
    run of one thread's loop; `plain` (made without) says None."""
    out = torch.zeros(1, device=timed.device)
    seconds = []
    for n in (1, long_run, 1):
        timed.launch(timed.load(SPIN, "spin", "spin.cu"), (1, 1, 1), (1, 1, 1),
                     signature.to_ctypes([_ptr(out), (ctypes.c_longlong, n)]))
        seconds.append(timed.kernel_seconds())
    assert out.item() == 1.0
    assert 0.0 < seconds[0] < 0.01 and seconds[1] - seconds[0] > 0.01 and seconds[2] - seconds[1] < 0.01, seconds
    out = torch.zeros(1, device=plain.device)
    plain.launch(plain.load(SPIN, "spin", "spin.cu"), (1, 1, 1), (1, 1, 1),
                 signature.to_ctypes([_ptr(out), (ctypes.c_longlong, 5)]))
    plain.synchronize()
    assert plain.kernel_seconds() is None and out.item() == 5.0


# ----------------------------------------------------------------------------- barriers


TREE_SUM = r"""
extern "C" __global__ void tree_sum(const int* __restrict__ x, int* __restrict__ out)
{
    __shared__ int s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads(); // sync-after-load
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads(); // sync-after-step
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
"""


def _tree_sum(device):
    x = torch.randint(-1000, 1000, (64 * 256,), dtype=torch.int32, generator=torch.Generator().manual_seed(1))
    x = x.to(device)
    out = torch.zeros(64, dtype=torch.int32, device=device)
    return [x], out, (64, 1, 1), (256, 1, 1), [_ptr(x), _ptr(out)]


ROTATE = r"""
// Correct only if every thread has stored before any thread loads: true barrier semantics.
extern "C" __global__ void rotate(const float* __restrict__ x, float* __restrict__ out, int n)
{
    __shared__ float s[512];
    int t = threadIdx.x;
    long long base = (long long)blockIdx.x * n;
    s[t] = x[base + t];
    __syncthreads(); // sync-after-store
    out[base + t] = s[(t + 1) % n];
}
"""


def _rotate(device):
    x = torch.randn(8 * 500, generator=torch.Generator().manual_seed(2)).to(device)
    out = torch.zeros_like(x)
    return [x], out, (8, 1, 1), (500, 1, 1), [_ptr(x), _ptr(out), (ctypes.c_int, 500)]


def _rotate_expected(inputs):
    return inputs[0].reshape(8, 500).roll(-1, dims=1).reshape(-1)


# ----------------------------------------------------------------------------- warps


WARP_SUMS = r"""
// out[3 w] = shfl_down sum of warp w (lane 0); out[3 w + 1] = xor-butterfly sum seen by lane 31;
// out[3 w + 2] = ballot of odd values.
extern "C" __global__ void warp_sums(const int* __restrict__ x, int* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? x[i] : 0;
    int down = v;
    for (int offset = 16; offset > 0; offset >>= 1) down += __shfl_down_sync(0xffffffffu, down, offset);
    int butterfly = v;
    for (int mask = 1; mask < 32; mask <<= 1) butterfly += __shfl_xor_sync(0xffffffffu, butterfly, mask);
    unsigned odd = __ballot_sync(0xffffffffu, v & 1);
    int warp = i / 32;
    int lane = threadIdx.x % 32;
    if (lane == 0) out[3 * warp] = down;
    if (lane == 31) out[3 * warp + 1] = butterfly;
    if (lane == 0) out[3 * warp + 2] = (int)odd;
}
"""


def _warp_sums(device):
    x = torch.randint(0, 100, (4 * 128,), dtype=torch.int32, generator=torch.Generator().manual_seed(3)).to(device)
    out = torch.zeros(3 * 16, dtype=torch.int32, device=device)
    return [x], out, (4, 1, 1), (128, 1, 1), [_ptr(x), _ptr(out), (ctypes.c_int, x.numel())]


def _warp_sums_expected(inputs):
    warps = inputs[0].reshape(16, 32)
    sums = warps.sum(dim=1)
    bits = ((warps & 1).to(torch.int64) << torch.arange(32)).sum(dim=1)
    ballot = torch.tensor([struct.unpack("i", struct.pack("I", int(b)))[0] for b in bits], dtype=torch.int32)
    return torch.stack([sums.to(torch.int32), sums.to(torch.int32), ballot], dim=1).reshape(-1)


# ----------------------------------------------------------------------------- softmax


SOFTMAX = r"""
#include <math_constants.h>
// One block of 256 threads per row: shared-memory max, then shared-memory sum.
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ out, int cols)
{
    __shared__ float s[256];
    const float* row = x + (long long)blockIdx.x * cols;
    float* orow = out + (long long)blockIdx.x * cols;
    int t = threadIdx.x;
    float m = -CUDART_INF_F;
    for (int c = t; c < cols; c += 256) m = fmaxf(m, row[c]);
    s[t] = m;
    __syncthreads(); // sync-max-load
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] = fmaxf(s[t], s[t + stride]);
        __syncthreads(); // sync-max-step
    }
    float row_max = s[0];
    __syncthreads(); // sync-max-read
    float sum = 0.0f;
    for (int c = t; c < cols; c += 256) sum += expf(row[c] - row_max);
    s[t] = sum;
    __syncthreads(); // sync-sum-load
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads(); // sync-sum-step
    }
    float total = s[0];
    for (int c = t; c < cols; c += 256) orow[c] = expf(row[c] - row_max) / total;
}
"""


def _softmax(device):
    x = (torch.randn(16, 1000, generator=torch.Generator().manual_seed(4)) * 4).to(device)
    out = torch.zeros_like(x)
    return [x], out, (16, 1, 1), (256, 1, 1), [_ptr(x), _ptr(out), (ctypes.c_int, 1000)]


# ----------------------------------------------------------------------------- atomics


ATOMICS = r"""
// 4096 blocks of 256 threads hammer the same few words; out[8] holds two 16-bit counters.
extern "C" __global__ void contend(long long* __restrict__ out)
{
    unsigned int* halves = (unsigned int*)&out[8];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd((int*)&out[0], 1);
    atomicAdd((unsigned long long*)&out[1], 3ull);
    atomicAdd((float*)&out[2], 1.0f);
    atomicAdd((double*)&out[3], 0.5);
    atomicMax((int*)&out[4], i);
    atomicMin((int*)&out[5], -i);
    atomicMax((unsigned long long*)&out[6], (unsigned long long)i * 7ull);
    atomicExch((int*)&out[7], 5);
    if (blockIdx.x < 64) {
        // 16-bit CAS on either half of one 32-bit word: no update may be lost to the other half.
        unsigned short* lane = (unsigned short*)halves + (i & 1);
        unsigned short seen = *lane;
        unsigned short assumed;
        do {
            assumed = seen;
            seen = atomicCAS(lane, assumed, (unsigned short)(assumed + 1));
        } while (seen != assumed);
    }
}
"""


def _atomics(device):
    out = torch.zeros(9, dtype=torch.int64, device=device)
    return [], out, (4096, 1, 1), (256, 1, 1), [_ptr(out)]


def _atomics_expected(_inputs):
    n = 4096 * 256
    as_int64 = lambda value, fmt: struct.unpack("<q", struct.pack(fmt, value).ljust(8, b"\0"))[0]  # noqa: E731
    return torch.tensor([
        n, 3 * n, as_int64(float(n), "<f"), as_int64(n * 0.5, "<d"), n - 1, as_int64(-(n - 1), "<i"),
        (n - 1) * 7, 5, 8192 | (8192 << 16),  # 64 blocks x 256 threads, half on each 16-bit lane
    ], dtype=torch.int64)


# ----------------------------------------------------------------------------- half and bfloat16


CONVERSIONS = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// Per input float: its half bits, its bfloat16 bits, and both widened back to float.
extern "C" __global__ void conversions(const float* __restrict__ x, unsigned short* __restrict__ h,
                                       unsigned short* __restrict__ b, float* __restrict__ hf,
                                       float* __restrict__ bf, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half vh = __float2half(x[i]);
    __nv_bfloat16 vb = __float2bfloat16(x[i]);
    h[i] = __half_as_ushort(vh);
    b[i] = __bfloat16_as_ushort(vb);
    hf[i] = __half2float(vh);
    bf[i] = __bfloat162float(vb);
}
"""


def conversion_edge_values() -> torch.Tensor:
    """Ties, extremes, overflow, subnormals, signed zeros, infinities and NaNs for half and bfloat16."""
    f = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"),
         65504.0, 65519.99, 65520.0, 65536.0, 1e5, -65520.0,              # half: max, just below tie, tie -> inf
         2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0001, 3 * 2.0 ** -25,      # half: smallest subnormal and ties
         2.0 ** -14, 2.0 ** -14 - 2.0 ** -25, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
         1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 3.3895314e38, 3.4028235e38,     # bfloat16 ties, max, overflow
         1e-40, -1e-45, 9.183549615799121e-41]                             # float subnormals
    bits = [0x7FC00001, 0xFFC12345, 0x7F800001, 0x7FFFFFFF]                # NaNs with payloads
    values = torch.tensor(f, dtype=torch.float32)
    nans = torch.tensor(bits, dtype=torch.int64).to(torch.int32).view(torch.float32)
    random = torch.randint(-2**31, 2**31 - 1, (4096,), dtype=torch.int64,
                           generator=torch.Generator().manual_seed(5)).to(torch.int32).view(torch.float32)
    return torch.cat([values, nans, random])


def _conversions(device):
    x = conversion_edge_values().to(device)
    n = x.numel()
    h = torch.zeros(n, dtype=torch.int16, device=device)
    b = torch.zeros(n, dtype=torch.int16, device=device)
    hf = torch.zeros(n, dtype=torch.float32, device=device)
    bf = torch.zeros(n, dtype=torch.float32, device=device)
    out = torch.cat([h.view(torch.uint8), b.view(torch.uint8), hf.view(torch.uint8), bf.view(torch.uint8)])
    # One output buffer, four views into it, so a case has one `out` to compare.
    h, b, hf, bf = (out[0:2 * n].view(torch.int16), out[2 * n:4 * n].view(torch.int16),
                    out[4 * n:8 * n].view(torch.float32), out[8 * n:12 * n].view(torch.float32))
    grid = ((n + 255) // 256, 1, 1)
    return [x], out, grid, (256, 1, 1), [_ptr(x), _ptr(h), _ptr(b), _ptr(hf), _ptr(bf), (ctypes.c_int, n)]


def split_conversions(out: torch.Tensor, n: int):
    return (out[0:2 * n].view(torch.int16), out[2 * n:4 * n].view(torch.int16),
            out[4 * n:8 * n].view(torch.float32), out[8 * n:12 * n].view(torch.float32))


WIDENING = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// Every 16-bit pattern, read as a half and as a bfloat16, widened to float.
extern "C" __global__ void widening(const unsigned short* __restrict__ bits, float* __restrict__ out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 65536) return;
    out[i] = __half2float(__ushort_as_half(bits[i]));
    out[65536 + i] = __bfloat162float(__ushort_as_bfloat16(bits[i]));
}
"""


def _widening(device):
    bits = torch.arange(65536, dtype=torch.int32).to(torch.int16).to(device)
    out = torch.zeros(2 * 65536, dtype=torch.float32, device=device)
    return [bits], out, (256, 1, 1), (256, 1, 1), [_ptr(bits), _ptr(out)]


# ----------------------------------------------------------------------------- 3-D grids


GRID3D = r"""
extern "C" __global__ void ids3d(int* __restrict__ out)
{
    int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int per_block = blockDim.x * blockDim.y * blockDim.z;
    out[block * per_block + thread] = ((((blockIdx.z * 8 + blockIdx.y) * 8 + blockIdx.x) * 8 + threadIdx.z) * 8
                                       + threadIdx.y) * 8 + threadIdx.x;
}
"""


def _grid3d(device):
    out = torch.full((3 * 4 * 5 * 4 * 2 * 6,), -1, dtype=torch.int32, device=device)
    return [], out, (3, 4, 5), (4, 2, 6), [_ptr(out)]


def _grid3d_expected(_inputs):
    codes = []
    for bz in range(5):
        for by in range(4):
            for bx in range(3):
                for tz in range(6):
                    for ty in range(2):
                        for tx in range(4):
                            codes.append(((((bz * 8 + by) * 8 + bx) * 8 + tz) * 8 + ty) * 8 + tx)
    return torch.tensor(codes, dtype=torch.int32)


CASES = [
    KernelCase("tree_sum", TREE_SUM, "tree_sum", _tree_sum,
               lambda inputs: inputs[0].reshape(64, 256).sum(dim=1).to(torch.int32)),
    KernelCase("rotate", ROTATE, "rotate", _rotate, _rotate_expected),
    KernelCase("warp_sums", WARP_SUMS, "warp_sums", _warp_sums, _warp_sums_expected),
    KernelCase("softmax_rows", SOFTMAX, "softmax_rows", _softmax, lambda inputs: torch.softmax(inputs[0], dim=1),
               exact=False),
    KernelCase("atomics", ATOMICS, "contend", _atomics, _atomics_expected),
    KernelCase("conversions", CONVERSIONS, "conversions", _conversions, None),
    KernelCase("widening", WIDENING, "widening", _widening, None),
    KernelCase("grid3d", GRID3D, "ids3d", _grid3d, _grid3d_expected),
]
