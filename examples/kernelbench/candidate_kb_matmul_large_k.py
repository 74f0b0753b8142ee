"""kb_matmul_large_k: KernelBench level 1's 6_Matmul_with_large_K_dimension_.py (C = A @ B, K huge).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_matmul_large_k.py

and `kb_file="6_Matmul_with_large_K_dimension_.py"` resolves in its `level1` folder. forward()
multiplies an (M, K) matrix by a (K, N) one: at the real size a 256 x 256 result from a shared
dimension of 524288 (A and B torch.rand, 512 MiB each). Only 64 output tiles exist, too few to
fill an H200 if each block walked all 16384 tiles of K, so the 32x32 shared-memory tile matmul
is split along K: the grid's z axis numbers K-chunks of `chunk_tiles` tiles each, every block
accumulates its output tile over its own chunk only (load one element of A's and of B's tile,
zero past the edges; sync; 32 multiply-adds; sync before the next load) and atomically adds
that partial sum into C, which launch creates as zeros. launch picks chunk_tiles so that there
are at most MAX_SPLITS chunks: at the real size 256 chunks of 64 tiles, a grid of 8 x 8 x 256
blocks, each output summed from 256 partial sums (their order varies from run to run, within a
few float32 ulps). Offsets are 64-bit throughout.

T0_original is exactly get_inputs() seeded 1000 + t: positive sums near 1.3e5 over 524288
products. With K this long a uniform positive input hides the loss of any one tile or chunk
below the 1e-2 tolerance, hence the targeted suites:
- misaligned: M, N, K not multiples of 32, 1-wide dimensions; signed values over at most 300
  products (K short enough that cancellation stays far below the tolerance).
- heavy_columns: positive inputs of about 0.005 except a few heavy (1 .. 2) shared-dimension
  positions: the first and the last, the first and last of a few randomly chosen chunks, one in
  the last partial tile. Each heavy product carries about a tenth of every output, so a skipped
  chunk, chunk edge or tail tile, or a chunk counted twice, is far outside the tolerance. K is
  long enough (8300 to 17000) that chunks hold 2 and 3 tiles.
- long_k: few outputs over K of 3000 to 17000, positive values up to 2, so the sums (up to
  ~8.5e3) cannot cancel: a lost or doubled majority of the chunks, or a wrong chunk stride, shows.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void matmul_splitk_f32(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, long long rows, long long cols,
                                             long long inner, long long chunk_tiles)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long row = (long long)blockIdx.y * TILE + ty;
    long long col = (long long)blockIdx.x * TILE + tx;
    long long n_tiles = (inner + TILE - 1) / TILE;
    long long t_begin = (long long)blockIdx.z * chunk_tiles;
    long long t_end = t_begin + chunk_tiles;
    if (t_end > n_tiles) t_end = n_tiles;
    float acc = 0.0f;
    for (long long t = t_begin; t < t_end; ++t) {
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
    if (row < rows && col < cols) atomicAdd(&C[row * cols + col], acc);
}
"""

TILE = 32
MAX_SPLITS = 256  # K-chunks at most: 8 x 8 x 256 = 16384 blocks at the real size, 256 atomic adds per output

# 6_Matmul_with_large_K_dimension_.py's size constants (same names, same values).
M = 256
N = 256
K = 131072 * 4


def chunk_tiles_for(inner):
    """Tiles of K per chunk: the fewest that keep the chunk count within MAX_SPLITS."""
    n_tiles = (inner + TILE - 1) // TILE
    return (n_tiles + MAX_SPLITS - 1) // MAX_SPLITS


def ref(A, B):
    import torch

    return torch.matmul(A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_matmul_large_k: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, x in (("A", A), ("B", B)):
        if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
            raise ValueError(f"kb_matmul_large_k: {label} must be a contiguous 2-D float32 tensor, got {x.dtype} "
                             f"of shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    rows, inner = A.shape
    inner_b, cols = B.shape
    if inner != inner_b:
        raise ValueError(f"kb_matmul_large_k: A is {tuple(A.shape)} and B is {tuple(B.shape)}: inner dimensions "
                         f"differ")
    if min(rows, inner, cols) < 1:
        raise ValueError(f"kb_matmul_large_k: M, K and N must be at least 1, got M={rows}, K={inner}, N={cols}")
    chunk = chunk_tiles_for(inner)
    n_tiles = (inner + TILE - 1) // TILE
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE, (n_tiles + chunk - 1) // chunk)
    if grid[1] > 65535:
        raise ValueError(f"kb_matmul_large_k: M={rows} needs {grid[1]} row tiles; the grid's y dimension allows "
                         f"65535")
    out = torch.zeros((rows, cols), dtype=torch.float32, device=A.device)  # every chunk adds its share into it
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_longlong, inner),
            (ctypes.c_longlong, chunk)]
    return out, grid, (TILE, TILE, 1), args


def t0_original(t):
    # Exactly 6_Matmul_with_large_K_dimension_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(M, K)
        B = torch.rand(K, N)
    return [A, B]


def misaligned(t):
    # Partial edge tiles in every direction, 1-wide dimensions, K shorter than a tile and K one
    # past a tile (a chunk per tile here); signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, inner, cols = [(1, 1, 1), (33, 47, 65), (5, 300, 37), (70, 3, 31), (31, 33, 1)][t]
    return [torch.randn(rows, inner, generator=g), torch.randn(inner, cols, generator=g)]


def heavy_columns(t):
    # Background products below 2.5e-5 (about 0.1 in all over K); heavy products of 1 .. 4 at up
    # to eleven shared-dimension positions, at chunk edges chosen per trial.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, inner, cols = [(9, 8300, 40), (33, 16620, 5), (4, 12000, 70), (20, 9000, 33)][t]
    span = chunk_tiles_for(inner) * TILE
    n_chunks = (inner + span - 1) // span
    picked = torch.randperm(n_chunks, generator=g)[:4]
    heavy = [0, inner - 1, ((inner - 1) // TILE) * TILE]  # the first, the last, the last tile's first
    for c in picked.tolist():
        heavy += [c * span, min(inner, (c + 1) * span) - 1]
    heavy = torch.tensor(sorted(set(heavy)))
    A = torch.rand(rows, inner, generator=g) * 0.005
    B = torch.rand(inner, cols, generator=g) * 0.005
    A[:, heavy] = 1.0 + torch.rand(rows, len(heavy), generator=g)
    B[heavy, :] = 1.0 + torch.rand(len(heavy), cols, generator=g)
    return [A, B]


def long_k(t):
    # 94 to 532 tiles of K (chunks of 1 to 3 tiles, a last partial chunk and tile in two trials);
    # positive values up to 2.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, inner, cols = [(8, 3000, 8), (5, 17000, 6), (3, 10001, 11)][t]
    return [torch.rand(rows, inner, generator=g) * 2.0, torch.rand(inner, cols, generator=g) * 2.0]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 5, misaligned),
        ("heavy_columns", 4, heavy_columns),
        ("long_k", 3, long_k),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(32, 2048, generator=g), torch.rand(2048, 64, generator=g)]),
            ("misaligned", [torch.randn(13, 277, generator=g), torch.randn(277, 45, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_matmul_large_k"] = dict(
        kb_file="6_Matmul_with_large_K_dimension_.py",
        cuda=CUDA_SOURCE,
        kernel_name="matmul_splitk_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
