"""kb_matmul_irregular: KernelBench level 1's 8_Matmul_with_irregular_shapes_.py (C = A @ B, odd sizes).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_matmul_irregular.py

and `kb_file="8_Matmul_with_irregular_shapes_.py"` resolves in its `level1` folder. forward()
multiplies an (M, K) matrix by a (K, N) one, with M = 8205, K = 2949 and N = 5921 at the real
size: none is a multiple of 32, so the last tile of every dimension is partial. 32x32
shared-memory tiles, one thread per output element: each block walks K a tile at a time, its
threads loading one element of A's tile and one of B's (zero past the matrix edges: the last K
tile holds 5 real columns), synchronising, accumulating the 32 products of their row and column,
and synchronising again before the tiles are overwritten. The real grid is 186 x 257 blocks and
offsets are 64-bit (C has 48.6 M elements).

T0_original is exactly get_inputs() seeded 1000 + t (torch.rand: positive sums near 740). A
partial tile is a small share of such long positive sums, so the targeted suites make the edges
count:
- misaligned: tiny and ragged shapes (1-wide, shorter than a tile, one past a tile), signed
  values over at most 100 products.
- edge_heavy: positive inputs of about 0.01 except the last row and column of A, the last row
  and column of B, and the last few positions of K, which are 1 .. 2: the outputs in the last
  partial row and column tiles and the products of the last partial K tile carry most of every
  sum, so a guard that drops or double-reads an edge element is far off.
- ragged_rect: prime-sized, tall and wide shapes with rows of A and columns of B scaled apart,
  signed over K up to 211: swapped or transposed indices, or a wrong stride, show.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void matmul_ragged_f32(const float* __restrict__ A, const float* __restrict__ B,
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

# 8_Matmul_with_irregular_shapes_.py's size constants (same names, same values).
M = 8205
K = 2949
N = 5921


def ref(A, B):
    import torch

    return torch.matmul(A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_matmul_irregular: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, x in (("A", A), ("B", B)):
        if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
            raise ValueError(f"kb_matmul_irregular: {label} must be a contiguous 2-D float32 tensor, got {x.dtype} "
                             f"of shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    rows, inner = A.shape
    inner_b, cols = B.shape
    if inner != inner_b:
        raise ValueError(f"kb_matmul_irregular: A is {tuple(A.shape)} and B is {tuple(B.shape)}: inner dimensions "
                         f"differ")
    if min(rows, inner, cols) < 1:
        raise ValueError(f"kb_matmul_irregular: M, K and N must be at least 1, got M={rows}, K={inner}, N={cols}")
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE, 1)
    if grid[1] > 65535:
        raise ValueError(f"kb_matmul_irregular: M={rows} needs {grid[1]} row tiles; the grid's y dimension allows "
                         f"65535")
    out = torch.empty((rows, cols), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_longlong, inner)]
    return out, grid, (TILE, TILE, 1), args


def t0_original(t):
    # Exactly 8_Matmul_with_irregular_shapes_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(M, K)
        B = torch.rand(K, N)
    return [A, B]


def misaligned(t):
    # Partial tiles everywhere, 1-wide dimensions, K shorter than a tile; signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, inner, cols = [(1, 1, 1), (33, 7, 65), (31, 100, 17), (97, 33, 3), (5, 63, 129)][t]
    return [torch.randn(rows, inner, generator=g), torch.randn(inner, cols, generator=g)]


def edge_heavy(t):
    # Background products below 1e-4; the heavy edge values are positive, as is everything else,
    # so sums over K up to 1000 cannot cancel.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, inner, cols = [(65, 101, 97), (129, 1000, 33), (40, 37, 41), (33, 257, 190)][t]
    A = torch.rand(rows, inner, generator=g) * 0.01
    B = torch.rand(inner, cols, generator=g) * 0.01
    tail = min(3, inner)
    A[-1, :] = 1.0 + torch.rand(inner, generator=g)
    A[:, -tail:] = 1.0 + torch.rand(rows, tail, generator=g)
    B[:, -1] = 1.0 + torch.rand(inner, generator=g)
    B[-tail:, :] = 1.0 + torch.rand(tail, cols, generator=g)
    return [A, B]


def ragged_rect(t):
    # Prime-sized tall, wide and square-ish shapes; rows of A scaled 0.5 .. 4, columns of B 4 .. 0.5;
    # signed.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, inner, cols = [(307, 61, 23), (23, 211, 307), (131, 97, 139)][t]
    A = torch.randn(rows, inner, generator=g) * torch.linspace(0.5, 4.0, rows).reshape(rows, 1)
    B = torch.randn(inner, cols, generator=g) * torch.linspace(4.0, 0.5, cols).reshape(1, cols)
    return [A, B]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 5, misaligned),
        ("edge_heavy", 4, edge_heavy),
        ("ragged_rect", 3, ragged_rect),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(64, 96, generator=g), torch.rand(96, 128, generator=g)]),
            ("misaligned", [torch.randn(41, 59, generator=g), torch.randn(59, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_matmul_irregular"] = dict(
        kb_file="8_Matmul_with_irregular_shapes_.py",
        cuda=CUDA_SOURCE,
        kernel_name="matmul_ragged_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
