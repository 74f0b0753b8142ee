"""kb_conv_pointwise_2d: KernelBench level 1's 87_conv_pointwise_2D.py (a 1x1 nn.Conv2d, no bias).

forward(x) is self.conv1d(x), a Conv2d from in_channels to out_channels with a 1x1 kernel, stride
1, no padding and no bias: out[n, co, h, w] = sum over ci of weight[co, ci, 0, 0] * x[n, ci, h, w].
The weight is the official Model's (kaiming-uniform under seed 42): `model_state` hands the gate's
copy of conv1d.weight to ref and launch after each trial's x.

One thread per output element. A 256-thread block holds one output channel (blockIdx.x, so the
blocks resident at once are all the channels of the same pixels and each x row is read from L2,
not DRAM, by the other 127), 256 consecutive pixels of one image's flattened H x W plane
(blockIdx.y) and one image (blockIdx.z). The block first copies its channel's in_channels weights
into shared memory (every thread of it needs all of them), then each thread walks the input
channels down its pixel's column, reading x coalesced across the block. Offsets are 64-bit: the
real output has exactly 2^31 elements (16 x 128 x 1024 x 1024, 8.6 GB; x is 4.3 GB), so its last
element's offset does not fit an int. Grid at the real size: (128, 4096, 16).

Suites besides T0_original (get_inputs() exactly, seeded 1000 + t):
- signed_odd_planes: signed x with plane sizes that are not multiples of 32 or 256 (a single
  pixel, one partial block, a plane a few pixels past a block boundary) and batches of 1 to 3: a
  kernel whose pixel guard or block offset is off reads or writes the wrong pixel, and
  cancellation between signed terms exposes a dropped channel.
- channel_impulses: each pixel has one non-zero input channel, a different one per pixel, so the
  output there is that channel's weight column times the value: a weight read with its two
  indices swapped, or at the wrong channel, is off by a whole weight.
- batch_stride: several images whose values differ by image (image b scaled by b + 1), on planes
  of 300 and 513 pixels: a kernel that loses the batch offset of x or out, or mixes the plane size
  into it wrongly, writes one image's result into another's.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define MAX_CIN 1024

extern "C" __global__ void conv_pointwise_2d_f32(const float* __restrict__ x, const float* __restrict__ weight,
                                                 float* __restrict__ out, int c_in, int c_out, long long plane)
{
    __shared__ float w_co[MAX_CIN];
    int co = blockIdx.x;
    for (int ci = threadIdx.x; ci < c_in; ci += blockDim.x) w_co[ci] = weight[(long long)co * c_in + ci];
    __syncthreads();  // sync-after-weight-load

    long long p = (long long)blockIdx.y * blockDim.x + threadIdx.x;
    if (p >= plane) return;
    long long n = blockIdx.z;
    const float* xp = x + n * c_in * plane + p;
    float acc = 0.0f;
    for (int ci = 0; ci < c_in; ++ci) acc += w_co[ci] * xp[(long long)ci * plane];
    out[(n * c_out + co) * plane + p] = acc;
}
"""

BLOCK = 256  # threads per block: consecutive pixels of one plane
MAX_CIN = 1024  # the kernel's shared weight row holds this many input channels

# 87_conv_pointwise_2D.py's size constants (same names, same values).
batch_size = 16
in_channels = 64
out_channels = 128
width = 1024
height = 1024


def ref(x, weight):
    import torch

    return torch.nn.functional.conv2d(x, weight, None, 1, 0)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv_pointwise_2d: expected inputs [x, conv1d.weight], got {len(inputs)}")
    x, weight = inputs
    for label, t in (("x", x), ("conv1d.weight", weight)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 4:
            raise ValueError(f"kb_conv_pointwise_2d: {label} must be a contiguous 4-D float32 tensor, got {t.dtype} "
                             f"of shape {tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, c_in, h, w = x.shape
    c_out = weight.shape[0]
    if tuple(weight.shape) != (c_out, c_in, 1, 1):
        raise ValueError(f"kb_conv_pointwise_2d: conv1d.weight {tuple(weight.shape)} is not ({c_out}, {c_in}, 1, 1) "
                         f"for x of shape {tuple(x.shape)}")
    if min(n, c_in, h, w, c_out) < 1:
        raise ValueError(f"kb_conv_pointwise_2d: empty x {tuple(x.shape)} or weight {tuple(weight.shape)}")
    if c_in > MAX_CIN:
        raise ValueError(f"kb_conv_pointwise_2d: {c_in} input channels exceed the kernel's shared row of {MAX_CIN}")
    plane = h * w
    grid = (c_out, (plane + BLOCK - 1) // BLOCK, n)
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"kb_conv_pointwise_2d: grid {grid} exceeds CUDA's limits (x {tuple(x.shape)})")
    out = torch.empty((n, c_out, h, w), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, weight.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_int, c_in), (ctypes.c_int, c_out), (ctypes.c_longlong, plane)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 87_conv_pointwise_2D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, height, width)
    return [x.to(device)]


def signed_odd_planes(t, device):
    # Planes of 1, 31, 527 and 257 pixels (none a multiple of 32 or 256), signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, h, w = [(1, 1, 1), (3, 1, 31), (2, 17, 31), (1, 257, 1), (2, 7, 37)][t]
    return [torch.randn(n, in_channels, h, w, generator=g).to(device)]


def channel_impulses(t, device):
    # One non-zero channel per pixel (value 10 to 20), cycling through the channels pixel by pixel, so
    # out[n, co, p] = weight[co, ci(p)] * value: every weight entry is read alone somewhere.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, h, w = [(1, 8, 40), (2, 5, 77), (1, 33, 9)][t]
    x = torch.zeros(n, in_channels, h * w)
    pixel = torch.arange(h * w)
    channel = (pixel * 7 + t) % in_channels
    for b in range(n):
        x[b, channel, pixel] = 10.0 + 10.0 * torch.rand(h * w, generator=g)
    return [x.view(n, in_channels, h, w).to(device)]


def batch_stride(t, device):
    # Image b scaled by b + 1 (positive values), so each image's outputs have their own size.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, h, w = [(4, 10, 30), (3, 27, 19), (5, 3, 100)][t]
    scale = torch.arange(1, n + 1, dtype=torch.float32).view(n, 1, 1, 1)
    return [(torch.rand(n, in_channels, h, w, generator=g) * scale).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_odd_planes", 5, signed_odd_planes),
        ("channel_impulses", 3, channel_impulses),
        ("batch_stride", 3, batch_stride),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, in_channels, 8, 32, generator=g)]),
            ("misaligned", [torch.randn(1, in_channels, 5, 13, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv_pointwise_2d"] = dict(
        kb_file="87_conv_pointwise_2D.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv_pointwise_2d_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv1d.weight",),
    )
