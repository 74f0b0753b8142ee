"""kb_avgpool1d: KernelBench level 1's 44_Average_Pooling_1D.py (nn.AvgPool1d, padded, stride 1).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_avgpool1d.py

and `kb_file="44_Average_Pooling_1D.py"` resolves in its `level1` folder. The Model is
nn.AvgPool1d(kernel_size=8, stride=1, padding=4) with the layer's other defaults: the padding is
zeros that count in the mean (count_include_pad=True) and the output length is floor-mode,
L_out = (L + 2*padding - kernel_size) // stride + 1. For x (N, C, L),

    out[n, c, o] = (sum over j < kernel_size, 0 <= o*stride - padding + j < L of x[n, c, that position]) / kernel_size

Every window, the edge ones too, divides by kernel_size: ATen's divisor is the window clipped to
the padded length, and in floor mode no window reaches past the padding, so it is always the whole
window. The pooling parameters are the module constants below, passed to the kernel as arguments.

One thread per output element over a 1-D grid: thread i owns (plane, o) = (i / L_out, i % L_out),
plane = n * C + c, summing its in-range taps in float32. At the real size (x 64 x 128 x 65536,
2.1 GB; out 64 x 128 x 65537: 536,879,104 outputs) the grid is 2,097,184 blocks of 256, inside
grid.x's 2^31 - 1, and every index and offset is a long long. T0's inputs are uniform [0, 1); its
edge outputs (4 to 7 of 8 taps in range) already separate count_include_pad from a mean over the
in-range taps. The targeted suites:
- signed_shapes: signed values, lengths from 1 (still two outputs: the padding makes room) to
  just past a 256-thread block, one plane to several: a wrong L_out, an overrun of the row or a
  partial last block shows.
- impulses: zeros with a few spikes (the row's first and last positions too): each output is a
  spike / kernel_size exactly where its window holds one, so a window off by one, a wrong
  divisor or a wrong plane offset shows.
- levels: each plane a signed level plus little noise: interior outputs equal the level and edge
  outputs scale it by the in-range fraction, so a kernel that divides by the in-range count
  (count_include_pad=False) or reads another plane is off by a large part of a level.

The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void avgpool1d_f32(const float* __restrict__ x, float* __restrict__ out,
                                         long long planes, long long len, long long lout,
                                         int k, int stride, int pad)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= planes * lout) return;
    long long plane = i / lout;
    long long o = i - plane * lout;
    const float* row = x + plane * len;
    long long start = o * stride - pad;
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) {
        long long pos = start + j;
        if (pos < 0 || pos >= len) continue;
        acc += row[pos];
    }
    out[i] = acc / (float)k;
}
"""

BLOCK = 256

# 44_Average_Pooling_1D.py's size constants (same names, same values).
batch_size = 64
in_channels = 128
input_length = 65536
kernel_size = 8
stride = 1
padding = 4


def _min_length():
    # The shortest input that still gives one output (the padding makes room for the window).
    return max(1, kernel_size - 2 * padding)


def ref(x):
    import torch

    return torch.nn.functional.avg_pool1d(x, kernel_size, stride=stride, padding=padding)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_avgpool1d: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 3:
        raise ValueError(f"kb_avgpool1d: x must be a contiguous 3-D float32 tensor (N, C, L), got {x.dtype} of "
                         f"shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if kernel_size < 1 or stride < 1 or padding < 0:
        raise ValueError(f"kb_avgpool1d: bad pooling parameters kernel_size={kernel_size}, stride={stride}, "
                         f"padding={padding}")
    n, c, length = x.shape
    span = length + 2 * padding - kernel_size
    if span < 0:
        raise ValueError(f"kb_avgpool1d: length {length} is too short for the window (no output)")
    lout = span // stride + 1
    planes = n * c
    out = torch.empty((n, c, lout), dtype=torch.float32, device=x.device)
    total = planes * lout
    blocks = (total + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_avgpool1d: {total} outputs need more blocks than grid.x allows")
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, planes), (ctypes.c_longlong, length), (ctypes.c_longlong, lout),
            (ctypes.c_int, kernel_size), (ctypes.c_int, stride), (ctypes.c_int, padding)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 44_Average_Pooling_1D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, input_length)
    return [x.to(device)]


def signed_shapes(t, device):
    # The shortest length, one more, around a 256-thread block, odd lengths; one plane to several.
    # Signed values of magnitude ~3 over kernel_size-term sums: no cancellation near the tolerance.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    m = _min_length()
    n, c, length = [(1, 1, m), (2, 3, m + 1), (1, 5, 255), (3, 2, 257), (2, 7, 100), (1, 1, 1001)][t]
    return [(torch.randn(n, c, length, generator=g) * 3.0).to(device)]


def impulses(t, device):
    # Zeros but six signed spikes of magnitude 5 to 20, at the row's first and last positions and
    # at random ones, each in a random plane.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, c, length = [(2, 3, 50), (1, 4, 300), (3, 2, 17), (2, 2, 129)][t]
    x = torch.zeros(n, c, length)
    spikes = 6
    nb = torch.randint(0, n, (spikes,), generator=g)
    ch = torch.randint(0, c, (spikes,), generator=g)
    at = torch.randint(0, length, (spikes,), generator=g)
    at[0], at[1] = 0, length - 1
    sign = torch.where(torch.rand(spikes, generator=g) < 0.5, -1.0, 1.0)
    x[nb, ch, at] = sign * (5.0 + 15.0 * torch.rand(spikes, generator=g))
    return [x.to(device)]


def levels(t, device):
    # Each plane a signed level of magnitude ~2 to 6 plus noise of 0.05.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, c, length = [(4, 3, 60), (2, 5, 513), (3, 2, 77)][t]
    sign = torch.where(torch.rand(n, c, 1, generator=g) < 0.5, -1.0, 1.0)
    level = sign * (2.0 + 4.0 * torch.rand(n, c, 1, generator=g))
    return [(level + 0.05 * torch.randn(n, c, length, generator=g)).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_shapes", 6, signed_shapes),
        ("impulses", 4, impulses),
        ("levels", 3, levels),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, 4, 256, generator=g)]),
            ("misaligned", [torch.randn(3, 5, 77, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_avgpool1d"] = dict(
        kb_file="44_Average_Pooling_1D.py",
        cuda=CUDA_SOURCE,
        kernel_name="avgpool1d_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
