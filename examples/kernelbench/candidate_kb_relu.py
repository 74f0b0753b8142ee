"""kb_relu: KernelBench level 1's 19_ReLU.py (torch.relu(x), element by element).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_relu.py

and `kb_file="19_ReLU.py"` resolves in its `level1` folder. Elementwise 1-D grid: one thread per
element, 256 to a block, a single guard against the partial last block. The real input is
4096 x 393216 float32 (6.4 GB, 1,610,612,736 elements: 6,291,456 blocks, well inside grid.x; past
2^31 bytes, so the index is a long long), so gate T0 on a GPU with memory to spare.

T0_original draws only from [0, 1), where relu is the identity: a kernel that copies its input
passes it. `signed` puts half the entries below zero, where the output must be exactly zero, so
it rejects the copy, a sign flip and an abs(). `misaligned` has element counts that are not
multiples of 32 or 256 (down to one element), so a guard that drops or overruns the last block's
tail shows. `magnitudes` spans 1e-30 to 1e30 of both signs, and values right at zero, so a
kernel that clamps, rescales or writes a constant is off somewhere. The size constants below carry
the problem file's names and values: CI (tests/test_kernelbench_examples.py) substitutes a small
stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void relu_f32(const float* __restrict__ x, float* __restrict__ out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[i] = v > 0.0f ? v : 0.0f;
}
"""

BLOCK = 256

# 19_ReLU.py's size constants (same names, same values).
batch_size = 4096
dim = 393216


def ref(x):
    import torch

    return torch.relu(x)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_relu: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous():
        raise ValueError(f"kb_relu: x must be a contiguous float32 tensor, got {x.dtype} "
                         f"(contiguous: {x.is_contiguous()})")
    n = x.numel()
    blocks = (n + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_relu: {n} elements need more blocks than the grid's x dimension allows")
    out = torch.empty_like(x)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, n)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 19_ReLU.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim)
    return [x.to(device)]


def signed(t, device):
    # Standard normal values, scaled a little differently each trial: about half must come out 0.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    rows, cols = [(64, 4096), (128, 1024), (16, 8192)][t]
    return [(torch.randn(rows, cols, generator=g) * (0.5 + t)).to(device)]


def misaligned(t, device):
    # Element counts that are not multiples of 32 or of the block: one element, less than a warp,
    # a partial last block, ranks 1 to 3.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(1,), (31,), (257, 3), (33, 65, 7), (1, 100003)][t]
    return [torch.randn(shape, generator=g).to(device)]


def magnitudes(t, device):
    # Both signs over sixty decades (1e-30 .. 1e30), with exact zeros of both signs sprinkled in:
    # relu keeps each positive value bit for bit and zeroes the rest.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    shape = (96, 1000)
    magnitude = 10.0 ** (torch.rand(shape, generator=g) * 60 - 30)
    sign = torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0)
    x = magnitude * sign
    zeros = torch.rand(shape, generator=g) < 0.05
    x[zeros] = 0.0
    x[zeros & (torch.rand(shape, generator=g) < 0.5)] = -0.0
    return [x.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed", 3, signed),
        ("misaligned", 5, misaligned),
        ("magnitudes", 3, magnitudes),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(16, 1024, generator=g)]), ("misaligned", [torch.randn(7, 45, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_relu"] = dict(
        kb_file="19_ReLU.py",
        cuda=CUDA_SOURCE,
        kernel_name="relu_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
