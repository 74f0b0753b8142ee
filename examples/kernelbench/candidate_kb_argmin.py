"""kb_argmin: KernelBench level 1's 52_Argmin_over_a_dimension.py (torch.argmin(x, dim=1), int64 out).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_argmin.py

and `kb_file="52_Argmin_over_a_dimension.py"` resolves in its `level1` folder (Model(dim=1), the
file's `dim` constant, from get_init_inputs()). For x (B, R, C), out (B, C) of int64 holds, for
each (b, c), the row r whose x[b, r, c] is smallest. Ties and NaN follow ATen: among equal minima
the lowest row wins (the loop moves only on a strict `<`), and a NaN counts as smaller than any
number, the first NaN of a column winning over later ones (the loop also moves to a NaN while
its best is not one). -0.0 and 0.0 are equal.

Column thread, row loop: thread i owns (b, c) = (i / C, i % C) and walks the R rows of that
column, so a warp reads 32 consecutive floats of one row per step. At the real size (x 128 x 4096
x 4095 float32, 8.6 GB: 2,146,959,360 elements, just under 2^31; out 128 x 4095 = 524,160
indices) the grid is 2,048 blocks of 256 and every offset is a long long. T0's uniform values
hold ties (torch.rand has 2^24 levels; a few dozen of the half million columns hold their
minimum twice), so the first-index rule already counts there. The targeted suites:
- misaligned: B, R and C not multiples of 32 or 256, a single row (answer 0), a single column,
  signed values of large magnitude: a wrong column pitch, a partial last block or a row loop that
  starts or stops one off shows.
- ties: few distinct values so most columns hold their minimum several times (the first must
  win), -0.0 beside 0.0, a trial constant along dim 1 (answer 0 everywhere), and NaNs, the first
  and last rows included: a kernel taking the last tie, or ignoring NaN, fails.
- trough_position: one minimum per column planted at the first row, the last row and rows
  between: an off-by-one in the row loop or a wrong row stride returns the wrong row.

The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void argmin_dim1_f32(const float* __restrict__ x, long long* __restrict__ out,
                                           long long batch, long long rows, long long cols)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= batch * cols) return;
    long long b = i / cols;
    long long c = i - b * cols;
    const float* column = x + b * rows * cols + c;
    float best = column[0];
    long long best_row = 0;
    for (long long r = 1; r < rows; ++r) {
        float v = column[r * cols];
        if (v < best || (v != v && best == best)) { best = v; best_row = r; }
    }
    out[i] = best_row;
}
"""

BLOCK = 256

# 52_Argmin_over_a_dimension.py's size constants (same names, same values).
batch_size = 128
dim1 = 4096
dim2 = 4095
dim = 1


def ref(x):
    import torch

    return torch.argmin(x, dim=dim)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_argmin: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 3:
        raise ValueError(f"kb_argmin: x must be a contiguous 3-D float32 tensor (B, R, C), got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if dim != 1:
        raise ValueError(f"kb_argmin: the kernel reduces dimension 1 only, the Model reduces dimension {dim}")
    batch, rows, cols = x.shape
    if rows < 1:
        raise ValueError(f"kb_argmin: dim 1 is empty in {tuple(x.shape)}; argmin of nothing is undefined")
    out = torch.empty((batch, cols), dtype=torch.int64, device=x.device)
    n = batch * cols
    blocks = (n + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_argmin: {n} columns need more blocks than grid.x allows")
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, batch), (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 52_Argmin_over_a_dimension.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim1, dim2)
    return [x.to(device)]


def misaligned(t, device):
    # Odd B, R, C; a single row; a single column; more columns than one block. Signed values up to
    # a few thousand: an index result has no rounding to fear.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(1, 1, 1), (3, 1, 77), (5, 37, 1), (7, 33, 65), (2, 100, 300), (1, 513, 3)][t]
    return [(torch.randn(shape, generator=g) * 1000.0).to(device)]


def ties(t, device):
    # Values from {0, 1, 2, 3}: most columns hold their minimum at several rows. Trial 1 flips half
    # the signs (-0.0 ties 0.0, and -3 becomes the minimum); trial 3 repeats one row down the
    # whole of dim 1; trial 4 sprinkles NaNs and puts some in the first and last rows.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(4, 64, 96), (3, 17, 250), (2, 200, 33), (2, 9, 40), (3, 50, 70)][t]
    x = torch.randint(0, 4, shape, generator=g).float()
    if t == 1:
        x = torch.where(torch.rand(shape, generator=g) < 0.5, x, -x)
    if t == 3:
        x = x[:, :1, :].expand(shape).contiguous()
    if t == 4:
        x = torch.where(torch.rand(shape, generator=g) < 0.02, torch.tensor(float("nan")), x)
        x[0, 0, :10] = float("nan")
        x[1, -1, :10] = float("nan")
    return [x.to(device)]


def trough_position(t, device):
    # Every value in [1, 2) but one -5 per column, at row 0 in column 0, the last row in column 1,
    # random rows elsewhere.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    batch, rows, cols = [(2, 256, 64), (3, 31, 100), (1, 1000, 40)][t]
    x = 1.0 + torch.rand(batch, rows, cols, generator=g)
    where = torch.randint(0, rows, (batch, cols), generator=g)
    where[:, 0] = 0
    where[:, 1] = rows - 1
    x.scatter_(1, where.unsqueeze(1), -5.0)
    return [x.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 6, misaligned),
        ("ties", 5, ties),
        ("trough_position", 3, trough_position),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(4, 32, 64, generator=g)]), ("misaligned", [torch.randn(3, 45, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_argmin"] = dict(
        kb_file="52_Argmin_over_a_dimension.py",
        cuda=CUDA_SOURCE,
        kernel_name="argmin_dim1_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
