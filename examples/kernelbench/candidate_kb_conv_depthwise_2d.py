"""kb_conv_depthwise_2d: KernelBench level 1's 82_conv_depthwise_2D_square_input_square_kernel.py.

forward(x) is self.conv2d(x), an nn.Conv2d(in_channels, in_channels, kernel_size, stride, padding,
groups=in_channels, bias=False): every channel c of the (N, C, H, W) input is convolved with its
own k x k filter weight[c, 0], zero padded by `padding`, at stride `stride`:
out[n, c, oh, ow] = sum over (kh, kw) of weight[c, 0, kh, kw] * x[n, c, oh*s - p + kh, ow*s - p + kw],
with H_out = (H + 2p - k) / s + 1 (floor), W_out likewise. The weight is the official Model's
(seed 42): `model_state` hands conv2d.weight to ref and launch after each trial's x.

One thread per output element. A 256-thread block holds one channel (blockIdx.x), 256
consecutive output columns of one row (blockIdx.y) and one (image, output row) pair (blockIdx.z,
n * H_out + oh), so x is read coalesced along the row and the k x k filter, copied into shared
memory first, is the same for the whole block. Threads past the row's end help load the filter
and then leave. Offsets are 64-bit (the real input is 16 x 64 x 512 x 512, 268M elements, and the
index math is kept wide throughout). Grid at the real size (k 3, stride 1, padding 0, output
510 x 510): (64, 2, 16 * 510).

Suites besides T0_original (get_inputs() exactly, seeded 1000 + t):
- signed_odd_sizes: signed x whose output planes are 1 x 1 (the window just fits), one row of
  257 or 300 columns (a second, partial block), or odd rectangles, with batches of 1 to 3: a
  row guard or block offset that is off, or a window that reaches one tap too far, shows.
- plane_impulses: x is zero except at each plane's four corners and a few random points, so the
  output around each point is that channel's filter, tap by tap: a flipped, transposed or
  shifted filter index, or another channel's filter, is off by a whole weight.
- scaled_planes: positive x with each (image, channel) plane scaled by its own factor from 0.1 to
  100, so a kernel that reads the right taps of the wrong plane is off by the ratio of two scales.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define MAX_TAPS 1024

extern "C" __global__ void conv_depthwise_2d_f32(const float* __restrict__ x, const float* __restrict__ weight,
                                                 float* __restrict__ out, int channels, long long h, long long w,
                                                 int k, long long h_out, long long w_out, int stride, int padding)
{
    __shared__ float w_c[MAX_TAPS];
    int c = blockIdx.x;
    int taps = k * k;
    for (int i = threadIdx.x; i < taps; i += blockDim.x) w_c[i] = weight[(long long)c * taps + i];
    __syncthreads();  // sync-after-filter-load

    long long ow = (long long)blockIdx.y * blockDim.x + threadIdx.x;
    if (ow >= w_out) return;
    long long oh = (long long)blockIdx.z % h_out;
    long long n = (long long)blockIdx.z / h_out;
    const float* xc = x + (n * channels + c) * h * w;
    long long ih0 = oh * stride - padding;
    long long iw0 = ow * stride - padding;
    float acc = 0.0f;
    for (int kh = 0; kh < k; ++kh) {
        long long ih = ih0 + kh;
        if (ih < 0 || ih >= h) continue;
        for (int kw = 0; kw < k; ++kw) {
            long long iw = iw0 + kw;
            if (iw < 0 || iw >= w) continue;
            acc += w_c[kh * k + kw] * xc[ih * w + iw];
        }
    }
    out[((n * channels + c) * h_out + oh) * w_out + ow] = acc;
}
"""

BLOCK = 256  # threads per block: consecutive output columns of one row
MAX_TAPS = 1024  # the kernel's shared filter holds this many taps (k up to 32)

# 82_conv_depthwise_2D_square_input_square_kernel.py's size constants (same names, same values).
batch_size = 16
in_channels = 64
kernel_size = 3
width = 512
height = 512
stride = 1
padding = 0


def ref(x, weight):
    import torch

    return torch.nn.functional.conv2d(x, weight, None, stride, padding, 1, in_channels)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv_depthwise_2d: expected inputs [x, conv2d.weight], got {len(inputs)}")
    x, weight = inputs
    for label, t in (("x", x), ("conv2d.weight", weight)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 4:
            raise ValueError(f"kb_conv_depthwise_2d: {label} must be a contiguous 4-D float32 tensor, got {t.dtype} "
                             f"of shape {tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, c, h, w = x.shape
    k = weight.shape[2]
    if tuple(weight.shape) != (c, 1, k, k):
        raise ValueError(f"kb_conv_depthwise_2d: conv2d.weight {tuple(weight.shape)} is not ({c}, 1, k, k) for x "
                         f"of shape {tuple(x.shape)}")
    if k * k > MAX_TAPS:
        raise ValueError(f"kb_conv_depthwise_2d: a {k} x {k} filter exceeds the kernel's {MAX_TAPS} shared taps")
    h_out = (h + 2 * padding - k) // stride + 1
    w_out = (w + 2 * padding - k) // stride + 1
    if min(n, c, h_out, w_out) < 1:
        raise ValueError(f"kb_conv_depthwise_2d: x {tuple(x.shape)} gives no output for a {k} x {k} filter, "
                         f"stride {stride}, padding {padding}")
    grid = (c, (w_out + BLOCK - 1) // BLOCK, n * h_out)
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"kb_conv_depthwise_2d: grid {grid} exceeds CUDA's limits (x {tuple(x.shape)})")
    out = torch.empty((n, c, h_out, w_out), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, weight.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_int, c), (ctypes.c_longlong, h), (ctypes.c_longlong, w), (ctypes.c_int, k),
            (ctypes.c_longlong, h_out), (ctypes.c_longlong, w_out), (ctypes.c_int, stride), (ctypes.c_int, padding)]
    return out, grid, (BLOCK, 1, 1), args


def _input_size(out_size):
    # The input extent that gives `out_size` outputs along one axis (the window just fits at the last).
    return (out_size - 1) * stride + kernel_size - 2 * padding


def t0_original(t, device):
    # Exactly 82_conv_depthwise_2D_square_input_square_kernel.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, height, width)
    return [x.to(device)]


def signed_odd_sizes(t, device):
    # Output planes (rows x columns) of 1 x 1, 1 x 257, 3 x 300, 7 x 33 and 2 x 1; signed values.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, oh, ow = [(1, 1, 1), (2, 1, 257), (1, 3, 300), (3, 7, 33), (2, 2, 1)][t]
    return [torch.randn(n, in_channels, _input_size(oh), _input_size(ow), generator=g).to(device)]


def plane_impulses(t, device):
    # Zero planes with a spike (10 to 20) at every corner and at six random points of each plane.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, oh, ow = [(1, 9, 40), (2, 5, 19), (1, 12, 270)][t]
    h, w = _input_size(oh), _input_size(ow)
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
    return [(torch.rand(n, in_channels, _input_size(oh), _input_size(ow), generator=g) * scale).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_odd_sizes", 5, signed_odd_sizes),
        ("plane_impulses", 3, plane_impulses),
        ("scaled_planes", 3, scaled_planes),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(1, in_channels, 8, 64, generator=g)]),
            ("misaligned", [torch.randn(2, in_channels, 7, 13, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv_depthwise_2d"] = dict(
        kb_file="82_conv_depthwise_2D_square_input_square_kernel.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv_depthwise_2d_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv2d.weight",),
    )
