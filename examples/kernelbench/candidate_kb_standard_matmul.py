"""kb_standard_matmul: KernelBench level 1's 2_Standard_matrix_multiplication_.py (C = A @ B).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_standard_matmul.py

and `kb_file="2_Standard_matrix_multiplication_.py"` resolves in its `level1` folder. 32x32
shared-memory tiles, one thread per output element: each block walks K a tile at a time, its
threads loading one element of A's tile and one of B's (zero past the matrix edges),
synchronising, accumulating the 32 products of their row and column, and synchronising again
before the tiles are overwritten. Any M, K, N of at least 1 is accepted.

T0_original has get_inputs()'s shapes, dtypes and distribution (torch.rand of (M, K) =
(2048, 8192) and (K, N) = (8192, 4096): positive, so the sums of 8192 products cannot cancel),
drawn from a torch.Generator of its own (seeded T0_SEED + t, not KernelBench's
torch.manual_seed(1000 + t)): the same distribution, other values. The size constants below
carry the problem file's names and values: CI (tests/test_kernelbench_examples.py) substitutes a
small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void matmul_tiled_f32(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, long long M, long long N, long long K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long row = (long long)blockIdx.y * TILE + ty;
    long long col = (long long)blockIdx.x * TILE + tx;
    long long n_tiles = (K + TILE - 1) / TILE;
    float acc = 0.0f;
    for (long long t = 0; t < n_tiles; ++t) {
        long long a_col = t * TILE + tx;
        long long b_row = t * TILE + ty;
        As[ty][tx] = 0.0f;
        Bs[ty][tx] = 0.0f;
        if (row < M && a_col < K) As[ty][tx] = A[row * K + a_col];
        if (b_row < K && col < N) Bs[ty][tx] = B[b_row * N + col];
        __syncthreads();  // sync-after-tile-load
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // sync-before-tile-overwrite
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"""

TILE = 32

# 2_Standard_matrix_multiplication_.py's size constants (same names, same values).
M = 1024 * 2
K = 4096 * 2
N = 2048 * 2

# T0's own generator is seeded apart from KernelBench's 1000 + t: a fresh torch.Generator seeded
# 1000 + t draws exactly the numbers torch.manual_seed(1000 + t) gives get_inputs() (one mt19937
# stream per seed), which would make T0 identical rather than only the same distribution.
T0_SEED = 1_001_000


def ref(A, B):
    import torch

    return torch.matmul(A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_standard_matmul: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, m in (("A", A), ("B", B)):
        if m.dtype != torch.float32 or not m.is_contiguous() or m.dim() != 2:
            raise ValueError(f"kb_standard_matmul: {label} must be a contiguous 2-D float32 tensor, got {m.dtype} "
                             f"of shape {tuple(m.shape)} (contiguous: {m.is_contiguous()})")
    rows, inner = A.shape
    inner_b, cols = B.shape
    if inner != inner_b:
        raise ValueError(f"kb_standard_matmul: A is {tuple(A.shape)} and B is {tuple(B.shape)}: inner dimensions differ")
    if min(rows, inner, cols) < 1:
        raise ValueError(f"kb_standard_matmul: M, K and N must be at least 1, got M={rows}, K={inner}, N={cols}")
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE, 1)
    if grid[1] > 65535:
        raise ValueError(f"kb_standard_matmul: M={rows} needs {grid[1]} row tiles; the grid's y dimension allows 65535")
    out = torch.empty((rows, cols), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_longlong, inner)]
    return out, grid, (TILE, TILE, 1), args


def t0_original(t, device):
    # get_inputs()'s shapes, dtypes and distribution (torch.rand), from a generator of its own, seeded
    # T0_SEED + t: other values than get_inputs() under torch.manual_seed(1000 + t).
    import torch

    g = torch.Generator().manual_seed(T0_SEED + t)
    A = torch.rand(M, K, generator=g)
    B = torch.rand(K, N, generator=g)
    return [A.to(device), B.to(device)]


def misaligned(t, device):
    # M, K, N not multiples of the 32-wide tile (partial edge tiles in every direction), 1-wide
    # dimensions, and a K shorter than one tile; signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, inner, cols = [(1, 1, 1), (33, 47, 65), (100, 211, 37), (97, 3, 129), (31, 100, 1), (5, 257, 250)][t]
    return [torch.randn(rows, inner, generator=g).to(device), torch.randn(inner, cols, generator=g).to(device)]


def long_k(t, device):
    # Many tiles along K (up to 32) for a few output tiles: each tile's contribution must be
    # accumulated once. Positive values of up to 10, so the long sums (up to ~5e4) cannot cancel.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, inner, cols = [(64, 1024, 32), (40, 1000, 72), (32, 999, 33)][t]
    A = torch.rand(rows, inner, generator=g) * 10.0
    B = torch.rand(inner, cols, generator=g) * 10.0
    return [A.to(device), B.to(device)]


def rectangular(t, device):
    # Tall, wide and thin shapes: the grid's x (columns) and y (rows) counts differ, so swapped
    # indices or a transposed tile show; rows of A and columns of B are scaled differently.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, inner, cols = [(300, 64, 20), (20, 64, 300), (96, 160, 224)][t]
    A = torch.randn(rows, inner, generator=g) * torch.linspace(0.5, 4.0, rows).reshape(rows, 1)
    B = torch.randn(inner, cols, generator=g) * torch.linspace(4.0, 0.5, cols).reshape(1, cols)
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
    return [("aligned", [torch.rand(64, 96, generator=g), torch.rand(96, 128, generator=g)]),
            ("misaligned", [torch.randn(45, 70, generator=g), torch.randn(70, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_standard_matmul"] = dict(
        kb_file="2_Standard_matrix_multiplication_.py",
        cuda=CUDA_SOURCE,
        kernel_name="matmul_tiled_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
