"""kb_matvec: KernelBench level 1's 4_Matrix_vector_multiplication_.py (torch.matmul(A, B), B a column).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_matvec.py

and `kb_file="4_Matrix_vector_multiplication_.py"` resolves in its `level1` folder. forward()
multiplies an (M, K) matrix by a (K, 1) column, so the output is the (M, 1) column of row dot
products. One 256-thread block per row: each thread sums the products of its strided share of
the row with the matching entries of B, a shared-memory tree adds the 256 partial sums, and
thread 0 writes the row's result. B, contiguous and K x 1, is read as a flat vector.

At the real size A is 2048 x 1048576 float32 (8 GiB, torch.rand like B), so a row starts as far
as 2^31 floats in: the row offset is 64-bit. 2048 blocks stream A once, which is what bounds the
kernel (memory bandwidth, a few milliseconds on an H200). T0_original is exactly get_inputs()
seeded 1000 + t; its results are sums of a million positive products (about 2.6e5), each thread
adding 4096 of them in float32, well inside the 1e-2 relative tolerance. Targeted suites:
- misaligned: row lengths around and between multiples of 32 and 256 (1, shorter than a warp,
  one short of and one past a block's stride), one row or many; signed values over at most 600
  products, so a stride's tail or an idle thread's zero is checked without cancellation risk.
- sparse_vector: B zero except at a handful of positions (the first and last among them) and the
  rows of A scaled 0.1 .. 10: every output is a few known products, so reading B at the wrong
  index, skipping the last stride or writing a row's sum into another row's slot shows.
- long_rows: up to 20000 positive products per row (many strides of the block, values up to 3):
  a stride added twice or dropped, or a tree step lost, moves every result.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void matvec_rows_f32(const float* __restrict__ A, const float* __restrict__ v,
                                           float* __restrict__ out, long long rows, long long inner)
{
    __shared__ float partial[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* Ar = A + row * inner;

    float sum = 0.0f;
    for (long long c = threadIdx.x; c < inner; c += blockDim.x) sum += Ar[c] * v[c];
    partial[threadIdx.x] = sum;
    __syncthreads();  // sync-after-partials
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();  // sync-after-tree-step
    }
    if (threadIdx.x == 0) out[row] = partial[0];
}
"""

BLOCK = 256  # the kernel's tree reduction is written for exactly this many threads

# 4_Matrix_vector_multiplication_.py's size constants (same names, same values).
M = 256 * 8
K = 131072 * 8


def ref(A, B):
    import torch

    return torch.matmul(A, B)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_matvec: expected two inputs A and B, got {len(inputs)}")
    A, B = inputs
    for label, x in (("A", A), ("B", B)):
        if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
            raise ValueError(f"kb_matvec: {label} must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                             f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    rows, inner = A.shape
    if tuple(B.shape) != (inner, 1):
        raise ValueError(f"kb_matvec: B must be a ({inner}, 1) column for A of shape {tuple(A.shape)}, got "
                         f"{tuple(B.shape)}")
    if rows < 1 or inner < 1:
        raise ValueError(f"kb_matvec: A must have at least one row and one column, got {tuple(A.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_matvec: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty((rows, 1), dtype=torch.float32, device=A.device)
    args = [(ctypes.c_void_p, A.data_ptr()), (ctypes.c_void_p, B.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, inner)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 4_Matrix_vector_multiplication_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        A = torch.rand(M, K)
        B = torch.rand(K, 1)
    return [A, B]


def misaligned(t):
    # Row lengths 1, 7, 255, 257, 33 and 600 with row counts from 1 to 70; signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, inner = [(1, 1), (5, 7), (70, 255), (3, 257), (33, 33), (2, 600)][t]
    return [torch.randn(rows, inner, generator=g), torch.randn(inner, 1, generator=g)]


def sparse_vector(t):
    # B nonzero only at column 0, the last column and three random columns (values 1 .. 3 with
    # random signs); rows of A scaled 0.1 .. 10, signed.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, inner = [(40, 1000), (17, 513), (64, 256), (9, 3001)][t]
    A = torch.randn(rows, inner, generator=g) * torch.logspace(-1, 1, rows).reshape(rows, 1)
    B = torch.zeros(inner, 1)
    where = torch.cat([torch.tensor([0, inner - 1]), torch.randint(1, inner - 1, (3,), generator=g)])
    sign = torch.where(torch.rand(5, generator=g) < 0.5, -1.0, 1.0)
    B[where, 0] = sign * (1.0 + 2.0 * torch.rand(5, generator=g))
    return [A, B]


def long_rows(t):
    # Few rows of up to 20000 positive products (values up to 3): sums near 1.5e4 at most that
    # cannot cancel, over 9 to 79 strides of the block, the last one partial.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, inner = [(4, 20000), (12, 4097), (3, 2050)][t]
    return [torch.rand(rows, inner, generator=g) * 3.0, torch.rand(inner, 1, generator=g)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 6, misaligned),
        ("sparse_vector", 4, sparse_vector),
        ("long_rows", 3, long_rows),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(16, 1024, generator=g), torch.rand(1024, 1, generator=g)]),
            ("misaligned", [torch.randn(7, 301, generator=g), torch.randn(301, 1, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_matvec"] = dict(
        kb_file="4_Matrix_vector_multiplication_.py",
        cuda=CUDA_SOURCE,
        kernel_name="matvec_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
