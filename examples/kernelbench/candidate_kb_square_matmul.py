"""kb_square_matmul: KernelBench level 1's 1_Square_matrix_multiplication_.py (C = A @ B, both N x N).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_square_matmul.py

and `kb_file="1_Square_matrix_multiplication_.py"` resolves in its `level1` folder. 32x32
shared-memory tiles, one thread per output element: each block walks the shared dimension a
tile at a time, its threads loading one element of A's tile and one of B's (zero past the
matrix edge), synchronising, accumulating the 32 products of their row and column, and
synchronising again before the tiles are overwritten. The kernel takes square matrices only,
as the problem does. T0_original is get_inputs() at its full size (N = 4096: two 64 MiB
matrices, torch.rand, so every product is positive). The size constant below carries the
problem file's name and value: CI (tests/test_kernelbench_examples.py) substitutes a small
stand-in's value for it.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void square_matmul_tiled_f32(const float* __restrict__ A, const float* __restrict__ B,
                                                   float* __restrict__ C, long long n)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long row = (long long)blockIdx.y * TILE + ty;
    long long col = (long long)blockIdx.x * TILE + tx;
    long long n_tiles = (n + TILE - 1) / TILE;
    float acc = 0.0f;
    for (long long t = 0; t < n_tiles; ++t) {
        long long a_col = t * TILE + tx;
        long long b_row = t * TILE + ty;
        As[ty][tx] = 0.0f;
        Bs[ty][tx] = 0.0f;
        if (row < n && a_col < n) As[ty][tx] = A[row * n + a_col];
        if (b_row < n && col < n) Bs[ty][tx] = B[b_row * n + col];
        __syncthreads();  // sync-after-tile-load
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // sync-before-tile-overwrite
    }
    if (row < n && col < n) C[row * n + col] = acc;
}
"""

TILE = 32

# 1_Square_matrix_multiplication_.py's size constant (same name, same value).
N = 2048 * 2


def ref(A, B):
    import torch

    return torch.matmul(A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_square_matmul: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, m in (("A", A), ("B", B)):
        if m.dtype != torch.float32 or not m.is_contiguous() or m.dim() != 2:
            raise ValueError(f"kb_square_matmul: {label} must be a contiguous 2-D float32 tensor, got {m.dtype} "
                             f"of shape {tuple(m.shape)} (contiguous: {m.is_contiguous()})")
    n = A.shape[0]
    if tuple(A.shape) != (n, n) or tuple(B.shape) != (n, n) or n < 1:
        raise ValueError(f"kb_square_matmul: A and B must both be N x N with N >= 1, got {tuple(A.shape)} and "
                         f"{tuple(B.shape)}")
    tiles = (n + TILE - 1) // TILE
    if tiles > 65535:
        raise ValueError(f"kb_square_matmul: N={n} needs {tiles} row tiles; the grid's y dimension allows 65535")
    out = torch.empty((n, n), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, n)]
    return out, (tiles, tiles, 1), (TILE, TILE, 1), args


def t0_original(t):
    # Exactly 1_Square_matrix_multiplication_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(N, N)
        B = torch.rand(N, N)
    return [A, B]


def misaligned(t):
    # N not a multiple of the 32-wide tile (partial edge tiles in both directions), N = 1, and N
    # shorter than one tile; signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n = [1, 7, 33, 65, 100][t]
    return [torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)]


def structured(t):
    # Rows of A and columns of B scaled differently (0.5 .. 4), signed: a transposed tile, swapped
    # row and column indices, or a wrong stride gives a different matrix.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n = [96, 64, 50][t]
    A = torch.randn(n, n, generator=g) * torch.linspace(0.5, 4.0, n).reshape(n, 1)
    B = torch.randn(n, n, generator=g) * torch.linspace(4.0, 0.5, n).reshape(1, n)
    return [A, B]


def long_sums(t):
    # Many tiles along the shared dimension (up to 8), positive values of up to 10, so the long sums
    # (up to ~6e3) cannot cancel: each tile must be accumulated exactly once.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n = [256, 129, 200][t]
    return [torch.rand(n, n, generator=g) * 10.0, torch.rand(n, n, generator=g) * 10.0]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 5, misaligned),
        ("structured", 3, structured),
        ("long_sums", 3, long_sums),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(64, 64, generator=g), torch.rand(64, 64, generator=g)]),
            ("misaligned", [torch.randn(45, 45, generator=g), torch.randn(45, 45, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_square_matmul"] = dict(
        kb_file="1_Square_matrix_multiplication_.py",
        cuda=CUDA_SOURCE,
        kernel_name="square_matmul_tiled_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
