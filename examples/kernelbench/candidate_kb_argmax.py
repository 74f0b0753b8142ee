"""kb_argmax: KernelBench level 1's 51_Argmax_over_a_dimension.py (torch.argmax(x, dim=1), int64 out).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_argmax.py

and `kb_file="51_Argmax_over_a_dimension.py"` resolves in its `level1` folder (Model(dim=1),
from get_init_inputs()). One thread per output column: thread i owns (b, c) = (i / C, i % C) of
x (B, R, C) and walks the R rows of that column, out (B, C) of int64. Ties and NaN follow
torch (ATen's argmax keeps the lower index when two values are equal and takes a NaN over any
number, the first NaN over later ones): the row loop replaces its best only on a strict `>`, or
on a NaN while the best is not one. T0 holds ties (torch.rand has 2^24 levels: some fifty of
get_inputs()' half a million columns hold their maximum twice), and the ties suite holds them on
purpose, -0.0 beside 0.0 and NaNs included. T0_original is get_inputs() at its full size
(128 x 4096 x 4095 float32, 8.6 GB: 2,146,959,360 elements, just under 2^31, with 64-bit offsets
all the same), so gate it on a GPU with memory to spare. The size constants below carry the
problem file's names and values: CI (tests/test_kernelbench_examples.py) substitutes a small
stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void argmax_dim1_f32(const float* __restrict__ x, long long* __restrict__ out,
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
        if (v > best || (v != v && best == best)) { best = v; best_row = r; }
    }
    out[i] = best_row;
}
"""

BLOCK = 256

# 51_Argmax_over_a_dimension.py's size constants (same names, same values).
batch_size = 128
dim1 = 4096
dim2 = 4095


def ref(x):
    import torch

    return torch.argmax(x, dim=1)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_argmax: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 3:
        raise ValueError(f"kb_argmax: x must be a contiguous 3-D float32 tensor (B, R, C), got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    batch, rows, cols = x.shape
    if rows < 1:
        raise ValueError(f"kb_argmax: dim 1 is empty in {tuple(x.shape)}; argmax of nothing is undefined")
    out = torch.empty((batch, cols), dtype=torch.int64, device=x.device)
    n = batch * cols
    grid = (max(1, (n + BLOCK - 1) // BLOCK), 1, 1)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, batch), (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 51_Argmax_over_a_dimension.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim1, dim2)
    return [x]


def misaligned(t):
    # B, R and C not multiples of 32 or 256: a partial last block, a single row (answer 0), a
    # single column, more columns than one block; signed values of large magnitude.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(1, 1, 1), (3, 1, 77), (5, 37, 1), (7, 33, 65), (2, 100, 300), (1, 513, 3)][t]
    return [torch.randn(shape, generator=g) * 1000.0]


def ties(t):
    # Few distinct values (0..3), so most columns hold their maximum at several rows and the first
    # must win; -0.0 beside 0.0 (equal); a trial constant along dim 1 (answer 0); and NaNs, which
    # torch takes over any number (the first NaN of a column wins), at the first and last rows too.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(4, 64, 96), (3, 17, 250), (2, 200, 33), (2, 9, 40), (3, 50, 70)][t]
    x = torch.randint(0, 4, shape, generator=g).float()
    if t == 1:
        x = torch.where(torch.rand(shape, generator=g) < 0.5, x, -x)  # -0.0 ties 0.0
    if t == 3:
        x = x[:, :1, :].expand(shape).contiguous()
    if t == 4:
        x = torch.where(torch.rand(shape, generator=g) < 0.02, torch.tensor(float("nan")), x)
        x[0, 0, :10] = float("nan")
        x[1, -1, :10] = float("nan")
    return [x]


def peak_position(t):
    # One maximum per column, planted at a chosen row: the first row, the last row, and rows
    # spread between, so an off-by-one in the row loop or a wrong row stride shows.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    batch, rows, cols = [(2, 256, 64), (3, 31, 100), (1, 1000, 40)][t]
    x = torch.rand(batch, rows, cols, generator=g) - 2.0  # every value in [-2, -1)
    where = torch.randint(0, rows, (batch, cols), generator=g)
    where[:, 0] = 0
    where[:, 1] = rows - 1
    x.scatter_(1, where.unsqueeze(1), 5.0)
    return [x]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 6, misaligned),
        ("ties", 5, ties),
        ("peak_position", 3, peak_position),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(4, 32, 64, generator=g)]), ("misaligned", [torch.randn(3, 45, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_argmax"] = dict(
        kb_file="51_Argmax_over_a_dimension.py",
        cuda=CUDA_SOURCE,
        kernel_name="argmax_dim1_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
