"""kb_cumsum_reverse: KernelBench level 1's 91_cumsum_reverse.py (a running sum from the end of each row).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_cumsum_reverse.py

and `kb_file="91_cumsum_reverse.py"` resolves in its `level1` folder. forward() flips x along dim
1, takes torch.cumsum and flips back: out[r, c] = x[r, c] + x[r, c + 1] + ... + x[r, cols - 1], the
input's shape (a suffix sum). The kernel reads each row backwards instead of flipping it: one
256-thread block per row walks scan positions k = 0, 1, ... (column cols - 1 - k) in tiles of
1024; each thread sums its own 4 consecutive positions sequentially, a shared-memory
Hillis-Steele scan turns the 256 thread totals into running totals, and each thread adds the
total of the threads before it and the carry (the sum of every earlier tile, that is of every
column to the right) to its 4 partial sums. Tile edges therefore sit at columns counted from the
row's end, and the suites put rows and steps there.

T0_original is get_inputs() at its full size: 32768 rows of 32768 float32 (4.3 GB in, as much
out, 2^30 elements; row offsets are 64-bit all the same), so gate it on a GPU with memory to
spare. Its outputs fall from about 16384 to the last element, so a kernel that scans forwards
fails at both ends. The targeted suites carry the fine checks: signed_rows (signed values, row
lengths of 1, below a warp, and just past a tile: the suffix sums wander around zero, so a
kernel that drops or repeats one element, or writes zeros, a constant or its input, is off),
tile_spikes (a zero row with unit steps at the columns where a thread's, a warp's or a tile's
share begins or ends, counted from either end: the exact output is a staircase falling to the
right, and a missing carry or a shifted scan moves a step), and long_rows (rows of several
tiles, each at its own positive scale from 1e-3 to 1e3: the carry must cover every tile). The
size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define ITEMS 4
#define TILE 1024

extern "C" __global__ void cumsum_reverse_rows_f32(const float* __restrict__ x, float* __restrict__ out,
                                           long long rows, long long cols)
{
    __shared__ float part[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* outr = out + row * cols;
    int tid = threadIdx.x;

    float carry = 0.0f;  // the sum of every earlier tile (the columns to the right), the same in every thread
    for (long long base = 0; base < cols; base += TILE) {
        long long first = base + (long long)tid * ITEMS;
        float run[ITEMS];
        float total = 0.0f;
        for (int i = 0; i < ITEMS; ++i) {
            float v = 0.0f;
            if (first + i < cols) v = xr[cols - 1 - (first + i)];
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
            if (first + i < cols) outr[cols - 1 - (first + i)] = before + run[i];
        }
        carry += part[BLOCK - 1];
        __syncthreads();  // sync-before-next-tile
    }
}
"""

BLOCK = 256  # the kernel's scan is written for exactly this many threads (tiles of 4 * BLOCK)

# 91_cumsum_reverse.py's size constants (same names, same values).
batch_size = 32768
input_shape = (32768,)
dim = 1


def ref(x):
    import torch

    return torch.cumsum(x.flip(dim), dim=dim).flip(dim)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_cumsum_reverse: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
        raise ValueError(f"kb_cumsum_reverse: x must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if dim != 1:
        raise ValueError(f"kb_cumsum_reverse: the kernel scans along dim 1 (the rows), not dim {dim}")
    rows, cols = x.shape
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_cumsum_reverse: x must have at least one row and one column, got {tuple(x.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_cumsum_reverse: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 91_cumsum_reverse.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, *input_shape)
    return [x]


def signed_rows(t):
    # Signed values, row lengths not divisible by 32 or 256: one column (the output is the input),
    # fewer than a warp, a thread's share not filled, just past one and two tiles (so the last,
    # partial tile is the row's first columns). The suffix sums wander around zero, so no trivial
    # output is near them, and no long accumulation cancels badly at this scale.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(5, 1), (9, 7), (37, 33), (13, 1025), (4, 2049), (3, 3001)][t]
    return [torch.randn(shape, generator=g) * 2.0]


def tile_spikes(t):
    # Zero rows with a few unit steps at a thread's, a warp's and a tile's first or last position,
    # counted from the row's end (where the kernel's tiles start) or from its start: the exact
    # output is a staircase of integers falling to the right, and a kernel that forgets the carry,
    # or the threads before it, or scans one place off, moves a step by a whole unit. One row's
    # step is at column 0 and another's at the last column (it alone reaches every output).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(12, 1030), (8, 2100), (6, 3072), (16, 517)][t]
    edges = torch.tensor([3, 4, 127, 128, 255, 256, 1023, 1024, 1025, 2047, 2048, 3071])
    edges = edges[edges < cols]
    edges = torch.cat([cols - 1 - edges, edges])
    x = torch.zeros(rows, cols)
    for r in range(rows):
        picked = edges[torch.randperm(edges.numel(), generator=g)[:4]]
        x[r, picked] = torch.randint(1, 4, (picked.numel(),), generator=g).float()
    x[0, 0] = 5.0
    x[1, cols - 1] = 7.0
    return [x]


def long_rows(t):
    # Few rows of several tiles, positive values at a scale of the row's own (1e-3 to 1e3): each
    # tile's outputs hold the sum of every column to their right, so a carry that skips a tile is
    # off by a tile's worth everywhere to its left. Positive values: nothing cancels at the large
    # scales.
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
    K.PROBLEMS["kb_cumsum_reverse"] = dict(
        kb_file="91_cumsum_reverse.py",
        cuda=CUDA_SOURCE,
        kernel_name="cumsum_reverse_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
