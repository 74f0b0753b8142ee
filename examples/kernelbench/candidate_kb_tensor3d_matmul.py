"""kb_tensor3d_matmul: KernelBench level 1's 10_3D_tensor_matrix_multiplication.py (C = A @ B, A 3-D).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_tensor3d_matmul.py

and `kb_file="10_3D_tensor_matrix_multiplication.py"` resolves in its `level1` folder.
forward(A, B) is torch.matmul of A, shape (N, M, K), and B, shape (K, L): B is broadcast over A's
leading dimension, so C[n] = A[n] @ B and C is (N, M, L).

32x32 shared-memory tiles, one thread per output element, the batch on the grid's z axis: block
(x, y, z) computes the 32x32 tile at row tile y and column tile x of C[z], walking K a tile at a
time, its threads loading one element of A[z]'s tile and one of B's (zero past the edges),
synchronising, accumulating the 32 products of their row and column, and synchronising again
before the tiles are overwritten. A[z] starts z * M * K floats into A and C[z] z * M * L floats
into C, offsets kept 64-bit. At the real size (N = 16, M = 1024, K = 2048, L = 768) the grid is
24 x 32 x 16 blocks and A holds 2^25 elements; N and the row tiles are limited to 65535 by the
grid's z and y dimensions (launch says so). T0_original is exactly get_inputs() seeded 1000 + t
(torch.rand, positive, so the sums of 2048 products cannot cancel).

Targeted suites: `misaligned` has M, K, L off the 32-wide tile and 1-wide ones (N of 1 too),
with signed values, for the edge guards and the zero padding; `batch_scaled` has up to 40 batch
entries, each scaled by its own factor (0.1 to 10) and K != L, so reading the wrong A[n], writing
the wrong C[n], or using C's batch stride for A's (or the other way round) is far off; `long_k`
has up to 32 tiles along K with positive values up to 10, so a tile dropped or counted twice
shifts every output. The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void batched_matmul_shared_b_f32(const float* __restrict__ A, const float* __restrict__ B,
                                                      float* __restrict__ C, long long M, long long L, long long K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    const float* Ab = A + (long long)blockIdx.z * M * K;
    float* Cb = C + (long long)blockIdx.z * M * L;
    long long row = (long long)blockIdx.y * TILE + ty;
    long long col = (long long)blockIdx.x * TILE + tx;
    long long n_tiles = (K + TILE - 1) / TILE;
    float acc = 0.0f;
    for (long long t = 0; t < n_tiles; ++t) {
        long long a_col = t * TILE + tx;
        long long b_row = t * TILE + ty;
        As[ty][tx] = 0.0f;
        Bs[ty][tx] = 0.0f;
        if (row < M && a_col < K) As[ty][tx] = Ab[row * K + a_col];
        if (b_row < K && col < L) Bs[ty][tx] = B[b_row * L + col];
        __syncthreads();  // sync-after-tile-load
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // sync-before-tile-overwrite
    }
    if (row < M && col < L) Cb[row * L + col] = acc;
}
"""

TILE = 32

# 10_3D_tensor_matrix_multiplication.py's size constants (same names, same values).
N = 16
M = 1024
K = 2048
L = 768


def ref(A, B):
    import torch

    return torch.matmul(A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_tensor3d_matmul: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, x, rank in (("A", A, 3), ("B", B, 2)):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != rank:
            raise ValueError(f"kb_tensor3d_matmul: {label} must be a contiguous {rank}-D float32 tensor, got "
                             f"{getattr(x, 'dtype', type(x).__name__)} of shape {tuple(getattr(x, 'shape', ()))}")
    batch, rows, inner = A.shape
    inner_b, cols = B.shape
    if inner != inner_b:
        raise ValueError(f"kb_tensor3d_matmul: A is {tuple(A.shape)} and B is {tuple(B.shape)}: A's last and B's "
                         f"first dimension (K) differ")
    if min(batch, rows, inner, cols) < 1:
        raise ValueError(f"kb_tensor3d_matmul: N, M, K and L must be at least 1, got {tuple(A.shape)} @ "
                         f"{tuple(B.shape)}")
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE, batch)
    if grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"kb_tensor3d_matmul: M={rows} ({grid[1]} row tiles) and N={batch} must each fit the "
                         f"grid's y and z dimensions (65535)")
    out = torch.empty((batch, rows, cols), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_longlong, inner)]
    return out, grid, (TILE, TILE, 1), args


def t0_original(t, device):
    # Exactly 10_3D_tensor_matrix_multiplication.py's get_inputs(), seeded 1000 + t: A, then B.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(N, M, K)
        B = torch.rand(K, L)
    return [A.to(device), B.to(device)]


def misaligned(t, device):
    # M, K, L off the 32-wide tile, 1-wide dimensions (a single batch entry too), K under one tile.
    # Signed values over short sums (K <= 257) cannot cancel past 1e-2.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    batch, rows, inner, cols = [(1, 1, 1, 1), (2, 33, 47, 65), (3, 100, 211, 37), (5, 31, 3, 129),
                                (1, 97, 100, 1), (4, 5, 257, 250)][t]
    A = torch.randn(batch, rows, inner, generator=g)
    B = torch.randn(inner, cols, generator=g)
    return [A.to(device), B.to(device)]


def batch_scaled(t, device):
    # Many batch entries, each scaled by its own factor (0.1 .. 10, log-spaced and shuffled), with
    # K != L: the wrong A[n] or C[n], or one batch stride used for the other, changes the output's
    # magnitude well past the tolerance. Signed values, sums of at most 96 products.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    batch, rows, inner, cols = [(40, 20, 48, 33), (17, 64, 96, 32), (9, 45, 7, 70)][t]
    scale = (10.0 ** torch.linspace(-1.0, 1.0, batch))[torch.randperm(batch, generator=g)]
    A = torch.randn(batch, rows, inner, generator=g) * scale.reshape(batch, 1, 1)
    B = torch.randn(inner, cols, generator=g)
    return [A.to(device), B.to(device)]


def long_k(t, device):
    # Up to 32 tiles along K for a few output tiles: each K-tile must be added exactly once.
    # Positive values up to 10, so the sums (up to ~2.5e4) cannot cancel.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    batch, rows, inner, cols = [(2, 32, 1024, 32), (3, 40, 1000, 40), (1, 33, 999, 65)][t]
    A = torch.rand(batch, rows, inner, generator=g) * 10.0
    B = torch.rand(inner, cols, generator=g) * 10.0
    return [A.to(device), B.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 6, misaligned),
        ("batch_scaled", 3, batch_scaled),
        ("long_k", 3, long_k),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, 64, 96, generator=g), torch.rand(96, 64, generator=g)]),
            ("misaligned", [torch.randn(3, 45, 70, generator=g), torch.randn(70, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_tensor3d_matmul"] = dict(
        kb_file="10_3D_tensor_matrix_multiplication.py",
        cuda=CUDA_SOURCE,
        kernel_name="batched_matmul_shared_b_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
