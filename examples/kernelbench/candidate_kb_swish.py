"""kb_swish: KernelBench level 1's 25_Swish.py (x * sigmoid(x)), gated against the real problem file.

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_swish.py

and `kb_file="25_Swish.py"` resolves in its `level1` folder. T0_original is that file's
get_inputs() at its full size (4096 x 393216 float32, 6.4 GB: 1,610,612,736 elements, past 2^31
bytes though not 2^31 elements; the index is a long long all the same), so gate it on a GPU with
memory to spare.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void swish_f32(const float* __restrict__ x, float* __restrict__ out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[i] = v / (1.0f + expf(-v));
}
"""

BLOCK = 256

# 25_Swish.py's size constants (same names, same values); CI (tests/test_kernelbench_examples.py)
# substitutes a small stand-in's values for them.
batch_size = 4096
dim = 393216


def ref(x):
    import torch

    return x * torch.sigmoid(x)


def launch(inputs, torch):
    import ctypes

    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous():
        raise ValueError(f"kb_swish: x must be a contiguous float32 tensor, got {x.dtype} "
                         f"(contiguous: {x.is_contiguous()})")
    out = torch.empty_like(x)
    n = x.numel()
    grid = (max(1, (n + BLOCK - 1) // BLOCK), 1, 1)
    return out, grid, (BLOCK, 1, 1), [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
                                      (ctypes.c_longlong, n)]


def t0_original(t, device):
    # Exactly 25_Swish.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim)
    return [x.to(device)]


def signed(t, device):
    # Both signs, from tiny to past expf's overflow (|v| > 88): the negative tail and saturation.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    magnitude = 10.0 ** (torch.rand(64, 4096, generator=g) * 6 - 4)  # 1e-4 .. 1e2
    sign = torch.where(torch.rand(64, 4096, generator=g) < 0.5, -1.0, 1.0)
    return [(magnitude * sign).to(device)]


def misaligned(t, device):
    # Element counts that are not multiples of 32 or of the block.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(1,), (31,), (257, 3), (33, 65, 7)][t]
    return [torch.randn(shape, generator=g).to(device)]


def suites():
    return [("T0_original", 5, t0_original), ("signed", 3, signed), ("misaligned", 4, misaligned)]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(16, 1024, generator=g)]), ("misaligned", [torch.randn(7, 45, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_swish"] = dict(
        kb_file="25_Swish.py",
        cuda=CUDA_SOURCE,
        kernel_name="swish_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
