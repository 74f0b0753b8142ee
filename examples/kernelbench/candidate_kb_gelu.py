"""kb_gelu: KernelBench level 1's 26_GELU_.py (torch.nn.functional.gelu(x), the exact erf form).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_gelu.py

and `kb_file="26_GELU_.py"` resolves in its `level1` folder. gelu's default is approximate='none':
x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))), not the tanh approximation (the two differ by up to
about 5e-4, inside the tolerance, so no suite can tell them apart and none tries). Elementwise 1-D
grid: one thread per element, 256 to a block, a single guard against the partial last block. The
real input is 4096 x 393216 float32 (6.4 GB, 1,610,612,736 elements: 6,291,456 blocks; past 2^31
bytes, so the index is a long long), so gate T0 on a GPU with memory to spare.

T0_original draws only from [0, 1), where gelu(x) lies between 0 and 0.85: a kernel writing
zeros or copying x is off by more than the tolerance for most entries there. `signed` covers the
negative side, where gelu dips to about -0.17 near x = -0.75 and returns to zero, so a kernel that
drops the sign inside erf, or returns relu(x) or x, fails; `misaligned` has element counts not
multiples of 32 or 256 (down to one element), so a guard that drops or overruns the last block's
tail shows; `tails` spans |x| from 1e-4 to 1e3 of both signs: erf's saturation (gelu(x) -> x for
large x, -> 0 for very negative x), where a wrong constant such as 1/sqrt(2) replaced by 1 moves
the curve. The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void gelu_erf_f32(const float* __restrict__ x, float* __restrict__ out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}
"""

BLOCK = 256

# 26_GELU_.py's size constants (same names, same values).
batch_size = 4096
dim = 393216


def ref(x):
    import torch

    return torch.nn.functional.gelu(x)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_gelu: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous():
        raise ValueError(f"kb_gelu: x must be a contiguous float32 tensor, got {x.dtype} "
                         f"(contiguous: {x.is_contiguous()})")
    n = x.numel()
    blocks = (n + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_gelu: {n} elements need more blocks than the grid's x dimension allows")
    out = torch.empty_like(x)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()), (ctypes.c_longlong, n)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 26_GELU_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, dim)
    return [x.to(device)]


def signed(t, device):
    # Normal values of spread 0.5 to 2.5: both signs, the negative dip of the curve included.
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
    return [(torch.randn(shape, generator=g) * 2.0).to(device)]


def tails(t, device):
    # |x| log-uniform over 1e-4 .. 1e3, both signs: the flat negative tail, the linear positive
    # tail, and the region near zero where gelu(x) ~ x / 2.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    shape = (64, 1500)
    magnitude = 10.0 ** (torch.rand(shape, generator=g) * 7 - 4)
    sign = torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0)
    return [(magnitude * sign).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed", 3, signed),
        ("misaligned", 5, misaligned),
        ("tails", 3, tails),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(16, 1024, generator=g)]), ("misaligned", [torch.randn(7, 45, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_gelu"] = dict(
        kb_file="26_GELU_.py",
        cuda=CUDA_SOURCE,
        kernel_name="gelu_erf_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
