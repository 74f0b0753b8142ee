"""kb_maxpool3d: KernelBench level 1's 43_Max_Pooling_3D.py (nn.MaxPool3d, strided, padded, dilated).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_maxpool3d.py

and `kb_file="43_Max_Pooling_3D.py"` resolves in its `level1` folder. get_init_inputs() builds
nn.MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=3) and leaves return_indices and
ceil_mode False: values only, floor mode. For x (N, C, D1, D2, D3), out[n, c, o1, o2, o3] is the
maximum of x[n, c, o1*stride - padding + a*dilation, (same for o2, b), (same for o3, e)] over
a, b, e < kernel_size, taking only the taps inside the volume (padding acts as -inf), with each
output side (side + 2*padding - dilation*(kernel_size - 1) - 1) // stride + 1. A NaN wins over any
number and stays, as in ATen (`v > best || isnan(v)`). The pooling parameters are the module
constants below, passed to the kernel as arguments; the window is a cube, as the Model's int
arguments make it.

One thread per output element over a 1-D grid: thread i owns (plane, o1, o2, o3) with o3 fastest
(plane = n * C + c). At the real size (x 16 x 32 x 128^3, 4.3 GB: 1,073,741,824 elements; out
16 x 32 x 62^3: 122,023,936 outputs, each a 27-tap maximum) the grid is 476,656 blocks of 256,
and every index and offset is a long long. T0's inputs are uniform [0, 1), its outputs near 1.
The targeted suites:
- signed_shapes: signed values, volumes from the smallest that gives one output to unequal odd
  sides: swapped axes, a wrong output side or a partial last block shows.
- all_negative: every value below -0.5, so the windows that hold padding must come out negative:
  a kernel that pads with 0 instead of -inf writes 0 on the faces.
- impulses: a flat negative background with a few spikes (at the volume's corners too): each
  output is a spike exactly where its strided, dilated window holds one, so a window off by one
  along any axis, an undilated window or a wrong pitch moves the spikes.

The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#include <math_constants.h>

extern "C" __global__ void maxpool3d_f32(const float* __restrict__ x, float* __restrict__ out,
                                         long long planes, long long d1, long long d2, long long d3,
                                         long long o1n, long long o2n, long long o3n,
                                         int k, int stride, int pad, int dil)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= planes * o1n * o2n * o3n) return;
    long long o3 = i % o3n;
    long long rest = i / o3n;
    long long o2 = rest % o2n;
    rest = rest / o2n;
    long long o1 = rest % o1n;
    long long plane = rest / o1n;
    const float* vol = x + plane * d1 * d2 * d3;
    long long s1 = o1 * stride - pad;
    long long s2 = o2 * stride - pad;
    long long s3 = o3 * stride - pad;
    float best = -CUDART_INF_F;
    for (int a = 0; a < k; ++a) {
        long long p1 = s1 + (long long)a * dil;
        if (p1 < 0 || p1 >= d1) continue;
        for (int b = 0; b < k; ++b) {
            long long p2 = s2 + (long long)b * dil;
            if (p2 < 0 || p2 >= d2) continue;
            const float* line = vol + (p1 * d2 + p2) * d3;
            for (int e = 0; e < k; ++e) {
                long long p3 = s3 + (long long)e * dil;
                if (p3 < 0 || p3 >= d3) continue;
                float v = line[p3];
                if (v > best || v != v) best = v;
            }
        }
    }
    out[i] = best;
}
"""

BLOCK = 256

# 43_Max_Pooling_3D.py's size constants (same names, same values).
batch_size = 16
channels = 32
dim1 = 128
dim2 = 128
dim3 = 128
kernel_size = 3
stride = 2
padding = 1
dilation = 3


def _min_side():
    # The smallest side that still gives one output along it.
    return max(1, dilation * (kernel_size - 1) + 1 - 2 * padding)


def _out_side(size):
    span = size + 2 * padding - dilation * (kernel_size - 1) - 1
    return span // stride + 1 if span >= 0 else 0


def ref(x):
    import torch

    return torch.nn.functional.max_pool3d(x, kernel_size, stride=stride, padding=padding, dilation=dilation)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 1:
        raise ValueError(f"kb_maxpool3d: expected one input x, got {len(inputs)}")
    (x,) = inputs
    if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 5:
        raise ValueError(f"kb_maxpool3d: x must be a contiguous 5-D float32 tensor (N, C, D1, D2, D3), got "
                         f"{x.dtype} of shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
    if kernel_size < 1 or stride < 1 or dilation < 1 or padding < 0:
        raise ValueError(f"kb_maxpool3d: bad pooling parameters kernel_size={kernel_size}, stride={stride}, "
                         f"padding={padding}, dilation={dilation}")
    n, c, d1, d2, d3 = x.shape
    o1, o2, o3 = _out_side(d1), _out_side(d2), _out_side(d3)
    if min(o1, o2, o3) < 1:
        raise ValueError(f"kb_maxpool3d: a {d1} x {d2} x {d3} volume is too small for the dilated window")
    planes = n * c
    out = torch.empty((n, c, o1, o2, o3), dtype=torch.float32, device=x.device)
    total = planes * o1 * o2 * o3
    blocks = (total + BLOCK - 1) // BLOCK
    if blocks > 2**31 - 1:
        raise ValueError(f"kb_maxpool3d: {total} outputs need more blocks than grid.x allows")
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, planes), (ctypes.c_longlong, d1), (ctypes.c_longlong, d2), (ctypes.c_longlong, d3),
            (ctypes.c_longlong, o1), (ctypes.c_longlong, o2), (ctypes.c_longlong, o3),
            (ctypes.c_int, kernel_size), (ctypes.c_int, stride), (ctypes.c_int, padding), (ctypes.c_int, dilation)]
    return out, (max(1, blocks), 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 43_Max_Pooling_3D.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, channels, dim1, dim2, dim3)
    return [x.to(device)]


def signed_shapes(t, device):
    # The smallest volume (one output), one more along single axes, unequal odd sides, one plane
    # and several. Signed values: no accumulation, so any magnitude is safe.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    m = _min_side()
    shape = [(1, 1, m, m, m), (2, 1, m + 1, m, m + 2), (1, 3, m, m + 5, 17), (1, 2, 9, 13, m + 1),
             (2, 2, 11, 7, 15), (1, 1, 6, 21, 40)][t]
    return [(torch.randn(shape, generator=g) * 3.0).to(device)]


def all_negative(t, device):
    # Every value in [-10.5, -0.5): the padded taps of the face windows must lose to all of them.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(2, 2, 10, 10, 10), (1, 3, 13, 8, 21), (2, 1, _min_side() + 2, 16, 9), (1, 2, 20, 11, 12)][t]
    return [(-0.5 - 10.0 * torch.rand(shape, generator=g)).to(device)]


def impulses(t, device):
    # Background in [-2.01, -1.99]; ten spikes of 5 to 20, two at opposite corners of the volume in
    # random planes, the rest at random places.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    n, c, d1, d2, d3 = [(2, 2, 12, 14, 16), (1, 3, 17, 9, 25), (2, 1, 8, 30, 11), (1, 2, 21, 21, 21)][t]
    x = -2.0 + 0.01 * torch.randn(n, c, d1, d2, d3, generator=g).clamp(-1.0, 1.0)
    spikes = 10
    nb = torch.randint(0, n, (spikes,), generator=g)
    ch = torch.randint(0, c, (spikes,), generator=g)
    p1 = torch.randint(0, d1, (spikes,), generator=g)
    p2 = torch.randint(0, d2, (spikes,), generator=g)
    p3 = torch.randint(0, d3, (spikes,), generator=g)
    p1[0], p2[0], p3[0] = 0, 0, 0
    p1[1], p2[1], p3[1] = d1 - 1, d2 - 1, d3 - 1
    x[nb, ch, p1, p2, p3] = 5.0 + 15.0 * torch.rand(spikes, generator=g)
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
    return [("aligned", [torch.rand(1, 2, 8, 16, 32, generator=g)]),
            ("misaligned", [torch.randn(2, 2, 9, 11, 13, generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_maxpool3d"] = dict(
        kb_file="43_Max_Pooling_3D.py",
        cuda=CUDA_SOURCE,
        kernel_name="maxpool3d_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
    )
