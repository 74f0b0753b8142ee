"""kb_hinge_loss: KernelBench level 1's 100_HingeLoss.py (mean of clamp(1 - predictions * targets, min=0)).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_hinge_loss.py

and `kb_file="100_HingeLoss.py"` resolves in its `level1` folder. get_inputs() gives predictions
(batch_size, *input_shape) and targets (batch_size,) of +-1; the Model's product broadcasts
targets along the LAST dimension of predictions (input_shape is (batch_size,), so the shapes
meet), so element i of the flattened predictions is paired with targets[i % C], C the length of
the last dimension. Block partial sums, then an atomic: each 256-thread block strides over the
elements (a grid-stride loop over at most MAX_BLOCKS blocks), each thread summing
max(1 - p * t, 0) in float32; a shared-memory tree adds the block's 256 partial sums and thread 0
atomically adds that sum, already divided by the element count, into out, which launch creates
as a zero. out and ref are 0-dim, as the official Model's output is. T0_original is get_inputs()
at its full size (predictions 32768 x 32768 float32, 4.3 GB), so gate it on a GPU with memory to
spare. Its loss is about 1.0 in every trial (within the tolerance of one constant); signed_margins
gives losses from ~1 to ~100 and rejects a kernel writing a constant. The size constants below
carry the problem file's names and values: CI (tests/test_kernelbench_examples.py) substitutes a
small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void hinge_loss_mean_f32(const float* __restrict__ pred, const float* __restrict__ target,
                                               float* __restrict__ out, long long n, long long cols)
{
    __shared__ float partial[BLOCK];
    float acc = 0.0f;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float margin = 1.0f - pred[i] * target[i % cols];
        acc += fmaxf(margin, 0.0f);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();  // sync-after-partials
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();  // sync-after-tree-step
    }
    if (threadIdx.x == 0) atomicAdd(out, partial[0] / (float)n);
}
"""

BLOCK = 256  # the kernel's tree reduction is written for exactly this many threads
MAX_BLOCKS = 1024  # about one H200's resident threads; at the full size each thread sums 4096 elements

# 100_HingeLoss.py's size constants (same names, same values).
batch_size = 32768
input_shape = (32768,)
dim = 1


def ref(predictions, targets):
    import torch

    return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_hinge_loss: expected inputs [predictions, targets], got {len(inputs)}")
    pred, target = inputs
    for label, x in (("predictions", pred), ("targets", target)):
        if x.dtype != torch.float32 or not x.is_contiguous():
            raise ValueError(f"kb_hinge_loss: {label} must be a contiguous float32 tensor, got {x.dtype} "
                             f"(contiguous: {x.is_contiguous()})")
    if pred.dim() < 1 or target.dim() != 1 or pred.numel() < 1:
        raise ValueError(f"kb_hinge_loss: expected non-empty predictions of rank >= 1 and 1-D targets, got "
                         f"{tuple(pred.shape)} and {tuple(target.shape)}")
    cols = target.numel()
    if cols != pred.shape[-1] and cols != 1:
        raise ValueError(f"kb_hinge_loss: targets {tuple(target.shape)} must broadcast along the last dimension of "
                         f"predictions {tuple(pred.shape)} (length {pred.shape[-1]} or 1)")
    n = pred.numel()
    out = torch.zeros((), dtype=torch.float32, device=pred.device)  # the kernel adds each block's share into it
    grid = (min(MAX_BLOCKS, (n + BLOCK - 1) // BLOCK), 1, 1)
    args = [(ctypes.c_void_p, pred.data_ptr()), (ctypes.c_void_p, target.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, n), (ctypes.c_longlong, cols)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 100_HingeLoss.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        inputs = [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]
    return [x.to(device) for x in inputs]


def _signs(n, g):
    import torch

    return torch.randint(0, 2, (n,), generator=g).float() * 2 - 1


def signed_margins(t, device):
    # Signed predictions of growing spread (0.5 .. 300): losses from ~1 to ~120, far from T0's ~1.0,
    # with margins on both sides of 1 so the clamp matters. Every term is >= 0: no cancellation.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, cols = [(64, 1024), (128, 256), (32, 2048), (16, 4096)][t]
    scale = (0.5, 3.0, 30.0, 300.0)[t]
    return [(torch.randn(rows, cols, generator=g) * scale).to(device), _signs(cols, g).to(device)]


def misaligned(t, device):
    # Element counts and row lengths not divisible by 32 or 256: fewer than one block's threads, a
    # partial last block, more elements than MAX_BLOCKS blocks cover in one pass (the grid-stride
    # loop), and a single target broadcast over every element.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols, n_targets = [(1, 1, 1), (3, 37, 37), (129, 1001, 1001), (3, 100003, 100003), (33, 65, 1)][t]
    pred = torch.randn(rows, cols, generator=g) * 2.0
    return [pred.to(device), _signs(n_targets, g).to(device)]


def sparse_violations(t, device):
    # Every prediction has the target's sign and a margin over 1 (no loss) except five, the first
    # and last elements included, which are badly wrong: the loss is those five terms over n, about
    # 1 to 5, so an element skipped or counted twice, or a block's share lost, shows.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(64, 512), (100, 999), (8, 33), (256, 256)][t]
    target = _signs(cols, g)
    pred = target * (1.5 + torch.rand(rows, cols, generator=g))
    flat = pred.view(-1)
    n = flat.numel()
    where = torch.cat([torch.tensor([0, n - 1]), torch.randint(1, n - 1, (3,), generator=g)])
    flat[where] = -target[where % cols] * (torch.rand(5, generator=g) + 1.0) * (n / 5.0) * (1 + t)
    return [pred.to(device), target.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_margins", 4, signed_margins),
        ("misaligned", 5, misaligned),
        ("sparse_violations", 4, sparse_violations),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(64, 64, generator=g), _signs(64, g)]),
            ("misaligned", [torch.randn(45, 45, generator=g), _signs(45, g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_hinge_loss"] = dict(
        kb_file="100_HingeLoss.py",
        cuda=CUDA_SOURCE,
        kernel_name="hinge_loss_mean_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
