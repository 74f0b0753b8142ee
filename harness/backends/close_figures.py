"""compare_close's figures of every chunk in one pass over the output: one kernel, a few small reductions.

harness.gate.checks.compare works through a float output COMPARE_CHUNK elements at a time in
torch ops: each chunk converted to float64, then a dozen passes over its temporaries. On a GPU that
is about 180 GB of memory traffic to compare a 4 GiB output (about 60 ms on an H100), where reading
the two tensors once is 8 GiB. This kernel reads each element pair once and leaves per-thread
partial figures; torch then folds them per chunk into exactly the figures compare_close's torch
route gives a chunk: [all finite, max |got - expected|, max relative error, mismatches]. Every
figure is a maximum or a count of values computed as that route computes them (in float64, the
tolerance's product and sum rounded apart, never fused), so the two routes agree bit for bit, in
any order of the elements. A chunk holding a NaN or an infinity is only flagged: compare_close
judges it by its general rules in torch, as before.

A backend offers this as `Backend.close_figures` (the CUDA backend); the CPU backend runs the same
source through its shim in the tests, where torch's own route is the quicker one.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import torch

# The element types the kernel reads, and how each becomes a float64 (exactly, as torch's .to(float64) does).
ELEMENT_TYPES = {
    torch.float64: ("double", ""),
    torch.float32: ("float", "(double)"),
    torch.float16: ("__half", "(double)__half2float"),
    torch.bfloat16: ("__nv_bfloat16", "(double)__bfloat162float"),
}

BLOCK = 256
BLOCKS_PER_CHUNK = 8  # 2048 threads a chunk: 2048 elements each in a COMPARE_CHUNK of 4M, 64 KiB of partials
FIGURES = 4  # per thread, as the kernel writes them: a non-finite value seen, max abs error, max rel error, mismatches
MAX_CHUNKS = 65535  # the grid's y extent

_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Not NaN and not an infinity: the exponent bits are not all ones.
__device__ __forceinline__ bool finite_double(double x)
{
    return ((__double_as_longlong(x) >> 52) & 0x7ff) != 0x7ff;
}

// Grid (blocks per chunk, chunks): the threads of chunk blockIdx.y stride over its elements and each
// leaves its four figures in partial[chunk][thread].
extern "C" __global__ void KERNEL_NAME(const ELEMENT* __restrict__ got, const ELEMENT* __restrict__ expected,
                                       long long n, long long chunk, double atol, double rtol,
                                       double* __restrict__ partial)
{
    long long threads = (long long)gridDim.x * blockDim.x;
    long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long begin = (long long)blockIdx.y * chunk;
    long long end = begin + chunk < n ? begin + chunk : n;
    double nonfinite = 0.0, max_abs = 0.0, max_rel = 0.0, wrong = 0.0;
    for (long long i = begin + thread; i < end; i += threads) {
        double g = TO_DOUBLE(got[i]);
        double e = TO_DOUBLE(expected[i]);
        double diff = fabs(__dsub_rn(g, e));
        double magnitude = fabs(e);
        if (!finite_double(diff) || !finite_double(magnitude)) {
            nonfinite = 1.0;  // the chunk goes to compare_close's general rules: its figures are not read
            continue;
        }
        max_abs = fmax(max_abs, diff);
        max_rel = fmax(max_rel, __ddiv_rn(diff, fmax(magnitude, 2.2250738585072014e-308)));
        // atol + rtol * |e| as torch rounds it: the product, then the sum.
        if (diff > __dadd_rn(__dmul_rn(magnitude, rtol), atol)) wrong += 1.0;
    }
    double* mine = partial + 4 * ((long long)blockIdx.y * threads + thread);
    mine[0] = nonfinite;
    mine[1] = max_abs;
    mine[2] = max_rel;
    mine[3] = wrong;
}
"""


def program(dtype: torch.dtype) -> tuple[str, str] | None:
    """(CUDA source, kernel name) of the figures kernel for elements of `dtype`; None for a dtype it does not read."""
    if dtype not in ELEMENT_TYPES:
        return None
    element, to_double = ELEMENT_TYPES[dtype]
    name = f"close_figures_{element.strip('_')}"
    source = _SOURCE.replace("KERNEL_NAME", name).replace("ELEMENT", element).replace("TO_DOUBLE", to_double)
    return source, name


# (grid, block, ctypes arguments) -> None: start the loaded kernel on the tensors' stream.
Launcher = Callable[[tuple, tuple, list], None]
LauncherFor = Callable[[torch.dtype], "Launcher | None"]


def one_pass(got: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float, chunk: int, device: torch.device,
             launcher_for: LauncherFor) -> torch.Tensor | None:
    """compare_close's figures of each `chunk` elements of the flat `got` against `expected`: a (chunks, 4) float64
    tensor where they are, each row [all finite (1.0 or 0.0), max abs error, max rel error, mismatches]. None where
    the kernel cannot read them (another dtype, two dtypes, tensors not both on `device`, either not contiguous,
    nothing to compare, more chunks than a grid has rows): the caller's own route then, which never copies more than
    a chunk (a contiguous copy of a KernelBench-sized output may not fit beside it). `launcher_for(dtype)` gives the
    start of the dtype's kernel on `device`, or None where the backend could not load it (also None here)."""
    n = expected.numel()
    chunks = -(-n // chunk) if chunk >= 1 else 0
    if (got.dtype != expected.dtype or got.dtype not in ELEMENT_TYPES or got.device != device
            or expected.device != device or got.numel() != n or n == 0 or not 1 <= chunks <= MAX_CHUNKS
            or not (got.is_contiguous() and expected.is_contiguous())):
        return None
    launch = launcher_for(got.dtype)
    if launch is None:
        return None
    blocks = max(1, min(BLOCKS_PER_CHUNK, -(-chunk // BLOCK)))
    threads = blocks * BLOCK
    partial = torch.empty((chunks, threads, FIGURES), dtype=torch.float64, device=got.device)
    args = [ctypes.c_void_p(got.data_ptr()), ctypes.c_void_p(expected.data_ptr()), ctypes.c_longlong(n),
            ctypes.c_longlong(chunk), ctypes.c_double(atol), ctypes.c_double(rtol),
            ctypes.c_void_p(partial.data_ptr())]
    launch((blocks, chunks, 1), (BLOCK, 1, 1), args)
    most = partial.amax(dim=1)
    return torch.stack([1.0 - most[:, 0], most[:, 1], most[:, 2], partial[:, :, 3].sum(dim=1)], dim=1)
