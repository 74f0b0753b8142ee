"""kb_group_norm: KernelBench level 1's 35_GroupNorm_.py (nn.GroupNorm(num_groups, features) applied to x).

forward() splits the features channels of each sample into num_groups consecutive groups and
normalises each group with the mean and biased variance of all its elements (features / num_groups
channels times every spatial position), then applies the channel's affine weight and bias:
y = (x - mean) / sqrt(var + 1e-5) * weight[c] + bias[c]. The weight and bias are the Model's own
(`gn.weight`, `gn.bias`, read through model_state, so launch gets [x, weight, bias]); as built they
are ones and zeros. GroupNorm takes any input of shape (N, C, *): the kernel treats everything after
the channel axis as one plane.

Block per row: a (sample, group) pair's elements are contiguous, channels_per_group * plane of them,
and one 256-thread block takes each. Two statistic passes (the mean, then the mean squared deviation
from it, so an offset group's variance does not cancel away), each a per-thread strided float32 sum
finished by a shared-memory tree, then a write pass that walks the group's channels to pick each
channel's weight and bias. At the real size (112 x 64 x 512 x 512 float32, 7.5 GB, 8 groups) that is
896 blocks of 8 * 262144 elements, 8192 per thread per pass; the element offsets reach 1.88e9, close
to 2^31 and past it under the large-index tiling, so they are 64-bit.

Suites besides T0_original (uniform inputs, outputs spanning about +-1.7):
- signed_channels: inside each group every channel has its own sign, offset and scale, so a
  kernel that normalises channel by channel (instance norm), or takes a group's statistics from
  part of its channels, is far off;
- odd_shapes: inputs of rank 2 (no plane: a group is its channels alone), 3, 4 and 5, planes not
  multiples of 32 or 256, batch 1;
- quiet_groups: nearly constant groups (variance at or below eps) with one spike per group at a
  moving position, the first and last included: eps and every element both count.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void group_norm_rows_f32(const float* __restrict__ x, const float* __restrict__ weight,
                                               const float* __restrict__ bias, float* __restrict__ out,
                                               long long rows, long long groups, long long group_channels,
                                               long long plane, float eps)
{
    __shared__ float red[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    long long len = group_channels * plane;
    const float* xr = x + row * len;
    float* outr = out + row * len;
    long long first_channel = (row % groups) * group_channels;

    float sum = 0.0f;
    for (long long i = threadIdx.x; i < len; i += BLOCK) sum += xr[i];
    red[threadIdx.x] = sum;
    __syncthreads();  // sync-after-sum-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-sum-step
    }
    float mean = red[0] / (float)len;
    __syncthreads();  // sync-before-red-reuse

    float sq = 0.0f;
    for (long long i = threadIdx.x; i < len; i += BLOCK) {
        float d = xr[i] - mean;
        sq += d * d;
    }
    red[threadIdx.x] = sq;
    __syncthreads();  // sync-after-var-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-var-step
    }
    float rstd = 1.0f / sqrtf(red[0] / (float)len + eps);

    for (long long k = 0; k < group_channels; k++) {
        float scale = weight[first_channel + k] * rstd;
        float shift = bias[first_channel + k];
        const float* xc = xr + k * plane;
        float* oc = outr + k * plane;
        for (long long i = threadIdx.x; i < plane; i += BLOCK) oc[i] = (xc[i] - mean) * scale + shift;
    }
}
"""

BLOCK = 256  # the kernel's tree reductions are written for exactly this many threads
EPS = 1e-5  # nn.GroupNorm's default

# 35_GroupNorm_.py's size constants (same names, same values).
batch_size = 112
features = 64
num_groups = 8
dim1 = 512
dim2 = 512


def ref(x, weight, bias):
    import torch

    return torch.nn.functional.group_norm(x, num_groups, weight, bias, eps=EPS)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 3:
        raise ValueError(f"kb_group_norm: expected [x, gn.weight, gn.bias], got {len(inputs)} inputs")
    x, weight, bias = inputs
    for label, t in (("x", x), ("gn.weight", weight), ("gn.bias", bias)):
        if t.dtype != torch.float32 or not t.is_contiguous():
            raise ValueError(f"kb_group_norm: {label} must be a contiguous float32 tensor, got {t.dtype} "
                             f"(contiguous: {t.is_contiguous()})")
    if x.dim() < 2:
        raise ValueError(f"kb_group_norm: x must be (N, C, *), got shape {tuple(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    if tuple(weight.shape) != (c,) or tuple(bias.shape) != (c,):
        raise ValueError(f"kb_group_norm: gn.weight {tuple(weight.shape)} and gn.bias {tuple(bias.shape)} must "
                         f"both have shape ({c},), one value per channel of x {tuple(x.shape)}")
    if c % num_groups:
        raise ValueError(f"kb_group_norm: {c} channels do not split into {num_groups} groups")
    plane = 1
    for d in x.shape[2:]:
        plane *= d
    rows = n * num_groups
    if rows < 1 or plane < 1:
        raise ValueError(f"kb_group_norm: x {tuple(x.shape)} is empty")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_group_norm: {rows} groups need more blocks than the grid's x dimension allows")
    out = torch.empty_like(x)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, weight.data_ptr()),
            (ctypes.c_void_p, bias.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, num_groups), (ctypes.c_longlong, c // num_groups),
            (ctypes.c_longlong, plane), (ctypes.c_float, EPS)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 35_GroupNorm_.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, features, dim1, dim2)
    return [x.to(device)]


def signed_channels(t, device):
    # Every channel of every sample its own sign, offset (within 3 of its scale) and scale (1e-2 to
    # 1e2), so the channels of a group differ: group statistics are not any channel's own.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, h, w = [(2, 9, 13), (3, 16, 16), (1, 31, 33), (2, 5, 60)][t]
    scale = 10.0 ** (torch.rand(n, features, 1, 1, generator=g) * 4 - 2)
    offset = (torch.rand(n, features, 1, 1, generator=g) * 6 - 3) * scale
    return [(torch.randn(n, features, h, w, generator=g) * scale + offset).to(device)]


def odd_shapes(t, device):
    # Inputs of rank 2 to 5 (GroupNorm takes (N, C, *)): no plane at all, planes shorter than the
    # block, and a plane a few past a multiple of 256; batch 1 and odd batches.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    tail = [(), (7,), (3, 5), (1, 259), (2, 3, 5), (17, 19)][t]
    n = [3, 1, 2, 1, 2, 1][t]
    return [(torch.rand(n, features, *tail, generator=g) * 4.0 - 1.0).to(device)]


def quiet_groups(t, device):
    # Nearly constant groups (standard deviation 1e-4 to 1e-2 around 0.5: variance at most ten times
    # eps, often far below) with one spike per group at a moving position, the first and last
    # elements of the group included.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, h, w = [(2, 8, 8), (1, 15, 17), (2, 1, 30), (1, 4, 9)][t]
    rows, cols = n * num_groups, (features // num_groups) * h * w
    x = 0.5 + torch.randn(rows, cols, generator=g) * (10.0 ** (torch.rand(rows, 1, generator=g) * 2 - 4))
    where = torch.randint(0, cols, (rows,), generator=g)
    where[0] = 0
    where[-1] = cols - 1
    x[torch.arange(rows), where] += torch.rand(rows, generator=g) * 0.02 + 0.01
    return [x.reshape(n, features, h, w).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_channels", 4, signed_channels),
        ("odd_shapes", 6, odd_shapes),
        ("quiet_groups", 4, quiet_groups),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, features, 8, 32, generator=g)]),
            ("misaligned", [torch.randn(3, features, 5, 7, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_group_norm"] = dict(
        kb_file="35_GroupNorm_.py",
        cuda=CUDA_SOURCE,
        kernel_name="group_norm_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("gn.weight", "gn.bias"),
    )
