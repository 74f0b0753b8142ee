"""kb_conv_transpose2d_grouped: KernelBench level 1's
75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__.py.

forward(x) is self.conv_transpose2d(x), an nn.ConvTranspose2d(in_channels, out_channels,
kernel_size=(kh, kw), stride=(sh, sw), padding=(ph, pw), dilation=(dh, dw), groups, bias=False)
with no output padding. Its weight is (C_in, C_out / groups, kh, kw); input channel ci of group
g = ci / (C_in / groups) feeds the output channels of the same group, and each input element
x[n, ci, i, j] adds x * weight[ci, co % (C_out / groups), a, b] to out[n, co, i*sh - ph + a*dh,
j*sw - pw + b*dw] (positions outside the output dropped). H_out = (H - 1)*sh - 2ph + dh*(kh - 1) + 1,
W_out likewise. The real problem: x 16 x 32 x 128 x 256, 64 output channels, a (3, 5) kernel,
stride (2, 3), padding (1, 2), dilation (2, 1), 4 groups; output 16 x 64 x 257 x 766. The
weight is the official Model's (seed 42): `model_state` hands conv_transpose2d.weight to ref and
launch after each trial's x.

A gather, one thread per output element: output (oh, ow) receives tap (a, b) from input row
ih = (oh + ph - a*dh) / sh when that division is exact and lands inside x (likewise for the
column), summed over the C_in / groups input channels of its group. A 256-thread block holds one
output channel (blockIdx.x), 256 consecutive output columns of one row (blockIdx.y) and one
(image, output row) pair (blockIdx.z, n * H_out + oh); it first copies the weights its channel
reads (C_in / groups x kh x kw, gathered from the weight's strided layout) into shared memory.
Offsets are 64-bit. Real size: 201M output elements; grid (64, 3, 16 * 257).

Suites besides T0_original (get_inputs() exactly, seeded 1000 + t):
- signed_odd_sizes: signed x of 1 x 1 (the output is 3 x 1 at the real parameters: only the
  taps the padding leaves inside), one row of 87 or 100 columns (outputs of 259 and 298 columns,
  a second, partial block), odd rectangles, batches of 1 to 3: the exact-division test, the
  range test at each border and the block offset all matter.
- plane_impulses: x is zero but for spikes at each plane's corners and a few random points, so
  the output around each spike is the spike times one group's weights, scattered at the
  stride and dilation: a stride or dilation applied on the wrong axis, a padding sign error, or
  a weight read with its two channel indices swapped is off by a whole weight.
- scaled_groups: positive x with each (image, channel) plane scaled by its own factor from 0.1
  to 100: gathering from another group's channels, or another image, is off by the ratio of
  two scales.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define MAX_WEIGHTS 8192

extern "C" __global__ void conv_transpose2d_grouped_f32(const float* __restrict__ x,
                                                         const float* __restrict__ weight,
                                                         float* __restrict__ out, int c_in, int c_out, int groups,
                                                         long long h, long long w, int kh, int kw,
                                                         long long h_out, long long w_out,
                                                         int stride_h, int stride_w, int pad_h, int pad_w,
                                                         int dil_h, int dil_w)
{
    __shared__ float w_co[MAX_WEIGHTS];
    int co = blockIdx.x;
    int cin_g = c_in / groups;
    int cout_g = c_out / groups;
    long long g = co / cout_g;
    long long co_local = co % cout_g;
    int taps = kh * kw;
    for (int i = threadIdx.x; i < cin_g * taps; i += blockDim.x) {
        long long ci = g * cin_g + i / taps;
        w_co[i] = weight[(ci * cout_g + co_local) * taps + i % taps];
    }
    __syncthreads();  // sync-after-weight-load

    long long ow = (long long)blockIdx.y * blockDim.x + threadIdx.x;
    if (ow >= w_out) return;
    long long oh = (long long)blockIdx.z % h_out;
    long long n = (long long)blockIdx.z / h_out;
    const float* xg = x + (n * c_in + g * cin_g) * h * w;
    float acc = 0.0f;
    for (int a = 0; a < kh; ++a) {
        long long th = oh + pad_h - (long long)a * dil_h;
        if (th < 0 || th % stride_h != 0) continue;
        long long ih = th / stride_h;
        if (ih >= h) continue;
        for (int b = 0; b < kw; ++b) {
            long long tw = ow + pad_w - (long long)b * dil_w;
            if (tw < 0 || tw % stride_w != 0) continue;
            long long iw = tw / stride_w;
            if (iw >= w) continue;
            for (int ci = 0; ci < cin_g; ++ci) acc += w_co[ci * taps + a * kw + b] * xg[(ci * h + ih) * w + iw];
        }
    }
    out[((n * c_out + co) * h_out + oh) * w_out + ow] = acc;
}
"""

BLOCK = 256  # threads per block: consecutive output columns of one row
MAX_WEIGHTS = 8192  # the kernel's shared weight block holds (in_channels / groups) * kh * kw floats at most

# 75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__.py's
# size constants (same names, same values).
batch_size = 16
in_channels = 32
out_channels = 64
kernel_size = (3, 5)
height = 128
width = 256
stride = (2, 3)
padding = (1, 2)
dilation = (2, 1)
groups = 4


def ref(x, weight):
    import torch

    return torch.nn.functional.conv_transpose2d(x, weight, None, stride, padding, 0, groups, dilation)


def _output_size(size, axis):
    # ConvTranspose2d's output extent along `axis` (0 rows, 1 columns), no output padding.
    return (size - 1) * stride[axis] - 2 * padding[axis] + dilation[axis] * (kernel_size[axis] - 1) + 1


def launch(inputs, torch):
    import ctypes

    name = "kb_conv_transpose2d_grouped"
    if len(inputs) != 2:
        raise ValueError(f"{name}: expected inputs [x, conv_transpose2d.weight], got {len(inputs)}")
    x, weight = inputs
    for label, t in (("x", x), ("conv_transpose2d.weight", weight)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 4:
            raise ValueError(f"{name}: {label} must be a contiguous 4-D float32 tensor, got {t.dtype} of shape "
                             f"{tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, c_in, h, w = x.shape
    cout_g, kh, kw = weight.shape[1], weight.shape[2], weight.shape[3]
    c_out = cout_g * groups
    if c_in % groups != 0 or tuple(weight.shape) != (c_in, cout_g, kh, kw) or (kh, kw) != tuple(kernel_size):
        raise ValueError(f"{name}: conv_transpose2d.weight {tuple(weight.shape)} does not fit x of shape "
                         f"{tuple(x.shape)} with {groups} groups and a {kernel_size} kernel")
    if (c_in // groups) * kh * kw > MAX_WEIGHTS:
        raise ValueError(f"{name}: {c_in // groups} x {kh} x {kw} weights per output channel exceed the kernel's "
                         f"shared block of {MAX_WEIGHTS}")
    h_out, w_out = _output_size(h, 0), _output_size(w, 1)
    if min(n, c_in, c_out, h_out, w_out) < 1:
        raise ValueError(f"{name}: x {tuple(x.shape)} gives an empty output ({h_out} x {w_out})")
    grid = (c_out, (w_out + BLOCK - 1) // BLOCK, n * h_out)
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"{name}: grid {grid} exceeds CUDA's limits (x {tuple(x.shape)})")
    out = torch.empty((n, c_out, h_out, w_out), dtype=torch.float32, device=x.device)
    (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w) = stride, padding, dilation
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, weight.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_int, c_in), (ctypes.c_int, c_out), (ctypes.c_int, groups),
            (ctypes.c_longlong, h), (ctypes.c_longlong, w), (ctypes.c_int, kh), (ctypes.c_int, kw),
            (ctypes.c_longlong, h_out), (ctypes.c_longlong, w_out),
            (ctypes.c_int, stride_h), (ctypes.c_int, stride_w), (ctypes.c_int, pad_h), (ctypes.c_int, pad_w),
            (ctypes.c_int, dil_h), (ctypes.c_int, dil_w)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly the problem's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, height, width)
    return [x.to(device)]


def signed_odd_sizes(t, device):
    # Inputs of 1 x 1, 1 x 87, 2 x 100, 7 x 11 and 3 x 1; signed values (standard deviation 4: each
    # output sums only about 20 products of weights below 0.07, so unit values would sit near the tolerance).
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, h, w = [(1, 1, 1), (2, 1, 87), (1, 2, 100), (3, 7, 11), (2, 3, 1)][t]
    return [(torch.randn(n, in_channels, h, w, generator=g) * 4.0).to(device)]


def plane_impulses(t, device):
    # Zero planes with a spike (10 to 20) at every corner and at four random points of each plane.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, h, w = [(1, 6, 14), (2, 4, 9), (1, 3, 90)][t]
    x = torch.zeros(n, in_channels, h, w)
    rows = torch.cat([torch.tensor([0, 0, h - 1, h - 1]), torch.randint(0, h, (4,), generator=g)])
    cols = torch.cat([torch.tensor([0, w - 1, 0, w - 1]), torch.randint(0, w, (4,), generator=g)])
    x[:, :, rows, cols] = 10.0 + 10.0 * torch.rand(n, in_channels, rows.numel(), generator=g)
    return [x.to(device)]


def scaled_groups(t, device):
    # Positive x, each (image, channel) plane times its own factor, 0.1 to 100.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, h, w = [(3, 5, 17), (2, 9, 8), (4, 2, 30)][t]
    scale = 10.0 ** (torch.rand(n, in_channels, 1, 1, generator=g) * 3 - 1)
    return [(torch.rand(n, in_channels, h, w, generator=g) * scale).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_odd_sizes", 5, signed_odd_sizes),
        ("plane_impulses", 3, plane_impulses),
        ("scaled_groups", 3, scaled_groups),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(1, in_channels, 4, 32, generator=g)]),
            ("misaligned", [torch.randn(2, in_channels, 3, 7, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv_transpose2d_grouped"] = dict(
        kb_file="75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv_transpose2d_grouped_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv_transpose2d.weight",),
    )
