"""kb_tensor4d_matmul: KernelBench level 1's 11_4D_tensor_matrix_multiplication.py (einsum "bijl,lk->bijk").

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_tensor4d_matmul.py

and `kb_file="11_4D_tensor_matrix_multiplication.py"` resolves in its `level1` folder.
forward(A, B) contracts the last axis of A, shape (b, i, j, l), with the first axis of B, shape
(l, k): C[b][i][j][k] = sum over l of A[b][i][j][l] * B[l][k], C of shape (b, i, j, k). A
contiguous A is a (b*i*j) x l matrix and C a (b*i*j) x k one, so this is one matrix product
with b*i*j rows.

32x32 shared-memory tiles, one thread per output element. The row count b*i*j is the large
one (2^20 at the real size, b = 8, i = 256, j = 512, l = 256, k = 768), so row tiles run along
the grid's x axis (up to 2^31 - 1 of them) and column tiles along y (24 here, at most 65535);
within a block, thread x still steps along a row of B and C, so loads and stores coalesce. Each
block walks l a tile at a time, its threads loading one element of A's tile and one of B's (zero
past the edges), synchronising, accumulating the 32 products of their row and column, and
synchronising again before the tiles are overwritten. C holds 805M elements at the real size,
so row * k is kept 64-bit. T0_original is exactly get_inputs() seeded 1000 + t (torch.rand,
positive, so the sums of 256 products cannot cancel); A is 1 GiB.

Targeted suites: `misaligned` has j, l, k off the 32-wide tile and 1-wide axes, with signed
values, for the edge guards and the zero padding; `slice_scaled` scales each (b, i) slice of A
by a factor of its own (0.1 to 10) with j not a multiple of 32, so row tiles straddle slices and
a row mapped to the wrong slice, or the grid's axes swapped, changes the magnitude far past the
tolerance; `long_l` has up to 32 tiles along l with positive values up to 10, so a tile dropped
or counted twice shifts every output. The size constants below carry the problem file's names
and values: CI (tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void rows_matmul_tiled_f32(const float* __restrict__ A, const float* __restrict__ B,
                                                 float* __restrict__ C, long long rows, long long cols,
                                                 long long inner)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long row = (long long)blockIdx.x * TILE + ty;
    long long col = (long long)blockIdx.y * TILE + tx;
    long long n_tiles = (inner + TILE - 1) / TILE;
    float acc = 0.0f;
    for (long long t = 0; t < n_tiles; ++t) {
        long long a_col = t * TILE + tx;
        long long b_row = t * TILE + ty;
        As[ty][tx] = 0.0f;
        Bs[ty][tx] = 0.0f;
        if (row < rows && a_col < inner) As[ty][tx] = A[row * inner + a_col];
        if (b_row < inner && col < cols) Bs[ty][tx] = B[b_row * cols + col];
        __syncthreads();  // sync-after-tile-load
        for (int q = 0; q < TILE; ++q) acc += As[ty][q] * Bs[q][tx];
        __syncthreads();  // sync-before-tile-overwrite
    }
    if (row < rows && col < cols) C[row * cols + col] = acc;
}
"""

TILE = 32

# 11_4D_tensor_matrix_multiplication.py's size constants (same names, same values).
b = 8
i = 256
j = 512
l = 256
k = 768


def ref(A, B):
    import torch

    return torch.einsum("bijl,lk->bijk", A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_tensor4d_matmul: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, x, rank in (("A", A, 4), ("B", B, 2)):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != rank:
            raise ValueError(f"kb_tensor4d_matmul: {label} must be a contiguous {rank}-D float32 tensor, got "
                             f"{getattr(x, 'dtype', type(x).__name__)} of shape {tuple(getattr(x, 'shape', ()))}")
    inner, cols = B.shape
    if A.shape[3] != inner:
        raise ValueError(f"kb_tensor4d_matmul: A is {tuple(A.shape)} and B is {tuple(B.shape)}: A's last and B's "
                         f"first axis (l) differ")
    rows = A.shape[0] * A.shape[1] * A.shape[2]
    if min(rows, inner, cols) < 1:
        raise ValueError(f"kb_tensor4d_matmul: every axis must be at least 1, got {tuple(A.shape)} and "
                         f"{tuple(B.shape)}")
    grid = ((rows + TILE - 1) // TILE, (cols + TILE - 1) // TILE, 1)
    if grid[0] > 2**31 - 1 or grid[1] > 65535:
        raise ValueError(f"kb_tensor4d_matmul: {rows} rows ({grid[0]} tiles, at most 2^31 - 1) or k={cols} "
                         f"({grid[1]} tiles, at most 65535) do not fit the grid")
    out = torch.empty((*A.shape[:3], cols), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_longlong, inner)]
    return out, grid, (TILE, TILE, 1), args


def t0_original(t, device):
    # Exactly 11_4D_tensor_matrix_multiplication.py's get_inputs(), seeded 1000 + t: A, then B.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(b, i, j, l)
        B = torch.rand(l, k)
    return [A.to(device), B.to(device)]


def misaligned(t, device):
    # j, l, k off the 32-wide tile, 1-wide axes, l under one tile. Signed values over short sums
    # (l <= 257) cannot cancel past 1e-2.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape, cols = [((1, 1, 1, 1), 1), ((2, 3, 11, 47), 65), ((1, 5, 20, 33), 37), ((3, 1, 7, 3), 129),
                   ((2, 4, 13, 100), 1), ((1, 2, 3, 257), 250)][t]
    A = torch.randn(shape, generator=g)
    B = torch.randn(shape[3], cols, generator=g)
    return [A.to(device), B.to(device)]


def slice_scaled(t, device):
    # Each (b, i) slice of A scaled by its own factor (0.1 .. 10, log-spaced and shuffled), j not a
    # multiple of 32 so row tiles straddle slices: a row taken from the wrong slice shows in the
    # output's magnitude. Signed values, sums of at most 64 products.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape, cols = [((3, 5, 13, 40), 24), ((2, 7, 9, 64), 50), ((4, 3, 21, 17), 33)][t]
    slices = shape[0] * shape[1]
    scale = (10.0 ** torch.linspace(-1.0, 1.0, slices))[torch.randperm(slices, generator=g)]
    A = torch.randn(shape, generator=g) * scale.reshape(shape[0], shape[1], 1, 1)
    B = torch.randn(shape[3], cols, generator=g)
    return [A.to(device), B.to(device)]


def long_l(t, device):
    # Up to 32 tiles along l for a few output tiles: each tile must be added exactly once.
    # Positive values up to 10, so the sums (up to ~2.5e4) cannot cancel.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    shape, cols = [((2, 2, 16, 1024), 32), ((1, 3, 13, 1000), 40), ((1, 1, 33, 999), 65)][t]
    A = torch.rand(shape, generator=g) * 10.0
    B = torch.rand(shape[3], cols, generator=g) * 10.0
    return [A.to(device), B.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 6, misaligned),
        ("slice_scaled", 3, slice_scaled),
        ("long_l", 3, long_l),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, 2, 16, 64, generator=g), torch.rand(64, 96, generator=g)]),
            ("misaligned", [torch.randn(2, 3, 7, 45, generator=g), torch.randn(45, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_tensor4d_matmul"] = dict(
        kb_file="11_4D_tensor_matrix_multiplication.py",
        cuda=CUDA_SOURCE,
        kernel_name="rows_matmul_tiled_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
