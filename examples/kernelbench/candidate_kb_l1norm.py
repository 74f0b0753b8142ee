"""kb_l1norm: KernelBench level 1's 38_L1Norm_.py (x / torch.mean(torch.abs(x), dim=1, keepdim=True)).

forward() divides each row of a 2-D input by the MEAN of its absolute values (not their sum, as an
L1 normalisation often does), so on uniform [0, 1) rows the outputs are about 2x, not about 1/cols.
The Model has no parameters.

Block per row: one 256-thread block per row; each thread sums the absolute values of its strided
share in float32, a shared-memory tree adds the 256 partial sums, and every thread divides its
elements by sum / cols. T0_original is get_inputs() at its full size (32768 x 65535 float32, 8.6 GB:
2,147,450,880 elements, just under 2^31, and past it under the large-index tiling, so offsets are
64-bit), 256 elements per thread per row.

Suites besides T0_original (whose outputs, about 2x, already reject zeros, a copy or a constant):
- short_rows: signed rows of 1 to a few thousand columns, not multiples of 32 or 256 (one column,
  whose output is its sign; fewer columns than threads; a partial last stride): a kernel that
  divides by the sum, or forgets the absolute value, is far off;
- spiky_rows: one dominant element per row (the first and last column included) with the row's
  sign, rows scaled from 1e-3 to 1e3: the mean is mostly that element over cols;
- wide_rows: few long signed rows, each its own scale, many strides of the block: the mean covers
  every stride or all the row's outputs are off by the same factor.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void l1norm_rows_f32(const float* __restrict__ x, float* __restrict__ out,
                                           long long rows, long long cols)
{
    __shared__ float red[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* outr = out + row * cols;

    float sum = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += BLOCK) sum += fabsf(xr[c]);
    red[threadIdx.x] = sum;
    __syncthreads();  // sync-after-abs-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-tree-step
    }
    float mean = red[0] / (float)cols;

    for (long long c = threadIdx.x; c < cols; c += BLOCK) outr[c] = xr[c] / mean;
}
"""

BLOCK = 256  # the kernel's tree reduction is written for exactly this many threads

# 38_L1Norm_.py's size constants (same names, same values).
batch_size = 32768
dim = 65535


def ref(x):
    import torch

    return x / torch.mean(torch.abs(x), dim=1, keepdim=True)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_l1norm: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
        raise ValueError(f"kb_l1norm: x must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    rows, cols = x.shape
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_l1norm: x must have at least one row and one column, got {tuple(x.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_l1norm: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty_like(x)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 38_L1Norm_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim)
    return [x.to(device)]


def short_rows(t, device):
    # Signed rows of lengths not divisible by 32 or 256: one column (output +-1), shorter than the
    # block (idle threads), and a little over a multiple of 256 (one extra partial stride).
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(5, 1), (9, 3), (37, 33), (129, 250), (4, 1000), (2, 4097)][t]
    return [(torch.randn(shape, generator=g) * 3.0).to(device)]


def spiky_rows(t, device):
    # One dominant element per row (magnitude 2 to 3 against a 0.01 background), at a different
    # column in each row, the first and last included, with the row's sign; rows scaled from 1e-3
    # to 1e3. The dominant outputs are about cols / 3, the rest about +-cols / 300.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(16, 100), (8, 31), (33, 257), (4, 77)][t]
    x = torch.randn(rows, cols, generator=g) * 0.01
    where = torch.randint(0, cols, (rows,), generator=g)
    where[0] = cols - 1
    where[1] = 0
    sign = torch.where(torch.rand(rows, generator=g) < 0.5, -1.0, 1.0)
    x[torch.arange(rows), where] = sign * (2.0 + torch.rand(rows, generator=g))
    scale = 10.0 ** (torch.rand(rows, 1, generator=g) * 6 - 3)
    return [(x * scale).to(device)]


def wide_rows(t, device):
    # Few long signed rows (300 to 5000 elements, many strides of the block), each its own scale
    # (1e-3 to 1e3): the absolute values cannot cancel, and the outputs stay O(1).
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(3, 5000), (6, 2049), (2, 300)][t]
    scale = 10.0 ** (torch.rand(rows, 1, generator=g) * 6 - 3)
    return [(torch.randn(rows, cols, generator=g) * scale).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("short_rows", 6, short_rows),
        ("spiky_rows", 4, spiky_rows),
        ("wide_rows", 3, wide_rows),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(8, 512, generator=g)]), ("misaligned", [torch.randn(5, 301, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_l1norm"] = dict(
        kb_file="38_L1Norm_.py",
        cuda=CUDA_SOURCE,
        kernel_name="l1norm_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
