"""kb_matmul_transposed_b: KernelBench level 1's 17_Matmul_with_transposed_B.py (C = A @ B.T).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_matmul_transposed_b.py

and `kb_file="17_Matmul_with_transposed_B.py"` resolves in its `level1` folder. forward(A, B)
takes A of shape (M, K) and B of shape (N, K), B holding the right factor's columns as its rows,
and returns torch.matmul(A, B.T), of shape (M, N): C[m][n] = sum over k of A[m][k] * B[n][k].

32x32 shared-memory tiles, one thread per output element. Each block walks K a tile at a time.
Both operands are read along their contiguous K axis (thread x steps through K), so the loads
coalesce; B's tile is stored transposed in shared memory (Bs[k][n], padded by one column so the
transposing store does not hit one bank 32 times) and the inner loop is the usual
As[row][k] * Bs[k][col]. Elements past a matrix edge load as zero. Any M, K, N of at least 1.

At the real size (M = 2048, K = 8192, N = 4096) the grid is 128 x 64 blocks and no offset
passes 2^31 (A is 16.8M elements, B 33.6M), though the kernel's offsets are 64-bit all the same.
T0_original is exactly get_inputs() seeded 1000 + t (torch.rand, positive, so the sums of 8192
products, about 2048, cannot cancel).

Targeted suites: `misaligned` has M, K, N off the 32-wide tile (1-wide, partial edge tiles, K
under one tile) with signed values, so a wrong edge guard or a zero-padding slip shows;
`long_k` has up to 32 K-tiles with positive values, so a tile dropped or counted twice shifts
every output by a visible share; `rectangular` has M and N far apart with rows of A and rows of
B scaled differently, so swapping the roles of M and N, of A's and B's indices, or reading B
untransposed (B[k][n] instead of B[n][k]) is wrong by far more than the tolerance. The size
constants below carry the problem file's names and values: CI (tests/test_kernelbench_examples.py)
substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void matmul_bt_tiled_f32(const float* __restrict__ A, const float* __restrict__ B,
                                               float* __restrict__ C, long long M, long long N, long long K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long row = (long long)blockIdx.y * TILE + ty;
    long long col = (long long)blockIdx.x * TILE + tx;
    long long b_row = (long long)blockIdx.x * TILE + ty;
    long long n_tiles = (K + TILE - 1) / TILE;
    float acc = 0.0f;
    for (long long t = 0; t < n_tiles; ++t) {
        long long k_in = t * TILE + tx;
        As[ty][tx] = 0.0f;
        Bs[tx][ty] = 0.0f;
        if (row < M && k_in < K) As[ty][tx] = A[row * K + k_in];
        if (b_row < N && k_in < K) Bs[tx][ty] = B[b_row * K + k_in];
        __syncthreads();  // sync-after-tile-load
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // sync-before-tile-overwrite
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"""

TILE = 32

# 17_Matmul_with_transposed_B.py's size constants (same names, same values).
M = 1024 * 2
K = 4096 * 2
N = 2048 * 2


def ref(A, B):
    import torch

    return torch.matmul(A, B.T)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_matmul_transposed_b: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, m in (("A", A), ("B", B)):
        if not isinstance(m, torch.Tensor) or m.dtype != torch.float32 or not m.is_contiguous() or m.dim() != 2:
            raise ValueError(f"kb_matmul_transposed_b: {label} must be a contiguous 2-D float32 tensor, got "
                             f"{getattr(m, 'dtype', type(m).__name__)} of shape {tuple(getattr(m, 'shape', ()))}")
    rows, inner = A.shape
    cols, inner_b = B.shape
    if inner != inner_b:
        raise ValueError(f"kb_matmul_transposed_b: A is {tuple(A.shape)} and B is {tuple(B.shape)}: their last "
                         f"dimensions (K) differ")
    if min(rows, inner, cols) < 1:
        raise ValueError(f"kb_matmul_transposed_b: M, K and N must be at least 1, got M={rows}, K={inner}, N={cols}")
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE, 1)
    if grid[1] > 65535:
        raise ValueError(f"kb_matmul_transposed_b: M={rows} needs {grid[1]} row tiles; the grid's y dimension "
                         f"allows 65535")
    out = torch.empty((rows, cols), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_longlong, inner)]
    return out, grid, (TILE, TILE, 1), args


def t0_original(t, device):
    # Exactly 17_Matmul_with_transposed_B.py's get_inputs(), seeded 1000 + t: A, then B.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(M, K)
        B = torch.rand(N, K)
    return [A.to(device), B.to(device)]


def misaligned(t, device):
    # M, K, N off the 32-wide tile: 1-wide dimensions, partial edge tiles in every direction, K
    # shorter than one tile. Signed values over short sums (K <= 257) cannot cancel past 1e-2.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, inner, cols = [(1, 1, 1), (33, 47, 65), (100, 211, 37), (97, 3, 129), (31, 100, 1), (5, 257, 250)][t]
    A = torch.randn(rows, inner, generator=g)
    B = torch.randn(cols, inner, generator=g)
    return [A.to(device), B.to(device)]


def long_k(t, device):
    # Up to 32 tiles along K for a few output tiles: each K-tile must be added exactly once.
    # Positive values up to 10, so the sums (up to ~2.5e4) cannot cancel.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, inner, cols = [(64, 1024, 32), (40, 1000, 72), (32, 999, 33)][t]
    A = torch.rand(rows, inner, generator=g) * 10.0
    B = torch.rand(cols, inner, generator=g) * 10.0
    return [A.to(device), B.to(device)]


def rectangular(t, device):
    # M and N far apart (tall, wide, and unequal in both): swapped grid axes, swapped M/N, or B read
    # as (K, N) instead of (N, K) index the wrong rows. Rows of A and rows of B carry scales of
    # their own, so a misplaced row or column shows in the output's magnitude.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, inner, cols = [(300, 64, 20), (20, 64, 300), (96, 160, 224)][t]
    A = torch.randn(rows, inner, generator=g) * torch.linspace(0.5, 4.0, rows).reshape(rows, 1)
    B = torch.randn(cols, inner, generator=g) * torch.linspace(4.0, 0.5, cols).reshape(cols, 1)
    return [A.to(device), B.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 6, misaligned),
        ("long_k", 3, long_k),
        ("rectangular", 3, rectangular),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(64, 96, generator=g), torch.rand(128, 96, generator=g)]),
            ("misaligned", [torch.randn(45, 70, generator=g), torch.randn(37, 70, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_matmul_transposed_b"] = dict(
        kb_file="17_Matmul_with_transposed_B.py",
        cuda=CUDA_SOURCE,
        kernel_name="matmul_bt_tiled_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
