"""kb_batch_norm: KernelBench level 1's 33_BatchNorm.py (nn.BatchNorm2d(features) applied to x, training mode).

The official Model is never put in eval mode, so forward() normalises each channel of a
(batch, features, dim1, dim2) input with that channel's batch statistics: the mean and the biased
variance over the batch and both spatial axes, then y = (x - mean) / sqrt(var + 1e-5) * weight + bias.
The weight and bias are the Model's own (`bn.weight`, `bn.bias`, read through model_state, so launch
gets [x, weight, bias]); as built they are ones and zeros. The running statistics it also updates
are a side effect, not part of the output.

Per-channel block: one 256-thread block per channel walks the channel's plane in each sample (an
outer loop over the batch, the threads strided over the plane), in three passes: the mean, the mean
squared deviation from it (two passes, so an offset channel's variance does not cancel away), then
the write. Each pass's per-thread float32 sums finish in a shared-memory tree. At the real size
(64 x 64 x 512 x 512 float32, 1 GiB) that is 64 blocks of 64 * 262144 elements, 65536 per thread per
pass, and the offset (n * channels + c) * plane passes 2^31 under the large-index tiling, so it is
64-bit.

Suites besides T0_original (uniform inputs, outputs spanning about +-1.7):
- signed_channels: every channel its own sign, offset and scale (1e-3 to 1e2, so eps matters for
  the smallest): statistics taken over the wrong channel, or eps dropped, show;
- odd_shapes: planes and batches not multiples of 32 or 256, down to a 1 x 1 plane (the statistics
  then run over the batch alone) and batch 1;
- batch_shift: each sample of the batch shifted and scaled on its own, so a kernel that takes the
  statistics per sample (instance norm) or from one sample only is far off.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void batch_norm_train_f32(const float* __restrict__ x, const float* __restrict__ weight,
                                                const float* __restrict__ bias, float* __restrict__ out,
                                                long long batch, long long channels, long long plane, float eps)
{
    __shared__ float red[BLOCK];
    long long ch = blockIdx.x;
    if (ch >= channels) return;
    float count = (float)(batch * plane);

    float sum = 0.0f;
    for (long long n = 0; n < batch; n++) {
        const float* xp = x + (n * channels + ch) * plane;
        for (long long i = threadIdx.x; i < plane; i += BLOCK) sum += xp[i];
    }
    red[threadIdx.x] = sum;
    __syncthreads();  // sync-after-sum-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-sum-step
    }
    float mean = red[0] / count;
    __syncthreads();  // sync-before-red-reuse

    float sq = 0.0f;
    for (long long n = 0; n < batch; n++) {
        const float* xp = x + (n * channels + ch) * plane;
        for (long long i = threadIdx.x; i < plane; i += BLOCK) {
            float d = xp[i] - mean;
            sq += d * d;
        }
    }
    red[threadIdx.x] = sq;
    __syncthreads();  // sync-after-var-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-var-step
    }
    float scale = weight[ch] / sqrtf(red[0] / count + eps);
    float shift = bias[ch];

    for (long long n = 0; n < batch; n++) {
        const float* xp = x + (n * channels + ch) * plane;
        float* op = out + (n * channels + ch) * plane;
        for (long long i = threadIdx.x; i < plane; i += BLOCK) op[i] = (xp[i] - mean) * scale + shift;
    }
}
"""

BLOCK = 256  # the kernel's tree reductions are written for exactly this many threads
EPS = 1e-5  # nn.BatchNorm2d's default

# 33_BatchNorm.py's size constants (same names, same values).
batch_size = 64
features = 64
dim1 = 512
dim2 = 512


def ref(x, weight, bias):
    import torch

    # training=True: batch statistics, as the Model (never put in eval mode) uses; no running stats kept.
    return torch.nn.functional.batch_norm(x, None, None, weight, bias, training=True, eps=EPS)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 3:
        raise ValueError(f"kb_batch_norm: expected [x, bn.weight, bn.bias], got {len(inputs)} inputs")
    x, weight, bias = inputs
    for label, t in (("x", x), ("bn.weight", weight), ("bn.bias", bias)):
        if t.dtype != torch.float32 or not t.is_contiguous():
            raise ValueError(f"kb_batch_norm: {label} must be a contiguous float32 tensor, got {t.dtype} "
                             f"(contiguous: {t.is_contiguous()})")
    if x.dim() != 4:
        raise ValueError(f"kb_batch_norm: x must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    n, c, h, w = x.shape
    if tuple(weight.shape) != (c,) or tuple(bias.shape) != (c,):
        raise ValueError(f"kb_batch_norm: bn.weight {tuple(weight.shape)} and bn.bias {tuple(bias.shape)} must "
                         f"both have shape ({c},), one value per channel of x {tuple(x.shape)}")
    if c < 1 or n * h * w < 2:
        raise ValueError(f"kb_batch_norm: x {tuple(x.shape)} needs more than one value per channel (training mode)")
    if c > 2**31 - 1:
        raise ValueError(f"kb_batch_norm: {c} channels need more blocks than the grid's x dimension allows")
    out = torch.empty_like(x)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, weight.data_ptr()),
            (ctypes.c_void_p, bias.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, n), (ctypes.c_longlong, c), (ctypes.c_longlong, h * w), (ctypes.c_float, EPS)]
    return out, (c, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 33_BatchNorm.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, features, dim1, dim2)
    return [x.to(device)]


def signed_channels(t, device):
    # Each channel its own sign, offset (within 3 of its scales, so float32 keeps the variance) and
    # scale from 1e-3 (variance 1e-6, ten times below eps) to 1e2.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, h, w = [(2, 9, 13), (3, 16, 16), (1, 31, 33), (4, 5, 60)][t]
    scale = 10.0 ** (torch.rand(1, features, 1, 1, generator=g) * 5 - 3)
    offset = (torch.rand(1, features, 1, 1, generator=g) * 6 - 3) * scale
    return [(torch.randn(n, features, h, w, generator=g) * scale + offset).to(device)]


def odd_shapes(t, device):
    # Batches and planes not multiples of 32 or 256: a 1 x 1 plane (statistics over the batch alone),
    # batch 1, a plane shorter than the block and one a few past a multiple of 256.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, h, w = [(5, 1, 1), (1, 1, 3), (3, 7, 9), (1, 17, 31), (2, 1, 259), (7, 3, 100)][t]
    return [(torch.rand(n, features, h, w, generator=g) * 4.0 - 1.0).to(device)]


def batch_shift(t, device):
    # Sample k of the batch shifted by about 2k and scaled on its own: the batch statistics differ from
    # every sample's own, so per-sample statistics, or a batch loop that stops early, are off by far.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, h, w = [(4, 6, 10), (3, 13, 11), (6, 2, 33)][t]
    shift = torch.arange(n, dtype=torch.float32).reshape(n, 1, 1, 1) * 2.0 - n
    spread = 0.5 + torch.rand(n, 1, 1, 1, generator=g)
    return [(torch.randn(n, features, h, w, generator=g) * spread + shift).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_channels", 4, signed_channels),
        ("odd_shapes", 6, odd_shapes),
        ("batch_shift", 3, batch_shift),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, features, 8, 32, generator=g)]),
            ("misaligned", [torch.randn(3, features, 5, 7, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_batch_norm"] = dict(
        kb_file="33_BatchNorm.py",
        cuda=CUDA_SOURCE,
        kernel_name="batch_norm_train_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("bn.weight", "bn.bias"),
    )
