"""kb_cumprod: KernelBench level 1's 90_cumprod.py (torch.cumprod(x, dim=1) over a 2-D float32 x).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_cumprod.py

and `kb_file="90_cumprod.py"` resolves in its `level1` folder. forward() returns the inclusive
running product of every row: out[r, c] = x[r, 0] * ... * x[r, c], the input's shape. One
256-thread block per row, walking the row in tiles of 1024 elements: each thread multiplies its
own 4 consecutive elements sequentially, a shared-memory Hillis-Steele scan turns the 256 thread
products into running products (identity 1), and each thread multiplies its 4 partial products
by the product of the threads before it and by the carry (the product of every earlier tile).

T0_original is get_inputs() at its full size: 32768 rows of 32768 float32 (4.3 GB in, as much
out, 2^30 elements; row offsets are 64-bit all the same), so gate it on a GPU with memory to
spare. Its factors are uniform in [0, 1), so every row's product underflows to zero within a few
hundred columns: T0 checks only the start of each row (where zeros, a constant or a copy of the
input are still far off) and that nothing turns into NaN later. The targeted suites keep every
factor near 1 in magnitude, where float32 and float64 products of thousands of factors agree far
inside 1e-2: signed_factors (factors of either sign, row lengths of 1, below a warp, just past one
and two tiles: the sign flips with every negative factor, so a dropped or repeated factor flips
it), step_factors (rows of ones with factors 2, 0.5, 3 or 0 at the columns where a thread's, a
warp's or a tile's share begins or ends: the exact output is a staircase, and a zero must zero
everything after it, across tiles), and long_rows (rows of several tiles of factors 1 +- 1%: the
carry must hold every earlier tile). The size constants below carry the problem file's names and
values: CI (tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define ITEMS 4
#define TILE 1024

extern "C" __global__ void cumprod_rows_f32(const float* __restrict__ x, float* __restrict__ out,
                                            long long rows, long long cols)
{
    __shared__ float part[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* outr = out + row * cols;
    int tid = threadIdx.x;

    float carry = 1.0f;  // the product of every earlier tile of the row, the same in every thread
    for (long long base = 0; base < cols; base += TILE) {
        long long first = base + (long long)tid * ITEMS;
        float run[ITEMS];
        float total = 1.0f;
        for (int i = 0; i < ITEMS; ++i) {
            float v = 1.0f;
            if (first + i < cols) v = xr[first + i];
            total *= v;
            run[i] = total;
        }
        part[tid] = total;
        __syncthreads();  // sync-after-part-load
        for (int s = 1; s < BLOCK; s <<= 1) {
            float left = 1.0f;
            if (tid >= s) left = part[tid - s];
            __syncthreads();  // sync-before-scan-write
            part[tid] *= left;
            __syncthreads();  // sync-after-scan-step
        }
        float before = carry;
        if (tid > 0) before *= part[tid - 1];
        for (int i = 0; i < ITEMS; ++i) {
            if (first + i < cols) outr[first + i] = before * run[i];
        }
        carry *= part[BLOCK - 1];
        __syncthreads();  // sync-before-next-tile
    }
}
"""

BLOCK = 256  # the kernel's scan is written for exactly this many threads (tiles of 4 * BLOCK)

# 90_cumprod.py's size constants (same names, same values).
batch_size = 32768
input_shape = (32768,)
dim = 1


def ref(x):
    import torch

    return torch.cumprod(x, dim=dim)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_cumprod: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
        raise ValueError(f"kb_cumprod: x must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if dim != 1:
        raise ValueError(f"kb_cumprod: the kernel scans along dim 1 (the rows), not dim {dim}")
    rows, cols = x.shape
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_cumprod: x must have at least one row and one column, got {tuple(x.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_cumprod: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 90_cumprod.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, *input_shape)
    return [x]


def signed_factors(t):
    # Factors of magnitude 1 +- 3% (so products of thousands stay between about 0.05 and 20, where
    # float32 and float64 agree), a third of them negative; row lengths not divisible by 32 or 256:
    # one column (the output is the input), fewer than a warp, a thread's share not filled, just
    # past one and two tiles. Each negative factor flips the sign of everything after it.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(5, 1), (9, 7), (37, 33), (13, 1025), (4, 2049), (3, 3001)][t]
    magnitude = 1.0 + 0.03 * torch.randn(shape, generator=g)
    sign = torch.where(torch.rand(shape, generator=g) < 1.0 / 3.0, -1.0, 1.0)
    return [magnitude * sign]


def step_factors(t):
    # Rows of ones with a few factors of 2, 0.5 or 3 at a thread's, a warp's and a tile's first or
    # last column (3/4, 127/128, 1023/1024, ...): the exact output is a staircase of products, and
    # a kernel that forgets the carry or the threads before it, or scans one place off, moves a
    # step. Some rows also hold a 0 at such a column, which must zero everything after it, in
    # later tiles too; one row's 0 is at column 0 (all zeros), another's factor at the last column.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(12, 1030), (8, 2100), (6, 3072), (16, 517)][t]
    edges = torch.tensor([3, 4, 127, 128, 255, 256, 1023, 1024, 1025, 2047, 2048, 3071])
    edges = edges[edges < cols]
    factors = torch.tensor([2.0, 0.5, 3.0])
    x = torch.ones(rows, cols)
    for r in range(rows):
        picked = edges[torch.randperm(edges.numel(), generator=g)[:3]]
        x[r, picked] = factors[torch.randint(0, 3, (picked.numel(),), generator=g)]
        if r % 3 == 2:
            x[r, edges[torch.randint(0, edges.numel(), (1,), generator=g)]] = 0.0
    x[0, 0] = 0.0
    x[1, cols - 1] = 5.0
    return [x]


def long_rows(t):
    # Few rows of several tiles, factors 1 +- 1% (products stay within about e^+-1 of 1): each
    # tile's outputs carry the product of every earlier tile, so a carry that skips a tile leaves
    # every later output off by that tile's product.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(3, 5000), (6, 4096), (2, 7777)][t]
    return [1.0 + 0.01 * torch.randn(rows, cols, generator=g)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_factors", 6, signed_factors),
        ("step_factors", 4, step_factors),
        ("long_rows", 3, long_rows),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(8, 2048, generator=g)]),
            ("misaligned", [1.0 + 0.05 * torch.randn(5, 1301, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_cumprod"] = dict(
        kb_file="90_cumprod.py",
        cuda=CUDA_SOURCE,
        kernel_name="cumprod_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
