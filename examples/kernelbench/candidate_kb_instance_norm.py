"""kb_instance_norm: KernelBench level 1's 34_InstanceNorm.py (nn.InstanceNorm2d(features) applied to x).

forward() normalises every (sample, channel) plane of a (batch, features, dim1, dim2) input on its
own: subtract the plane's mean, divide by sqrt(biased variance + 1e-5). InstanceNorm2d's defaults
hold no affine parameters and no running statistics, so nothing of the Model's state is read.

Block per row: the contiguous planes are the rows (batch * features of them, each dim1 * dim2 long),
one 256-thread block each. The statistics take two passes over the row, the mean first and then the
mean squared deviation from it, each a per-thread strided float32 sum finished by a shared-memory
tree; a one-pass sum of squares would lose the variance of an offset plane to cancellation. A third
pass writes (x - mean) * rstd. At the real size (112 x 64 x 512 x 512 float32, 7.5 GB: 7168 rows of
262144) each thread sums 1024 elements per pass, and the element offsets reach 1.88e9, close to 2^31
and past it under the large-index tiling, so they are 64-bit.

Suites besides T0_original (whose outputs, uniform inputs normalised, already span about +-1.7):
- signed_planes: each plane its own sign, offset and scale (1e-2 to 1e2): a kernel that shares the
  statistics across planes, or drops the mean, is off by the offsets;
- odd_planes: plane sizes not multiples of 32 or 256, from 2 elements (1 x 2) to a little past a
  multiple of the block, and batch 1: idle threads and partial strides;
- quiet_planes: nearly constant planes (standard deviations 1e-4 to 1e-2, where eps is as large as
  the variance or larger) with one spike per plane at a moving position, the first and last
  included: a kernel that drops eps, or misses one element of a plane, is visibly off.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void instance_norm_rows_f32(const float* __restrict__ x, float* __restrict__ out,
                                                  long long rows, long long cols, float eps)
{
    __shared__ float red[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* outr = out + row * cols;

    float sum = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += BLOCK) sum += xr[c];
    red[threadIdx.x] = sum;
    __syncthreads();  // sync-after-sum-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-sum-step
    }
    float mean = red[0] / (float)cols;
    __syncthreads();  // sync-before-red-reuse

    float sq = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += BLOCK) {
        float d = xr[c] - mean;
        sq += d * d;
    }
    red[threadIdx.x] = sq;
    __syncthreads();  // sync-after-var-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-var-step
    }
    float rstd = 1.0f / sqrtf(red[0] / (float)cols + eps);

    for (long long c = threadIdx.x; c < cols; c += BLOCK) outr[c] = (xr[c] - mean) * rstd;
}
"""

BLOCK = 256  # the kernel's tree reductions are written for exactly this many threads
EPS = 1e-5  # nn.InstanceNorm2d's default

# 34_InstanceNorm.py's size constants (same names, same values).
batch_size = 112
features = 64
dim1 = 512
dim2 = 512


def ref(x):
    import torch

    return torch.nn.functional.instance_norm(x, eps=EPS)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_instance_norm: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 4:
        raise ValueError(f"kb_instance_norm: x must be a contiguous 4-D float32 tensor (N, C, H, W), got {x.dtype} "
                         f"of shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    n, c, h, w = x.shape
    rows, cols = n * c, h * w
    if rows < 1 or cols < 2:
        raise ValueError(f"kb_instance_norm: x {tuple(x.shape)} needs at least one plane of more than one element "
                         f"(InstanceNorm2d refuses a single spatial element)")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_instance_norm: {rows} planes need more blocks than the grid's x dimension allows")
    out = torch.empty_like(x)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_float, EPS)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 34_InstanceNorm.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, features, dim1, dim2)
    return [x.to(device)]


def signed_planes(t, device):
    # Every plane its own sign, offset (up to 3 of its scales) and scale: statistics shared between
    # planes, or a missing mean, show. Offsets stay within a few scales, so float32 keeps the variance.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, h, w = [(2, 9, 13), (3, 16, 16), (1, 31, 33), (2, 5, 60)][t]
    scale = 10.0 ** (torch.rand(n, features, 1, 1, generator=g) * 4 - 2)
    offset = (torch.rand(n, features, 1, 1, generator=g) * 6 - 3) * scale
    return [(torch.randn(n, features, h, w, generator=g) * scale + offset).to(device)]


def odd_planes(t, device):
    # Plane sizes not multiples of 32 or 256: the smallest legal plane (1 x 2), fewer elements than
    # the block's threads, and a few past a multiple of 256 (one extra partial stride); batch 1 too.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, h, w = [(1, 1, 2), (2, 3, 5), (1, 17, 19), (3, 1, 257), (1, 33, 31), (2, 2, 700)][t]
    return [(torch.rand(n, features, h, w, generator=g) * 4.0 - 1.0).to(device)]


def quiet_planes(t, device):
    # Nearly constant planes (standard deviation 1e-4 to 1e-2 around 0.5, so the variance is at most
    # ten times eps and often far below it) with one spike per plane at a moving position, the first
    # and last elements included: eps and every element of the plane both change the output.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, h, w = [(2, 8, 8), (1, 15, 17), (2, 1, 300), (1, 40, 9)][t]
    cols = h * w
    x = 0.5 + torch.randn(n * features, cols, generator=g) * (10.0 ** (torch.rand(n * features, 1, generator=g) * 2 - 4))
    where = torch.randint(0, cols, (n * features,), generator=g)
    where[0] = 0
    where[-1] = cols - 1
    x[torch.arange(n * features), where] += torch.rand(n * features, generator=g) * 0.02 + 0.01
    return [x.reshape(n, features, h, w).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_planes", 4, signed_planes),
        ("odd_planes", 6, odd_planes),
        ("quiet_planes", 4, quiet_planes),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, features, 8, 32, generator=g)]),
            ("misaligned", [torch.randn(3, features, 5, 7, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_instance_norm"] = dict(
        kb_file="34_InstanceNorm.py",
        cuda=CUDA_SOURCE,
        kernel_name="instance_norm_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
