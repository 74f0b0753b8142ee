"""kb_conv_depthwise_separable_2d: KernelBench level 1's 86_conv_depthwise_separable_2D.py.

forward(x) is self.pointwise(self.depthwise(x)): first a depthwise nn.Conv2d (in_channels groups,
each channel its own k x k filter, stride, zero padding and dilation as get_init_inputs() gives
them, no bias), then a 1x1 nn.Conv2d mixing the in_channels depthwise results into out_channels
(no bias). So
    out[n, co, oh, ow] = sum over ci of pw[co, ci] * (sum over (kh, kw) of dw[ci, kh, kw] *
                         x[n, ci, oh*s - p + kh*d, ow*s - p + kw*d]),
taps outside x counting as zero, H_out = (H + 2p - d*(k-1) - 1) / s + 1 (floor), W_out likewise.
Both weights are the official Model's (seed 42): `model_state` hands depthwise.weight and
pointwise.weight to ref and launch after each trial's x.

The spec allows one kernel, so the two convolutions are fused: one thread per output element
computes, for each input channel, that channel's depthwise value at its pixel and adds it times
the pointwise weight, never storing the depthwise result. A 256-thread block holds one output
channel (blockIdx.x), 256 consecutive output columns of one row (blockIdx.y) and one (image,
output row) pair (blockIdx.z, n * H_out + oh); it first copies every depthwise filter
(in_channels x k x k) and its channel's pointwise row into shared memory, since every thread
reads all of them. With the output channel fastest in the grid, the blocks resident together
share their x rows in L2. Offsets are 64-bit. Real size: x 16 x 64 x 512 x 512, output
16 x 128 x 512 x 512 (537M elements, 576 multiply-adds each); grid (128, 2, 16 * 512).

Suites besides T0_original (get_inputs() exactly, seeded 1000 + t):
- signed_odd_sizes: signed x on tiny and odd planes (1 x 1, where only the centre tap of a
  padded 3 x 3 window lands inside, one row of 257 or 300 columns, odd rectangles), batches of
  1 to 3: the padding test at each border, the row guard and the block offset all matter.
- channel_impulses: x is zero except one spike per image and channel, at a corner or a random
  point, each channel's elsewhere: the output near a spike is pw[co, ci] times one filter tap of
  channel ci, so a filter or pointwise index that is swapped or shifted is off by a whole weight.
- scaled_channels: positive x with each (image, channel) plane scaled by its own factor from 0.1
  to 100: summing one channel's depthwise value with another channel's pointwise weight, or
  reading another image, is off by the ratio of two scales.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define MAX_DW 8192
#define MAX_CIN 1024

extern "C" __global__ void conv_depthwise_separable_2d_f32(const float* __restrict__ x,
                                                           const float* __restrict__ dw,
                                                           const float* __restrict__ pw,
                                                           float* __restrict__ out, int c_in, int c_out,
                                                           long long h, long long w, int k,
                                                           long long h_out, long long w_out,
                                                           int stride, int padding, int dilation)
{
    __shared__ float dw_s[MAX_DW];
    __shared__ float pw_s[MAX_CIN];
    int co = blockIdx.x;
    int taps = k * k;
    for (int i = threadIdx.x; i < c_in * taps; i += blockDim.x) dw_s[i] = dw[i];
    for (int ci = threadIdx.x; ci < c_in; ci += blockDim.x) pw_s[ci] = pw[(long long)co * c_in + ci];
    __syncthreads();  // sync-after-weight-load

    long long ow = (long long)blockIdx.y * blockDim.x + threadIdx.x;
    if (ow >= w_out) return;
    long long oh = (long long)blockIdx.z % h_out;
    long long n = (long long)blockIdx.z / h_out;
    long long ih0 = oh * stride - padding;
    long long iw0 = ow * stride - padding;
    float acc = 0.0f;
    for (int ci = 0; ci < c_in; ++ci) {
        const float* xc = x + (n * c_in + ci) * h * w;
        const float* fc = dw_s + ci * taps;
        float depth = 0.0f;
        for (int kh = 0; kh < k; ++kh) {
            long long ih = ih0 + (long long)kh * dilation;
            if (ih < 0 || ih >= h) continue;
            for (int kw = 0; kw < k; ++kw) {
                long long iw = iw0 + (long long)kw * dilation;
                if (iw < 0 || iw >= w) continue;
                depth += fc[kh * k + kw] * xc[ih * w + iw];
            }
        }
        acc += pw_s[ci] * depth;
    }
    out[((n * c_out + co) * h_out + oh) * w_out + ow] = acc;
}
"""

BLOCK = 256  # threads per block: consecutive output columns of one row
MAX_DW = 8192  # the kernel's shared copy of every depthwise filter (in_channels * k * k floats)
MAX_CIN = 1024  # the kernel's shared pointwise row

# 86_conv_depthwise_separable_2D.py's size constants (same names, same values).
batch_size = 16
in_channels = 64
out_channels = 128
kernel_size = 3
width = 512
height = 512
stride = 1
padding = 1
dilation = 1


def ref(x, depthwise_weight, pointwise_weight):
    import torch.nn.functional as F

    depth = F.conv2d(x, depthwise_weight, None, stride, padding, dilation, in_channels)
    return F.conv2d(depth, pointwise_weight)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 3:
        raise ValueError(f"kb_conv_depthwise_separable_2d: expected inputs [x, depthwise.weight, pointwise.weight], "
                         f"got {len(inputs)}")
    x, dw, pw = inputs
    for label, t in (("x", x), ("depthwise.weight", dw), ("pointwise.weight", pw)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 4:
            raise ValueError(f"kb_conv_depthwise_separable_2d: {label} must be a contiguous 4-D float32 tensor, got "
                             f"{t.dtype} of shape {tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, c_in, h, w = x.shape
    k = dw.shape[2]
    c_out = pw.shape[0]
    if tuple(dw.shape) != (c_in, 1, k, k) or tuple(pw.shape) != (c_out, c_in, 1, 1):
        raise ValueError(f"kb_conv_depthwise_separable_2d: depthwise.weight {tuple(dw.shape)} and pointwise.weight "
                         f"{tuple(pw.shape)} do not fit x of shape {tuple(x.shape)}")
    if c_in * k * k > MAX_DW or c_in > MAX_CIN:
        raise ValueError(f"kb_conv_depthwise_separable_2d: {c_in} channels of {k} x {k} filters exceed the kernel's "
                         f"shared memory ({MAX_DW} filter taps, {MAX_CIN} channels)")
    extent = dilation * (k - 1) + 1
    h_out = (h + 2 * padding - extent) // stride + 1
    w_out = (w + 2 * padding - extent) // stride + 1
    if min(n, c_in, c_out, h_out, w_out) < 1:
        raise ValueError(f"kb_conv_depthwise_separable_2d: x {tuple(x.shape)} gives no output for a {k} x {k} filter, "
                         f"stride {stride}, padding {padding}, dilation {dilation}")
    grid = (c_out, (w_out + BLOCK - 1) // BLOCK, n * h_out)
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"kb_conv_depthwise_separable_2d: grid {grid} exceeds CUDA's limits (x {tuple(x.shape)})")
    out = torch.empty((n, c_out, h_out, w_out), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, dw.data_ptr()), (ctypes.c_void_p, pw.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()), (ctypes.c_int, c_in), (ctypes.c_int, c_out),
            (ctypes.c_longlong, h), (ctypes.c_longlong, w), (ctypes.c_int, k),
            (ctypes.c_longlong, h_out), (ctypes.c_longlong, w_out),
            (ctypes.c_int, stride), (ctypes.c_int, padding), (ctypes.c_int, dilation)]
    return out, grid, (BLOCK, 1, 1), args


def _input_size(out_size):
    # The input extent that gives `out_size` outputs along one axis (at least one element).
    return max(1, (out_size - 1) * stride + dilation * (kernel_size - 1) + 1 - 2 * padding)


def t0_original(t, device):
    # Exactly 86_conv_depthwise_separable_2D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, height, width)
    return [x.to(device)]


def signed_odd_sizes(t, device):
    # Input planes of 1 x 1, 1 x 257, 3 x 300, 7 x 33 and 2 x 5; signed values (standard deviation 4: a
    # depthwise tap times a pointwise weight is below 0.05, so unit values would sit near the tolerance).
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, h, w = [(1, 1, 1), (2, 1, 257), (1, 3, 300), (3, 7, 33), (2, 2, 5)][t]
    return [(torch.randn(n, in_channels, h, w, generator=g) * 4.0).to(device)]


def channel_impulses(t, device):
    # One spike (10 to 20) per (image, channel) on a zero plane: the corners for the first four
    # channels, random points for the rest.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, oh, ow = [(1, 9, 40), (2, 6, 19), (1, 4, 261)][t]
    h, w = _input_size(oh), _input_size(ow)
    x = torch.zeros(n, in_channels, h, w)
    rows = torch.randint(0, h, (in_channels,), generator=g)
    cols = torch.randint(0, w, (in_channels,), generator=g)
    corners = min(4, in_channels)
    rows[:corners] = torch.tensor([0, 0, h - 1, h - 1])[:corners]
    cols[:corners] = torch.tensor([0, w - 1, 0, w - 1])[:corners]
    channels = torch.arange(in_channels)
    for b in range(n):
        x[b, channels, rows, cols] = 10.0 + 10.0 * torch.rand(in_channels, generator=g)
    return [x.to(device)]


def scaled_channels(t, device):
    # Positive x, each (image, channel) plane times its own factor, 0.1 to 100.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, oh, ow = [(3, 6, 50), (2, 15, 21), (4, 1, 64)][t]
    scale = 10.0 ** (torch.rand(n, in_channels, 1, 1, generator=g) * 3 - 1)
    return [(torch.rand(n, in_channels, _input_size(oh), _input_size(ow), generator=g) * scale).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_odd_sizes", 5, signed_odd_sizes),
        ("channel_impulses", 3, channel_impulses),
        ("scaled_channels", 3, scaled_channels),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(1, in_channels, 8, 64, generator=g)]),
            ("misaligned", [torch.randn(2, in_channels, 7, 13, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv_depthwise_separable_2d"] = dict(
        kb_file="86_conv_depthwise_separable_2D.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv_depthwise_separable_2d_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("depthwise.weight", "pointwise.weight"),
    )
