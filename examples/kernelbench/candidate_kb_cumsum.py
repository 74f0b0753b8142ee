"""kb_cumsum: KernelBench level 1's 89_cumsum.py (torch.cumsum(x, dim=1) over a 2-D float32 x).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_cumsum.py

and `kb_file="89_cumsum.py"` resolves in its `level1` folder. forward() returns the inclusive
running sum of every row: out[r, c] = x[r, 0] + ... + x[r, c], the input's shape. One 256-thread
block per row, walking the row in tiles of 1024 elements: each thread sums its own 4 consecutive
elements sequentially, a shared-memory Hillis-Steele scan turns the 256 thread totals into
running totals, and each thread adds the total of the threads before it and the carry (the sum of
every earlier tile) to its 4 partial sums. The carry is what joins tiles, so suites put rows at
and just past tile edges.

T0_original is get_inputs() at its full size: 32768 rows of 32768 float32 (4.3 GB in, as much
out, 2^30 elements; row offsets are 64-bit all the same), so gate it on a GPU with memory to
spare. Its outputs grow to about 16384, where the 1e-2 relative tolerance hides a lost element or
two, so the targeted suites carry the fine checks: signed_rows (signed values, row lengths of 1,
below a warp, and just past a tile: the running sum wanders around zero, so a kernel that drops
or repeats one element, or writes zeros, a constant or its input, is off), tile_spikes (a zero
row with unit steps at the columns where a thread's, a warp's or a tile's share begins or ends:
the exact output is a staircase, and a missing carry or a shifted scan moves a step), and
long_rows (rows of several tiles, each row at its own positive scale from 1e-3 to 1e3: the carry
must cover every tile). The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define ITEMS 4
#define TILE 1024

extern "C" __global__ void cumsum_rows_f32(const float* __restrict__ x, float* __restrict__ out,
                                           long long rows, long long cols)
{
    __shared__ float part[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* outr = out + row * cols;
    int tid = threadIdx.x;

    float carry = 0.0f;  // the sum of every earlier tile of the row, the same in every thread
    for (long long base = 0; base < cols; base += TILE) {
        long long first = base + (long long)tid * ITEMS;
        float run[ITEMS];
        float total = 0.0f;
        for (int i = 0; i < ITEMS; ++i) {
            float v = 0.0f;
            if (first + i < cols) v = xr[first + i];
            total += v;
            run[i] = total;
        }
        part[tid] = total;
        __syncthreads();  // sync-after-part-load
        for (int s = 1; s < BLOCK; s <<= 1) {
            float left = 0.0f;
            if (tid >= s) left = part[tid - s];
            __syncthreads();  // sync-before-scan-write
            part[tid] += left;
            __syncthreads();  // sync-after-scan-step
        }
        float before = carry;
        if (tid > 0) before += part[tid - 1];
        for (int i = 0; i < ITEMS; ++i) {
            if (first + i < cols) outr[first + i] = before + run[i];
        }
        carry += part[BLOCK - 1];
        __syncthreads();  // sync-before-next-tile
    }
}
"""

BLOCK = 256  # the kernel's scan is written for exactly this many threads (tiles of 4 * BLOCK)

# 89_cumsum.py's size constants (same names, same values).
batch_size = 32768
input_shape = (32768,)
dim = 1


def ref(x):
    import torch

    return torch.cumsum(x, dim=dim)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_cumsum: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
        raise ValueError(f"kb_cumsum: x must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if dim != 1:
        raise ValueError(f"kb_cumsum: the kernel scans along dim 1 (the rows), not dim {dim}")
    rows, cols = x.shape
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_cumsum: x must have at least one row and one column, got {tuple(x.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_cumsum: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 89_cumsum.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, *input_shape)
    return [x]


def signed_rows(t):
    # Signed values, row lengths not divisible by 32 or 256: one column (the output is the input),
    # fewer than a warp, a thread's share not filled, just past one and two tiles. The running sum
    # wanders around zero, so no trivial output is near it, and no long accumulation cancels badly
    # at this scale.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(5, 1), (9, 7), (37, 33), (13, 1025), (4, 2049), (3, 3001)][t]
    return [torch.randn(shape, generator=g) * 2.0]


def tile_spikes(t):
    # Zero rows with a few unit steps at a thread's, a warp's and a tile's first or last column
    # (3/4, 127/128, 1023/1024, ...), one row's step at column 0 and another's at the last column:
    # the exact output is a staircase of integers, and a kernel that forgets the carry, or the
    # threads before it, or scans one place off, moves a step by a whole unit.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(12, 1030), (8, 2100), (6, 3072), (16, 517)][t]
    edges = torch.tensor([3, 4, 127, 128, 255, 256, 1023, 1024, 1025, 2047, 2048, 3071])
    edges = edges[edges < cols]
    x = torch.zeros(rows, cols)
    for r in range(rows):
        picked = edges[torch.randperm(edges.numel(), generator=g)[:3]]
        x[r, picked] = torch.randint(1, 4, (picked.numel(),), generator=g).float()
    x[0, 0] = 5.0
    x[1, cols - 1] = 7.0
    return [x]


def long_rows(t):
    # Few rows of several tiles, positive values at a scale of the row's own (1e-3 to 1e3): each
    # tile's outputs hold the sum of every earlier tile, so a carry that skips a tile is off by a
    # tile's worth everywhere after it. Positive values: nothing cancels at the large scales.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(3, 5000), (6, 4096), (2, 7777)][t]
    scale = 10.0 ** (torch.rand(rows, 1, generator=g) * 6 - 3)
    return [torch.rand(rows, cols, generator=g) * scale]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_rows", 6, signed_rows),
        ("tile_spikes", 4, tile_spikes),
        ("long_rows", 3, long_rows),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(8, 2048, generator=g)]), ("misaligned", [torch.randn(5, 1301, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_cumsum"] = dict(
        kb_file="89_cumsum.py",
        cuda=CUDA_SOURCE,
        kernel_name="cumsum_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
