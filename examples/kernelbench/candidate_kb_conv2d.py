"""kb_conv2d: KernelBench level 1's 63_conv_standard_2D__square_input__square_kernel.py (nn.Conv2d, no bias).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_conv2d.py

and `kb_file` resolves in its `level1` folder. The Model is an nn.Conv2d(in_channels,
out_channels, (kernel_size, kernel_size)) left at its defaults: stride 1, no padding, dilation 1,
one group, bias=False. forward(x), x of shape (batch, in_channels, height, width), is the plain
cross-correlation

    out[n, co, i, j] = sum over ci, a < kernel_size, b < kernel_size of x[n, ci, i + a, j + b] * w[co, ci, a, b]

of shape (batch, out_channels, height - kernel_size + 1, width - kernel_size + 1). The weight is
the Model's own `conv2d.weight` (seed 42), appended by the harness to every trial's inputs
(`model_state`): ref and launch get [x, weight]. Stride, padding, dilation and groups are not
parameters of the kernel: the Model never sets them, so no suite could check them.

One thread per output element: each output plane (height_out * width_out positions, taken in
row-major order) is cut into 256-position blocks along grid.x, grid.y is the out channel and
grid.z the batch, so a warp reads consecutive columns of x and broadcasts one weight from shared
memory. The block stages its out channel's weights CI_TILE input channels at a time (a
`CI_TILE * kernel_size^2` tile); threads past the plane's end clamp to its last position so that
they still stage and meet both barriers, and discard the sum.

At the real size (x 16 x 16 x 1024 x 1024; out 16 x 128 x 1022 x 1022 = 2,139,103,232 elements,
8.6 GB, just under 2^31, each a 144-term sum: about 0.6 TFLOP) grid is (4081, 128, 16) and every
offset is a long long; gate it on a GPU with memory to spare. T0's inputs are all positive. The
targeted suites:
- signed_shapes: signed inputs on planes where the kernel just fits (a 1 x 1 output), one row or
  one column of outputs, odd and non-square sizes that straddle a block edge: a kernel that swaps
  height and width, gets the output size wrong, or mishandles the partial last block fails.
- impulses: zeros but for a few large signed spikes, in the plane's four corners among others,
  each in its own (batch, channel): each output is a single weight times a spike, so a flipped
  kernel, a swapped tap (a, b) or a spike taken from the wrong channel or batch shows directly.
- channel_levels: every (batch, channel) plane a signed constant plus small noise, so each output
  is about the sum of its channels' weight tiles weighted by their levels: a kernel that mixes up
  channels, batches or a CI_TILE chunk's weights is off by a whole level.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define CI_TILE 8
#define KK_MAX 49

extern "C" __global__ void conv2d_nchw_f32(const float* __restrict__ x, const float* __restrict__ w,
                                           float* __restrict__ out, long long cin, long long cout,
                                           long long h, long long wd, int k, long long hout, long long wout)
{
    __shared__ float ws[CI_TILE * KK_MAX];
    long long plane = hout * wout;
    long long p = (long long)blockIdx.x * BLOCK + threadIdx.x;
    long long co = blockIdx.y;
    long long n = blockIdx.z;
    long long pc = p < plane ? p : plane - 1;
    long long oh = pc / wout;
    long long ow = pc % wout;
    int kk = k * k;
    const float* xn = x + n * cin * h * wd + oh * wd + ow;
    const float* wc = w + co * cin * kk;

    float acc = 0.0f;
    for (long long c0 = 0; c0 < cin; c0 += CI_TILE) {
        int nc = cin - c0 < CI_TILE ? (int)(cin - c0) : CI_TILE;
        for (int j = threadIdx.x; j < nc * kk; j += BLOCK) ws[j] = wc[c0 * kk + j];
        __syncthreads();  // sync-after-weight-stage
        for (int c = 0; c < nc; ++c) {
            const float* xc = xn + (c0 + c) * h * wd;
            const float* wk = ws + c * kk;
            for (int a = 0; a < k; ++a) {
                const float* xr = xc + a * wd;
                for (int b = 0; b < k; ++b) acc += xr[b] * wk[a * k + b];
            }
        }
        __syncthreads();  // sync-before-restage
    }
    if (p < plane) out[(n * cout + co) * plane + p] = acc;
}
"""

BLOCK = 256  # threads per block; the kernel's grid.x arithmetic assumes exactly this many
CI_TILE = 8  # input channels whose weights a block stages at once
KK_MAX = 49  # the largest kernel window (7 x 7) the shared weight tile holds

# 63_conv_standard_2D__square_input__square_kernel.py's size constants (same names, same values).
batch_size = 16
in_channels = 16
out_channels = 128
kernel_size = 3
width = 1024
height = 1024


def ref(x, weight):
    import torch

    return torch.nn.functional.conv2d(x, weight)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv2d: expected inputs [x, conv2d.weight], got {len(inputs)}")
    x, w = inputs
    for label, t in (("x", x), ("conv2d.weight", w)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 4:
            raise ValueError(f"kb_conv2d: {label} must be a contiguous 4-D float32 tensor, got {t.dtype} of shape "
                             f"{tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, cin, h, wd = x.shape
    cout, wcin, k, k2 = w.shape
    if wcin != cin:
        raise ValueError(f"kb_conv2d: x has {cin} channels but the weight {tuple(w.shape)} expects {wcin}")
    if k != k2 or not 1 <= k * k <= KK_MAX:
        raise ValueError(f"kb_conv2d: the weight's window {k} x {k2} must be square and hold at most {KK_MAX} taps")
    if h < k or wd < k:
        raise ValueError(f"kb_conv2d: the {h} x {wd} input is smaller than the {k} x {k} kernel: no output")
    if n < 1 or cin < 1 or cout < 1:
        raise ValueError(f"kb_conv2d: empty batch or channels: x {tuple(x.shape)}, weight {tuple(w.shape)}")
    if n > 65535 or cout > 65535:
        raise ValueError(f"kb_conv2d: batch {n} and out channels {cout} must each fit the grid's 65535")
    hout, wout = h - k + 1, wd - k + 1
    out = torch.empty((n, cout, hout, wout), dtype=torch.float32, device=x.device)
    grid = ((hout * wout + BLOCK - 1) // BLOCK, cout, n)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, w.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, cin), (ctypes.c_longlong, cout), (ctypes.c_longlong, h), (ctypes.c_longlong, wd),
            (ctypes.c_int, k), (ctypes.c_longlong, hout), (ctypes.c_longlong, wout)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 63_conv_standard_2D__square_input__square_kernel.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def signed_shapes(t):
    # Signed inputs, magnitude ~1 (the sums run over in_channels * kernel_size^2 terms: no
    # cancellation beyond the tolerance). Output planes: 1 x 1 (the kernel just fits), one row of
    # 41, one column of 31, one row of 257 (one past a block), non-square odd planes of 255 and
    # 323 positions; batches of one to three.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    batch, dh, dw = [(1, 0, 0), (2, 0, 40), (3, 30, 0), (1, 14, 16), (2, 0, 256), (2, 16, 18)][t]
    return [torch.randn(batch, in_channels, kernel_size + dh, kernel_size + dw, generator=g)]


def impulses(t):
    # Zeros but for eight spikes of magnitude 5 to 20, signed, four of them in the plane's
    # corners, each in a random (batch, channel).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    batch, hh, ww = [(2, 20, 23), (1, 9, 40), (3, 17, 11), (2, kernel_size, kernel_size + 5)][t]
    x = torch.zeros(batch, in_channels, hh, ww)
    spikes = 8
    nb = torch.randint(0, batch, (spikes,), generator=g)
    ci = torch.randint(0, in_channels, (spikes,), generator=g)
    ih = torch.randint(0, hh, (spikes,), generator=g)
    iw = torch.randint(0, ww, (spikes,), generator=g)
    ih[:4] = torch.tensor([0, 0, hh - 1, hh - 1])
    iw[:4] = torch.tensor([0, ww - 1, 0, ww - 1])
    sign = torch.where(torch.rand(spikes, generator=g) < 0.5, -1.0, 1.0)
    x[nb, ci, ih, iw] = sign * (5.0 + 15.0 * torch.rand(spikes, generator=g))
    return [x]


def channel_levels(t):
    # Each (batch, channel) plane a signed level of magnitude up to 2 plus noise of 0.05, planes of
    # several blocks with a partial last one.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    batch, hh, ww = [(3, 26, 24), (2, 19, 37), (4, 12, 12)][t]
    levels = torch.randn(batch, in_channels, 1, 1, generator=g) * 2.0
    return [levels + 0.05 * torch.randn(batch, in_channels, hh, ww, generator=g)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_shapes", 6, signed_shapes),
        ("impulses", 4, impulses),
        ("channel_levels", 3, channel_levels),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(1, in_channels, 32, 32, generator=g)]),
            ("misaligned", [torch.randn(2, in_channels, kernel_size + 8, kernel_size + 12, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv2d"] = dict(
        kb_file="63_conv_standard_2D__square_input__square_kernel.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv2d_nchw_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv2d.weight",),
    )
