"""kb_maxpool2d: KernelBench level 1's 42_Max_Pooling_2D.py (nn.MaxPool2d, square window, padded).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_maxpool2d.py

and `kb_file="42_Max_Pooling_2D.py"` resolves in its `level1` folder. The Model is
nn.MaxPool2d(kernel_size=4, stride=1, padding=1, dilation=1), values only, floor mode: for
x (N, C, H, W), out[n, c, oy, ox] is the maximum of x[n, c, oy*stride - padding + a*dilation,
ox*stride - padding + b*dilation] over a, b < kernel_size, taking only the taps inside the image
(padding acts as -inf and never wins), with OH = (H + 2*padding - dilation*(kernel_size - 1) - 1)
// stride + 1 and OW likewise. A NaN wins over any number and stays, as in ATen
(`v > best || isnan(v)`). The pooling parameters are the module constants below, passed to the
kernel as arguments; the window is square, as the Model's int arguments make it.

One thread per output element over a 1-D grid: thread i owns (plane, oy, ox) with ox fastest
(plane = n * C + c), so a warp writes consecutive outputs of one output row and reads nearly
consecutive inputs per tap. At the real size (x 32 x 64 x 512 x 512, 2.1 GB; out 32 x 64 x 511
x 511: 534,775,808 outputs) the grid is 2,088,968 blocks of 256, inside grid.x's 2^31 - 1, and
every index and offset is a long long. T0's inputs are uniform [0, 1), its outputs near 1. The
targeted suites:
- signed_shapes: signed values, heights and widths from the smallest that gives one output to
  just past a 256-thread block's worth of columns, square and very unequal: a swapped H and W, a
  wrong OH/OW or a partial last block shows.
- all_negative: every value below -0.5, so the border windows (which hold padding) must come out
  negative: a kernel that pads with 0 instead of -inf writes 0 all round the border.
- impulses: a flat negative background with a few spikes (at the image corners too): each output
  is a spike exactly where its window holds one, so a window shifted by a row or a column, a
  wrong row pitch or a wrong plane offset moves the spikes.

The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#include <math_constants.h>

extern "C" __global__ void maxpool2d_f32(const float* __restrict__ x, float* __restrict__ out,
                                         long long planes, long long h, long long w,
                                         long long oh, long long ow,
                                         int k, int stride, int pad, int dil)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= planes * oh * ow) return;
    long long ox = i % ow;
    long long rest = i / ow;
    long long oy = rest % oh;
    long long plane = rest / oh;
    const float* img = x + plane * h * w;
    long long y0 = oy * stride - pad;
    long long x0 = ox * stride - pad;
    float best = -CUDART_INF_F;
    for (int a = 0; a < k; ++a) {
        long long yy = y0 + (long long)a * dil;
        if (yy < 0 || yy >= h) continue;
        for (int b = 0; b < k; ++b) {
            long long xx = x0 + (long long)b * dil;
            if (xx < 0 || xx >= w) continue;
            float v = img[yy * w + xx];
            if (v > best || v != v) best = v;
        }
    }
    out[i] = best;
}
"""

BLOCK = 256

# 42_Max_Pooling_2D.py's size constants (same names, same values).
batch_size = 32
channels = 64
height = 512
width = 512
kernel_size = 4
stride = 1
padding = 1
dilation = 1


def _min_side():
    # The smallest height or width that still gives one output row or column.
    return max(1, dilation * (kernel_size - 1) + 1 - 2 * padding)


def _out_side(size):
    span = size + 2 * padding - dilation * (kernel_size - 1) - 1
    return span // stride + 1 if span >= 0 else 0


def ref(x):
    import torch

    return torch.nn.functional.max_pool2d(x, kernel_size, stride=stride, padding=padding, dilation=dilation)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_maxpool2d: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 4:
        raise ValueError(f"kb_maxpool2d: x must be a contiguous 4-D float32 tensor (N, C, H, W), got {x.dtype} of "
                         f"shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if kernel_size < 1 or stride < 1 or dilation < 1 or padding < 0:
        raise ValueError(f"kb_maxpool2d: bad pooling parameters kernel_size={kernel_size}, stride={stride}, "
                         f"padding={padding}, dilation={dilation}")
    n, c, h, w = x.shape
    oh, ow = _out_side(h), _out_side(w)
    if oh < 1 or ow < 1:
        raise ValueError(f"kb_maxpool2d: a {h} x {w} image is too small for the dilated window (no output)")
    planes = n * c
    out = torch.empty((n, c, oh, ow), dtype=torch.float32, device=x.device)
    total = planes * oh * ow
    blocks = (total + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_maxpool2d: {total} outputs need more blocks than grid.x allows")
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, planes), (ctypes.c_longlong, h), (ctypes.c_longlong, w),
            (ctypes.c_longlong, oh), (ctypes.c_longlong, ow),
            (ctypes.c_int, kernel_size), (ctypes.c_int, stride), (ctypes.c_int, padding), (ctypes.c_int, dilation)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 42_Max_Pooling_2D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, channels, height, width)
    return [x.to(device)]


def signed_shapes(t, device):
    # The smallest image (one output), one more row than that, a row of outputs past 256, thin and
    # tall, odd sides. Signed values: no accumulation, so any magnitude is safe.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    m = _min_side()
    shape = [(1, 1, m, m), (2, 3, m + 1, m), (1, 2, m + 2, 300), (2, 1, 97, m + 3), (3, 2, 33, 45), (1, 5, 17, 65)][t]
    return [(torch.randn(shape, generator=g) * 3.0).to(device)]


def all_negative(t, device):
    # Every value in [-10.5, -0.5): the border windows' padded taps must lose to all of them.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(2, 3, 20, 20), (1, 4, 37, 9), (3, 2, _min_side() + 2, 50), (2, 2, 64, 31)][t]
    return [(-0.5 - 10.0 * torch.rand(shape, generator=g)).to(device)]


def impulses(t, device):
    # Background in [-2.01, -1.99]; eight spikes of 5 to 20 at the four corners of random planes
    # and at random places.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, c, h, w = [(2, 3, 24, 40), (1, 4, 50, 50), (3, 2, 11, 70), (2, 2, 65, 13)][t]
    x = -2.0 + 0.01 * torch.randn(n, c, h, w, generator=g).clamp(-1.0, 1.0)
    spikes = 8
    nb = torch.randint(0, n, (spikes,), generator=g)
    ch = torch.randint(0, c, (spikes,), generator=g)
    ys = torch.randint(0, h, (spikes,), generator=g)
    xs = torch.randint(0, w, (spikes,), generator=g)
    ys[:4] = torch.tensor([0, 0, h - 1, h - 1])
    xs[:4] = torch.tensor([0, w - 1, 0, w - 1])
    x[nb, ch, ys, xs] = 5.0 + 15.0 * torch.rand(spikes, generator=g)
    return [x.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_shapes", 6, signed_shapes),
        ("all_negative", 4, all_negative),
        ("impulses", 4, impulses),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, 3, 32, 64, generator=g)]),
            ("misaligned", [torch.randn(2, 3, 21, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_maxpool2d"] = dict(
        kb_file="42_Max_Pooling_2D.py",
        cuda=CUDA_SOURCE,
        kernel_name="maxpool2d_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
