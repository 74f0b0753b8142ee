"""kb_cross_entropy_loss: KernelBench level 1's 95_CrossEntropyLoss.py (F.cross_entropy(predictions, targets)).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_cross_entropy_loss.py

and `kb_file="95_CrossEntropyLoss.py"` resolves in its `level1` folder. predictions is (N, C)
float32 logits, targets (N,) int64 class indices; with the defaults (no weights, no label
smoothing, reduction='mean') the loss is the mean over rows of logsumexp(row) - row[target], a
0-dim tensor. One 256-thread block per row, striding over it twice: a shared-memory tree
reduction of the row maximum, then one of the sum of exp(x - max); thread 0 forms
max + log(sum) - row[target] and atomically adds it, already divided by N, into out, which launch
creates as a zero. launch checks every target lies in [0, C) (torch raises otherwise). The real
size is 32768 x 4096 (512 MB of logits; 32768 blocks of 256 threads, each thread 16 logits a
pass), so gate T0 on a GPU with memory to spare.

T0's logits are uniform in [0, 1), so every trial's loss is about log(C) + log(e - 1) - 0.5
(~8.36 at the real size): a constant near it passes T0. `signed_logits` draws normal logits of
spread 0.5 to 8, half the rows labelled with their own argmax (confident and right) and the first
and last classes among the labels, for losses from ~0.5 to ~10 that no constant matches, and a
kernel reading the wrong row's or class's logit shows; `misaligned` has class counts not
multiples of 32 or 256 (one class, where the loss is exactly 0, two, 37, 1001, 4099) and row
counts down to one; `large_logits` has positive logits up to 2000 with each row offset by up
to 1e4, so a kernel that skips the max subtraction overflows exp to inf. The sum of exp(x - max)
is positive term by term and lies in [1, C]: no cancellation. The size constants below carry the
problem file's names and values: CI (tests/test_kernelbench_examples.py) substitutes a small
stand-in's values for them.
"""

CUDA_SOURCE = r"""
#include <math_constants.h>

#define BLOCK 256

extern "C" __global__ void cross_entropy_mean_f32(const float* __restrict__ logits,
                                                  const long long* __restrict__ labels, float* __restrict__ out,
                                                  long long rows, long long cols)
{
    __shared__ float red[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = logits + row * cols;

    float m = -CUDART_INF_F;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    red[threadIdx.x] = m;
    __syncthreads();  // sync-after-max-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();  // sync-after-max-step
    }
    float row_max = red[0];
    __syncthreads();  // sync-before-sum-reuse

    float sum = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(xr[c] - row_max);
    red[threadIdx.x] = sum;
    __syncthreads();  // sync-after-sum-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-sum-step
    }
    if (threadIdx.x == 0) {
        float loss = row_max + logf(red[0]) - xr[labels[row]];
        atomicAdd(out, loss / (float)rows);
    }
}
"""

BLOCK = 256  # the kernel's tree reductions are written for exactly this many threads

# 95_CrossEntropyLoss.py's size constants (same names, same values).
batch_size = 32768
num_classes = 4096
input_shape = (num_classes,)
dim = 1


def ref(predictions, targets):
    import torch

    return torch.nn.functional.cross_entropy(predictions, targets)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_cross_entropy_loss: expected inputs [predictions, targets], got {len(inputs)}")
    logits, labels = inputs
    if logits.dtype != torch.float32 or not logits.is_contiguous() or logits.dim() != 2:
        raise ValueError(f"kb_cross_entropy_loss: predictions must be a contiguous 2-D float32 tensor, got "
                         f"{logits.dtype} of shape {tuple(logits.shape)} (contiguous: {logits.is_contiguous()})")
    rows, cols = logits.shape
    if labels.dtype != torch.int64 or not labels.is_contiguous() or tuple(labels.shape) != (rows,):
        raise ValueError(f"kb_cross_entropy_loss: targets must be a contiguous int64 tensor of shape ({rows},), got "
                         f"{labels.dtype} of shape {tuple(labels.shape)}")
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_cross_entropy_loss: predictions must have at least one row and one class, got "
                         f"{tuple(logits.shape)}")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_cross_entropy_loss: {rows} rows need more blocks than the grid's x dimension allows")
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= cols:
        raise ValueError(f"kb_cross_entropy_loss: targets must lie in [0, {cols}), got values from {low} to {high}")
    out = torch.zeros((), dtype=torch.float32, device=logits.device)  # the kernel adds each row's share into it
    args = [(ctypes.c_void_p, logits.data_ptr()), (ctypes.c_void_p, labels.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 95_CrossEntropyLoss.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        inputs = [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]
    return [x.to(device) for x in inputs]


def signed_logits(t, device):
    # Normal logits of spread 0.5 .. 8; every other row labelled with its own argmax, the rest at
    # random, rows 0 and 1 labelled with the first and the last class.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, cols = [(64, 1000), (128, 256), (32, 2048), (200, 100)][t]
    spread = (0.5, 2.0, 4.0, 8.0)[t]
    logits = torch.randn(rows, cols, generator=g) * spread
    labels = torch.randint(0, cols, (rows,), generator=g)
    labels[::2] = logits[::2].argmax(dim=1)
    labels[0], labels[1] = 0, cols - 1
    return [logits.to(device), labels.to(device)]


def misaligned(t, device):
    # Class counts not multiples of 32 or 256 (one class: loss exactly 0), rows down to one.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows, cols = [(7, 1), (1, 2), (129, 37), (3, 1001), (33, 4099)][t]
    logits = torch.randn(rows, cols, generator=g) * 3.0
    return [logits.to(device), torch.randint(0, cols, (rows,), generator=g).to(device)]


def large_logits(t, device):
    # Positive logits up to 2000 plus a per-row offset up to 1e4: exp overflows without the max
    # subtraction; losses are hundreds.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    rows, cols = [(64, 512), (16, 3000), (100, 77)][t]
    logits = torch.rand(rows, cols, generator=g) * (200.0 + 900.0 * t) + torch.rand(rows, 1, generator=g) * 1e4
    return [logits.to(device), torch.randint(0, cols, (rows,), generator=g).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_logits", 4, signed_logits),
        ("misaligned", 5, misaligned),
        ("large_logits", 3, large_logits),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(16, 512, generator=g), torch.randint(0, 512, (16,), generator=g)]),
            ("misaligned", [torch.randn(9, 333, generator=g), torch.randint(0, 333, (9,), generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_cross_entropy_loss"] = dict(
        kb_file="95_CrossEntropyLoss.py",
        cuda=CUDA_SOURCE,
        kernel_name="cross_entropy_mean_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
