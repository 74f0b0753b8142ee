"""kb_conv_transpose2d: KernelBench level 1's 57_conv_transposed_2D__square_input__square_kernel.py.

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_conv_transpose2d.py

and `kb_file` resolves in its `level1` folder. The Model is an nn.ConvTranspose2d(in_channels,
out_channels, kernel_size) left at its defaults: stride 1, no padding, no output padding,
dilation 1, one group, bias=False. Its weight has shape (in_channels, out_channels, kernel_size,
kernel_size), and forward(x), x of shape (batch, in_channels, height, width), is

    out[n, co, i, j] = sum over ci, a, b < kernel_size (with the source inside x) of x[n, ci, i - a, j - b] * w[ci, co, a, b]

of shape (batch, out_channels, height + kernel_size - 1, width + kernel_size - 1). The weight is
the Model's own `conv_transpose2d.weight` (seed 42), appended by the harness to every trial's
inputs (`model_state`): ref and launch get [x, weight]. Stride, padding, output padding, dilation
and groups are not parameters of the kernel: the Model never sets them, so no suite could check
them.

The kernel gathers rather than scatters, so no two threads write one output: one thread per
output element sums, for each input channel, the taps (a, b) whose source (i - a, j - b) lies
inside x, the tap range clipped per axis (a from max(0, i - height + 1) to
min(kernel_size - 1, i), and likewise b). Each output plane, taken in row-major order, is cut into
256-position blocks along grid.x; grid.y is the out channel and grid.z the batch, so a warp reads
consecutive columns of x and broadcasts one weight from shared memory. The block stages its out
channel's weights (strided by out_channels * kernel_size^2 in the weight) CI_TILE input channels
at a time; threads past the plane's end clamp to its last position so that they still stage and
meet both barriers, and discard the sum.

At the real size (x 8 x 64 x 1024 x 1024; out 8 x 64 x 1026 x 1026 = 539 million elements, 2.2 GB,
each a sum of up to 576 terms: about 0.6 TFLOP) grid is (4113, 64, 8) and every offset is a long
long. T0's inputs are all positive. The targeted suites:
- signed_shapes: signed inputs on a 1 x 1 input (the output is the kernel itself, weighted per
  channel), one row, one column, and odd non-square planes straddling a block edge; a batch of
  one: a kernel that swaps height and width or clips the tap range wrongly at an edge fails.
- impulses: zeros but for a few large signed spikes, in the input's four corners among others,
  each in its own (batch, channel): every output is one weight times a spike, so flipped taps, a
  weight read as (out, in, a, b), a swapped (a, b) or the wrong channel or batch shows directly.
- channel_levels: every (batch, channel) plane a signed constant plus small noise, so the
  interior weighs each channel's whole weight tile by its level and the border keeps only part
  of it: channel, batch and edge mix-ups are off by a whole level.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define CI_TILE 8
#define KK_MAX 49

extern "C" __global__ void conv_transpose2d_nchw_f32(const float* __restrict__ x, const float* __restrict__ w,
                                                     float* __restrict__ out, long long cin, long long cout,
                                                     long long h, long long wd, int k, long long hout,
                                                     long long wout)
{
    __shared__ float ws[CI_TILE * KK_MAX];
    long long plane = hout * wout;
    long long p = (long long)blockIdx.x * BLOCK + threadIdx.x;
    long long co = blockIdx.y;
    long long n = blockIdx.z;
    long long pc = p < plane ? p : plane - 1;
    long long oh = pc / wout;
    long long ow = pc % wout;
    int a_lo = oh - h + 1 > 0 ? (int)(oh - h + 1) : 0;
    int a_hi = oh < k - 1 ? (int)oh : k - 1;
    int b_lo = ow - wd + 1 > 0 ? (int)(ow - wd + 1) : 0;
    int b_hi = ow < k - 1 ? (int)ow : k - 1;
    int kk = k * k;
    const float* xn = x + n * cin * h * wd + oh * wd + ow;

    float acc = 0.0f;
    for (long long c0 = 0; c0 < cin; c0 += CI_TILE) {
        int nc = cin - c0 < CI_TILE ? (int)(cin - c0) : CI_TILE;
        for (int j = threadIdx.x; j < nc * kk; j += BLOCK) ws[j] = w[((c0 + j / kk) * cout + co) * kk + j % kk];
        __syncthreads();  // sync-after-weight-stage
        for (int c = 0; c < nc; ++c) {
            const float* xc = xn + (c0 + c) * h * wd;
            const float* wk = ws + c * kk;
            for (int a = a_lo; a <= a_hi; ++a) {
                const float* xr = xc - a * wd;
                for (int b = b_lo; b <= b_hi; ++b) acc += xr[-b] * wk[a * k + b];
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

# 57_conv_transposed_2D__square_input__square_kernel.py's size constants (same names, same values).
batch_size = 8
in_channels = 64
out_channels = 64
kernel_size = 3
height = 1024
width = 1024


def ref(x, weight):
    import torch

    return torch.nn.functional.conv_transpose2d(x, weight)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv_transpose2d: expected inputs [x, conv_transpose2d.weight], got {len(inputs)}")
    x, w = inputs
    for label, t in (("x", x), ("conv_transpose2d.weight", w)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 4:
            raise ValueError(f"kb_conv_transpose2d: {label} must be a contiguous 4-D float32 tensor, got {t.dtype} "
                             f"of shape {tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, cin, h, wd = x.shape
    wcin, cout, k, k2 = w.shape
    if wcin != cin:
        raise ValueError(f"kb_conv_transpose2d: x has {cin} channels but the weight {tuple(w.shape)} "
                         f"(in, out, k, k) expects {wcin}")
    if k != k2 or not 1 <= k * k <= KK_MAX:
        raise ValueError(f"kb_conv_transpose2d: the weight's window {k} x {k2} must be square and hold at most "
                         f"{KK_MAX} taps")
    if n < 1 or cin < 1 or cout < 1 or h < 1 or wd < 1:
        raise ValueError(f"kb_conv_transpose2d: empty input or weight: x {tuple(x.shape)}, weight {tuple(w.shape)}")
    if n > 65535 or cout > 65535:
        raise ValueError(f"kb_conv_transpose2d: batch {n} and out channels {cout} must each fit the grid's 65535")
    hout, wout = h + k - 1, wd + k - 1
    out = torch.empty((n, cout, hout, wout), dtype=torch.float32, device=x.device)
    grid = ((hout * wout + BLOCK - 1) // BLOCK, cout, n)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, w.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, cin), (ctypes.c_longlong, cout), (ctypes.c_longlong, h), (ctypes.c_longlong, wd),
            (ctypes.c_int, k), (ctypes.c_longlong, hout), (ctypes.c_longlong, wout)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 57_conv_transposed_2D__square_input__square_kernel.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def signed_shapes(t):
    # Signed inputs, magnitude ~1 (sums of up to in_channels * kernel_size^2 terms: no
    # cancellation beyond the tolerance). Inputs 1 x 1, one row, one column, and odd non-square
    # planes whose outputs hold 255, 323 and 609 positions; batches of one to three.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    batch, oh, ow = [(1, kernel_size, kernel_size), (2, kernel_size, 41), (3, 31, kernel_size), (1, 15, 17),
                     (2, 17, 19), (2, 21, 29)][t]
    return [torch.randn(batch, in_channels, oh - kernel_size + 1, ow - kernel_size + 1, generator=g)]


def impulses(t):
    # Zeros but for eight spikes of magnitude 5 to 20, signed, four of them in the input's
    # corners, each in a random (batch, channel).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    batch, hh, ww = [(2, 18, 21), (1, 7, 38), (3, 15, 9), (2, 1, 6)][t]
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
    batch, hh, ww = [(3, 24, 22), (2, 17, 35), (4, 10, 10)][t]
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
            ("misaligned", [torch.randn(2, in_channels, 9, 13, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv_transpose2d"] = dict(
        kb_file="57_conv_transposed_2D__square_input__square_kernel.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv_transpose2d_nchw_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv_transpose2d.weight",),
    )
