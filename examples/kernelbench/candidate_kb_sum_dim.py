"""kb_sum_dim: KernelBench level 1's 47_Sum_reduction_over_a_dimension.py (sum over dim 1, keepdim).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_sum_dim.py

and `kb_file="47_Sum_reduction_over_a_dimension.py"` resolves in its `level1` folder
(Model(reduce_dim=1), from get_init_inputs()). One thread per output column: thread i owns
(b, c) = (i / C, i % C) of x (B, R, C) and sums the R rows of that column in float32; out has
the reduced dimension kept, (B, 1, C).

T0_original has get_inputs()'s shape, dtype and distribution (torch.rand of (128, 4096, 4095),
8.6 GB: 2,146,959,360 elements, just under 2^31, with 64-bit offsets all the same), drawn from a
torch.Generator of its own (seeded T0_SEED + t, not KernelBench's torch.manual_seed(1000 + t)):
the same distribution, other values. Its values are positive, so the sums of 4096 cannot
cancel. The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void sum_dim1_f32(const float* __restrict__ x, float* __restrict__ out,
                                        long long batch, long long rows, long long cols)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= batch * cols) return;
    long long b = i / cols;
    long long c = i - b * cols;
    const float* column = x + b * rows * cols + c;
    float acc = 0.0f;
    for (long long r = 0; r < rows; ++r) acc += column[r * cols];
    out[i] = acc;
}
"""

BLOCK = 256

# 47_Sum_reduction_over_a_dimension.py's size constants (same names, same values).
batch_size = 128
dim1 = 4096
dim2 = 4095
reduce_dim = 1

# T0's own generator is seeded apart from KernelBench's 1000 + t: a fresh torch.Generator seeded
# 1000 + t draws exactly the numbers torch.manual_seed(1000 + t) gives get_inputs() (one mt19937
# stream per seed), which would make T0 identical rather than only the same distribution.
T0_SEED = 1_001_000


def ref(x):
    import torch

    return torch.sum(x, dim=1, keepdim=True)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_sum_dim: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 3:
        raise ValueError(f"kb_sum_dim: x must be a contiguous 3-D float32 tensor (B, R, C), got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    batch, rows, cols = x.shape
    out = torch.empty((batch, 1, cols), dtype=torch.float32, device=x.device)
    n = batch * cols
    grid = (max(1, (n + BLOCK - 1) // BLOCK), 1, 1)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, batch), (ctypes.c_longlong, rows), (ctypes.c_longlong, cols)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t, device):
    # get_inputs()'s shape, dtype and distribution (torch.rand), from a generator of its own, seeded
    # T0_SEED + t: other values than get_inputs() under torch.manual_seed(1000 + t).
    import torch

    g = torch.Generator().manual_seed(T0_SEED + t)
    x = torch.rand(batch_size, dim1, dim2, generator=g)
    return [x.to(device)]


def signed(t, device):
    # Signed values of moderate size over short reductions (up to 300 rows): sums of both signs
    # near zero and far from it, without the long signed sums that two correct float32 orders
    # could round apart.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape, scale = [((4, 300, 64), 1.0), ((3, 50, 100), 10.0), ((2, 7, 500), 100.0)][t]
    return [(torch.randn(shape, generator=g) * scale).to(device)]


def misaligned(t, device):
    # B, R and C not multiples of 32 or 256: a partial last block, a single row (out = x), a single
    # column, more columns than one block.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(1, 1, 1), (3, 1, 77), (5, 37, 1), (7, 33, 65), (2, 100, 300), (1, 513, 3)][t]
    return [(torch.rand(shape, generator=g) * 4.0 - 1.0).to(device)]


def large_positive(t, device):
    # Long reductions (up to 4096 rows) of positive values up to 1e3, each column scaled of its own
    # (1e-2 .. 1e3): sums up to ~2e6 that cannot cancel, where a dropped or doubled row shows.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    batch, rows, cols = [(2, 4096, 40), (1, 2049, 257), (3, 1000, 33)][t]
    scale = 10.0 ** (torch.rand(batch, 1, cols, generator=g) * 5 - 2)
    return [(torch.rand(batch, rows, cols, generator=g) * scale).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed", 3, signed),
        ("misaligned", 6, misaligned),
        ("large_positive", 3, large_positive),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(4, 32, 64, generator=g)]), ("misaligned", [torch.randn(3, 45, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_sum_dim"] = dict(
        kb_file="47_Sum_reduction_over_a_dimension.py",
        cuda=CUDA_SOURCE,
        kernel_name="sum_dim1_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
