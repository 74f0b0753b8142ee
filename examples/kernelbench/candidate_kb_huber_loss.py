"""kb_huber_loss: KernelBench level 1's 96_HuberLoss.py (smooth_l1_loss(predictions, targets), 0-dim).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_huber_loss.py

and `kb_file="96_HuberLoss.py"` resolves in its `level1` folder. With its defaults (beta = 1,
reduction='mean') smooth_l1_loss is the mean over every element of 0.5 * d**2 where |d| < 1 and
|d| - 0.5 elsewhere, d = prediction - target. Block partial sums, then an atomic: each 256-thread
block strides over the elements (a grid-stride loop over at most MAX_BLOCKS blocks), each thread
summing its terms in float32; a shared-memory tree adds the block's 256 partial sums and thread 0
atomically adds that sum, already divided by the element count, into out, which launch creates
as a zero. out and ref are 0-dim, as the official Model's output is. T0_original is get_inputs()
at its full size (two 32768 x 32768 float32 tensors, 4.3 GB each, 1,073,741,824 elements: each of
the 262,144 threads sums 4096 of them; predictions scaled by a torch.rand(()) drawn first), so gate
it on a GPU with memory to spare.

T0's differences all lie in (-1, 1), the quadratic branch only, and its loss sits between about
0.08 and 0.17: a kernel writing zeros fails there, one writing a constant may not. `scaled` draws
signed inputs whose differences run from 0.01 to ~1000 (losses from ~1e-4 to ~1e3), so the linear
branch, the 0.5 offset and the switch between branches all count, and a constant cannot match;
`misaligned` has element counts not multiples of 32 or 256, fewer than one block's threads and
more than MAX_BLOCKS blocks cover in one pass; `sparse_errors` makes predictions equal to targets
except at five elements (the first and last among them) whose differences straddle the branch
point, so an element skipped or counted twice, or a block's share lost, shows. Every term is
non-negative: no long signed sum can cancel. The size constants below carry the problem file's
names and values: CI (tests/test_kernelbench_examples.py) substitutes a small stand-in's values
for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void huber_loss_mean_f32(const float* __restrict__ pred, const float* __restrict__ target,
                                               float* __restrict__ out, long long n)
{
    __shared__ float partial[BLOCK];
    float acc = 0.0f;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float d = fabsf(pred[i] - target[i]);
        acc += d < 1.0f ? 0.5f * d * d : d - 0.5f;
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

# 96_HuberLoss.py's size constants (same names, same values).
batch_size = 32768
input_shape = (32768,)
dim = 1


def ref(predictions, targets):
    import torch

    return torch.nn.functional.smooth_l1_loss(predictions, targets)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_huber_loss: expected inputs [predictions, targets], got {len(inputs)}")
    pred, target = inputs
    for label, x in (("predictions", pred), ("targets", target)):
        if x.dtype != torch.float32 or not x.is_contiguous():
            raise ValueError(f"kb_huber_loss: {label} must be a contiguous float32 tensor, got {x.dtype} "
                             f"(contiguous: {x.is_contiguous()})")
    if pred.shape != target.shape:
        raise ValueError(f"kb_huber_loss: predictions {tuple(pred.shape)} and targets {tuple(target.shape)} must "
                         f"have the same shape (this kernel does not broadcast)")
    n = pred.numel()
    if n < 1:
        raise ValueError("kb_huber_loss: the mean of no elements is undefined (empty inputs)")
    out = torch.zeros((), dtype=torch.float32, device=pred.device)  # the kernel adds each block's share into it
    grid = (min(MAX_BLOCKS, (n + BLOCK - 1) // BLOCK), 1, 1)
    args = [(ctypes.c_void_p, pred.data_ptr()), (ctypes.c_void_p, target.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, n)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 96_HuberLoss.py's get_inputs(), seeded 1000 + t: the scale first, then the two tensors.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        scale = torch.rand(())
        inputs = [torch.rand(batch_size, *input_shape) * scale, torch.rand(batch_size, *input_shape)]
    return [x.to(device) for x in inputs]


def scaled(t, device):
    # Signed inputs whose differences have spread 0.01 .. 1000: all quadratic, mixed, all linear.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    scale = (0.01, 0.3, 1.5, 40.0, 1000.0)[t]
    pred = torch.randn(64, 1024, generator=g) * scale
    target = torch.randn(64, 1024, generator=g) * scale + 0.5 * scale
    return [pred.to(device), target.to(device)]


def misaligned(t, device):
    # Element counts not divisible by 32 or 256: fewer than one block's threads, a partial last
    # block, more elements than MAX_BLOCKS blocks cover in one pass (the grid-stride loop).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(1, 1), (3, 37), (129, 1001), (3, 100003), (33, 65)][t]
    return [(torch.randn(shape, generator=g) * 2.0).to(device), torch.randn(shape, generator=g).to(device)]


def sparse_errors(t, device):
    # pred == target except at five elements, the first and last included: four differences of
    # n/10 .. n/2 (linear branch, each worth 0.1 .. 0.5 of the loss) and one below 1; losses of
    # about 1 to 5, so dropping or doubling any of the four large terms is far outside the tolerance.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    shape = [(256, 1024), (100, 999), (8, 33), (1000, 1000)][t]
    target = torch.randn(shape, generator=g)
    pred = target.clone()
    flat = pred.view(-1)
    n = flat.numel()
    where = torch.cat([torch.tensor([0, n - 1]), torch.randperm(n - 2, generator=g)[:3] + 1])
    step = (torch.rand(5, generator=g) + 0.5) * torch.tensor([n / 5.0, n / 3.0, 0.8, n / 2.0, n / 10.0]) * (1 + t)
    sign = torch.where(torch.rand(5, generator=g) < 0.5, -1.0, 1.0)
    flat[where] += sign * step
    return [pred.to(device), target.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("scaled", 5, scaled),
        ("misaligned", 5, misaligned),
        ("sparse_errors", 4, sparse_errors),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(16, 256, generator=g), torch.rand(16, 256, generator=g)]),
            ("misaligned", [torch.randn(9, 333, generator=g) * 2.0, torch.randn(9, 333, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_huber_loss"] = dict(
        kb_file="96_HuberLoss.py",
        cuda=CUDA_SOURCE,
        kernel_name="huber_loss_mean_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
