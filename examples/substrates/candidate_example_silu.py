"""example_silu: SiLU, out = x / (1 + exp(-x)), one thread per element (elementwise 1-D grid).

Example substrate outside the padding family. Official reference: examples/problems/example_silu.py
(torch.nn.functional.silu of a float32 (16, 16384) tensor). Any contiguous float32 tensor is
accepted; the kernel sees it flat.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void silu_f32(const float* __restrict__ x, float* __restrict__ out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[i] = v / (1.0f + expf(-v));
}
"""

BLOCK = 256
NAME = "example_silu"


def ref(x):
    import torch

    return torch.nn.functional.silu(x)


def make_launch(ctypes):
    def launch(inputs, torch):
        if len(inputs) != 1:
            raise ValueError(f"{NAME}: expected one input x, got {len(inputs)}")
        (x,) = inputs
        if x.dtype != torch.float32 or not x.is_contiguous():
            raise ValueError(f"{NAME}: x must be a contiguous float32 tensor, got {x.dtype} "
                             f"(contiguous: {x.is_contiguous()})")
        out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
        n = x.numel()
        grid = (max(1, (n + BLOCK - 1) // BLOCK), 1, 1)
        args = [
            (ctypes.c_void_p, x.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, n),
        ]
        return out, grid, (BLOCK, 1, 1), args

    return launch


# ---------------------------------------------------------------------------- inputs


def t0_original(t, device):
    # Exactly examples/problems/example_silu.py:get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.randn(16, 16384)
    return [x.to(device)]


def signed_wide(t, device):
    # Signed values from 1e-3 to 90 in magnitude: the negative branch, exp overflow (x < -88)
    # and saturation (x > 20), with exact zeros and values straddling 0.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    scale = (0.01, 1.0, 8.0, 30.0)[t]
    x = torch.randn(8, 4096, generator=g) * scale
    x.view(-1)[:8] = torch.tensor([0.0, -0.0, 1e-3, -1e-3, 88.0, -88.0, 90.0, -90.0])
    return [x.to(device)]


def misaligned(t, device):
    # Element counts that are not multiples of 32 or 256 (the tail guard), at ranks 1 to 4.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(1,), (31,), (257,), (3, 1001), (5, 7, 33), (2, 3, 5, 129)][t]
    return [torch.randn(shape, generator=g).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_wide", 4, signed_wide),
        ("misaligned", 6, misaligned),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [
        ("aligned", [torch.randn(4, 256, generator=g)]),
        ("misaligned", [torch.randn(5, 33, generator=g)]),
    ]


def register(K, torch, ctypes):
    K.PROBLEMS[NAME] = dict(
        kb_file="example_silu.py",
        cuda=CUDA_SOURCE,
        kernel_name="silu_f32",
        ref=ref,
        launch=make_launch(ctypes),
        suites=suites,
        probe=probe,
    )
