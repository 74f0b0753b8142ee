"""kb_conv2d_dilated_padded: KernelBench level 1's
80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__.py.

forward(x) is self.conv2d(x), an nn.Conv2d(in_channels, out_channels, kernel_size=(kh, kw),
stride, padding=(ph, pw), dilation=(dh, dw), bias=False) on an (N, C_in, H, W) float32 input:
out[n, co, oh, ow] = sum over ci, a < kh, b < kw of weight[co, ci, a, b] *
x[n, ci, oh*stride - ph + a*dh, ow*stride - pw + b*dw], taps outside x counting as zero, with
H_out = (H + 2ph - dh*(kh - 1) - 1) / stride + 1 (floor), W_out likewise. The real problem uses
a (5, 9) kernel, stride 1, padding (2, 4), dilation (2, 3): the window spans 9 x 25 pixels. The
weight is the official Model's (seed 42): `model_state` hands conv2d.weight to ref and launch
after each trial's x.

One thread per output element. A 256-thread block holds one output channel (blockIdx.x), 256
consecutive output columns of one row (blockIdx.y) and one (image, output row) pair (blockIdx.z,
n * H_out + oh); it first copies its channel's C_in x kh x kw weights into shared memory, as
every thread reads all of them, then each thread walks the input channels and the window,
skipping rows and columns that fall in the padding. The output channel is the grid's fastest
axis, so the blocks resident together are the channels of the same rows and reread x from L2.
Offsets are 64-bit. Real size: x 8 x 32 x 512 x 512, output 8 x 64 x 508 x 496 (129M elements,
1440 multiply-adds each); grid (64, 2, 8 * 508).

Suites besides T0_original (get_inputs() exactly, seeded 1000 + t):
- signed_odd_sizes: signed x whose output planes are 1 x 1 (the dilated window just fits once
  the padding is added), a single row of 257 or 300 columns (a second, partial block), odd
  rectangles, batches of 1 to 3: a padding test off by one at any border, a dilation applied to
  the wrong axis, or a row guard or block offset that is off, shows.
- plane_impulses: x is zero but for spikes at each plane's corners and a few random points, so
  each output near one picks single weights: a tap index swapped between the axes, flipped, or
  dilated by the other axis's step is off by a whole weight, and spikes the dilated window skips
  must stay unseen.
- scaled_planes: positive x with each (image, channel) plane scaled by its own factor from 0.1 to
  100: reading the right taps of the wrong plane is off by the ratio of two scales.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define MAX_WEIGHTS 8192

extern "C" __global__ void conv2d_dilated_padded_f32(const float* __restrict__ x, const float* __restrict__ weight,
                                                     float* __restrict__ out, int c_in, int c_out,
                                                     long long h, long long w, int kh, int kw,
                                                     long long h_out, long long w_out, int stride,
                                                     int pad_h, int pad_w, int dil_h, int dil_w)
{
    __shared__ float w_co[MAX_WEIGHTS];
    int co = blockIdx.x;
    int row = c_in * kh * kw;
    for (int i = threadIdx.x; i < row; i += blockDim.x) w_co[i] = weight[(long long)co * row + i];
    __syncthreads();  // sync-after-weight-load

    long long ow = (long long)blockIdx.y * blockDim.x + threadIdx.x;
    if (ow >= w_out) return;
    long long oh = (long long)blockIdx.z % h_out;
    long long n = (long long)blockIdx.z / h_out;
    long long ih0 = oh * stride - pad_h;
    long long iw0 = ow * stride - pad_w;
    float acc = 0.0f;
    for (int ci = 0; ci < c_in; ++ci) {
        const float* xc = x + (n * c_in + ci) * h * w;
        const float* wc = w_co + ci * kh * kw;
        for (int a = 0; a < kh; ++a) {
            long long ih = ih0 + (long long)a * dil_h;
            if (ih < 0 || ih >= h) continue;
            for (int b = 0; b < kw; ++b) {
                long long iw = iw0 + (long long)b * dil_w;
                if (iw < 0 || iw >= w) continue;
                acc += wc[a * kw + b] * xc[ih * w + iw];
            }
        }
    }
    out[((n * c_out + co) * h_out + oh) * w_out + ow] = acc;
}
"""

BLOCK = 256  # threads per block: consecutive output columns of one row
MAX_WEIGHTS = 8192  # the kernel's shared weight block holds in_channels * kh * kw floats at most

# 80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__.py's size constants.
batch_size = 8
in_channels = 32
out_channels = 64
kernel_size = (5, 9)
width = 512
height = 512
stride = 1
padding = (2, 4)
dilation = (2, 3)


def ref(x, weight):
    import torch

    return torch.nn.functional.conv2d(x, weight, None, stride, padding, dilation)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv2d_dilated_padded: expected inputs [x, conv2d.weight], got {len(inputs)}")
    x, weight = inputs
    for label, t in (("x", x), ("conv2d.weight", weight)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 4:
            raise ValueError(f"kb_conv2d_dilated_padded: {label} must be a contiguous 4-D float32 tensor, got "
                             f"{t.dtype} of shape {tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, c_in, h, w = x.shape
    c_out, kh, kw = weight.shape[0], weight.shape[2], weight.shape[3]
    if tuple(weight.shape) != (c_out, c_in, kh, kw):
        raise ValueError(f"kb_conv2d_dilated_padded: conv2d.weight {tuple(weight.shape)} does not fit x of shape "
                         f"{tuple(x.shape)}")
    if c_in * kh * kw > MAX_WEIGHTS:
        raise ValueError(f"kb_conv2d_dilated_padded: {c_in} x {kh} x {kw} weights exceed the kernel's shared "
                         f"block of {MAX_WEIGHTS}")
    (pad_h, pad_w), (dil_h, dil_w) = padding, dilation
    h_out = (h + 2 * pad_h - dil_h * (kh - 1) - 1) // stride + 1
    w_out = (w + 2 * pad_w - dil_w * (kw - 1) - 1) // stride + 1
    if min(n, c_in, c_out, h_out, w_out) < 1:
        raise ValueError(f"kb_conv2d_dilated_padded: x {tuple(x.shape)} gives no output for a {kh} x {kw} kernel, "
                         f"stride {stride}, padding {padding}, dilation {dilation}")
    grid = (c_out, (w_out + BLOCK - 1) // BLOCK, n * h_out)
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"kb_conv2d_dilated_padded: grid {grid} exceeds CUDA's limits (x {tuple(x.shape)})")
    out = torch.empty((n, c_out, h_out, w_out), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, weight.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_int, c_in), (ctypes.c_int, c_out), (ctypes.c_longlong, h), (ctypes.c_longlong, w),
            (ctypes.c_int, kh), (ctypes.c_int, kw), (ctypes.c_longlong, h_out), (ctypes.c_longlong, w_out),
            (ctypes.c_int, stride), (ctypes.c_int, pad_h), (ctypes.c_int, pad_w),
            (ctypes.c_int, dil_h), (ctypes.c_int, dil_w)]
    return out, grid, (BLOCK, 1, 1), args


def _input_size(out_size, axis):
    # The input extent along `axis` (0 rows, 1 columns) giving `out_size` outputs, the last window
    # just fitting inside the padded input.
    extent = dilation[axis] * (kernel_size[axis] - 1) + 1
    return max(1, (out_size - 1) * stride + extent - 2 * padding[axis])


def t0_original(t, device):
    # Exactly the problem's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, height, width)
    return [x.to(device)]


def signed_odd_sizes(t, device):
    # Output planes of 1 x 1, 1 x 257, 2 x 300, 7 x 33 and 3 x 1; signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, oh, ow = [(1, 1, 1), (2, 1, 257), (1, 2, 300), (3, 7, 33), (2, 3, 1)][t]
    return [torch.randn(n, in_channels, _input_size(oh, 0), _input_size(ow, 1), generator=g).to(device)]


def plane_impulses(t, device):
    # Zero planes with a spike (10 to 20) at every corner and at six random points of each plane.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, oh, ow = [(1, 9, 40), (2, 5, 19), (1, 6, 270)][t]
    h, w = _input_size(oh, 0), _input_size(ow, 1)
    x = torch.zeros(n, in_channels, h, w)
    rows = torch.cat([torch.tensor([0, 0, h - 1, h - 1]), torch.randint(0, h, (6,), generator=g)])
    cols = torch.cat([torch.tensor([0, w - 1, 0, w - 1]), torch.randint(0, w, (6,), generator=g)])
    x[:, :, rows, cols] = 10.0 + 10.0 * torch.rand(n, in_channels, rows.numel(), generator=g)
    return [x.to(device)]


def scaled_planes(t, device):
    # Positive x, each (image, channel) plane times its own factor, 0.1 to 100.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, oh, ow = [(3, 6, 50), (2, 15, 21), (4, 1, 64)][t]
    scale = 10.0 ** (torch.rand(n, in_channels, 1, 1, generator=g) * 3 - 1)
    return [(torch.rand(n, in_channels, _input_size(oh, 0), _input_size(ow, 1), generator=g) * scale).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_odd_sizes", 5, signed_odd_sizes),
        ("plane_impulses", 3, plane_impulses),
        ("scaled_planes", 3, scaled_planes),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(1, in_channels, 16, 64, generator=g)]),
            ("misaligned", [torch.randn(2, in_channels, 9, 29, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv2d_dilated_padded"] = dict(
        kb_file="80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv2d_dilated_padded_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv2d.weight",),
    )
