"""kb_symmetric_matmul: KernelBench level 1's 13_Matmul_for_symmetric_matrices.py (C = A @ B, A and B symmetric).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_symmetric_matmul.py

and `kb_file="13_Matmul_for_symmetric_matrices.py"` resolves in its `level1` folder.
forward(A, B) is a plain torch.matmul of two N x N matrices; get_inputs() makes both symmetric
((R + R.T) / 2 of a torch.rand draw), but the Model does not rely on it, and neither does this
kernel: it computes the full product, so it is right for any square inputs. The product of two
symmetric matrices is not symmetric in general (AB = (BA).T), so writing C transposed, or
swapping the operands, is still wrong.

32x32 shared-memory tiles, one thread per output element: each block walks the shared dimension
a tile at a time, its threads loading one element of A's tile and one of B's (zero past the
matrix edge), synchronising, accumulating the 32 products of their row and column, and
synchronising again before the tiles are overwritten. At the real size (N = 4096) the grid is
128 x 128 blocks and the largest offset is 2^24; offsets are 64-bit all the same. T0_original is
exactly get_inputs() seeded 1000 + t (positive entries, so the sums of 4096 products cannot
cancel).

Every targeted suite builds symmetric inputs too, as the problem promises: `misaligned` has N
off the 32-wide tile (1, partial edge tiles) with signed values, for the edge guards and the
zero padding; `scaled` has signed A = Da S Da and B = Db T Db with different diagonal scalings
(still symmetric), so AB and BA (a transposed write or swapped operands) differ by far more than
the tolerance, and a misplaced row or column shows in the magnitude; `long_k` has up to 10
tiles along the shared dimension with positive values up to 10, so a tile dropped or counted
twice shifts every output. The size constant below carries the problem file's name and value:
CI (tests/test_kernelbench_examples.py) substitutes a small stand-in's value for it.
"""

CUDA_SOURCE = r"""
#define TILE 32

extern "C" __global__ void symmetric_matmul_tiled_f32(const float* __restrict__ A, const float* __restrict__ B,
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

# 13_Matmul_for_symmetric_matrices.py's size constant (same name, same value).
N = 4096


def ref(A, B):
    import torch

    return torch.matmul(A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_symmetric_matmul: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, m in (("A", A), ("B", B)):
        if not isinstance(m, torch.Tensor) or m.dtype != torch.float32 or not m.is_contiguous() or m.dim() != 2:
            raise ValueError(f"kb_symmetric_matmul: {label} must be a contiguous 2-D float32 tensor, got "
                             f"{getattr(m, 'dtype', type(m).__name__)} of shape {tuple(getattr(m, 'shape', ()))}")
    n = A.shape[0]
    if tuple(A.shape) != (n, n) or tuple(B.shape) != (n, n) or n < 1:
        raise ValueError(f"kb_symmetric_matmul: A and B must both be N x N with N >= 1, got {tuple(A.shape)} and "
                         f"{tuple(B.shape)}")
    tiles = (n + TILE - 1) // TILE
    if tiles > 65535:
        raise ValueError(f"kb_symmetric_matmul: N={n} needs {tiles} row tiles; the grid's y dimension allows 65535")
    out = torch.empty((n, n), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, n)]
    return out, (tiles, tiles, 1), (TILE, TILE, 1), args


def t0_original(t, device):
    # Exactly 13_Matmul_for_symmetric_matrices.py's get_inputs(), seeded 1000 + t: A's draw,
    # symmetrised, then B's.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(N, N)
        A = (A + A.T) / 2
        B = torch.rand(N, N)
        B = (B + B.T) / 2
    return [A.to(device), B.to(device)]


def _symmetric(x):
    return ((x + x.T) / 2).contiguous()


def misaligned(t, device):
    # N off the 32-wide tile: 1, just over one tile, partial edge tiles. Signed symmetric values
    # over short sums (N <= 250) cannot cancel past 1e-2.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n = (1, 33, 47, 100, 129, 250)[t]
    A = _symmetric(torch.randn(n, n, generator=g))
    B = _symmetric(torch.randn(n, n, generator=g))
    return [A.to(device), B.to(device)]


def scaled(t, device):
    # A = Da S Da and B = Db T Db, S and T signed symmetric, Da rising and Db falling: both stay
    # symmetric, but AB and its transpose BA are far apart, and each output's magnitude depends on
    # its row and column, so a transposed write, swapped operands or a misplaced index shows.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n = (96, 160, 75)[t]
    da = torch.linspace(0.25, 4.0, n)
    db = torch.linspace(4.0, 0.25, n)
    A = _symmetric(torch.randn(n, n, generator=g)) * da.reshape(n, 1) * da.reshape(1, n)
    B = _symmetric(torch.randn(n, n, generator=g)) * db.reshape(n, 1) * db.reshape(1, n)
    return [A.contiguous().to(device), B.contiguous().to(device)]


def long_k(t, device):
    # Up to 10 tiles along the shared dimension: each tile's contribution must be added exactly
    # once. Positive symmetric values up to 10, so the sums (up to ~8e3) cannot cancel.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n = (320, 257, 300)[t]
    A = _symmetric(torch.rand(n, n, generator=g) * 10.0)
    B = _symmetric(torch.rand(n, n, generator=g) * 10.0)
    return [A.to(device), B.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 6, misaligned),
        ("scaled", 3, scaled),
        ("long_k", 3, long_k),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [_symmetric(torch.rand(64, 64, generator=g)), _symmetric(torch.rand(64, 64, generator=g))]),
            ("misaligned", [_symmetric(torch.randn(45, 45, generator=g)),
                            _symmetric(torch.randn(45, 45, generator=g))])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_symmetric_matmul"] = dict(
        kb_file="13_Matmul_for_symmetric_matrices.py",
        cuda=CUDA_SOURCE,
        kernel_name="symmetric_matmul_tiled_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
