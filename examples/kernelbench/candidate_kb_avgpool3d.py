"""kb_avgpool3d: KernelBench level 1's 46_Average_Pooling_3D.py (nn.AvgPool3d, 3^3, stride 2, padded).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_avgpool3d.py

and `kb_file="46_Average_Pooling_3D.py"` resolves in its `level1` folder. The Model is
nn.AvgPool3d(kernel_size=3, stride=2, padding=1) with the layer's other defaults: the padding is
zeros that count in the mean (count_include_pad=True), floor-mode sizes. For x (N, C, D, H, W),
each output side is (side + 2*padding - kernel_size) // stride + 1 and

    out[n, c, od, oy, ox] = (sum of the in-range taps x[n, c, od*stride - padding + a, oy*stride - padding + b,
                             ox*stride - padding + e], a, b, e < kernel_size) / kernel_size^3

Every window, those on the faces too, divides by kernel_size^3: ATen's divisor is the window
clipped to the padded volume, and in floor mode no window reaches past the padding. The pooling
parameters are the module constants below, passed to the kernel as arguments.

One thread per output element over a 1-D grid: thread i owns (plane, od, oy, ox) with ox fastest
(plane = n * C + c), summing its in-range taps in float32. At the real size x is 16 x 32 x 128 x
128 x 256 float32, 2,147,483,648 elements (8.6 GB): exactly 2^31, so the last elements' offsets
do not fit an int and every index and offset is a long long. out is 16 x 32 x 64 x 64 x 128
(268,435,456 outputs): 1,048,576 blocks of 256. T0's inputs are uniform [0, 1); its face outputs
(a third to all of the taps padding) already separate count_include_pad from a mean over the
in-range taps. The targeted suites:
- signed_shapes: signed values on volumes from the window's own size (the smallest the Model
  takes) to unequal odd sides: swapped axes, a wrong output side or a partial last block shows.
- impulses: zeros with a few large spikes (at opposite corners of the volume too): each output
  is a spike / kernel_size^3 exactly where its window holds one, so a window off by one along any
  axis, a wrong divisor or a wrong pitch shows.
- ramps: each plane a signed level plus a ramp along each axis: an interior window's mean is the
  ramp at its centre, so a window shifted along any axis is off by that axis's slope, and one
  read from another plane by a whole level.

The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void avgpool3d_f32(const float* __restrict__ x, float* __restrict__ out,
                                         long long planes, long long d, long long h, long long w,
                                         long long od_n, long long oh_n, long long ow_n,
                                         int k, int stride, int pad)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= planes * od_n * oh_n * ow_n) return;
    long long ox = i % ow_n;
    long long rest = i / ow_n;
    long long oy = rest % oh_n;
    rest = rest / oh_n;
    long long oz = rest % od_n;
    long long plane = rest / od_n;
    const float* vol = x + plane * d * h * w;
    long long z0 = oz * stride - pad;
    long long y0 = oy * stride - pad;
    long long x0 = ox * stride - pad;
    float acc = 0.0f;
    for (int a = 0; a < k; ++a) {
        long long zz = z0 + a;
        if (zz < 0 || zz >= d) continue;
        for (int b = 0; b < k; ++b) {
            long long yy = y0 + b;
            if (yy < 0 || yy >= h) continue;
            const float* line = vol + (zz * h + yy) * w;
            for (int e = 0; e < k; ++e) {
                long long xx = x0 + e;
                if (xx < 0 || xx >= w) continue;
                acc += line[xx];
            }
        }
    }
    out[i] = acc / (float)(k * k * k);
}
"""

BLOCK = 256

# 46_Average_Pooling_3D.py's size constants (same names, same values).
batch_size = 16
channels = 32
depth = 128
height = 128
width = 256
kernel_size = 3
stride = 2
padding = 1


def _min_side():
    # The smallest side the official Model takes: ATen's avg_pool3d refuses any input side shorter
    # than the window itself, padding or not.
    return kernel_size


def _out_side(size):
    span = size + 2 * padding - kernel_size
    return span // stride + 1 if span >= 0 else 0


def ref(x):
    import torch

    return torch.nn.functional.avg_pool3d(x, kernel_size, stride=stride, padding=padding)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_avgpool3d: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 5:
        raise ValueError(f"kb_avgpool3d: x must be a contiguous 5-D float32 tensor (N, C, D, H, W), got {x.dtype} "
                         f"of shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if kernel_size < 1 or stride < 1 or padding < 0:
        raise ValueError(f"kb_avgpool3d: bad pooling parameters kernel_size={kernel_size}, stride={stride}, "
                         f"padding={padding}")
    n, c, d, h, w = x.shape
    od, oh, ow = _out_side(d), _out_side(h), _out_side(w)
    if min(od, oh, ow) < 1:
        raise ValueError(f"kb_avgpool3d: a {d} x {h} x {w} volume is too small for the window (no output)")
    planes = n * c
    out = torch.empty((n, c, od, oh, ow), dtype=torch.float32, device=x.device)
    total = planes * od * oh * ow
    blocks = (total + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_avgpool3d: {total} outputs need more blocks than grid.x allows")
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, planes), (ctypes.c_longlong, d), (ctypes.c_longlong, h), (ctypes.c_longlong, w),
            (ctypes.c_longlong, od), (ctypes.c_longlong, oh), (ctypes.c_longlong, ow),
            (ctypes.c_int, kernel_size), (ctypes.c_int, stride), (ctypes.c_int, padding)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 46_Average_Pooling_3D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, channels, depth, height, width)
    return [x.to(device)]


def signed_shapes(t, device):
    # The smallest volume, one more along single axes, unequal odd sides, a row of outputs past a
    # 256-thread block. Signed values of magnitude ~3 over kernel_size^3-term sums: no
    # cancellation near the tolerance.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    m = _min_side()
    shape = [(1, 1, m, m, m), (2, 1, m + 1, m, m + 2), (1, 3, m, m + 5, 17), (1, 1, m, m, 2 * 257 + 1),
             (2, 2, 11, 7, 15), (1, 1, 6, 21, 40)][t]
    return [(torch.randn(shape, generator=g) * 3.0).to(device)]


def impulses(t, device):
    # Zeros but ten signed spikes of magnitude 10 to 40 (each output a spike / kernel_size^3 well
    # past the tolerance): two at opposite corners of the volume in random planes, the rest at
    # random places.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    n, c, d, h, w = [(2, 2, 12, 14, 16), (1, 3, 17, 9, 25), (2, 1, 8, 30, 11), (1, 2, 21, 21, 21)][t]
    x = torch.zeros(n, c, d, h, w)
    spikes = 10
    nb = torch.randint(0, n, (spikes,), generator=g)
    ch = torch.randint(0, c, (spikes,), generator=g)
    pz = torch.randint(0, d, (spikes,), generator=g)
    py = torch.randint(0, h, (spikes,), generator=g)
    px = torch.randint(0, w, (spikes,), generator=g)
    pz[0], py[0], px[0] = 0, 0, 0
    pz[1], py[1], px[1] = d - 1, h - 1, w - 1
    sign = torch.where(torch.rand(spikes, generator=g) < 0.5, -1.0, 1.0)
    x[nb, ch, pz, py, px] = sign * (10.0 + 30.0 * torch.rand(spikes, generator=g))
    return [x.to(device)]


def ramps(t, device):
    # Each plane: a signed level of magnitude 2 to 6, plus slopes of 0.1 to 0.3 (either sign) along
    # each axis, plus noise of 0.01.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, c, d, h, w = [(2, 2, 10, 12, 14), (1, 3, 9, 17, 33), (3, 1, 15, 8, 20)][t]

    def signed(lo, hi, shape):
        sign = torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0)
        return sign * (lo + (hi - lo) * torch.rand(shape, generator=g))

    level = signed(2.0, 6.0, (n, c, 1, 1, 1))
    slopes = [signed(0.1, 0.3, (n, c, 1, 1, 1)) for _ in range(3)]
    zs = torch.arange(d, dtype=torch.float32).view(1, 1, d, 1, 1)
    ys = torch.arange(h, dtype=torch.float32).view(1, 1, 1, h, 1)
    xs = torch.arange(w, dtype=torch.float32).view(1, 1, 1, 1, w)
    x = level + slopes[0] * zs + slopes[1] * ys + slopes[2] * xs + 0.01 * torch.randn(n, c, d, h, w, generator=g)
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
    return [("aligned", [torch.rand(1, 2, 8, 16, 32, generator=g)]),
            ("misaligned", [torch.randn(2, 2, 9, 11, 13, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_avgpool3d"] = dict(
        kb_file="46_Average_Pooling_3D.py",
        cuda=CUDA_SOURCE,
        kernel_name="avgpool3d_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
