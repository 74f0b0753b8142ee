"""kb_kl_div_loss: KernelBench level 1's 98_KLDivLoss.py (kl_div(log(predictions), targets, 'batchmean')).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_kl_div_loss.py

and `kb_file="98_KLDivLoss.py"` resolves in its `level1` folder. kl_div takes its input as
log-probabilities and its target as plain probabilities, and pointwise gives
xlogy(target, target) - target * input: with input = log(predictions) that is
target * (log(target) - log(prediction)), and exactly 0 where target is 0. reduction='batchmean'
sums every element and divides by the size of dim 0 (the rows), not by the element count; the
result is 0-dim. Block partial sums, then an atomic: each 256-thread block strides over the
elements (a grid-stride loop over at most MAX_BLOCKS blocks), each thread summing its terms in
float32; a shared-memory tree adds the block's 256 partial sums and thread 0 atomically adds that
sum, already divided by the row count, into out, which launch creates as a zero. T0_original is
get_inputs() at its full size (two 16384 x 16384 float32 tensors, 1.1 GB each, 268,435,456
elements: each of the 262,144 threads sums 1024 of them; the scale drawn first, then the two
softmaxed tensors), so gate it on a GPU with memory to spare.

T0's rows are all nearly uniform (softmax of logits in [0, 1)), so its loss is about 0.04 to 0.09
(the logits' variances over 2): a kernel writing zeros fails by more than the tolerance only just,
and a constant 0.06 may pass. `peaked` softmaxes normal logits of spread 0.5 to 4, for losses of
~0.2 to ~10, so a constant, a kernel dividing by the element count instead of the rows, or one
swapping the two inputs (KL is not symmetric) fails; `misaligned` has rows of lengths not
multiples of 32 or 256 (one element, where the loss is 0, a partial last block, more elements than
MAX_BLOCKS blocks cover at once) and a 3-D tensor, whose batchmean still divides by dim 0 only;
`zero_targets` zeroes most of each target row (renormalised), so a kernel computing
0 * log(0) as NaN instead of 0 fails, and the loss (~ log of the kept fraction) is far from T0's.
The per-element terms take both signs, but a row's negative terms add up to at most 1 (the sum of
its predictions), so the long sums cannot cancel beyond the tolerance. The size constants below
carry the problem file's names and values: CI (tests/test_kernelbench_examples.py) substitutes a
small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void kl_div_batchmean_f32(const float* __restrict__ pred, const float* __restrict__ target,
                                                float* __restrict__ out, long long n, long long rows)
{
    __shared__ float partial[BLOCK];
    float acc = 0.0f;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float t = target[i];
        if (t > 0.0f) acc += t * (logf(t) - logf(pred[i]));
    }
    partial[threadIdx.x] = acc;
    __syncthreads();  // sync-after-partials
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();  // sync-after-tree-step
    }
    if (threadIdx.x == 0) atomicAdd(out, partial[0] / (float)rows);
}
"""

BLOCK = 256  # the kernel's tree reduction is written for exactly this many threads
MAX_BLOCKS = 1024  # about one H200's resident threads; at the full size each thread sums 1024 elements

# 98_KLDivLoss.py's size constants (same names, same values).
batch_size = 8192 * 2
input_shape = (8192 * 2,)
dim = 1


def ref(predictions, targets):
    import torch

    return torch.nn.functional.kl_div(torch.log(predictions), targets, reduction="batchmean")


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_kl_div_loss: expected inputs [predictions, targets], got {len(inputs)}")
    pred, target = inputs
    for label, x in (("predictions", pred), ("targets", target)):
        if x.dtype != torch.float32 or not x.is_contiguous():
            raise ValueError(f"kb_kl_div_loss: {label} must be a contiguous float32 tensor, got {x.dtype} "
                             f"(contiguous: {x.is_contiguous()})")
    if pred.shape != target.shape:
        raise ValueError(f"kb_kl_div_loss: predictions {tuple(pred.shape)} and targets {tuple(target.shape)} must "
                         f"have the same shape (this kernel does not broadcast)")
    if pred.dim() < 1 or pred.numel() < 1:
        raise ValueError(f"kb_kl_div_loss: batchmean needs a non-empty tensor with a batch dimension, got "
                         f"{tuple(pred.shape)}")
    n, rows = pred.numel(), pred.shape[0]
    out = torch.zeros((), dtype=torch.float32, device=pred.device)  # the kernel adds each block's share into it
    grid = (min(MAX_BLOCKS, (n + BLOCK - 1) // BLOCK), 1, 1)
    args = [(ctypes.c_void_p, pred.data_ptr()), (ctypes.c_void_p, target.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, n), (ctypes.c_longlong, rows)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 98_KLDivLoss.py's get_inputs(), seeded 1000 + t: the scale, then each tensor and its softmax.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        scale = torch.rand(())
        inputs = [(torch.rand(batch_size, *input_shape) * scale).softmax(dim=-1),
                  torch.rand(batch_size, *input_shape).softmax(dim=-1)]
    return [x.to(device) for x in inputs]


def _rows(shape, spread, g):
    import torch

    return (torch.randn(shape, generator=g) * spread).softmax(dim=-1)


def peaked(t, device):
    # Normal logits of spread 0.5 .. 4 for predictions and half that for targets: sharp rows,
    # losses ~0.2 .. ~10, and far from the divergence taken the other way round.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, cols = [(64, 1024), (32, 2048), (128, 500), (16, 4096)][t]
    spread = (0.5, 1.5, 2.5, 4.0)[t]
    return [_rows((rows, cols), spread, g).to(device), _rows((rows, cols), spread / 2, g).to(device)]


def misaligned(t, device):
    # Row lengths and element counts not multiples of 32 or 256: a one-element row (loss 0 exactly),
    # short rows, a partial last block, more elements than MAX_BLOCKS blocks cover in one pass, and
    # a 3-D tensor (batchmean divides by its dim 0, 5, not by 5 * 33).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(1, 1), (3, 37), (129, 1001), (3, 100003), (5, 33, 65)][t]
    return [_rows(shape, 2.0, g).to(device), _rows(shape, 1.0, g).to(device)]


def zero_targets(t, device):
    # Targets with 50% .. 95% of each row exactly zero (renormalised), predictions strictly
    # positive: the zero entries contribute nothing, and the loss is about log(1 / kept fraction).
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(64, 1024), (100, 999), (8, 33), (256, 256)][t]
    kept = (0.5, 0.2, 0.3, 0.05)[t]
    target = torch.rand(rows, cols, generator=g) * (torch.rand(rows, cols, generator=g) < kept)
    target[:, 0] += 0.5  # every row keeps at least one positive entry
    target = target / target.sum(dim=1, keepdim=True)
    return [_rows((rows, cols), 0.5, g).to(device), target.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("peaked", 4, peaked),
        ("misaligned", 5, misaligned),
        ("zero_targets", 4, zero_targets),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    aligned = [torch.rand(16, 256, generator=g).softmax(dim=-1), torch.rand(16, 256, generator=g).softmax(dim=-1)]
    return [("aligned", aligned),
            ("misaligned", [_rows((9, 333), 1.0, g), _rows((9, 333), 1.0, g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_kl_div_loss"] = dict(
        kb_file="98_KLDivLoss.py",
        cuda=CUDA_SOURCE,
        kernel_name="kl_div_batchmean_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
