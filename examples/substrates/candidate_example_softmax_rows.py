"""example_softmax_rows: softmax along dim 1, one 256-thread block per row.

Example substrate outside the padding family. Official reference:
examples/problems/example_softmax_rows.py (torch.softmax(x, dim=1) of a float32 (64, 4096)
tensor). Each block strides over its row three times: a shared-memory tree reduction of the
row maximum, one of the sum of exp(x - max), then the normalised writes. Subtracting the
maximum keeps exp from overflowing, whatever the row's magnitude.
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
NAME = "example_softmax_rows"


def ref(x):
    import torch

    return torch.softmax(x, dim=1)


def make_launch(ctypes):
    def launch(inputs, torch):
        if len(inputs) != 1:
            raise ValueError(f"{NAME}: expected one input x, got {len(inputs)}")
        (x,) = inputs
        if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
            raise ValueError(f"{NAME}: x must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                             f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
        rows, cols = x.shape
        if rows < 1 or cols < 1:
            raise ValueError(f"{NAME}: x must have at least one row and one column, got {tuple(x.shape)}")
        out = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
        args = [
            (ctypes.c_void_p, x.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows),
            (ctypes.c_longlong, cols),
        ]
        return out, (rows, 1, 1), (BLOCK, 1, 1), args

    return launch


# ---------------------------------------------------------------------------- inputs


def t0_original(t, device):
    # Exactly examples/problems/example_softmax_rows.py:get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.randn(64, 4096)
    return [x.to(device)]


def short_rows(t, device):
    # Row lengths not divisible by 32 or 256: shorter than the block (idle threads), one column,
    # and a little over a multiple of 256 (one extra stride). Short rows give large outputs,
    # which an all-zero or constant output cannot match (T0's outputs are all ~2.4e-4 < atol).
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(1, 1), (3, 5), (37, 33), (129, 250), (5, 1000), (2, 4097)][t]
    return [(torch.randn(shape, generator=g) * 3.0).to(device)]


def spiky_rows(t, device):
    # One dominant element per row (output ~1 there, ~0 elsewhere), at a different column in
    # each row, the last column included; some rows hold two equal spikes (0.5 each). Spikes of
    # 60 to 100 overflow exp unless the row maximum is subtracted.
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
    return [x.to(device)]


def shifted_rows(t, device):
    # Large signed values: each row shifted by up to +-300 with spread 20, so exp(x) alone would
    # overflow to inf or underflow to 0 for every element of the row.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(32, 777), (64, 300), (7, 2049)][t]
    offsets = (torch.rand(rows, 1, generator=g) * 2.0 - 1.0) * 300.0
    return [(torch.randn(rows, cols, generator=g) * 20.0 + offsets).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("short_rows", 6, short_rows),
        ("spiky_rows", 4, spiky_rows),
        ("shifted_rows", 3, shifted_rows),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [
        ("aligned", [torch.randn(8, 512, generator=g)]),
        ("misaligned", [torch.randn(5, 301, generator=g)]),
    ]


def register(K, torch, ctypes):
    K.PROBLEMS[NAME] = dict(
        kb_file="example_softmax_rows.py",
        cuda=CUDA_SOURCE,
        kernel_name="softmax_rows_f32",
        ref=ref,
        launch=make_launch(ctypes),
        suites=suites,
        probe=probe,
    )
