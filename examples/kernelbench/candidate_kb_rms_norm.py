"""kb_rms_norm: KernelBench level 1's 36_RMSNorm_.py (x / sqrt(mean(x ** 2, dim=1, keepdim=True) + eps)).

forward() divides every element of a (batch, features, dim1, dim2) input by the root mean square of
the features at its (sample, position), eps = 1e-5 (the Model's default) added under the root. The
Model has no parameters. The kernel takes any input of shape (N, C, *): everything after the
feature axis is one run of positions.

Column thread + feature loop (the dim-1 reduction pattern): one thread per (sample, position), 256
to a block on a 1-D grid. The thread walks the features at stride `inner` (consecutive threads read
consecutive addresses, so each step is coalesced), summing squares in float32, then walks them again
writing x / rms. At the real size (112 x 64 x 512 x 512 float32, 7.5 GB) that is 29,360,128 threads
(114688 blocks) of 64 features each; the element offsets reach 1.88e9, close to 2^31 and past it
under the large-index tiling, so they are 64-bit.

Suites besides T0_original (uniform inputs, outputs up to about 1.7):
- signed_scaled: signed inputs with every (sample, position) column scaled on its own (1e-2 to 1e2):
  outputs stay O(1) whatever the scale, so a kernel that shares one rms between columns, or drops
  the 1 / features of the mean, is far off;
- odd_shapes: ranks 2 to 5 (rank 2: one position per sample, the features contiguous), run
  lengths not multiples of 32 or 256, batch 1, so the grid's last block is partial;
- quiet_columns: columns of magnitude 1e-4 to 1e-2 (mean square at or far below eps, where eps
  decides the output) with one dominant feature per column at a moving index, the first and last
  included: eps and every feature both count.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void rms_norm_dim1_f32(const float* __restrict__ x, float* __restrict__ out,
                                             long long batch, long long channels, long long inner, float eps)
{
    long long p = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (p >= batch * inner) return;
    long long n = p / inner;
    long long offset = n * channels * inner + (p - n * inner);
    const float* xp = x + offset;
    float* op = out + offset;

    float sq = 0.0f;
    for (long long c = 0; c < channels; c++) {
        float v = xp[c * inner];
        sq += v * v;
    }
    float rms = sqrtf(sq / (float)channels + eps);

    for (long long c = 0; c < channels; c++) op[c * inner] = xp[c * inner] / rms;
}
"""

BLOCK = 256  # threads per block of the 1-D grid
EPS = 1e-5  # the Model's default eps

# 36_RMSNorm_.py's size constants (same names, same values).
batch_size = 112
features = 64
dim1 = 512
dim2 = 512


def ref(x):
    import torch

    return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + EPS)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_rms_norm: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() < 2:
        raise ValueError(f"kb_rms_norm: x must be a contiguous float32 tensor (N, C, *), got {x.dtype} of shape "
                         f"{tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    n, c = x.shape[0], x.shape[1]
    inner = 1
    for d in x.shape[2:]:
        inner *= d
    if n * c * inner < 1:
        raise ValueError(f"kb_rms_norm: x {tuple(x.shape)} is empty")
    blocks = (n * inner + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_rms_norm: {n * inner} columns need more blocks than the grid's x dimension allows")
    out = torch.empty_like(x)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, n), (ctypes.c_longlong, c), (ctypes.c_longlong, inner), (ctypes.c_float, EPS)]
    return out, (blocks, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 36_RMSNorm_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, features, dim1, dim2)
    return [x.to(device)]


def signed_scaled(t, device):
    # Signed values, every (sample, position) column scaled on its own from 1e-2 to 1e2: the sum of
    # squares cannot cancel, and outputs stay O(1).
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, h, w = [(2, 9, 13), (3, 16, 16), (1, 31, 33), (2, 5, 60)][t]
    scale = 10.0 ** (torch.rand(n, 1, h, w, generator=g) * 4 - 2)
    return [(torch.randn(n, features, h, w, generator=g) * scale).to(device)]


def odd_shapes(t, device):
    # Ranks 2 to 5, runs of positions not multiples of 32 or 256: one position per sample (rank 2),
    # fewer columns than a block, and a grid whose last block is partial.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    tail = [(), (7,), (3, 5), (1, 259), (2, 3, 5), (17, 19)][t]
    n = [3, 1, 2, 1, 2, 5][t]
    return [(torch.rand(n, features, *tail, generator=g) * 4.0 - 1.0).to(device)]


def quiet_columns(t, device):
    # Columns of magnitude 1e-4 to 1e-2 (mean square 1e-8 to 1e-4 against eps 1e-5) with one dominant
    # feature per column, its index moving from column to column, the first and last included.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, h, w = [(2, 8, 8), (1, 15, 17), (2, 1, 30), (1, 4, 9)][t]
    cols = n * h * w
    x = torch.randn(cols, features, generator=g) * (10.0 ** (torch.rand(cols, 1, generator=g) * 2 - 4))
    where = torch.randint(0, features, (cols,), generator=g)
    where[0] = 0
    where[-1] = features - 1
    x[torch.arange(cols), where] += (torch.rand(cols, generator=g) + 0.5) * 0.02
    x = x.reshape(n, h, w, features).permute(0, 3, 1, 2).contiguous()
    return [x.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_scaled", 4, signed_scaled),
        ("odd_shapes", 6, odd_shapes),
        ("quiet_columns", 4, quiet_columns),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, features, 8, 32, generator=g)]),
            ("misaligned", [torch.randn(3, features, 5, 7, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_rms_norm"] = dict(
        kb_file="36_RMSNorm_.py",
        cuda=CUDA_SOURCE,
        kernel_name="rms_norm_dim1_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
