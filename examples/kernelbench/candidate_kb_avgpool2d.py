"""kb_avgpool2d: KernelBench level 1's 45_Average_Pooling_2D.py (nn.AvgPool2d, 11 x 11, stride 11).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_avgpool2d.py

and `kb_file="45_Average_Pooling_2D.py"` resolves in its `level1` folder. get_init_inputs() gives
only kernel_size (11), so the Model is nn.AvgPool2d(11) with stride = kernel_size (stride=None),
no padding and floor mode: the windows tile the image without overlap and the rows and columns
past the last whole window are dropped. For x (N, C, H, W), OH = (H - kernel_size) // stride + 1
(OW likewise) and

    out[n, c, oy, ox] = (sum over a, b < kernel_size of x[n, c, oy*stride + a, ox*stride + b]) / kernel_size^2

The kernel keeps a padding argument with an in-range test on each tap, as ATen's kernel does;
launch passes the Model's padding, 0, and its stride, kernel_size. With count_include_pad and
floor mode the divisor is always the whole window, kernel_size^2.

One thread per output element over a 1-D grid: thread i owns (plane, oy, ox) with ox fastest
(plane = n * C + c), summing its 121 taps in float32. At the real size x is 16 x 64 x 2048 x 2048
float32, 4,294,967,296 elements (17.2 GB): past 2^32, so every index and offset is a long long
(a 32-bit plane offset would wrap from plane 512 on). out is 16 x 64 x 186 x 186 (35,426,304
outputs; two rows and two columns of each image dropped): 138,384 blocks of 256. T0's inputs are
uniform [0, 1), so its outputs all sit near 0.5; the targeted suites:
- signed_shapes: signed values on images of one window, of sides just past a multiple of
  kernel_size (the remainder dropped), a single row of windows wider than a 256-thread block and
  unequal sides: a wrong OH/OW, swapped H and W, or a window read from the dropped margin shows.
- impulses: zeros with a few large spikes (at the corners too, which may lie in the dropped
  margin): each output is a spike / kernel_size^2 exactly where its window holds one, so a window
  off by a row or a column, a wrong divisor or a wrong plane offset shows.
- ramps: each plane a signed level plus a ramp along rows and columns: a window's mean is the
  ramp at its centre, so a window shifted by one row or column is off by the slope, and one
  read from another plane by a whole level.

The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void avgpool2d_f32(const float* __restrict__ x, float* __restrict__ out,
                                         long long planes, long long h, long long w,
                                         long long oh, long long ow,
                                         int k, int stride, int pad)
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
    float acc = 0.0f;
    for (int a = 0; a < k; ++a) {
        long long yy = y0 + a;
        if (yy < 0 || yy >= h) continue;
        const float* line = img + yy * w;
        for (int b = 0; b < k; ++b) {
            long long xx = x0 + b;
            if (xx < 0 || xx >= w) continue;
            acc += line[xx];
        }
    }
    out[i] = acc / (float)(k * k);
}
"""

BLOCK = 256

# 45_Average_Pooling_2D.py's size constants (same names, same values).
batch_size = 16
channels = 64
height = 2048
width = 2048
kernel_size = 11


def ref(x):
    import torch

    return torch.nn.functional.avg_pool2d(x, kernel_size)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_avgpool2d: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 4:
        raise ValueError(f"kb_avgpool2d: x must be a contiguous 4-D float32 tensor (N, C, H, W), got {x.dtype} of "
                         f"shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if kernel_size < 1:
        raise ValueError(f"kb_avgpool2d: bad kernel_size {kernel_size}")
    step, pad = kernel_size, 0  # the Model's stride=None (the window size) and padding=0
    n, c, h, w = x.shape
    if h + 2 * pad < kernel_size or w + 2 * pad < kernel_size:
        raise ValueError(f"kb_avgpool2d: a {h} x {w} image is smaller than the {kernel_size} x {kernel_size} window")
    oh = (h + 2 * pad - kernel_size) // step + 1
    ow = (w + 2 * pad - kernel_size) // step + 1
    planes = n * c
    out = torch.empty((n, c, oh, ow), dtype=torch.float32, device=x.device)
    total = planes * oh * ow
    blocks = (total + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_avgpool2d: {total} outputs need more blocks than grid.x allows")
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, planes), (ctypes.c_longlong, h), (ctypes.c_longlong, w),
            (ctypes.c_longlong, oh), (ctypes.c_longlong, ow),
            (ctypes.c_int, kernel_size), (ctypes.c_int, step), (ctypes.c_int, pad)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 45_Average_Pooling_2D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, channels, height, width)
    return [x.to(device)]


def signed_shapes(t, device):
    # One window; sides one past a multiple of the window (a dropped row and column); a single row
    # of 261 windows (past a 256-thread block); tall and thin; odd sides. Signed values of
    # magnitude ~3 over kernel_size^2-term sums: no cancellation near the tolerance.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    k = kernel_size
    shape = [(1, 1, k, k), (2, 3, 2 * k + 1, k + 1), (1, 1, k, 261 * k + 3), (2, 2, 7 * k + 5, k),
             (3, 2, 3 * k + 2, 4 * k + 7), (1, 4, 2 * k - 1, 5 * k + k // 2)][t]
    return [(torch.randn(shape, generator=g) * 3.0).to(device)]


def impulses(t, device):
    # Zeros but eight signed spikes of magnitude 30 to 150 (each output a spike / kernel_size^2
    # well past the tolerance): four at the corners of random planes, four at random places.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    k = kernel_size
    n, c, h, w = [(2, 3, 3 * k, 4 * k), (1, 4, 5 * k + 3, 2 * k + 7), (3, 2, k, 9 * k), (2, 2, 4 * k + 1, 4 * k + 1)][t]
    x = torch.zeros(n, c, h, w)
    spikes = 8
    nb = torch.randint(0, n, (spikes,), generator=g)
    ch = torch.randint(0, c, (spikes,), generator=g)
    ys = torch.randint(0, h, (spikes,), generator=g)
    xs = torch.randint(0, w, (spikes,), generator=g)
    ys[:4] = torch.tensor([0, 0, h - 1, h - 1])
    xs[:4] = torch.tensor([0, w - 1, 0, w - 1])
    sign = torch.where(torch.rand(spikes, generator=g) < 0.5, -1.0, 1.0)
    x[nb, ch, ys, xs] = sign * (30.0 + 120.0 * torch.rand(spikes, generator=g))
    return [x.to(device)]


def ramps(t, device):
    # Each plane: a signed level of magnitude 2 to 6, plus slopes of 0.05 to 0.2 (either sign) per
    # row and per column, plus noise of 0.01.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    k = kernel_size
    n, c, h, w = [(2, 3, 4 * k, 3 * k + 5), (1, 2, 6 * k + 1, 6 * k + 1), (3, 1, 2 * k, 8 * k)][t]

    def signed(lo, hi, shape):
        sign = torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0)
        return sign * (lo + (hi - lo) * torch.rand(shape, generator=g))

    level = signed(2.0, 6.0, (n, c, 1, 1))
    row_slope = signed(0.05, 0.2, (n, c, 1, 1))
    col_slope = signed(0.05, 0.2, (n, c, 1, 1))
    ys = torch.arange(h, dtype=torch.float32).view(1, 1, h, 1)
    xs = torch.arange(w, dtype=torch.float32).view(1, 1, 1, w)
    x = level + row_slope * ys + col_slope * xs + 0.01 * torch.randn(n, c, h, w, generator=g)
    return [x.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_shapes", 6, signed_shapes),
        ("impulses", 4, impulses),
        ("ramps", 3, ramps),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(2, 3, 64, 64, generator=g)]),
            ("misaligned", [torch.randn(2, 3, 45, 37, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_avgpool2d"] = dict(
        kb_file="45_Average_Pooling_2D.py",
        cuda=CUDA_SOURCE,
        kernel_name="avgpool2d_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
