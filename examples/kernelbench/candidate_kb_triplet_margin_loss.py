"""kb_triplet_margin_loss: KernelBench level 1's 99_TripletMarginLoss.py (nn.TripletMarginLoss(margin=1.0)).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_triplet_margin_loss.py

and `kb_file="99_TripletMarginLoss.py"` resolves in its `level1` folder. get_init_inputs() gives
margin 1.0; the other defaults are p = 2, eps = 1e-6, swap off, reduction='mean'. For row i the
distances are d(a, b) = ||a[i] - b[i] + eps||_2, eps added to every component of the difference
(as pairwise_distance does), the row's loss is max(d(anchor, positive) - d(anchor, negative) +
margin, 0), and the output is the rows' mean, 0-dim. One 256-thread block per row: each thread sums
the squared components of both differences over its strided share of the row, two shared-memory
trees add the 256 pairs of partial sums, and thread 0 takes the square roots, the hinge, and
atomically adds the row's loss, already divided by the row count, into out, which launch creates
as a zero. The real size is three 32768 x 8192 float32 tensors (1.1 GB each; 32768 blocks, each
thread 32 components a row), so gate T0 on a GPU with memory to spare.

In T0 both distances are about 37 to 52 (with the scale) and nearly equal, so every trial's loss
is about the margin, 1.0 (a constant passes T0; zeros do not). `separated` places positives and
negatives at row-specific distances from signed anchors, so some rows have no loss and others a
large one (mean losses from ~3 to ~30), and a kernel that swaps the two distances, drops the
square root, or forgets the hinge fails; `misaligned` has row lengths not multiples of 32 or 256
(one component, short rows, a partial last stride) and row counts down to one; `lone_violators`
makes every row but three (the first and last among them) satisfy the margin by far, so the loss
is those three rows' terms over the row count and a row skipped or counted twice shows. The summed
terms are squares, so no long sum cancels. The size constants below carry the problem file's names
and values: CI (tests/test_kernelbench_examples.py) substitutes a small stand-in's values for
them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void triplet_margin_loss_mean_f32(const float* __restrict__ anchor,
                                                        const float* __restrict__ positive,
                                                        const float* __restrict__ negative,
                                                        float* __restrict__ out, long long rows, long long cols,
                                                        float margin, float eps)
{
    __shared__ float red_p[BLOCK];
    __shared__ float red_n[BLOCK];
    int tid = threadIdx.x;
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* ar = anchor + row * cols;
    const float* pr = positive + row * cols;
    const float* nr = negative + row * cols;

    float sum_pos = 0.0f;
    float sum_neg = 0.0f;
    for (long long c = tid; c < cols; c += blockDim.x) {
        float a = ar[c];
        float dp = a - pr[c] + eps;
        float dn = a - nr[c] + eps;
        sum_pos += dp * dp;
        sum_neg += dn * dn;
    }
    red_p[tid] = sum_pos;
    red_n[tid] = sum_neg;
    __syncthreads();  // sync-after-partials
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) { red_p[tid] += red_p[tid + s]; red_n[tid] += red_n[tid + s]; }
        __syncthreads();  // sync-after-tree-step
    }
    if (tid == 0) {
        float loss = fmaxf(sqrtf(red_p[0]) - sqrtf(red_n[0]) + margin, 0.0f);
        atomicAdd(out, loss / (float)rows);
    }
}
"""

BLOCK = 256  # the kernel's tree reduction is written for exactly this many threads
MARGIN = 1.0  # get_init_inputs()'s margin
EPS = 1e-6  # TripletMarginLoss's default eps, added to each component of the differences

# 99_TripletMarginLoss.py's size constants (same names, same values).
batch_size = 32768
input_shape = (8192,)
dim = 1


def ref(anchor, positive, negative):
    import torch

    return torch.nn.functional.triplet_margin_loss(anchor, positive, negative, margin=MARGIN, p=2, eps=EPS)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 3:
        raise ValueError(f"kb_triplet_margin_loss: expected inputs [anchor, positive, negative], got {len(inputs)}")
    for label, x in zip(("anchor", "positive", "negative"), inputs):
        if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 2:
            raise ValueError(f"kb_triplet_margin_loss: {label} must be a contiguous 2-D float32 tensor, got "
                             f"{x.dtype} of shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    anchor, positive, negative = inputs
    if positive.shape != anchor.shape or negative.shape != anchor.shape:
        raise ValueError(f"kb_triplet_margin_loss: anchor {tuple(anchor.shape)}, positive {tuple(positive.shape)} "
                         f"and negative {tuple(negative.shape)} must have the same shape (no broadcasting)")
    rows, cols = anchor.shape
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_triplet_margin_loss: needs at least one row and one column, got {tuple(anchor.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_triplet_margin_loss: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.zeros((), dtype=torch.float32, device=anchor.device)  # the kernel adds each row's share into it
    args = [(ctypes.c_void_p, anchor.data_ptr()), (ctypes.c_void_p, positive.data_ptr()),
            (ctypes.c_void_p, negative.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_float, MARGIN), (ctypes.c_float, EPS)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 99_TripletMarginLoss.py's get_inputs(), seeded 1000 + t: the scale, then the three tensors.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        scale = torch.rand(())
        inputs = [torch.rand(batch_size, *input_shape) * scale, torch.rand(batch_size, *input_shape),
                  torch.rand(batch_size, *input_shape)]
    return [x.to(device) for x in inputs]


def _around(anchor, distance, g):
    # Points at about `distance` (one value per row) from each anchor row, in random directions.
    import torch

    direction = torch.randn(anchor.shape, generator=g)
    direction = direction / direction.norm(dim=1, keepdim=True)
    return anchor + direction * distance


def separated(t, device):
    # Signed anchors; positives and negatives at row-specific distances (0 .. 20 and 0 .. 20 times
    # a trial factor), so rows range from no loss to a loss of ~20 and more.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, cols = [(64, 1024), (128, 256), (32, 2048), (200, 100)][t]
    anchor = torch.randn(rows, cols, generator=g)
    pos_distance = torch.rand(rows, 1, generator=g) * 20.0 * (1 + t)
    neg_distance = torch.rand(rows, 1, generator=g) * 20.0
    return [anchor.to(device), _around(anchor, pos_distance, g).to(device), _around(anchor, neg_distance, g).to(device)]


def misaligned(t, device):
    # Row lengths not multiples of 32 or 256 (one component, short rows, a partial last stride),
    # rows down to one; signed values of spread 2.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(7, 1), (1, 37), (129, 33), (3, 1001), (33, 4099)][t]
    return [(torch.randn(rows, cols, generator=g) * 2.0).to(device) for _ in range(3)]


def lone_violators(t, device):
    # Positives at distance 0.1 and negatives at 10 from every anchor (loss 0), except three rows,
    # the first and last among them, whose positive is far (distance 5 .. 50 times rows / 10).
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(64, 512), (100, 999), (8, 33), (256, 256)][t]
    anchor = torch.rand(rows, cols, generator=g) * 4.0 - 2.0
    pos_distance = torch.full((rows, 1), 0.1)
    where = torch.cat([torch.tensor([0, rows - 1]), torch.randperm(rows - 2, generator=g)[:1] + 1])
    pos_distance[where, 0] = (torch.rand(3, generator=g) * 45.0 + 5.0) * rows / 10.0
    neg_distance = torch.full((rows, 1), 10.0)
    return [anchor.to(device), _around(anchor, pos_distance, g).to(device), _around(anchor, neg_distance, g).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("separated", 4, separated),
        ("misaligned", 5, misaligned),
        ("lone_violators", 4, lone_violators),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(16, 256, generator=g) for _ in range(3)]),
            ("misaligned", [torch.randn(9, 333, generator=g) for _ in range(3)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_triplet_margin_loss"] = dict(
        kb_file="99_TripletMarginLoss.py",
        cuda=CUDA_SOURCE,
        kernel_name="triplet_margin_loss_mean_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
