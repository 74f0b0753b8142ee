"""example_matmul: C = A @ B with 32x32 shared-memory tiles, one thread per output element.

Example substrate outside the padding family. Official reference: examples/problems/example_matmul.py
(torch.matmul of float32 (512, 512) by (512, 512)). Each 32x32 block walks the K dimension a
tile at a time: its threads load one element of A's tile and one of B's (zero past the
matrix edges), synchronise, accumulate the 32 products of their row and column, and
synchronise again before the tiles are overwritten. Any M, K, N of at least 1 is accepted.
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
NAME = "example_matmul"


def ref(A, B):
    import torch

    return torch.matmul(A, B)


def make_launch(ctypes):
    def launch(inputs, torch):
        if len(inputs) != 2:
            raise ValueError(f"{NAME}: expected two inputs A and B, got {len(inputs)}")
        A, B = inputs
        for label, m in (("A", A), ("B", B)):
            if m.dtype != torch.float32 or not m.is_contiguous() or m.dim() != 2:
                raise ValueError(f"{NAME}: {label} must be a contiguous 2-D float32 tensor, got {m.dtype} of "
                                 f"shape {tuple(m.shape)} (contiguous: {m.is_contiguous()})")
        M, K = A.shape
        K2, N = B.shape
        if K != K2:
            raise ValueError(f"{NAME}: A is {tuple(A.shape)} and B is {tuple(B.shape)}: inner dimensions differ")
        if min(M, K, N) < 1:
            raise ValueError(f"{NAME}: M, K and N must be at least 1, got M={M}, K={K}, N={N}")
        grid = ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE, 1)
        if grid[1] > 65535:
            raise ValueError(f"{NAME}: M={M} needs {grid[1]} row tiles; the grid's y dimension allows 65535")
        out = torch.empty((M, N), dtype=torch.float32, device=A.device)
        args = [
            (ctypes.c_void_p, A.data_ptr()),
            (ctypes.c_void_p, B.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, M),
            (ctypes.c_longlong, N),
            (ctypes.c_longlong, K),
        ]
        return out, grid, (TILE, TILE, 1), args

    return launch


# ---------------------------------------------------------------------------- inputs


def t0_original(t, device):
    # Exactly examples/problems/example_matmul.py:get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.randn(512, 512)
        B = torch.randn(512, 512)
    return [A.to(device), B.to(device)]


def misaligned(t, device):
    # M, K, N not multiples of the 32-wide tile (partial edge tiles in every direction), 1-wide
    # dimensions, and a K shorter than one tile; signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    M, K, N = [(1, 1, 1), (33, 47, 65), (100, 511, 37), (257, 3, 129), (31, 100, 1), (5, 257, 250)][t]
    return [torch.randn(M, K, generator=g).to(device), torch.randn(K, N, generator=g).to(device)]


def long_k(t, device):
    # Many tiles along K (up to 64) for a few output tiles: each tile's contribution must be
    # accumulated once. Positive values of up to 10, so the long sums (up to ~1e5) cannot cancel.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    M, K, N = [(64, 2048, 64), (40, 1000, 72), (32, 2047, 33)][t]
    A = torch.rand(M, K, generator=g) * 10.0
    B = torch.rand(K, N, generator=g) * 10.0
    return [A.to(device), B.to(device)]


def rectangular(t, device):
    # Tall, wide and thin shapes: the grid's x (columns) and y (rows) counts differ, so swapped
    # indices or a transposed tile show; rows of A and columns of B are scaled differently.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    M, K, N = [(300, 64, 20), (20, 64, 300), (96, 160, 224)][t]
    A = torch.randn(M, K, generator=g) * torch.linspace(0.5, 4.0, M).reshape(M, 1)
    B = torch.randn(K, N, generator=g) * torch.linspace(4.0, 0.5, N).reshape(1, N)
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
    return [
        ("aligned", [torch.randn(64, 96, generator=g), torch.randn(96, 128, generator=g)]),
        ("misaligned", [torch.randn(45, 70, generator=g), torch.randn(70, 37, generator=g)]),
    ]


def register(K, torch, ctypes):
    K.PROBLEMS[NAME] = dict(
        kb_file="example_matmul.py",
        cuda=CUDA_SOURCE,
        kernel_name="matmul_tiled_f32",
        ref=ref,
        launch=make_launch(ctypes),
        suites=suites,
        probe=probe,
    )
