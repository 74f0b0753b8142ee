"""kb_min_dim: KernelBench level 1's 53_Min_reduction_over_a_dimension.py (torch.min(x, dim=1)[0]).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_min_dim.py

and `kb_file="53_Min_reduction_over_a_dimension.py"` resolves in its `level1` folder (Model(dim=1):
get_init_inputs() returns [1]). forward() keeps only the values of torch.min's (values, indices)
pair: for x (B, R, C), out (B, C) float32 holds the smallest x[b, r, c] over r, dim 1 dropped. A
NaN anywhere in a column makes its minimum NaN, as in ATen: the row loop moves to a NaN, and
nothing compares below a NaN, so it stays.

Column thread, row loop: thread i owns (b, c) = (i / C, i % C) and walks the R rows of that
column, so a warp reads 32 consecutive floats of one row per step. At the real size (x 128 x 4096
x 4095 float32, 8.6 GB: 2,146,959,360 elements, just under 2^31; out 128 x 4095) the grid is 2,048
blocks of 256 and every offset is a long long. T0's minima over 4096 uniform values average 1/4097
and stay far below the 1e-2 tolerance, so a kernel writing zeros passes T0; the targeted suites
have minima far from zero:
- misaligned: B, R and C not multiples of 32 or 256, a single row (out = x), a single column,
  signed values of large magnitude (a minimum has no rounding, so any magnitude is safe): a wrong
  column pitch, a partial last block or a row loop that starts or stops one off shows.
- specials: NaNs (the first and last rows too), infinities of both signs and -0.0 beside 0.0: a
  kernel that skips NaN, or starts its running minimum at a finite value, fails.
- trough_position: one minimum per column, of its own value, planted at the first row, the last
  row and rows between: an off-by-one in the row loop or a wrong row stride misses it.

The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void min_dim1_f32(const float* __restrict__ x, float* __restrict__ out,
                                        long long batch, long long rows, long long cols)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= batch * cols) return;
    long long b = i / cols;
    long long c = i - b * cols;
    const float* column = x + b * rows * cols + c;
    float best = column[0];
    for (long long r = 1; r < rows; ++r) {
        float v = column[r * cols];
        if (v < best || v != v) best = v;
    }
    out[i] = best;
}
"""

BLOCK = 256

# 53_Min_reduction_over_a_dimension.py's size constants (same names, same values).
batch_size = 128
dim1 = 4096
dim2 = 4095


def ref(x):
    import torch

    return torch.min(x, dim=1)[0]


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_min_dim: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 3:
        raise ValueError(f"kb_min_dim: x must be a contiguous 3-D float32 tensor (B, R, C), got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    batch, rows, cols = x.shape
    if rows < 1:
        raise ValueError(f"kb_min_dim: dim 1 is empty in {tuple(x.shape)}; the minimum of nothing is undefined")
    out = torch.empty((batch, cols), dtype=torch.float32, device=x.device)
    n = batch * cols
    blocks = (n + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_min_dim: {n} columns need more blocks than grid.x allows")
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, batch), (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 53_Min_reduction_over_a_dimension.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim1, dim2)
    return [x.to(device)]


def misaligned(t, device):
    # Odd B, R, C; a single row; a single column; more columns than one block.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(1, 1, 1), (3, 1, 77), (5, 37, 1), (7, 33, 65), (2, 100, 300), (1, 513, 3)][t]
    return [(torch.randn(shape, generator=g) * 1000.0).to(device)]


def specials(t, device):
    # Signed values with, per trial: NaNs sprinkled and in the first and last rows; -inf and +inf;
    # columns of only +inf and +-0.0; everything at once.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(3, 40, 70), (2, 17, 250), (4, 33, 33), (2, 100, 45)][t]
    x = torch.randn(shape, generator=g) * 10.0
    pick = torch.rand(shape, generator=g)
    if t in (0, 3):
        x = torch.where(pick < 0.01, torch.tensor(float("nan")), x)
        x[0, 0, :8] = float("nan")
        x[-1, -1, -8:] = float("nan")
    if t in (1, 3):
        x = torch.where((pick > 0.3) & (pick < 0.31), torch.tensor(float("-inf")), x)
        x = torch.where(pick > 0.9, torch.tensor(float("inf")), x)
    if t == 2:
        x[:, :, :5] = float("inf")
        x[:, :, 5:10] = torch.where(pick[:, :, 5:10] < 0.5, torch.tensor(0.0), torch.tensor(-0.0))
        x[:, :, 10:15] = x[:, :, 10:15].abs() + 1.0
    return [x.to(device)]


def trough_position(t, device):
    # Every value in [1, 2) but one per column in [-15, -5), at row 0 in column 0, the last row in
    # column 1, random rows elsewhere.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    batch, rows, cols = [(2, 256, 64), (3, 31, 100), (1, 1000, 40)][t]
    x = 1.0 + torch.rand(batch, rows, cols, generator=g)
    where = torch.randint(0, rows, (batch, cols), generator=g)
    where[:, 0] = 0
    where[:, 1] = rows - 1
    trough = -5.0 - 10.0 * torch.rand(batch, 1, cols, generator=g)
    x.scatter_(1, where.unsqueeze(1), trough)
    return [x.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 6, misaligned),
        ("specials", 4, specials),
        ("trough_position", 3, trough_position),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(4, 32, 64, generator=g)]), ("misaligned", [torch.randn(3, 45, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_min_dim"] = dict(
        kb_file="53_Min_reduction_over_a_dimension.py",
        cuda=CUDA_SOURCE,
        kernel_name="min_dim1_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
