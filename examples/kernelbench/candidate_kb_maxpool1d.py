"""kb_maxpool1d: KernelBench level 1's 41_Max_Pooling_1D.py (nn.MaxPool1d, dilated and padded).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_maxpool1d.py

and `kb_file="41_Max_Pooling_1D.py"` resolves in its `level1` folder. The Model is
nn.MaxPool1d(kernel_size=8, stride=1, padding=4, dilation=3), values only, floor mode: for
x (N, C, L),

    out[n, c, o] = max over j < kernel_size, 0 <= o*stride - padding + j*dilation < L of x[n, c, that position]

with L_out = (L + 2*padding - dilation*(kernel_size - 1) - 1) // stride + 1. Padding acts as -inf:
a padded position never wins, so an edge window is the maximum of its in-range taps only. A NaN
wins over any number and stays (ATen replaces the running maximum on `v > best || isnan(v)`),
and the kernel does the same. The pooling parameters are the module constants below, passed to the
kernel as arguments; launch refuses return_indices=True (this kernel writes no indices).

One thread per output element over a 1-D grid: thread i owns (plane, o) = (i / L_out, i % L_out),
plane = n * C + c, so a warp writes 32 consecutive outputs and reads 32 consecutive inputs per tap.
At the real size (x 64 x 192 x 65536, 3.2 GB; out 64 x 192 x 65523: 805 million outputs) the grid
is 3,145,104 blocks of 256, well inside grid.x's 2^31 - 1, and every index and offset is a long
long. T0's inputs are uniform [0, 1), so its outputs sit near 1. The targeted suites:
- signed_shapes: signed values, lengths from the shortest that gives one output to just past a
  256-thread block, one plane to several: a wrong L_out, an overrun of the row or a partial last
  block shows.
- all_negative: every value below -0.5, so the edge windows (which hold padding) must come out
  negative: a kernel that pads with 0 instead of -inf, or starts its running maximum at 0, writes
  0 there.
- impulses: a flat negative background with a few large spikes (at the first and last positions
  too): each output is a spike exactly where its dilated window holds one, so a window off by one
  position, an undilated window or a wrong plane offset puts spikes in the wrong places.

The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#include <math_constants.h>

extern "C" __global__ void maxpool1d_f32(const float* __restrict__ x, float* __restrict__ out,
                                         long long planes, long long len, long long lout,
                                         int k, int stride, int pad, int dil)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= planes * lout) return;
    long long plane = i / lout;
    long long o = i - plane * lout;
    const float* row = x + plane * len;
    long long start = o * stride - pad;
    float best = -CUDART_INF_F;
    for (int j = 0; j < k; ++j) {
        long long pos = start + (long long)j * dil;
        if (pos < 0 || pos >= len) continue;
        float v = row[pos];
        if (v > best || v != v) best = v;
    }
    out[i] = best;
}
"""

BLOCK = 256

# 41_Max_Pooling_1D.py's size constants (same names, same values).
batch_size = 64
features = 192
sequence_length = 65536
kernel_size = 8
stride = 1
padding = 4
dilation = 3
return_indices = False


def _min_length():
    # The shortest input that still gives one output: the dilated window minus both paddings.
    return max(1, dilation * (kernel_size - 1) + 1 - 2 * padding)


def ref(x):
    import torch

    return torch.nn.functional.max_pool1d(x, kernel_size, stride=stride, padding=padding, dilation=dilation,
                                          return_indices=return_indices)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_maxpool1d: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 3:
        raise ValueError(f"kb_maxpool1d: x must be a contiguous 3-D float32 tensor (N, C, L), got {x.dtype} of "
                         f"shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if return_indices:
        raise ValueError("kb_maxpool1d: return_indices=True is not supported (the kernel writes values only)")
    if kernel_size < 1 or stride < 1 or dilation < 1 or padding < 0:
        raise ValueError(f"kb_maxpool1d: bad pooling parameters kernel_size={kernel_size}, stride={stride}, "
                         f"padding={padding}, dilation={dilation}")
    n, c, length = x.shape
    span = length + 2 * padding - dilation * (kernel_size - 1) - 1
    if span < 0:
        raise ValueError(f"kb_maxpool1d: length {length} is too short for the dilated window (no output)")
    lout = span // stride + 1
    planes = n * c
    out = torch.empty((n, c, lout), dtype=torch.float32, device=x.device)
    total = planes * lout
    blocks = (total + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_maxpool1d: {total} outputs need more blocks than grid.x allows")
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, planes), (ctypes.c_longlong, length), (ctypes.c_longlong, lout),
            (ctypes.c_int, kernel_size), (ctypes.c_int, stride), (ctypes.c_int, padding), (ctypes.c_int, dilation)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 41_Max_Pooling_1D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, features, sequence_length)
    return [x.to(device)]


def signed_shapes(t, device):
    # Lengths: the shortest with one output, one more, around a 256-thread block, odd ones; one
    # plane, several planes. Signed values: no accumulation, so any magnitude is safe.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    m = _min_length()
    n, c, length = [(1, 1, m), (2, 3, m + 1), (1, 5, 255), (3, 2, 257), (2, 7, 100), (1, 1, 1001)][t]
    return [(torch.randn(n, c, length, generator=g) * 3.0).to(device)]


def all_negative(t, device):
    # Every value in [-10.5, -0.5): the padded taps of the edge windows must lose to all of them.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, c, length = [(2, 4, _min_length() + 3), (3, 5, 77), (1, 2, 300), (2, 3, 33)][t]
    return [(-0.5 - 10.0 * torch.rand(n, c, length, generator=g)).to(device)]


def impulses(t, device):
    # Background in [-2.01, -1.99]; six spikes of 5 to 20, at the row's first and last positions
    # and at random ones, each in a random plane.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, c, length = [(2, 3, 50), (1, 4, 300), (3, 2, _min_length() + 1), (2, 2, 129)][t]
    x = -2.0 + 0.01 * torch.randn(n, c, length, generator=g).clamp(-1.0, 1.0)
    spikes = 6
    nb = torch.randint(0, n, (spikes,), generator=g)
    ch = torch.randint(0, c, (spikes,), generator=g)
    at = torch.randint(0, length, (spikes,), generator=g)
    at[0], at[1] = 0, length - 1
    x[nb, ch, at] = 5.0 + 15.0 * torch.rand(spikes, generator=g)
    return [x.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_shapes", 6, signed_shapes),
        ("all_negative", 4, all_negative),
        ("impulses", 4, impulses),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, 4, 256, generator=g)]),
            ("misaligned", [torch.randn(3, 5, 77, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_maxpool1d"] = dict(
        kb_file="41_Max_Pooling_1D.py",
        cuda=CUDA_SOURCE,
        kernel_name="maxpool1d_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
