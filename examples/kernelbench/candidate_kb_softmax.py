"""kb_softmax: KernelBench level 1's 23_Softmax.py (torch.softmax(x, dim=1)), gated against the real problem file.

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_softmax.py

and `kb_file="23_Softmax.py"` resolves in its `level1` folder. One 256-thread block per row,
striding over the row three times: a shared-memory tree reduction of the row maximum, one of the
sum of exp(x - max), then the normalised writes. T0_original is get_inputs() at its full size
(4096 x 393216 float32, 6.4 GB), so gate it on a GPU with memory to spare. Its outputs are all
about 2.5e-6, within the 1e-2 tolerance of zero, so a kernel writing zeros or a constant passes
T0; short_rows and spiky_rows give outputs of up to 1 and reject them. The size constants below
carry the problem file's names and values: CI (tests/test_kernelbench_examples.py) substitutes a
small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#include <math_constants.h>

#define BLOCK 256

extern "C" __global__ void softmax_rows_f32(const float* __restrict__ x, float* __restrict__ out,
                                            long long rows, long long cols)
{
    __shared__ float red[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* outr = out + row * cols;

    float m = -CUDART_INF_F;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    red[threadIdx.x] = m;
    __syncthreads();  // sync-after-max-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();  // sync-after-max-step
    }
    float row_max = red[0];
    __syncthreads();  // sync-before-sum-reuse

    float sum = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(xr[c] - row_max);
    red[threadIdx.x] = sum;
    __syncthreads();  // sync-after-sum-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-sum-step
    }
    float inv_total = 1.0f / red[0];

    for (long long c = threadIdx.x; c < cols; c += blockDim.x) outr[c] = expf(xr[c] - row_max) * inv_total;
}
"""

BLOCK = 256  # the kernel's tree reduction is written for exactly this many threads

# 23_Softmax.py's size constants (same names, same values).
batch_size = 4096
dim = 393216


def ref(x):
    import torch

    return torch.softmax(x, dim=1)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_softmax: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
        raise ValueError(f"kb_softmax: x must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    rows, cols = x.shape
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_softmax: x must have at least one row and one column, got {tuple(x.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_softmax: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 23_Softmax.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim)
    return [x]


def short_rows(t):
    # Row lengths not divisible by 32 or 256: one column (output 1), shorter than the block (idle
    # threads), and a little over a multiple of 256 (one extra stride). Short rows give large
    # outputs, which zeros or a constant cannot match. Signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(3, 1), (5, 7), (37, 33), (129, 250), (4, 1000), (2, 4097)][t]
    return [torch.randn(shape, generator=g) * 3.0]


def spiky_rows(t):
    # One dominant element per row (output ~1 there, ~0 elsewhere) at a different column in each
    # row, the first and last columns included; some rows hold two equal spikes (0.5 each). Spikes
    # of 60 to 100 overflow exp unless the row maximum is subtracted.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(16, 1000), (8, 4096), (33, 257), (4, 77)][t]
    x = torch.randn(rows, cols, generator=g)
    height = 60.0 + 40.0 * torch.rand(rows, generator=g)
    where = torch.randint(0, cols, (rows,), generator=g)
    where[0] = cols - 1
    where[1] = 0
    x[torch.arange(rows), where] += height
    twin = (where[2::2] + cols // 2) % cols
    x[torch.arange(2, rows, 2), twin] = x[torch.arange(2, rows, 2), where[2::2]]
    return [x]


def shifted_rows(t):
    # Large signed values: each row shifted by up to +-300 with spread 20, so exp(x) alone would
    # overflow to inf or underflow to 0 for every element of the row.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(32, 777), (64, 300), (7, 2049)][t]
    offsets = (torch.rand(rows, 1, generator=g) * 2.0 - 1.0) * 300.0
    return [torch.randn(rows, cols, generator=g) * 20.0 + offsets]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("short_rows", 6, short_rows),
        ("spiky_rows", 4, spiky_rows),
        ("shifted_rows", 3, shifted_rows),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(8, 512, generator=g)]), ("misaligned", [torch.randn(5, 301, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_softmax"] = dict(
        kb_file="23_Softmax.py",
        cuda=CUDA_SOURCE,
        kernel_name="softmax_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
