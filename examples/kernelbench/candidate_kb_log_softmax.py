"""kb_log_softmax: KernelBench level 1's 24_LogSoftmax.py (torch.log_softmax(x, dim=1) over a 2-D float32 x).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_log_softmax.py

and `kb_file="24_LogSoftmax.py"` resolves in its `level1` folder. The Model is built with its
default dim=1 (get_init_inputs() is empty), so every row is normalised on its own:
out[r, c] = x[r, c] - max_r - log(sum over j of exp(x[r, j] - max_r)), the input's shape. One
256-thread block per row, striding over the row three times: a shared-memory tree reduction of
the row maximum, one of the sum of exp(x - max), then the writes of x - max - log(sum).

T0_original is get_inputs() at its full size (4096 x 393216 float32, 6.4 GB in, as much out,
1.6e9 elements: row offsets need 64 bits), so gate it on a GPU with memory to spare. Its outputs
are about -12.4 to -13.4 (log 393216 is 12.9), far from zero, a constant and the input. The
targeted suites: short_rows (signed values, row lengths of 1 (output 0), fewer than a warp, and
just past a multiple of 256: a stride or an idle thread's identity gone wrong shows), spiky_rows
(one dominant element of 60 to 100 per row, some rows with two equal ones: output near 0 or
-log 2 there and near -80 elsewhere; exp without the maximum subtracted overflows), and
shifted_rows (rows shifted by up to +-300, so exp(x) alone over- or underflows for every element;
the output is shift-free). The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them. `dim` is
KernelBench's name for the row length here, not the Model's dim.
"""

CUDA_SOURCE = r"""
#include <math_constants.h>

#define BLOCK 256

extern "C" __global__ void log_softmax_rows_f32(const float* __restrict__ x, float* __restrict__ out,
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
    float log_total = logf(red[0]);

    for (long long c = threadIdx.x; c < cols; c += blockDim.x) outr[c] = xr[c] - row_max - log_total;
}
"""

BLOCK = 256  # the kernel's tree reduction is written for exactly this many threads

# 24_LogSoftmax.py's size constants (same names, same values).
batch_size = 4096
dim = 393216


def ref(x):
    import torch

    return torch.log_softmax(x, dim=1)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_log_softmax: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
        raise ValueError(f"kb_log_softmax: x must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    rows, cols = x.shape
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_log_softmax: x must have at least one row and one column, got {tuple(x.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_log_softmax: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 24_LogSoftmax.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim)
    return [x]


def short_rows(t):
    # Row lengths not divisible by 32 or 256: one column (output 0), fewer than a warp (idle
    # threads must hold the identities -inf and 0), and a little over a multiple of 256 (one extra
    # stride). Signed values; outputs range from about -20 to 0.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(3, 1), (5, 7), (37, 33), (129, 250), (4, 1000), (2, 4097)][t]
    return [torch.randn(shape, generator=g) * 3.0]


def spiky_rows(t):
    # One dominant element per row at a different column in each row, the first and last columns
    # included: output near 0 there and near -(60 to 100) elsewhere; some rows hold two equal
    # spikes (near -log 2 each). Spikes of 60 to 100 overflow exp unless the row maximum is
    # subtracted first.
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
    # overflow to inf or underflow to 0 for every element of the row; the output does not move
    # with the shift, and a kernel that adds the maximum back (or forgets it) is off by it.
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
    K.PROBLEMS["kb_log_softmax"] = dict(
        kb_file="24_LogSoftmax.py",
        cuda=CUDA_SOURCE,
        kernel_name="log_softmax_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
