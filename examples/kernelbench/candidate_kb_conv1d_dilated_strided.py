"""kb_conv1d_dilated_strided: KernelBench level 1's 76_conv_standard_1D_dilated_strided__.py.

forward(x) is self.conv1d(x), an nn.Conv1d(in_channels, out_channels, kernel_size, stride,
dilation, bias=False) with no padding, on an (N, C_in, L) float32 signal:
out[n, co, l] = sum over ci and k of weight[co, ci, k] * x[n, ci, l*stride + k*dilation], with
L_out = (L - dilation*(kernel_size - 1) - 1) / stride + 1 (floor). The weight is the official
Model's (seed 42): `model_state` hands conv1d.weight to ref and launch after each trial's x.

One thread per output element. A 256-thread block holds one output channel (blockIdx.x), 256
consecutive output positions (blockIdx.y) and one signal (blockIdx.z); it first copies its
channel's C_in x kernel_size weights into shared memory, as every thread reads all of them.
The output channel is the grid's fastest axis, so the blocks resident together are the channels
of the same stretch of signal and reread it from L2. Offsets are 64-bit: the real input is
64 x 64 x 524280 (2.1G elements, just under 2^31) and the output 64 x 128 x 174758 (1.4G); grid
(128, 683, 64).

Suites besides T0_original (get_inputs() exactly, seeded 1000 + t):
- signed_odd_lengths: signed x whose outputs are 1 long (the dilated window just fits, with and
  without a spare sample or two that the stride skips), 257 or 300 long (a second, partial
  block), or odd, batches of 1 to 3: a guard or window that is off by one, or a stride or
  dilation applied to the wrong term, shows.
- tap_impulses: x is zero but for a few spikes per channel (the first and last sample among
  them): each output then picks single weights, so a tap, channel or dilation index that is off
  is off by a whole weight, and a spike the window should skip (between dilated taps) must stay
  unseen.
- scaled_signals: positive x with each (signal, channel) row scaled by its own factor from 0.1 to
  10: reading the right positions of the wrong row or signal is off by the ratio of two scales.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256
#define MAX_WEIGHTS 8192

extern "C" __global__ void conv1d_dilated_strided_f32(const float* __restrict__ x, const float* __restrict__ weight,
                                                      float* __restrict__ out, int c_in, int c_out, int k,
                                                      long long len, long long len_out, int stride, int dilation)
{
    __shared__ float w_co[MAX_WEIGHTS];
    int co = blockIdx.x;
    int row = c_in * k;
    for (int i = threadIdx.x; i < row; i += blockDim.x) w_co[i] = weight[(long long)co * row + i];
    __syncthreads();  // sync-after-weight-load

    long long l = (long long)blockIdx.y * blockDim.x + threadIdx.x;
    if (l >= len_out) return;
    long long n = blockIdx.z;
    const float* xs = x + n * c_in * len + l * stride;
    float acc = 0.0f;
    for (int ci = 0; ci < c_in; ++ci) {
        const float* xc = xs + (long long)ci * len;
        for (int kk = 0; kk < k; ++kk) acc += w_co[ci * k + kk] * xc[(long long)kk * dilation];
    }
    out[(n * c_out + co) * len_out + l] = acc;
}
"""

BLOCK = 256  # threads per block: consecutive output positions
MAX_WEIGHTS = 8192  # the kernel's shared weight row holds in_channels * kernel_size floats at most

# 76_conv_standard_1D_dilated_strided__.py's size constants (same names, same values).
batch_size = 64
in_channels = 64
out_channels = 128
kernel_size = 3
length = 524280
stride = 3
dilation = 4


def ref(x, weight):
    import torch

    return torch.nn.functional.conv1d(x, weight, None, stride, 0, dilation)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv1d_dilated_strided: expected inputs [x, conv1d.weight], got {len(inputs)}")
    x, weight = inputs
    for label, t in (("x", x), ("conv1d.weight", weight)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 3:
            raise ValueError(f"kb_conv1d_dilated_strided: {label} must be a contiguous 3-D float32 tensor, got "
                             f"{t.dtype} of shape {tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, c_in, length_in = x.shape
    c_out, k = weight.shape[0], weight.shape[2]
    if tuple(weight.shape) != (c_out, c_in, k):
        raise ValueError(f"kb_conv1d_dilated_strided: conv1d.weight {tuple(weight.shape)} does not fit x of shape "
                         f"{tuple(x.shape)}")
    if c_in * k > MAX_WEIGHTS:
        raise ValueError(f"kb_conv1d_dilated_strided: {c_in} x {k} weights exceed the kernel's shared row of "
                         f"{MAX_WEIGHTS}")
    len_out = (length_in - dilation * (k - 1) - 1) // stride + 1
    if min(n, c_in, c_out, len_out) < 1:
        raise ValueError(f"kb_conv1d_dilated_strided: x {tuple(x.shape)} gives no output for kernel {k}, stride "
                         f"{stride}, dilation {dilation}")
    grid = (c_out, (len_out + BLOCK - 1) // BLOCK, n)
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"kb_conv1d_dilated_strided: grid {grid} exceeds CUDA's limits (x {tuple(x.shape)})")
    out = torch.empty((n, c_out, len_out), dtype=torch.float32, device=x.device)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, weight.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_int, c_in), (ctypes.c_int, c_out), (ctypes.c_int, k),
            (ctypes.c_longlong, length_in), (ctypes.c_longlong, len_out),
            (ctypes.c_int, stride), (ctypes.c_int, dilation)]
    return out, grid, (BLOCK, 1, 1), args


def _input_length(out_len, spare=0):
    # The signal length giving `out_len` outputs, the last window just fitting, plus `spare` samples.
    return (out_len - 1) * stride + dilation * (kernel_size - 1) + 1 + spare


def t0_original(t, device):
    # Exactly 76_conv_standard_1D_dilated_strided__.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, length)
    return [x.to(device)]


def signed_odd_lengths(t, device):
    # Outputs 1 long (exact fit, then with stride - 1 spare samples), 257, 300 and 33 long; signed.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    n, out_len, spare = [(1, 1, 0), (2, 1, stride - 1), (1, 257, 0), (3, 33, 1), (2, 300, stride - 1)][t]
    return [torch.randn(n, in_channels, _input_length(out_len, spare), generator=g).to(device)]


def tap_impulses(t, device):
    # Zero rows with spikes (10 to 20) at the first and last sample and at five random samples.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, out_len = [(1, 40), (2, 19), (1, 270)][t]
    length_in = _input_length(out_len)
    x = torch.zeros(n, in_channels, length_in)
    where = torch.cat([torch.tensor([0, length_in - 1]), torch.randint(0, length_in, (5,), generator=g)])
    x[:, :, where] = 10.0 + 10.0 * torch.rand(n, in_channels, where.numel(), generator=g)
    return [x.to(device)]


def scaled_signals(t, device):
    # Positive x, each (signal, channel) row times its own factor, 0.1 to 10 (on a GPU the
    # official Model convolves in TF32: at 100 its error near a cancelling output passed 1e-2).
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, out_len = [(3, 50), (2, 211), (4, 7)][t]
    scale = 10.0 ** (torch.rand(n, in_channels, 1, generator=g) * 2 - 1)
    return [(torch.rand(n, in_channels, _input_length(out_len), generator=g) * scale).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_odd_lengths", 5, signed_odd_lengths),
        ("tap_impulses", 3, tap_impulses),
        ("scaled_signals", 3, scaled_signals),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, in_channels, 256, generator=g)]),
            ("misaligned", [torch.randn(1, in_channels, 101, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv1d_dilated_strided"] = dict(
        kb_file="76_conv_standard_1D_dilated_strided__.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv1d_dilated_strided_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv1d.weight",),
    )
