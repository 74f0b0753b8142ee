"""A correct row-sum kernel whose `cancelling` suite could reject a correct kernel.

The suite fills each row with large values and their negations, in shuffled order, around a
small remainder: the exact sum is small, but float32 sums of it in two legitimate orders differ
by far more than the tolerance (catastrophic cancellation in a long signed sum, which the spec
forbids). The gate must refuse the candidate as unsafe, naming the suite, the trial and the error.
Not a real candidate: it lives under tests/ so `python gate.py` never gates it unless asked.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void row_sum(const float* __restrict__ x, float* __restrict__ out, long long rows, long long cols)
{
    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float total = 0.0f;
    for (long long c = 0; c < cols; ++c) total += x[r * cols + c];
    out[r] = total;
}
"""

BLOCK = 128


def ref(x):
    import torch

    return torch.sum(x, dim=1)


def launch(inputs, torch):
    import ctypes

    (x,) = inputs
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    grid = (max(1, (rows + BLOCK - 1) // BLOCK), 1, 1)
    return out, grid, (BLOCK, 1, 1), [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
                                      (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]


def t0_original(t, device):
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.randn(64, 256)
    return [x.to(device)]


def cancelling(t, device):
    # Half of each row is +-1e7 pairs in shuffled order; the rest is small: the sum is small.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    big = torch.rand(32, 1024, generator=g) * 1e7
    row = torch.cat([big, -big, torch.randn(32, 64, generator=g)], dim=1)
    order = torch.argsort(torch.rand(32, row.shape[1], generator=g), dim=1)
    return [torch.gather(row, 1, order).to(device)]


def misaligned(t, device):
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    return [torch.randn(3 + 2 * t, 37 + 10 * t, generator=g).to(device)]


def suites():
    return [("T0_original", 5, t0_original), ("cancelling", 2, cancelling), ("misaligned", 3, misaligned)]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.randn(4, 64, generator=g)]), ("misaligned", [torch.randn(3, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["unsafe_row_sum"] = dict(
        kb_file="row_sum.py",
        cuda=CUDA_SOURCE,
        kernel_name="row_sum",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
