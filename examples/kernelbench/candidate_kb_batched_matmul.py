"""kb_batched_matmul: KernelBench level 1's 3_Batched_matrix_multiplication.py (torch.bmm(A, B)).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_batched_matmul.py

and `kb_file="3_Batched_matrix_multiplication.py"` resolves in its `level1` folder. forward()
multiplies, for each of batch_size pairs, an (m, k) matrix by a (k, n) one: C[b] = A[b] @ B[b],
shape (batch_size, m, n). The kernel is the 32x32 shared-memory tile matmul with the batch on the
grid's z axis: each block picks its pair from blockIdx.z, offsets the three base pointers by that
pair's 64-bit start, then walks k a tile at a time (load one element of A's and of B's tile, zero
past the edges; sync; 32 multiply-adds; sync before the next load).

At the real size (A 128 x 512 x 1024 and B 128 x 1024 x 2048, both torch.rand: 256 MiB and
1 GiB; C 512 MiB) the grid is 64 x 16 x 128 blocks, well inside every limit, and every offset is
computed in 64 bits. T0_original is exactly get_inputs() seeded 1000 + t; its sums of
1024 positive products sit near 256, so a kernel writing zeros, a constant or a copy fails there.
Targeted suites:
- misaligned: m, k, n not multiples of 32 (1-wide, shorter than a tile, one past a tile), signed
  values over short k; partial edge tiles and the zero padding of the shared dimension.
- batch_mixing: every pair is scaled by factors of its own (products 1/8 .. 32) and signed; a
  kernel that reads the wrong pair's matrices, reuses pair 0, or strides batches with the wrong
  size is off by those factors.
- long_k: k spread over up to 24 tiles with positive values of up to 4 (no cancellation): each
  tile of every pair must be accumulated exactly once.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void bmm_tiled_f32(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, long long rows, long long inner,
                                         long long cols)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    long long pair = blockIdx.z;
    const float* Ab = A + pair * rows * inner;
    const float* Bb = B + pair * inner * cols;
    float* Cb = C + pair * rows * cols;
    long long row = (long long)blockIdx.y * TILE + ty;
    long long col = (long long)blockIdx.x * TILE + tx;
    long long n_tiles = (inner + TILE - 1) / TILE;
    float acc = 0.0f;
    for (long long t = 0; t < n_tiles; ++t) {
        long long a_col = t * TILE + tx;
        long long b_row = t * TILE + ty;
        As[ty][tx] = 0.0f;
        Bs[ty][tx] = 0.0f;
        if (row < rows && a_col < inner) As[ty][tx] = Ab[row * inner + a_col];
        if (b_row < inner && col < cols) Bs[ty][tx] = Bb[b_row * cols + col];
        __syncthreads();  // sync-after-tile-load
        for (int q = 0; q < TILE; ++q) acc += As[ty][q] * Bs[q][tx];
        __syncthreads();  // sync-before-tile-overwrite
    }
    if (row < rows && col < cols) Cb[row * cols + col] = acc;
}
"""

TILE = 32

# 3_Batched_matrix_multiplication.py's size constants (same names, same values).
batch_size = 128
m = 128 * 4
k = 256 * 4
n = 512 * 4


def ref(A, B):
    import torch

    return torch.bmm(A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_batched_matmul: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, x in (("A", A), ("B", B)):
        if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 3:
            raise ValueError(f"kb_batched_matmul: {label} must be a contiguous 3-D float32 tensor, got {x.dtype} "
                             f"of shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    pairs, rows, inner = A.shape
    pairs_b, inner_b, cols = B.shape
    if pairs != pairs_b or inner != inner_b:
        raise ValueError(f"kb_batched_matmul: A is {tuple(A.shape)} and B is {tuple(B.shape)}: batch or inner "
                         f"dimensions differ (no broadcasting)")
    if min(pairs, rows, inner, cols) < 1:
        raise ValueError(f"kb_batched_matmul: every dimension must be at least 1, got A {tuple(A.shape)}, "
                         f"B {tuple(B.shape)}")
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE, pairs)
    if grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"kb_batched_matmul: grid {grid} exceeds the y/z limit of 65535 (m={rows}, "
                         f"batch={pairs})")
    out = torch.empty((pairs, rows, cols), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, inner), (ctypes.c_longlong, cols)]
    return out, grid, (TILE, TILE, 1), args


def t0_original(t):
    # Exactly 3_Batched_matrix_multiplication.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(batch_size, m, k)
        B = torch.rand(batch_size, k, n)
    return [A, B]


def misaligned(t):
    # Partial edge tiles in every direction, 1-wide dimensions, a single pair; signed values over
    # a shared dimension of at most 100, where cancellation stays far below the tolerance.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    pairs, rows, inner, cols = [(1, 1, 1, 1), (3, 33, 17, 65), (2, 7, 100, 31), (5, 1, 45, 97), (4, 50, 33, 1)][t]
    return [torch.randn(pairs, rows, inner, generator=g), torch.randn(pairs, inner, cols, generator=g)]


def batch_mixing(t):
    # Each pair's A and B scaled by factors of their own (A's 0.25 .. 8, B's 0.5 .. 4), so the
    # products differ by up to 256x between pairs: any pair's result landing in another slot, or
    # built from another pair's operands, is far off.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    pairs, rows, inner, cols = [(6, 40, 64, 48), (9, 32, 40, 70), (5, 65, 32, 33)][t]
    scale_a = torch.logspace(-2, 3, pairs, base=2.0).reshape(pairs, 1, 1)
    scale_b = torch.logspace(-1, 2, pairs, base=2.0).reshape(pairs, 1, 1)
    A = torch.randn(pairs, rows, inner, generator=g) * scale_a
    B = torch.randn(pairs, inner, cols, generator=g) * scale_b
    return [A, B]


def long_k(t):
    # Up to 24 tiles along the shared dimension, a last partial tile in two trials; positive values
    # of up to 4, so the sums (up to ~3e3) cannot cancel and a tile counted twice or skipped shows.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    pairs, rows, inner, cols = [(2, 32, 768, 32), (3, 20, 700, 45), (2, 40, 513, 36)][t]
    return [torch.rand(pairs, rows, inner, generator=g) * 4.0, torch.rand(pairs, inner, cols, generator=g) * 4.0]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 5, misaligned),
        ("batch_mixing", 3, batch_mixing),
        ("long_k", 3, long_k),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, 64, 96, generator=g), torch.rand(2, 96, 64, generator=g)]),
            ("misaligned", [torch.randn(3, 37, 45, generator=g), torch.randn(3, 45, 29, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_batched_matmul"] = dict(
        kb_file="3_Batched_matrix_multiplication.py",
        cuda=CUDA_SOURCE,
        kernel_name="bmm_tiled_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
