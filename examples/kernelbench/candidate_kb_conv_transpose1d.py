"""kb_conv_transpose1d: KernelBench level 1's 64_conv_transposed_1D.py (nn.ConvTranspose1d, no bias).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_conv_transpose1d.py

and `kb_file="64_conv_transposed_1D.py"` resolves in its `level1` folder. The Model is an
nn.ConvTranspose1d(in_channels, out_channels, kernel_size) left at its defaults: stride 1, no
padding, no output padding, dilation 1, one group, bias=False. Its weight has shape
(in_channels, out_channels, kernel_size), and forward(x) scatters every input position into
kernel_size outputs:

    out[n, co, o] = sum over ci, k < kernel_size with 0 <= o - k < length of x[n, ci, o - k] * w[ci, co, k]

of shape (batch, out_channels, length + kernel_size - 1). The weight is the Model's own
`conv1d_transpose.weight` (seed 42), appended by the harness to every trial's inputs
(`model_state`): ref and launch get [x, weight]. Stride, padding, output padding, dilation and
groups are not parameters of the kernel: the Model never sets them, so no suite could check them.

The kernel gathers rather than scatters, so no two threads write one output: one thread per
output element sums, for each input channel, the taps k whose source o - k lies inside the row
(k from max(0, o - length + 1) to min(kernel_size - 1, o): fewer taps in the first and last
kernel_size - 1 outputs). A 256-thread block covers 256 consecutive outputs of one (batch, out
channel) row (grid.x along the length, grid.y the out channel, grid.z the batch), so a warp's
loads of x are consecutive and its weight reads are one shared-memory broadcast. The block stages
its out channel's weights (strided by out_channels * kernel_size in the weight) CI_TILE input
channels at a time; threads past the row's end clamp to its last output so that they still stage
and meet both barriers, and discard the sum.

At the real size (x 64 x 128 x 65536; out 64 x 128 x 65538 = 537 million elements, 2.1 GB, each a
sum of up to 384 terms: about 0.4 TFLOP) grid is (257, 128, 64) and every offset is a long long.
T0's inputs are all positive. The targeted suites:
- signed_shapes: signed inputs, rows of one input position (the output is the kernel itself,
  weighted), two, and lengths whose outputs straddle a 256-thread block; a batch of one: a kernel
  that gets length_out or the clipped tap range at either end wrong fails here.
- impulses: zeros but for a few large signed spikes, at the row's first and last input positions
  among others, each in its own (batch, channel): every output is one weight times a spike, so a
  kernel that correlates instead of convolving (flipped taps), shifts by one, reads the weight as
  (out, in, k) instead of (in, out, k), or takes the wrong channel or batch shows directly.
- channel_levels: every (batch, channel) row a signed constant plus small noise, so the interior
  outputs weigh each input channel's weight row by its level and the kernel_size - 1 outputs at
  each end keep only part of it: channel, batch and edge mix-ups are off by a whole level.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define CI_TILE 8
#define K_MAX 64

extern "C" __global__ void conv_transpose1d_ncl_f32(const float* __restrict__ x, const float* __restrict__ w,
                                                    float* __restrict__ out, long long cin, long long cout,
                                                    long long len, int k, long long lout)
{
    __shared__ float ws[CI_TILE * K_MAX];
    long long o = (long long)blockIdx.x * BLOCK + threadIdx.x;
    long long co = blockIdx.y;
    long long n = blockIdx.z;
    long long oc = o < lout ? o : lout - 1;
    int t_lo = oc - len + 1 > 0 ? (int)(oc - len + 1) : 0;
    int t_hi = oc < k - 1 ? (int)oc : k - 1;
    const float* xn = x + n * cin * len + oc;

    float acc = 0.0f;
    for (long long c0 = 0; c0 < cin; c0 += CI_TILE) {
        int nc = cin - c0 < CI_TILE ? (int)(cin - c0) : CI_TILE;
        for (int j = threadIdx.x; j < nc * k; j += BLOCK) ws[j] = w[((c0 + j / k) * cout + co) * k + j % k];
        __syncthreads();  // sync-after-weight-stage
        for (int c = 0; c < nc; ++c) {
            const float* xc = xn + (c0 + c) * len;
            const float* wk = ws + c * k;
            for (int t = t_lo; t <= t_hi; ++t) acc += xc[-t] * wk[t];
        }
        __syncthreads();  // sync-before-restage
    }
    if (o < lout) out[(n * cout + co) * lout + o] = acc;
}
"""

BLOCK = 256  # threads per block; the kernel's grid.x arithmetic assumes exactly this many
CI_TILE = 8  # input channels whose weights a block stages at once
K_MAX = 64  # the largest kernel the shared weight tile holds

# 64_conv_transposed_1D.py's size constants (same names, same values).
batch_size = 64
in_channels = 128
out_channels = 128
kernel_size = 3
length = 65536


def ref(x, weight):
    import torch

    return torch.nn.functional.conv_transpose1d(x, weight)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv_transpose1d: expected inputs [x, conv1d_transpose.weight], got {len(inputs)}")
    x, w = inputs
    for label, t in (("x", x), ("conv1d_transpose.weight", w)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 3:
            raise ValueError(f"kb_conv_transpose1d: {label} must be a contiguous 3-D float32 tensor, got {t.dtype} "
                             f"of shape {tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, cin, length_in = x.shape
    wcin, cout, k = w.shape
    if wcin != cin:
        raise ValueError(f"kb_conv_transpose1d: x has {cin} channels but the weight {tuple(w.shape)} (in, out, k) "
                         f"expects {wcin}")
    if not 1 <= k <= K_MAX:
        raise ValueError(f"kb_conv_transpose1d: kernel size {k} outside [1, {K_MAX}] (the shared weight tile)")
    if n < 1 or cin < 1 or cout < 1 or length_in < 1:
        raise ValueError(f"kb_conv_transpose1d: empty input or weight: x {tuple(x.shape)}, weight {tuple(w.shape)}")
    if n > 65535 or cout > 65535:
        raise ValueError(f"kb_conv_transpose1d: batch {n} and out channels {cout} must each fit the grid's 65535")
    lout = length_in + k - 1
    out = torch.empty((n, cout, lout), dtype=torch.float32, device=x.device)
    grid = ((lout + BLOCK - 1) // BLOCK, cout, n)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, w.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, cin), (ctypes.c_longlong, cout), (ctypes.c_longlong, length_in),
            (ctypes.c_int, k), (ctypes.c_longlong, lout)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 64_conv_transposed_1D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, length)
    return [x]


def signed_shapes(t):
    # Signed inputs, magnitude ~1 (sums of up to in_channels * kernel_size terms: no cancellation
    # beyond the tolerance). Input lengths 1 and 2 (every output at an edge), and lengths whose
    # outputs run one short of, one past and well past a block, odd; batches of one to five.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    batch, size = [(1, 1), (3, 2), (2, 256 - kernel_size), (1, 258 - kernel_size), (2, 600), (5, 33)][t]
    return [torch.randn(batch, in_channels, size, generator=g)]


def impulses(t):
    # Zeros but for six spikes of magnitude 5 to 20, signed, at the row's first and last input
    # positions and at random ones, each in its own (batch, channel).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    batch, size = [(2, 40), (1, 300), (3, 17), (2, 1)][t]
    x = torch.zeros(batch, in_channels, size)
    spikes = 6
    nb = torch.randint(0, batch, (spikes,), generator=g)
    ci = torch.randint(0, in_channels, (spikes,), generator=g)
    at = torch.randint(0, size, (spikes,), generator=g)
    at[0], at[1] = 0, size - 1
    sign = torch.where(torch.rand(spikes, generator=g) < 0.5, -1.0, 1.0)
    x[nb, ci, at] = sign * (5.0 + 15.0 * torch.rand(spikes, generator=g))
    return [x]


def channel_levels(t):
    # Each (batch, channel) row a signed level of magnitude up to 2 plus noise of 0.05: rows over
    # several blocks, the last one partial.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    batch, size = [(4, 600), (2, 513), (3, 77)][t]
    levels = torch.randn(batch, in_channels, 1, generator=g) * 2.0
    return [levels + 0.05 * torch.randn(batch, in_channels, size, generator=g)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_shapes", 6, signed_shapes),
        ("impulses", 4, impulses),
        ("channel_levels", 3, channel_levels),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, in_channels, 256, generator=g)]),
            ("misaligned", [torch.randn(3, in_channels, 45, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv_transpose1d"] = dict(
        kb_file="64_conv_transposed_1D.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv_transpose1d_ncl_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv1d_transpose.weight",),
    )
