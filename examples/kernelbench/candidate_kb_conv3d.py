"""kb_conv3d: KernelBench level 1's 54_conv_standard_3D__square_input__square_kernel.py (nn.Conv3d, no bias).

The problem is not in this repository: point the gate at a KernelBench checkout,

    python gate.py --kb-root ~/KernelBench examples/kernelbench/candidate_kb_conv3d.py

and `kb_file` resolves in its `level1` folder. The Model is an nn.Conv3d(in_channels,
out_channels, (kernel_size,) * 3) left at its defaults: stride 1, no padding, dilation 1, one
group, bias=False. get_inputs() draws x of shape (batch, in_channels, depth, width, height); the
convolution treats the three trailing axes alike, so below they are simply axes 2, 3 and 4
(s0, s1, s2). forward(x) is the plain cross-correlation

    out[n, co, i, j, l] = sum over ci, a, b, c < kernel_size of x[n, ci, i + a, j + b, l + c] * w[co, ci, a, b, c]

of shape (batch, out_channels, s0 - kernel_size + 1, s1 - kernel_size + 1, s2 - kernel_size + 1).
The weight is the Model's own `conv3d.weight` (seed 42), appended by the harness to every trial's
inputs (`model_state`): ref and launch get [x, weight]. Stride, padding, dilation and groups are
not parameters of the kernel: the Model never sets them, so no suite could check them.

One thread per output element: each output volume, taken in row-major order, is cut into
256-position blocks along grid.x; grid.y is the out channel and grid.z the batch, so a warp reads
consecutive positions of x's last axis, and every thread of a block reads the same weight at the
same time (one broadcast load through the read-only cache). The weights are not staged in shared
memory: with in_channels = 3 a block's out channel has only 81 of them, and T0 (50 MB of input)
is small enough that the gate runs it under compute-sanitizer, where racecheck would have to
follow some 20 billion shared-memory reads; threads past the volume's end simply return.

At the real size (x 16 x 3 x 64 x 64 x 64; out 16 x 64 x 62^3 = 244 million elements, 1 GB, each
an 81-term sum: about 40 GFLOP) grid is (931, 64, 16) and every offset is a long long. T0's inputs
are all positive. The targeted suites:
- signed_shapes: signed inputs on volumes where the kernel just fits along one, two or all three
  axes, with the three axes of different odd sizes and volumes straddling a block edge: a kernel
  that permutes the axes, gets an output extent wrong or mishandles the partial last block fails.
- impulses: zeros but for a few large signed spikes, two opposite corners of the volume among
  them, each in its own (batch, channel): every output is one weight times a spike, so a flipped
  kernel, a permuted tap or a spike read from the wrong channel or batch shows directly.
- channel_levels: every (batch, channel) volume a signed constant plus small noise, so the output
  weighs each channel's whole weight cube by its own level: a kernel that mixes up channels or
  batches is off by a whole level.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void conv3d_ncdhw_f32(const float* __restrict__ x, const float* __restrict__ w,
                                            float* __restrict__ out, long long cin, long long cout,
                                            long long s0, long long s1, long long s2, int k,
                                            long long o0, long long o1, long long o2)
{
    long long vol = o0 * o1 * o2;
    long long p = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (p >= vol) return;
    long long co = blockIdx.y;
    long long n = blockIdx.z;
    long long i2 = p % o2;
    long long i1 = (p / o2) % o1;
    long long i0 = p / (o2 * o1);
    int kkk = k * k * k;
    long long in_vol = s0 * s1 * s2;
    const float* xn = x + n * cin * in_vol + (i0 * s1 + i1) * s2 + i2;
    const float* wc = w + co * cin * kkk;

    float acc = 0.0f;
    for (long long c = 0; c < cin; ++c) {
        const float* xc = xn + c * in_vol;
        const float* wk = wc + c * kkk;
        for (int a = 0; a < k; ++a) {
            for (int b = 0; b < k; ++b) {
                const float* xr = xc + (a * s1 + b) * s2;
                const float* wr = wk + (a * k + b) * k;
                for (int e = 0; e < k; ++e) acc += xr[e] * wr[e];
            }
        }
    }
    out[(n * cout + co) * vol + p] = acc;
}
"""

BLOCK = 256  # threads per block; the kernel's grid.x arithmetic assumes exactly this many

# 54_conv_standard_3D__square_input__square_kernel.py's size constants (same names, same values).
batch_size = 16
in_channels = 3
out_channels = 64
kernel_size = 3
depth = 64
width = 64
height = 64


def ref(x, weight):
    import torch

    return torch.nn.functional.conv3d(x, weight)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 2:
        raise ValueError(f"kb_conv3d: expected inputs [x, conv3d.weight], got {len(inputs)}")
    x, w = inputs
    for label, t in (("x", x), ("conv3d.weight", w)):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 5:
            raise ValueError(f"kb_conv3d: {label} must be a contiguous 5-D float32 tensor, got {t.dtype} of shape "
                             f"{tuple(t.shape)} (contiguous: {t.is_contiguous()})")
    n, cin, s0, s1, s2 = x.shape
    cout, wcin, k, k1, k2 = w.shape
    if wcin != cin:
        raise ValueError(f"kb_conv3d: x has {cin} channels but the weight {tuple(w.shape)} expects {wcin}")
    if not k == k1 == k2 or k < 1:
        raise ValueError(f"kb_conv3d: the weight's window {(k, k1, k2)} must be a non-empty cube")
    if min(s0, s1, s2) < k:
        raise ValueError(f"kb_conv3d: the {s0} x {s1} x {s2} input is smaller than the {k}^3 kernel: no output")
    if n < 1 or cin < 1 or cout < 1:
        raise ValueError(f"kb_conv3d: empty batch or channels: x {tuple(x.shape)}, weight {tuple(w.shape)}")
    if n > 65535 or cout > 65535:
        raise ValueError(f"kb_conv3d: batch {n} and out channels {cout} must each fit the grid's 65535")
    o0, o1, o2 = s0 - k + 1, s1 - k + 1, s2 - k + 1
    out = torch.empty((n, cout, o0, o1, o2), dtype=torch.float32, device=x.device)
    grid = ((o0 * o1 * o2 + BLOCK - 1) // BLOCK, cout, n)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, w.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, cin), (ctypes.c_longlong, cout),
            (ctypes.c_longlong, s0), (ctypes.c_longlong, s1), (ctypes.c_longlong, s2), (ctypes.c_int, k),
            (ctypes.c_longlong, o0), (ctypes.c_longlong, o1), (ctypes.c_longlong, o2)]
    return out, grid, (BLOCK, 1, 1), args


def t0_original(t):
    # Exactly 54_conv_standard_3D__square_input__square_kernel.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, in_channels, depth, width, height)
    return [x]


def signed_shapes(t):
    # Signed inputs, magnitude ~1. Output volumes (extents past the kernel): 1 x 1 x 1 (the kernel
    # just fits), one line along each axis, and odd non-cubic volumes of 255, 385 and 693
    # positions; batches of one to three.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    batch, ext = [(1, (1, 1, 1)), (2, (1, 1, 300)), (3, (40, 1, 1)), (1, (1, 17, 15)), (2, (5, 7, 11)),
                  (2, (9, 7, 11))][t]
    return [torch.randn(batch, in_channels, *(kernel_size - 1 + e for e in ext), generator=g)]


def impulses(t):
    # Zeros but for eight spikes of magnitude 5 to 20, signed, two in opposite corners of the
    # volume, each in a random (batch, channel).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    batch, shape = [(2, (9, 10, 11)), (1, (5, 13, 7)), (3, (kernel_size, 6, 8)), (2, (7, 7, 7))][t]
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
    batch, shape = [(4, (10, 9, 12)), (2, (13, 11, 8)), (3, (6, 15, 9))][t]
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
    return [("aligned", [torch.rand(1, in_channels, 8, 8, 32, generator=g)]),
            ("misaligned", [torch.randn(2, in_channels, kernel_size + 4, kernel_size + 2, kernel_size + 6,
                                        generator=g)])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_conv3d"] = dict(
        kb_file="54_conv_standard_3D__square_input__square_kernel.py",
        cuda=CUDA_SOURCE,
        kernel_name="conv3d_ncdhw_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("conv3d.weight",),
    )
