"""example_mse_loss: mean squared error of two same-shaped tensors, one 256-thread block.

Example substrate outside the padding family. Official reference:
examples/problems/example_mse_loss.py (torch.nn.functional.mse_loss(pred, target), reduction
'mean', of float32 (128, 4096) tensors). A single block strides over every element (a
grid-stride loop over a grid of one block), each thread summing its squared differences; a
shared-memory tree adds the 256 partial sums and thread 0 writes the sum divided by the element
count. The official Model returns a 0-dim tensor; out here, and ref, have shape (1,).
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
    if (threadIdx.x == 0) out[0] = partial[0] / (float)n;
}
"""

BLOCK = 256  # the kernel's tree reduction is written for exactly this many threads, in one block
NAME = "example_mse_loss"


def ref(pred, target):
    import torch

    return torch.nn.functional.mse_loss(pred, target, reduction="mean").reshape(1)


def make_launch(ctypes):
    def launch(inputs, torch):
        if len(inputs) != 2:
            raise ValueError(f"{NAME}: expected two inputs pred and target, got {len(inputs)}")
        pred, target = inputs
        for label, t in (("pred", pred), ("target", target)):
            if t.dtype != torch.float32 or not t.is_contiguous():
                raise ValueError(f"{NAME}: {label} must be a contiguous float32 tensor, got {t.dtype} "
                                 f"(contiguous: {t.is_contiguous()})")
        if pred.shape != target.shape:
            raise ValueError(f"{NAME}: pred {tuple(pred.shape)} and target {tuple(target.shape)} must have the "
                             f"same shape (no broadcasting)")
        n = pred.numel()
        if n < 1:
            raise ValueError(f"{NAME}: the mean of no elements is undefined (empty inputs)")
        out = torch.empty((1,), dtype=torch.float32, device=pred.device)
        args = [
            (ctypes.c_void_p, pred.data_ptr()),
            (ctypes.c_void_p, target.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, n),
        ]
        return out, (1, 1, 1), (BLOCK, 1, 1), args

    return launch


# ---------------------------------------------------------------------------- inputs


def t0_original(t, device):
    # Exactly examples/problems/example_mse_loss.py:get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        pred = torch.randn(128, 4096)
        target = torch.randn(128, 4096)
    return [pred.to(device), target.to(device)]


def scaled(t, device):
    # Losses far from T0's ~2 (from ~2e-4 to ~2e6): a constant or a copied input cannot match.
    # The squared differences are all positive, so the long sum cannot cancel.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    scale = (0.01, 0.3, 3.0, 40.0, 1000.0)[t]
    pred = torch.randn(64, 1024, generator=g) * scale
    target = torch.randn(64, 1024, generator=g) * scale + 0.5 * scale
    return [pred.to(device), target.to(device)]


def misaligned(t, device):
    # Element counts not divisible by 32 or 256 (fewer than one block's threads, and a few
    # strides plus a tail), at ranks 1 to 3; signed values.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(1,), (7,), (3, 85), (129, 1001), (5, 7, 33)][t]
    return [torch.randn(shape, generator=g).to(device), torch.randn(shape, generator=g).to(device)]


def sparse_errors(t, device):
    # pred equals target except at a few elements (the first, the last, and random ones), so the
    # loss is a few known squares over n: every element, the tail's included, must be counted
    # once, and the division must be by n.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    shape = [(3, 1001), (1, 4096), (17, 255), (2, 2, 999)][t]
    target = torch.randn(shape, generator=g)
    pred = target.clone()
    flat = pred.view(-1)
    n = flat.numel()
    where = torch.cat([torch.tensor([0, n - 1]), torch.randint(1, n - 1, (3,), generator=g)])
    flat[where] += (torch.rand(5, generator=g) + 1.0) * 20.0 * (1 + t)
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
    return [
        ("aligned", [torch.randn(16, 256, generator=g), torch.randn(16, 256, generator=g)]),
        ("misaligned", [torch.randn(9, 333, generator=g), torch.randn(9, 333, generator=g)]),
    ]


def register(K, torch, ctypes):
    K.PROBLEMS[NAME] = dict(
        kb_file="example_mse_loss.py",
        cuda=CUDA_SOURCE,
        kernel_name="mse_loss_mean_f32",
        ref=ref,
        launch=make_launch(ctypes),
        suites=suites,
        probe=probe,
    )
