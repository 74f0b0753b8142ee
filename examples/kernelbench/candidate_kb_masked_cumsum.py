"""kb_masked_cumsum: KernelBench level 1's 93_masked_cumsum.py (torch.cumsum(x * mask, dim=1)).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_masked_cumsum.py

and `kb_file="93_masked_cumsum.py"` resolves in its `level1` folder. forward(x, mask) takes a 2-D
float32 x and a boolean mask of its shape and returns the inclusive running sum, along dim 1, of
x where the mask is set and zero where it is not: out[r, c] = sum over j <= c of x[r, j] * mask[r, j],
the input's shape. The kernel reads the mask as bytes (torch.bool is one byte, 0 or 1) and
multiplies, as forward() does, rather than selecting. One 256-thread block per row, walking the
row in tiles of 1024 elements: each thread sums its own 4 consecutive masked elements
sequentially, a shared-memory Hillis-Steele scan turns the 256 thread totals into running totals,
and each thread adds the total of the threads before it and the carry (the sum of every earlier
tile) to its 4 partial sums.

T0_original is get_inputs() at its full size: 32768 rows of 32768 float32 and a mask as large
(4.3 GB and 1.1 GB in, 4.3 GB out, 2^30 elements; row offsets are 64-bit all the same), so gate it
on a GPU with memory to spare. Its outputs grow to about 8192, where the 1e-2 relative tolerance
hides a lost element or two, so the targeted suites carry the fine checks: signed_rows (signed
values, a mask of each row's own density, row lengths of 1, below a warp, and just past a tile:
the running sum wanders around zero, so a kernel that drops or repeats an element, ignores the
mask or writes zeros, a constant or its input, is off), masked_steps (a zero row with unit steps
at the columns where a thread's, a warp's or a tile's share begins or ends, about half of them
masked out: the exact output is a staircase, and a step that shows though masked, or a missing
carry or a shifted scan, moves it), and mask_patterns (rows of several tiles whose mask is all
set, all clear, alternating or set on one tile only, next to each other: a plain cumsum, zeros,
and everything between). The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define ITEMS 4
#define TILE 1024

extern "C" __global__ void masked_cumsum_rows_f32(const float* __restrict__ x, const unsigned char* __restrict__ mask,
                                                  float* __restrict__ out, long long rows, long long cols)
{
    __shared__ float part[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    const unsigned char* mr = mask + row * cols;
    float* outr = out + row * cols;
    int tid = threadIdx.x;

    float carry = 0.0f;  // the sum of every earlier tile of the row, the same in every thread
    for (long long base = 0; base < cols; base += TILE) {
        long long first = base + (long long)tid * ITEMS;
        float run[ITEMS];
        float total = 0.0f;
        for (int i = 0; i < ITEMS; ++i) {
            float v = 0.0f;
            if (first + i < cols) v = xr[first + i] * (mr[first + i] ? 1.0f : 0.0f);
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

# 93_masked_cumsum.py's size constants (same names, same values).
batch_size = 32768
input_shape = (32768,)
dim = 1


def ref(x, mask):
    import torch

    return torch.cumsum(x * mask, dim=dim)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_masked_cumsum: expected two inputs x and mask, got {len(inputs)}")
    x, mask = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
        raise ValueError(f"kb_masked_cumsum: x must be a contiguous 2-D float32 tensor, got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if mask.dtype != torch.bool or not mask.is_contiguous() or mask.shape != x.shape:
        raise ValueError(f"kb_masked_cumsum: mask must be a contiguous torch.bool tensor of x's shape {tuple(x.shape)}, "
                         f"got {mask.dtype} of shape {tuple(mask.shape)} (contiguous: {mask.is_contiguous()})")
    if mask.device != x.device:
        raise ValueError(f"kb_masked_cumsum: x is on {x.device} but mask on {mask.device}")
    if dim != 1:
        raise ValueError(f"kb_masked_cumsum: the kernel scans along dim 1 (the rows), not dim {dim}")
    rows, cols = x.shape
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_masked_cumsum: x must have at least one row and one column, got {tuple(x.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_masked_cumsum: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, mask.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 93_masked_cumsum.py's get_inputs(), seeded 1000 + t: x first, then the mask from
    # torch.randint over x's shape.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, *input_shape)
        mask = torch.randint(0, 2, x.shape).bool()
    return [x, mask]


def signed_rows(t):
    # Signed values, each row's mask of its own density (5% to 95% set), row lengths not divisible
    # by 32 or 256: one column, fewer than a warp, a thread's share not filled, just past one and
    # two tiles. The running sum wanders around zero, so no trivial output is near it, and a kernel
    # that ignores the mask is off by the masked-out elements' sum.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(5, 1), (9, 7), (37, 33), (13, 1025), (4, 2049), (3, 3001)][t]
    x = torch.randn(shape, generator=g) * 2.0
    density = 0.05 + 0.9 * torch.rand(shape[0], 1, generator=g)
    mask = torch.rand(shape, generator=g) < density
    return [x, mask]


def masked_steps(t):
    # Zero rows with a few unit steps at a thread's, a warp's and a tile's first or last column
    # (3/4, 127/128, 1023/1024, ...), the mask random elsewhere and set or clear at each step with
    # even odds: the exact output is a staircase of the unmasked steps' integers, and a masked step
    # that shows, a missing carry, or a scan one place off moves a step by a whole unit. One row's
    # step is at column 0 and another's at the last column, both unmasked.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(12, 1030), (8, 2100), (6, 3072), (16, 517)][t]
    edges = torch.tensor([3, 4, 127, 128, 255, 256, 1023, 1024, 1025, 2047, 2048, 3071])
    edges = edges[edges < cols]
    x = torch.zeros(rows, cols)
    mask = torch.rand(rows, cols, generator=g) < 0.5
    for r in range(rows):
        picked = edges[torch.randperm(edges.numel(), generator=g)[:4]]
        x[r, picked] = torch.randint(1, 4, (picked.numel(),), generator=g).float()
    x[0, 0] = 5.0
    x[1, cols - 1] = 7.0
    mask[0, 0] = True
    mask[1, cols - 1] = True
    return [x, mask]


def mask_patterns(t):
    # Rows of several tiles with positive values, each row's mask a pattern of its own: all set (a
    # plain cumsum), all clear (zeros), alternating columns, set on the second tile only (zero, a
    # ramp, then flat), set on the last column only. Neighbouring rows differ completely, so a
    # kernel that reads the mask at the wrong row or stride is off.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(10, 3000), (5, 2049), (7, 4100)][t]
    x = torch.rand(rows, cols, generator=g) + 0.5
    column = torch.arange(cols)
    patterns = [torch.ones(cols, dtype=torch.bool), torch.zeros(cols, dtype=torch.bool), column % 2 == 0,
                (column >= 1024) & (column < 2048), column == cols - 1]
    mask = torch.stack([patterns[(r + t) % len(patterns)] for r in range(rows)])
    return [x, mask]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_rows", 6, signed_rows),
        ("masked_steps", 4, masked_steps),
        ("mask_patterns", 3, mask_patterns),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    aligned = torch.rand(8, 2048, generator=g)
    misaligned = torch.randn(5, 1301, generator=g)
    return [("aligned", [aligned, torch.rand(aligned.shape, generator=g) < 0.5]),
            ("misaligned", [misaligned, torch.rand(misaligned.shape, generator=g) < 0.5])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_masked_cumsum"] = dict(
        kb_file="93_masked_cumsum.py",
        cuda=CUDA_SOURCE,
        kernel_name="masked_cumsum_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
