"""kb_l2norm: KernelBench level 1's 39_L2Norm_.py (x / torch.norm(x, p=2, dim=1, keepdim=True)).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_l2norm.py

and `kb_file="39_L2Norm_.py"` resolves in its `level1` folder. One 256-thread block per row:
each thread sums the squares of its strided share of the row, a shared-memory tree adds the 256
partial sums, and every thread divides its elements by the square root. T0_original is
get_inputs() at its full size (32768 x 65535 float32, 8.6 GB: 2,147,450,880 elements, just
under 2^31, with 64-bit offsets all the same), so gate it on a GPU with memory to spare. Its
outputs are all below 0.007, within the 1e-2 tolerance of zero, so a kernel writing zeros or a
constant passes T0; short_rows and spiky_rows give outputs near +-1 and reject them. A row of
zeros is 0/0 (NaN) in the official Model; no suite holds one. The size constants below carry the
problem file's names and values: CI (tests/test_kernelbench_examples.py) substitutes a small
stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void l2norm_rows_f32(const float* __restrict__ x, float* __restrict__ out,
                                           long long rows, long long cols)
{
    __shared__ float red[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* outr = out + row * cols;

    float sum = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = xr[c];
        sum += v * v;
    }
    red[threadIdx.x] = sum;
    __syncthreads();  // sync-after-square-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-tree-step
    }
    float norm = sqrtf(red[0]);

    for (long long c = threadIdx.x; c < cols; c += blockDim.x) outr[c] = xr[c] / norm;
}
"""

BLOCK = 256  # the kernel's tree reduction is written for exactly this many threads

# 39_L2Norm_.py's size constants (same names, same values).
batch_size = 32768
dim = 65535


def ref(x):
    import torch

    return x / torch.norm(x, p=2, dim=1, keepdim=True)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_l2norm: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
        raise ValueError(f"kb_l2norm: x must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    rows, cols = x.shape
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_l2norm: x must have at least one row and one column, got {tuple(x.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_l2norm: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 39_L2Norm_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim)
    return [x.to(device)]


def short_rows(t, device):
    # Row lengths not divisible by 32 or 256: one column (output +-1), shorter than the block (idle
    # threads), and a little over a multiple of 256 (one extra stride). Signed values; the sum of
    # squares cannot cancel. Short rows give outputs far from zero and from any constant.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(5, 1), (9, 3), (37, 33), (129, 250), (4, 1000), (2, 4097)][t]
    return [(torch.randn(shape, generator=g) * 3.0).to(device)]


def spiky_rows(t, device):
    # One dominant element per row (output ~+-1 there, ~0 elsewhere), at a different column in each
    # row, the first and last included, with the row's sign; rows scaled from 1e-3 to 1e3, so a
    # kernel that forgets the square root or a row's scale is off everywhere.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(16, 1000), (8, 4096), (33, 257), (4, 77)][t]
    x = torch.randn(rows, cols, generator=g) * 0.01
    where = torch.randint(0, cols, (rows,), generator=g)
    where[0] = cols - 1
    where[1] = 0
    sign = torch.where(torch.rand(rows, generator=g) < 0.5, -1.0, 1.0)
    x[torch.arange(rows), where] = sign * (2.0 + torch.rand(rows, generator=g))
    scale = 10.0 ** (torch.rand(rows, 1, generator=g) * 6 - 3)
    return [(x * scale).to(device)]


def wide_rows(t, device):
    # Few long signed rows (300 to 5000 elements, many strides of the block), each row's scale of
    # its own (1e-3 to 1e3): the norm must cover every stride, or every output of the row is off
    # by the same large factor.
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
    K.PROBLEMS["kb_l2norm"] = dict(
        kb_file="39_L2Norm_.py",
        cuda=CUDA_SOURCE,
        kernel_name="l2norm_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
