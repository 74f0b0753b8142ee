"""kb_diag_matmul: KernelBench level 1's 12_Matmul_with_diagonal_matrices_.py (C = diag(A) @ B).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_diag_matmul.py

and `kb_file="12_Matmul_with_diagonal_matrices_.py"` resolves in its `level1` folder. A, shape
(N,), is the diagonal of an N x N matrix and B is (N, M); forward(A, B) returns
A.unsqueeze(1) * B, which is diag(A) @ B without the N x N matrix: C[r][c] = A[r] * B[r][c],
C of shape (N, M).

Elementwise 1-D grid, one thread per element of C: thread e takes row e / M, reads A at that row
and B at e, and writes their product. At the real size (N = M = 4096) that is 2^24 elements,
65536 blocks of 256; the element index is 64-bit and the grid's x dimension would allow 2^31 - 1
blocks. T0_original is exactly get_inputs() seeded 1000 + t (torch.rand: outputs in [0, 1), mean
1/4, so zeros or a constant fail it).

Targeted suites: N equals M in T0, so `rectangular` has N and M far apart with every row's
diagonal entry distinct (signed, 0.1 to 10 in magnitude): a row index computed as e / N instead
of e / M, or B read with the wrong row stride, picks another row's factor; `misaligned` has
element counts off the block (1 x 1, one row, one column, odd shapes) for the tail guard;
`wide_range` has diagonals from 1e-3 to 1e3 of either sign against signed B, so a factor from a
neighbouring row, a dropped sign, or the product not taken is far off. The size constants below
carry the problem file's names and values: CI (tests/test_kernelbench_examples.py) substitutes a
small stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void diag_scale_rows_f32(const float* __restrict__ A, const float* __restrict__ B,
                                               float* __restrict__ C, long long cols, long long total)
{
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= total) return;
    long long r = e / cols;
    C[e] = A[r] * B[e];
}
"""

BLOCK = 256

# 12_Matmul_with_diagonal_matrices_.py's size constants (same names, same values).
M = 4096
N = 4096


def ref(A, B):
    return A.unsqueeze(1) * B


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_diag_matmul: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, x, rank in (("A", A, 1), ("B", B, 2)):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != rank:
            raise ValueError(f"kb_diag_matmul: {label} must be a contiguous {rank}-D float32 tensor, got "
                             f"{getattr(x, 'dtype', type(x).__name__)} of shape {tuple(getattr(x, 'shape', ()))}")
    rows, cols = B.shape
    if A.shape[0] != rows:
        raise ValueError(f"kb_diag_matmul: A has {A.shape[0]} diagonal entries but B has {rows} rows")
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_diag_matmul: B must have at least one row and one column, got {tuple(B.shape)}")
    total = rows * cols
    grid = ((total + BLOCK - 1) // BLOCK, 1, 1)
    if grid[0] > 2**31 - 1:
        raise ValueError(f"kb_diag_matmul: {total} elements need {grid[0]} blocks; the grid's x dimension allows "
                         f"2^31 - 1")
    out = torch.empty((rows, cols), dtype=torch.float32, device=B.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, cols), (ctypes.c_longlong, total)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 12_Matmul_with_diagonal_matrices_.py's get_inputs(), seeded 1000 + t: A, then B.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(N)
        B = torch.rand(N, M)
    return [A.to(device), B.to(device)]


def rectangular(t, device):
    # N and M far apart, every diagonal entry distinct (0.1 .. 10, either sign, shuffled): a row
    # index from the wrong dimension or a wrong row stride picks another row's factor.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, cols = [(300, 20), (20, 300), (7, 1000), (999, 3)][t]
    magnitude = (10.0 ** torch.linspace(-1.0, 1.0, rows))[torch.randperm(rows, generator=g)]
    sign = torch.where(torch.rand(rows, generator=g) < 0.5, -1.0, 1.0)
    B = torch.randn(rows, cols, generator=g)
    return [(magnitude * sign).to(device), B.to(device)]


def misaligned(t, device):
    # Element counts off the 256-thread block and off 32: a single element, one column, one row,
    # odd shapes, so the tail guard and a partial last block are exercised. Signed values.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(1, 1), (33, 1), (1, 257), (31, 33), (257, 129), (5, 1001)][t]
    A = torch.randn(rows, generator=g) * 3.0
    B = torch.randn(rows, cols, generator=g)
    return [A.to(device), B.to(device)]


def wide_range(t, device):
    # Diagonal entries from 1e-3 to 1e3 of either sign against signed B: a factor from another
    # row, a lost sign, or B copied unscaled is wrong by far more than the tolerance.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(64, 256), (100, 77), (512, 33)][t]
    magnitude = 10.0 ** (torch.rand(rows, generator=g) * 6.0 - 3.0)
    sign = torch.where(torch.rand(rows, generator=g) < 0.5, -1.0, 1.0)
    B = torch.randn(rows, cols, generator=g)
    return [(magnitude * sign).to(device), B.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("rectangular", 4, rectangular),
        ("misaligned", 6, misaligned),
        ("wide_range", 3, wide_range),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(64, generator=g), torch.rand(64, 256, generator=g)]),
            ("misaligned", [torch.randn(45, generator=g), torch.randn(45, 77, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_diag_matmul"] = dict(
        kb_file="12_Matmul_with_diagonal_matrices_.py",
        cuda=CUDA_SOURCE,
        kernel_name="diag_scale_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
