"""kb_matmul_transposed_bothoth: KernelBench level 1's 18_Matmul_with_transposed_both.py (C = A.T @ B.T).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_matmul_transposed_bothoth.py

and `kb_file="18_Matmul_with_transposed_both.py"` resolves in its `level1` folder. forward(A, B)
takes A of shape (K, M) and B of shape (N, K) and returns torch.matmul(A.T, B.T), of shape
(M, N): C[m][n] = sum over k of A[k][m] * B[n][k].

32x32 shared-memory tiles, one thread per output element. Each block walks K a tile at a time.
A's tile is read along M (thread x steps through m, contiguous in A's rows) and kept as
As[k][m]; B's tile is read along K (thread x steps through k, contiguous in B's rows) and stored
transposed as Bs[k][n], padded by one column so the transposing store does not hit one bank 32
times. The inner loop is As[k][row] * Bs[k][col]. Elements past a matrix edge load as zero.
Any M, K, N of at least 1.

At the real size (M = 2048, K = 8192, N = 4096) the grid is 128 x 64 blocks and no offset
passes 2^31 (A is 16.8M elements, B 33.6M), though the kernel's offsets are 64-bit all the same.
T0_original is exactly get_inputs() seeded 1000 + t (torch.rand, positive, so the sums of 8192
products, about 2048, cannot cancel).

Targeted suites: `misaligned` has M, K, N off the 32-wide tile (1-wide, partial edge tiles, K
under one tile) with signed values, so a wrong edge guard or a zero-padding slip shows;
`long_k` has up to 32 K-tiles with positive values, so a tile dropped or counted twice shifts
every output by a visible share; `rectangular` has M, N and K all different, with A's columns
and B's rows scaled differently, so swapping M and N, reading either operand untransposed, or
confusing which stride belongs to which matrix is wrong by far more than the tolerance. The size
constants below carry the problem file's names and values: CI (tests/test_kernelbench_examples.py)
substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void matmul_at_bt_tiled_f32(const float* __restrict__ A, const float* __restrict__ B,
                                                  float* __restrict__ C, long long M, long long N, long long K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long row = (long long)blockIdx.y * TILE + ty;
    long long col = (long long)blockIdx.x * TILE + tx;
    long long a_col = (long long)blockIdx.y * TILE + tx;
    long long b_row = (long long)blockIdx.x * TILE + ty;
    long long n_tiles = (K + TILE - 1) / TILE;
    float acc = 0.0f;
    for (long long t = 0; t < n_tiles; ++t) {
        long long a_k = t * TILE + ty;
        long long b_k = t * TILE + tx;
        As[ty][tx] = 0.0f;
        Bs[tx][ty] = 0.0f;
        if (a_k < K && a_col < M) As[ty][tx] = A[a_k * M + a_col];
        if (b_row < N && b_k < K) Bs[tx][ty] = B[b_row * K + b_k];
        __syncthreads();  // sync-after-tile-load
        for (int k = 0; k < TILE; ++k) acc += As[k][ty] * Bs[k][tx];
        __syncthreads();  // sync-before-tile-overwrite
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"""

TILE = 32

# 18_Matmul_with_transposed_both.py's size constants (same names, same values).
M = 1024 * 2
K = 4096 * 2
N = 2048 * 2


def ref(A, B):
    import torch

    return torch.matmul(A.T, B.T)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_matmul_transposed_both: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, m in (("A", A), ("B", B)):
        if not isinstance(m, torch.Tensor) or m.dtype != torch.float32 or not m.is_contiguous() or m.dim() != 2:
            raise ValueError(f"kb_matmul_transposed_both: {label} must be a contiguous 2-D float32 tensor, got "
                             f"{getattr(m, 'dtype', type(m).__name__)} of shape {tuple(getattr(m, 'shape', ()))}")
    inner, rows = A.shape
    cols, inner_b = B.shape
    if inner != inner_b:
        raise ValueError(f"kb_matmul_transposed_bothoth: A is {tuple(A.shape)} (K, M) and B is {tuple(B.shape)} "
                         f"(N, K): A's first and B's last dimension (K) differ")
    if min(rows, inner, cols) < 1:
        raise ValueError(f"kb_matmul_transposed_both: M, K and N must be at least 1, got M={rows}, K={inner}, N={cols}")
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE, 1)
    if grid[1] > 65535:
        raise ValueError(f"kb_matmul_transposed_both: M={rows} needs {grid[1]} row tiles; the grid's y dimension "
                         f"allows 65535")
    out = torch.empty((rows, cols), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_longlong, inner)]
    return out, grid, (TILE, TILE, 1), args


def t0_original(t, device):
    # Exactly 18_Matmul_with_transposed_both.py's get_inputs(), seeded 1000 + t: A (K, M), then B (N, K).
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(K, M)
        B = torch.rand(N, K)
    return [A.to(device), B.to(device)]


def misaligned(t, device):
    # M, K, N off the 32-wide tile: 1-wide dimensions, partial edge tiles in every direction, K
    # shorter than one tile. Signed values over short sums (K <= 257) cannot cancel past 1e-2.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, inner, cols = [(1, 1, 1), (33, 47, 65), (100, 211, 37), (97, 3, 129), (31, 100, 1), (5, 257, 250)][t]
    A = torch.randn(inner, rows, generator=g)
    B = torch.randn(cols, inner, generator=g)
    return [A.to(device), B.to(device)]


def long_k(t, device):
    # Up to 32 tiles along K for a few output tiles: each K-tile must be added exactly once.
    # Positive values up to 10, so the sums (up to ~2.5e4) cannot cancel.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, inner, cols = [(64, 1024, 32), (40, 1000, 72), (32, 999, 33)][t]
    A = torch.rand(inner, rows, generator=g) * 10.0
    B = torch.rand(cols, inner, generator=g) * 10.0
    return [A.to(device), B.to(device)]


def rectangular(t, device):
    # M, N and K all different (tall, wide, and unequal in both): swapped grid axes, swapped M/N,
    # or an operand read untransposed index the wrong elements. Columns of A (output rows) and
    # rows of B (output columns) carry scales of their own, so a misplaced row or column shows
    # in the output's magnitude.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, inner, cols = [(300, 64, 20), (20, 64, 300), (96, 160, 224)][t]
    A = torch.randn(inner, rows, generator=g) * torch.linspace(0.5, 4.0, rows).reshape(1, rows)
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
    return [("aligned", [torch.rand(96, 64, generator=g), torch.rand(128, 96, generator=g)]),
            ("misaligned", [torch.randn(70, 45, generator=g), torch.randn(37, 70, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_matmul_transposed_both"] = dict(
        kb_file="18_Matmul_with_transposed_both.py",
        cuda=CUDA_SOURCE,
        kernel_name="matmul_at_bt_tiled_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
