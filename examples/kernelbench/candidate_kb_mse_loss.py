"""kb_mse_loss: KernelBench level 1's 94_MSELoss.py (torch.mean((predictions - targets) ** 2), 0-dim).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_mse_loss.py

and `kb_file="94_MSELoss.py"` resolves in its `level1` folder. Block partial sums, then an
atomic: each 256-thread block strides over the elements (a grid-stride loop over at most
MAX_BLOCKS blocks), each thread summing its squared differences in float32; a shared-memory tree
adds the block's 256 partial sums and thread 0 atomically adds that sum, already divided by the
element count, into out, which launch creates as a zero. out and ref are 0-dim, as the official
Model's output is. T0_original is get_inputs() at its full size (two 32768 x 32768 float32
tensors, 4.3 GB each; predictions scaled by a torch.rand(()) drawn first), so gate it on a GPU
with memory to spare. The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void mse_loss_mean_f32(const float* __restrict__ pred, const float* __restrict__ target,
                                             float* __restrict__ out, long long n)
{
    __shared__ float partial[BLOCK];
    float acc = 0.0f;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float d = pred[i] - target[i];
        acc += d * d;
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

# 94_MSELoss.py's size constants (same names, same values).
batch_size = 32768
input_shape = (32768,)
dim = 1


def ref(predictions, targets):
    import torch

    return torch.mean((predictions - targets) ** 2)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_mse_loss: expected inputs [predictions, targets], got {len(inputs)}")
    pred, target = inputs
    for label, x in (("predictions", pred), ("targets", target)):
        if x.dtype != torch.float32 or not x.is_contiguous():
            raise ValueError(f"kb_mse_loss: {label} must be a contiguous float32 tensor, got {x.dtype} "
                             f"(contiguous: {x.is_contiguous()})")
    if pred.shape != target.shape:
        raise ValueError(f"kb_mse_loss: predictions {tuple(pred.shape)} and targets {tuple(target.shape)} must have "
                         f"the same shape (this kernel does not broadcast)")
    n = pred.numel()
    if n < 1:
        raise ValueError("kb_mse_loss: the mean of no elements is undefined (empty inputs)")
    out = torch.zeros((), dtype=torch.float32, device=pred.device)  # the kernel adds each block's share into it
    grid = (min(MAX_BLOCKS, (n + BLOCK - 1) // BLOCK), 1, 1)
    args = [(ctypes.c_void_p, pred.data_ptr()), (ctypes.c_void_p, target.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, n)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 94_MSELoss.py's get_inputs(), seeded 1000 + t: the scale first, then the two tensors.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        scale = torch.rand(())
        inputs = [torch.rand(batch_size, *input_shape) * scale, torch.rand(batch_size, *input_shape)]
    return inputs


def scaled(t):
    # Losses far from T0's 1/6 .. 1/3 (from ~1e-4 to ~1e6), signed inputs: a constant or a copied
    # input cannot match. The squared differences are all positive, so the long sum cannot cancel.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    scale = (0.01, 0.3, 3.0, 40.0, 1000.0)[t]
    pred = torch.randn(64, 1024, generator=g) * scale
    target = torch.randn(64, 1024, generator=g) * scale + 0.5 * scale
    return [pred, target]


def misaligned(t):
    # Element counts not divisible by 32 or 256: fewer than one block's threads, a partial last
    # block, and more elements than MAX_BLOCKS blocks cover in one pass (the grid-stride loop).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(1, 1), (3, 37), (129, 1001), (3, 100003), (33, 65)][t]
    return [torch.rand(shape, generator=g) * 2.0, torch.randn(shape, generator=g)]


def sparse_errors(t):
    # pred == target except at a few elements (the first and last included), so the loss is those
    # few squared errors over n: an element skipped or counted twice, or a block's share lost,
    # shows.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    shape = [(256, 1024), (100, 999), (8, 33), (1000, 1000)][t]
    target = torch.randn(shape, generator=g)
    pred = target.clone()
    flat = pred.view(-1)
    n = flat.numel()
    where = torch.cat([torch.tensor([0, n - 1]), torch.randint(1, n - 1, (3,), generator=g)])
    flat[where] += (torch.rand(5, generator=g) + 1.0) * 20.0 * (1 + t)
    return [pred, target]


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
            ("misaligned", [torch.randn(9, 333, generator=g), torch.randn(9, 333, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_mse_loss"] = dict(
        kb_file="94_MSELoss.py",
        cuda=CUDA_SOURCE,
        kernel_name="mse_loss_mean_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
