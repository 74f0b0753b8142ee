"""kb_matmul_small_k: KernelBench level 1's 7_Matmul_with_small_K_dimension_.py (C = A @ B, K tiny).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_matmul_small_k.py

and `kb_file="7_Matmul_with_small_K_dimension_.py"` resolves in its `level1` folder. forward()
multiplies an (M, K) matrix by a (K, N) one; at the real size M = N = 32768 and K = 64, so the
inputs are small (8 MiB each, torch.rand) and the output is huge (2^30 floats, 4 GiB): the work
is writing C. 32x32 shared-memory tiles, one thread per output element: each block walks K a
tile at a time (two tiles here), its threads loading one element of A's tile and one of B's
(zero past the matrix edges), synchronising, accumulating the 32 products of their row and
column, and synchronising again before the tiles are overwritten. The real grid is 1024 x 1024
blocks (y well under 65535) and the output offset row * N + col reaches 2^30, computed in 64
bits like every offset.

T0_original is exactly get_inputs() seeded 1000 + t: sums of 64 positive products, about 16.
K is short, so every targeted suite may be signed without cancellation risk:
- misaligned: M, N and K not multiples of 32 (1-wide, shorter than a tile, one past a tile or
  two), so partial edge tiles and the zero padding of the last K tile are exercised.
- outer_products: K of 1 to 3, tall and wide shapes (the grid's x and y counts far apart), rows
  of A and columns of B scaled 0.1 .. 10: each output is one to three products, so a swapped row
  and column, a transposed tile or a wrong stride gives a visibly different matrix.
- many_tiles: K = 64 and 40 over a few hundred rows and columns: many output tiles, with A's
  and B's scales varying across them, so a block writing into another block's tile shows.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void matmul_small_k_f32(const float* __restrict__ A, const float* __restrict__ B,
                                              float* __restrict__ C, long long rows, long long cols,
                                              long long inner)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long row = (long long)blockIdx.y * TILE + ty;
    long long col = (long long)blockIdx.x * TILE + tx;
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

# 7_Matmul_with_small_K_dimension_.py's size constants (same names, same values).
M = 16384 * 2
N = 16384 * 2
K = 32 * 2


def ref(A, B):
    import torch

    return torch.matmul(A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_matmul_small_k: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, x in (("A", A), ("B", B)):
        if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
            raise ValueError(f"kb_matmul_small_k: {label} must be a contiguous 2-D float32 tensor, got {x.dtype} "
                             f"of shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    rows, inner = A.shape
    inner_b, cols = B.shape
    if inner != inner_b:
        raise ValueError(f"kb_matmul_small_k: A is {tuple(A.shape)} and B is {tuple(B.shape)}: inner dimensions "
                         f"differ")
    if min(rows, inner, cols) < 1:
        raise ValueError(f"kb_matmul_small_k: M, K and N must be at least 1, got M={rows}, K={inner}, N={cols}")
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE, 1)
    if grid[1] > 65535:
        raise ValueError(f"kb_matmul_small_k: M={rows} needs {grid[1]} row tiles; the grid's y dimension allows "
                         f"65535")
    out = torch.empty((rows, cols), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_longlong, inner)]
    return out, grid, (TILE, TILE, 1), args


def t0_original(t):
    # Exactly 7_Matmul_with_small_K_dimension_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(M, K)
        B = torch.rand(K, N)
    return [A, B]


def misaligned(t):
    # K of 1, 5, 31, 33 and 65 with M and N off the tile grid; signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, inner, cols = [(1, 1, 1), (37, 5, 70), (100, 31, 33), (3, 33, 129), (65, 65, 1)][t]
    return [torch.randn(rows, inner, generator=g), torch.randn(inner, cols, generator=g)]


def outer_products(t):
    # One to three products per output over tall and wide shapes; rows of A scaled 0.1 .. 10 one
    # way, columns of B the other, signed.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, inner, cols = [(400, 1, 24), (24, 2, 400), (150, 3, 90), (9, 1, 333)][t]
    A = torch.randn(rows, inner, generator=g) * torch.logspace(-1, 1, rows).reshape(rows, 1)
    B = torch.randn(inner, cols, generator=g) * torch.logspace(1, -1, cols).reshape(1, cols)
    return [A, B]


def many_tiles(t):
    # A few hundred rows and columns (tens of output tiles) over K = 64 or 40, signed, A's rows
    # scaled 0.5 .. 4 and B's columns 4 .. 0.5.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, inner, cols = [(256, 64, 320), (300, 40, 200), (97, 64, 513)][t]
    A = torch.randn(rows, inner, generator=g) * torch.linspace(0.5, 4.0, rows).reshape(rows, 1)
    B = torch.randn(inner, cols, generator=g) * torch.linspace(4.0, 0.5, cols).reshape(1, cols)
    return [A, B]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 5, misaligned),
        ("outer_products", 4, outer_products),
        ("many_tiles", 3, many_tiles),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(128, 64, generator=g), torch.rand(64, 96, generator=g)]),
            ("misaligned", [torch.randn(77, 9, generator=g), torch.randn(9, 45, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_matmul_small_k"] = dict(
        kb_file="7_Matmul_with_small_K_dimension_.py",
        cuda=CUDA_SOURCE,
        kernel_name="matmul_small_k_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
