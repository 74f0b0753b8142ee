"""kb_conv_transpose3d: KernelBench level 1's 61_conv_transposed_3D__square_input__square_kernel.py.

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_conv_transpose3d.py

and `kb_file` resolves in its `level1` folder. The Model is an nn.ConvTranspose3d(in_channels,
out_channels, (kernel_size,) * 3) left at its defaults: stride 1, no padding, no output padding,
dilation 1, one group, bias=False. Its weight has shape (in_channels, out_channels, kernel_size,
kernel_size, kernel_size); x has shape (batch, in_channels, depth, height, width), below simply
axes s0, s1, s2. forward(x) is

    out[n, co, i, j, l] = sum over ci, a, b, c < kernel_size (source inside x) of x[n, ci, i - a, j - b, l - c] * w[ci, co, a, b, c]

of shape (batch, out_channels, s0 + kernel_size - 1, s1 + kernel_size - 1, s2 + kernel_size - 1).
The weight is the Model's own `conv_transpose3d.weight` (seed 42), appended by the harness to
every trial's inputs (`model_state`): ref and launch get [x, weight]. Stride, padding, output
padding, dilation and groups are not parameters of the kernel: the Model never sets them, so no
suite could check them.

The kernel gathers rather than scatters, so no two threads write one output: one thread per
output element sums, for each input channel, the taps (a, b, c) whose source lies inside x, the
tap range clipped per axis (a from max(0, i - s0 + 1) to min(kernel_size - 1, i), and likewise b
and c). Each output volume, taken in row-major order, is cut into 256-position blocks along
grid.x; grid.y is the out channel and grid.z the batch, so a warp reads consecutive positions of
x's last axis and broadcasts one weight from shared memory. The block stages its out channel's
weights (strided by out_channels * kernel_size^3 in the weight) CI_TILE input channels at a time;
threads past the volume's end clamp to its last position so that they still stage and meet both
barriers, and discard the sum.

At the real size (x 8 x 48 x 64^3; out 8 x 48 x 66^3 = 110 million elements, 441 MB, each a sum of
up to 1296 terms: about 0.29 TFLOP) grid is (1124, 48, 8) and every offset is a long long. T0's
inputs are all positive. The targeted suites:
- signed_shapes: signed inputs on a 1 x 1 x 1 input (the output is the kernel itself, weighted
  per channel), lines along each axis, and odd non-cubic volumes straddling a block edge; a batch
  of one: a kernel that permutes the axes or clips the tap range wrongly at an edge fails.
- impulses: zeros but for a few large signed spikes, two opposite corners of the input among
  them, each in its own (batch, channel): every output is one weight times a spike, so flipped
  taps, a weight read as (out, in, ...), a permuted tap or the wrong channel or batch shows.
- channel_levels: every (batch, channel) volume a signed constant plus small noise, so the
  interior weighs each channel's whole weight cube by its level and the border keeps only part
  of it: channel, batch and edge mix-ups are off by a whole level.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define CI_TILE 8
#define KKK_MAX 125

extern "C" __global__ void conv_transpose3d_ncdhw_f32(const float* __restrict__ x, const float* __restrict__ w,
                                                      float* __restrict__ out, long long cin, long long cout,
                                                      long long s0, long long s1, long long s2, int k,
                                                      long long o0, long long o1, long long o2)
{
    __shared__ float ws[CI_TILE * KKK_MAX];
    long long vol = o0 * o1 * o2;
    long long p = (long long)blockIdx.x * BLOCK + threadIdx.x;
    long long co = blockIdx.y;
    long long n = blockIdx.z;
    long long pc = p < vol ? p : vol - 1;
    long long i2 = pc % o2;
    long long i1 = (pc / o2) % o1;
    long long i0 = pc / (o2 * o1);
    int a_lo = i0 - s0 + 1 > 0 ? (int)(i0 - s0 + 1) : 0;
    int a_hi = i0 < k - 1 ? (int)i0 : k - 1;
    int b_lo = i1 - s1 + 1 > 0 ? (int)(i1 - s1 + 1) : 0;
    int b_hi = i1 < k - 1 ? (int)i1 : k - 1;
    int c_lo = i2 - s2 + 1 > 0 ? (int)(i2 - s2 + 1) : 0;
    int c_hi = i2 < k - 1 ? (int)i2 : k - 1;
    int kkk = k * k * k;
    long long in_vol = s0 * s1 * s2;
    const float* xn = x + n * cin * in_vol + (i0 * s1 + i1) * s2 + i2;

    float acc = 0.0f;
    for (long long c0 = 0; c0 < cin; c0 += CI_TILE) {
        int nc = cin - c0 < CI_TILE ? (int)(cin - c0) : CI_TILE;
        for (int j = threadIdx.x; j < nc * kkk; j += BLOCK) ws[j] = w[((c0 + j / kkk) * cout + co) * kkk + j % kkk];
        __syncthreads();  // sync-after-weight-stage
        for (int c = 0; c < nc; ++c) {
            const float* xc = xn + (c0 + c) * in_vol;
            const float* wk = ws + c * kkk;
            for (int a = a_lo; a <= a_hi; ++a) {
                for (int b = b_lo; b <= b_hi; ++b) {
                    const float* xr = xc - (a * s1 + b) * s2;
                    const float* wr = wk + (a * k + b) * k;
                    for (int e = c_lo; e <= c_hi; ++e) acc += xr[-e] * wr[e];
                }
            }
        }
        __syncthreads();  // sync-before-restage
    }
    if (p < vol) out[(n * cout + co) * vol + p] = acc;
}
"""

BLOCK = 256  # threads per block; the kernel's grid.x arithmetic assumes exactly this many
CI_TILE = 8  # input channels whose weights a block stages at once
KKK_MAX = 125  # the largest kernel window (5 x 5 x 5) the shared weight tile holds

# 61_conv_transposed_3D__square_input__square_kernel.py's size constants (same names, same values).
batch_size = 8
in_channels = 48
out_channels = 48
kernel_size = 3
depth = 64
height = 64
width = 64


def ref(x, weight):
    import torch

    return torch.nn.functional.conv_transpose3d(x, weight)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv_transpose3d: expected inputs [x, conv_transpose3d.weight], got {len(inputs)}")
    x, w = inputs
    for label, t in (("x", x), ("conv_transpose3d.weight", w)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 5:
            raise ValueError(f"kb_conv_transpose3d: {label} must be a contiguous 5-D float32 tensor, got {t.dtype} "
                             f"of shape {tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, cin, s0, s1, s2 = x.shape
    wcin, cout, k, k1, k2 = w.shape
    if wcin != cin:
        raise ValueError(f"kb_conv_transpose3d: x has {cin} channels but the weight {tuple(w.shape)} "
                         f"(in, out, k, k, k) expects {wcin}")
    if not k == k1 == k2 or not 1 <= k ** 3 <= KKK_MAX:
        raise ValueError(f"kb_conv_transpose3d: the weight's window {(k, k1, k2)} must be a cube of at most "
                         f"{KKK_MAX} taps")
    if n < 1 or cin < 1 or cout < 1 or min(s0, s1, s2) < 1:
        raise ValueError(f"kb_conv_transpose3d: empty input or weight: x {tuple(x.shape)}, weight {tuple(w.shape)}")
    if n > 65535 or cout > 65535:
        raise ValueError(f"kb_conv_transpose3d: batch {n} and out channels {cout} must each fit the grid's 65535")
    o0, o1, o2 = s0 + k - 1, s1 + k - 1, s2 + k - 1
    out = torch.empty((n, cout, o0, o1, o2), dtype=torch.float32, device=x.device)
    grid = ((o0 * o1 * o2 + BLOCK - 1) // BLOCK, cout, n)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, w.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, cin), (ctypes.c_longlong, cout),
            (ctypes.c_longlong, s0), (ctypes.c_longlong, s1), (ctypes.c_longlong, s2), (ctypes.c_int, k),
            (ctypes.c_longlong, o0), (ctypes.c_longlong, o1), (ctypes.c_longlong, o2)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 61_conv_transposed_3D__square_input__square_kernel.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, depth, height, width)
    return [x]


def signed_shapes(t):
    # Signed inputs, magnitude ~1 (sums of up to in_channels * kernel_size^3 terms: no
    # cancellation beyond the tolerance). Input extents: 1 x 1 x 1, a line along each axis, and
    # odd non-cubic volumes; batches of one to three.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    batch, shape = [(1, (1, 1, 1)), (2, (1, 1, 40)), (3, (23, 1, 1)), (1, (1, 9, 7)), (2, (3, 5, 9)),
                    (2, (7, 5, 4))][t]
    return [torch.randn(batch, in_channels, *shape, generator=g)]


def impulses(t):
    # Zeros but for eight spikes of magnitude 5 to 20, signed, two in opposite corners of the
    # input, each in a random (batch, channel).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    batch, shape = [(2, (6, 7, 8)), (1, (3, 11, 5)), (3, (1, 4, 6)), (2, (5, 5, 5))][t]
    x = torch.zeros(batch, in_channels, *shape)
    spikes = 8
    nb = torch.randint(0, batch, (spikes,), generator=g)
    ci = torch.randint(0, in_channels, (spikes,), generator=g)
    at = [torch.randint(0, s, (spikes,), generator=g) for s in shape]
    for axis, s in enumerate(shape):
        at[axis][0], at[axis][1] = 0, s - 1
    sign = torch.where(torch.rand(spikes, generator=g) < 0.5, -1.0, 1.0)
    x[nb, ci, at[0], at[1], at[2]] = sign * (5.0 + 15.0 * torch.rand(spikes, generator=g))
    return [x]


def channel_levels(t):
    # Each (batch, channel) volume a signed level of magnitude up to 2 plus noise of 0.05, volumes
    # of several blocks with a partial last one.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    batch, shape = [(3, (7, 6, 9)), (2, (9, 8, 5)), (2, (4, 11, 6))][t]
    levels = torch.randn(batch, in_channels, 1, 1, 1, generator=g) * 2.0
    return [levels + 0.05 * torch.randn(batch, in_channels, *shape, generator=g)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_shapes", 6, signed_shapes),
        ("impulses", 4, impulses),
        ("channel_levels", 3, channel_levels),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(1, in_channels, 4, 4, 32, generator=g)]),
            ("misaligned", [torch.randn(2, in_channels, 3, 5, 7, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv_transpose3d"] = dict(
        kb_file="61_conv_transposed_3D__square_input__square_kernel.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv_transpose3d_ncdhw_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv_transpose3d.weight",),
    )
