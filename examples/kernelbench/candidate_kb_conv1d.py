"""kb_conv1d: KernelBench level 1's 67_conv_standard_1D.py (nn.Conv1d, no bias).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_conv1d.py

and `kb_file="67_conv_standard_1D.py"` resolves in its `level1` folder. The Model is an
nn.Conv1d(in_channels, out_channels, kernel_size) left at its defaults: stride 1, no padding,
dilation 1, one group, bias=False. forward(x) is therefore the plain cross-correlation

    out[n, co, l] = sum over ci < in_channels, k < kernel_size of x[n, ci, l + k] * w[co, ci, k]

with length_out = length - kernel_size + 1. The weight is the Model's own `conv1d.weight` (drawn
under seed 42), which the harness appends to every trial's inputs (`model_state`): ref and launch
get [x, weight]. The kernel computes exactly this configuration; stride, padding, dilation and
groups are not parameters of it, because the Model never sets them and no suite could tell a
kernel that mishandled them from one that did not.

One thread per output element: a 256-thread block covers 256 consecutive output positions of one
(batch, out channel) row (grid.x along the length, grid.y the out channel, grid.z the batch), so a
warp's loads of x are consecutive and its weight reads are one shared-memory broadcast. The block
stages the weights of its out channel in shared memory, CI_TILE input channels at a time, and
every thread walks those channels and the kernel taps. Threads past the row's end clamp their
position to the last one so that they still stage weights and meet both barriers; they discard
the sum.

At the real size (x 32 x 64 x 131072, out 32 x 128 x 131070: 537 million outputs, 2 GB, each a
192-term sum, about 0.2 TFLOP) grid is (512, 128, 32) and every offset is a long long. T0's inputs
are all positive, so its outputs are one-signed sums. The targeted suites:
- signed_shapes: signed inputs, batch of one, lengths where the kernel just fits (one output),
  lengths just past a block's 256 and odd: a kernel that overruns the row, drops a partial block
  or gets length_out wrong fails here.
- impulses: x is zero but for a few large spikes, the first and last positions of the row
  included, each in its own (batch, channel): every output is one weight times a spike or zero,
  so a flipped kernel (a convolution instead of PyTorch's correlation), a tap offset by one or a
  spike read from the wrong channel or batch shows as a wrong weight at a known place.
- channel_levels: each (batch, channel) plane is a signed constant plus small noise, so the output
  weighs each channel's whole weight row by its own level: a kernel that reads the wrong
  channel's weights or the wrong batch's plane, or stages only part of a CI_TILE chunk, is off by
  a whole level.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define CI_TILE 8
#define K_MAX 64

extern "C" __global__ void conv1d_ncl_f32(const float* __restrict__ x, const float* __restrict__ w,
                                          float* __restrict__ out, long long cin, long long cout,
                                          long long len, int k, long long lout)
{
    __shared__ float ws[CI_TILE * K_MAX];
    long long l = (long long)blockIdx.x * BLOCK + threadIdx.x;
    long long co = blockIdx.y;
    long long n = blockIdx.z;
    long long lc = l < lout ? l : lout - 1;
    const float* xn = x + n * cin * len + lc;
    const float* wc = w + co * cin * k;

    float acc = 0.0f;
    for (long long c0 = 0; c0 < cin; c0 += CI_TILE) {
        int nc = cin - c0 < CI_TILE ? (int)(cin - c0) : CI_TILE;
        for (int j = threadIdx.x; j < nc * k; j += BLOCK) ws[j] = wc[c0 * k + j];
        __syncthreads();  // sync-after-weight-stage
        for (int c = 0; c < nc; ++c) {
            const float* xc = xn + (c0 + c) * len;
            const float* wk = ws + c * k;
            for (int t = 0; t < k; ++t) acc += xc[t] * wk[t];
        }
        __syncthreads();  // sync-before-restage
    }
    if (l < lout) out[(n * cout + co) * lout + l] = acc;
}
"""

BLOCK = 256  # threads per block; the kernel's grid.x arithmetic assumes exactly this many
CI_TILE = 8  # input channels whose weights a block stages at once
K_MAX = 64  # the largest kernel the shared weight tile holds

# 67_conv_standard_1D.py's size constants (same names, same values).
batch_size = 32
in_channels = 64
out_channels = 128
kernel_size = 3
length = 131072


def ref(x, weight):
    import torch

    return torch.nn.functional.conv1d(x, weight)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv1d: expected inputs [x, conv1d.weight], got {len(inputs)}")
    x, w = inputs
    for label, t, dims in (("x", x, 3), ("conv1d.weight", w, 3)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != dims:
            raise ValueError(f"kb_conv1d: {label} must be a contiguous {dims}-D float32 tensor, got {t.dtype} of "
                             f"shape {tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, cin, length_in = x.shape
    cout, wcin, k = w.shape
    if wcin != cin:
        raise ValueError(f"kb_conv1d: x has {cin} channels but the weight {tuple(w.shape)} expects {wcin}")
    if not 1 <= k <= K_MAX:
        raise ValueError(f"kb_conv1d: kernel size {k} outside [1, {K_MAX}] (the shared weight tile)")
    if length_in < k:
        raise ValueError(f"kb_conv1d: length {length_in} is shorter than the kernel ({k}): no output")
    if n < 1 or cin < 1 or cout < 1:
        raise ValueError(f"kb_conv1d: empty batch or channels: x {tuple(x.shape)}, weight {tuple(w.shape)}")
    if n > 65535 or cout > 65535:
        raise ValueError(f"kb_conv1d: batch {n} and out channels {cout} must each fit the grid's 65535")
    lout = length_in - k + 1
    out = torch.empty((n, cout, lout), dtype=torch.float32, device=x.device)
    grid = ((lout + BLOCK - 1) // BLOCK, cout, n)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, w.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, cin), (ctypes.c_longlong, cout), (ctypes.c_longlong, length_in),
            (ctypes.c_int, k), (ctypes.c_longlong, lout)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 67_conv_standard_1D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, length)
    return [x]


def signed_shapes(t):
    # Signed inputs at lengths chosen for the block geometry: the kernel just fits (one output per
    # row), one tap more, a row one past and one short of a 256-thread block, odd lengths, and a
    # batch of one. Magnitude ~1 over a sum of in_channels * kernel_size terms: no cancellation
    # beyond the tolerance.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    batch, extra = [(1, 0), (3, 1), (2, 256), (1, 254), (2, 100), (5, 36)][t]
    return [torch.randn(batch, in_channels, kernel_size + extra, generator=g)]


def impulses(t):
    # Zeros but for a few spikes of magnitude 5 to 20, signed, at the row's first and last
    # positions and at random ones, each in its own (batch, channel).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    batch, size = [(2, 40), (1, 300), (3, 17), (2, kernel_size)][t]
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
    # Each (batch, channel) plane a signed level of magnitude up to 2 plus noise of 0.05: rows over
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
            ("misaligned", [torch.randn(3, in_channels, kernel_size + 40, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv1d"] = dict(
        kb_file="67_conv_standard_1D.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv1d_ncl_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv1d.weight",),
    )
