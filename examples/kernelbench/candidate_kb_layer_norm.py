"""kb_layer_norm: KernelBench level 1's 40_LayerNorm.py (nn.LayerNorm((features, dim1, dim2)) applied to x).

forward() normalises every leading index of x (shape (*, features, dim1, dim2)) over its trailing
features * dim1 * dim2 elements: y = (x - mean) / sqrt(var + 1e-5) * weight + bias, the variance
biased, weight and bias elementwise of the normalised shape. They are the Model's own (`ln.weight`,
`ln.bias`, read through model_state, so launch gets [x, weight, bias]); as built they are ones and
zeros. The normalised shape is fixed by the Model, so every input ends in it; the leading axes are
free (none, one, or several), and the kernel flattens them into rows.

Block per row: one 256-thread block per row of features * dim1 * dim2 elements. Two statistic
passes (the mean, then the mean squared deviation from it, so an offset row's variance does not
cancel away), each a per-thread strided float32 sum finished by a shared-memory tree, then a write
pass reading the weight and bias at the element's position in the row. At the real size (16 x 64 x
256 x 256 float32, 256 MiB) that is 16 blocks of 4,194,304 elements, 16384 per thread per pass;
offsets are 64-bit for the large-index tiling.

The Model accepts nothing smaller than one row (16 MiB at the real size, over the spec's 1 MB), so
the probe is the least it accepts: the aligned entry one uniform row (1, features, dim1, dim2), the
misaligned one two signed rows (the batch, 2, is the only extent that can be off a multiple of 32;
the gate takes the least legal input in place of the 1 MB rule here). The targeted suites hold one
to three rows each (4 to 13 million elements at the real size, not the usual well under a million):
- signed_rows: each row its own sign, offset and scale (1e-2 to 1e2), leading axes of rank 0 to 2:
  statistics shared between rows, or a lost mean, show;
- quiet_rows: nearly constant rows (variance at or below eps) with a few spikes at the first and
  last element and random places: eps and every element of the row both count;
- row_shift: one row whose first part (a fifth, a half or nine tenths of it) sits 1 lower than the
  rest, so a kernel that takes the statistics from part of the row is off.
The size constants below carry the problem file's names and values: CI
(tests/test_kernelbench_examples.py) substitutes a small stand-in's values for them.
"""

CUDA_SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void layer_norm_rows_f32(const float* __restrict__ x, const float* __restrict__ weight,
                                               const float* __restrict__ bias, float* __restrict__ out,
                                               long long rows, long long cols, float eps)
{
    __shared__ float red[BLOCK];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* outr = out + row * cols;

    float sum = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += BLOCK) sum += xr[c];
    red[threadIdx.x] = sum;
    __syncthreads();  // sync-after-sum-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-sum-step
    }
    float mean = red[0] / (float)cols;
    __syncthreads();  // sync-before-red-reuse

    float sq = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += BLOCK) {
        float d = xr[c] - mean;
        sq += d * d;
    }
    red[threadIdx.x] = sq;
    __syncthreads();  // sync-after-var-load
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();  // sync-after-var-step
    }
    float rstd = 1.0f / sqrtf(red[0] / (float)cols + eps);

    for (long long c = threadIdx.x; c < cols; c += BLOCK) outr[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
}
"""

BLOCK = 256  # the kernel's tree reductions are written for exactly this many threads
EPS = 1e-5  # nn.LayerNorm's default

# 40_LayerNorm.py's size constants (same names, same values).
batch_size = 16
features = 64
dim1 = 256
dim2 = 256


def ref(x, weight, bias):
    import torch

    return torch.nn.functional.layer_norm(x, (features, dim1, dim2), weight, bias, eps=EPS)


def launch(inputs, torch):
    import ctypes

    if len(inputs) != 3:
        raise ValueError(f"kb_layer_norm: expected [x, ln.weight, ln.bias], got {len(inputs)} inputs")
    x, weight, bias = inputs
    for label, t in (("x", x), ("ln.weight", weight), ("ln.bias", bias)):
        if t.dtype != torch.float32 or not t.is_contiguous():
            raise ValueError(f"kb_layer_norm: {label} must be a contiguous float32 tensor, got {t.dtype} "
                             f"(contiguous: {t.is_contiguous()})")
    shape = tuple(weight.shape)
    if tuple(bias.shape) != shape:
        raise ValueError(f"kb_layer_norm: ln.bias {tuple(bias.shape)} and ln.weight {shape} must have one shape")
    if x.dim() < len(shape) or tuple(x.shape[x.dim() - len(shape):]) != shape:
        raise ValueError(f"kb_layer_norm: x {tuple(x.shape)} must end in the normalised shape {shape}")
    cols = weight.numel()
    rows = x.numel() // cols if cols else 0
    if rows < 1 or cols < 1:
        raise ValueError(f"kb_layer_norm: x {tuple(x.shape)} holds no row to normalise")
    if rows > 2**31 - 1:
        raise ValueError(f"kb_layer_norm: {rows} rows need more blocks than the grid's x dimension allows")
    out = torch.empty_like(x)
    args = [(ctypes.c_void_p, x.data_ptr()), (ctypes.c_void_p, weight.data_ptr()),
            (ctypes.c_void_p, bias.data_ptr()), (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, rows), (ctypes.c_longlong, cols), (ctypes.c_float, EPS)]
    return out, (rows, 1, 1), (BLOCK, 1, 1), args


def t0_original(t, device):
    # Exactly 40_LayerNorm.py's get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.rand(batch_size, features, dim1, dim2)
    return [x.to(device)]


def signed_rows(t, device):
    # Leading axes of rank 0 to 2, every row its own sign, offset (within 3 of its scale, so float32
    # keeps the variance) and scale from 1e-2 to 1e2.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    lead = [(), (3,), (2, 1), (1,)][t]
    rows = 1
    for d in lead:
        rows *= d
    scale = 10.0 ** (torch.rand(rows, 1, generator=g) * 4 - 2)
    offset = (torch.rand(rows, 1, generator=g) * 6 - 3) * scale
    x = torch.randn(rows, features * dim1 * dim2, generator=g) * scale + offset
    return [x.reshape(*lead, features, dim1, dim2).to(device)]


def quiet_rows(t, device):
    # Nearly constant rows (standard deviation 1e-4 to 1e-3 around 0.5, variance at most a tenth of
    # eps) with five spikes each, at the first and last element and three random places, sized so
    # that they carry a variance about eps: a skipped spike, or eps dropped, changes every output.
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    rows = [1, 2, 1][t]
    cols = features * dim1 * dim2
    x = 0.5 + torch.randn(rows, cols, generator=g) * (10.0 ** (torch.rand(rows, 1, generator=g) - 4))
    for r in range(rows):
        where = torch.cat([torch.tensor([0, cols - 1]), torch.randint(1, cols - 1, (3,), generator=g)])
        x[r, where] += (torch.rand(5, generator=g) + 0.5) * (1.5e-3 * cols ** 0.5)
    return [x.reshape(rows, features, dim1, dim2).to(device)]


def row_shift(t, device):
    # A row whose first part (a fraction that moves between trials) sits about 1 lower than the rest:
    # the statistics of part of a row are not the row's, and each weight position is checked.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    cols = features * dim1 * dim2
    cut = int(cols * (0.2, 0.5, 0.9)[t]) + 1
    x = torch.rand(1, cols, generator=g)
    x[:, :cut] -= 1.0
    return [x.reshape(1, features, dim1, dim2).to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("signed_rows", 4, signed_rows),
        ("quiet_rows", 3, quiet_rows),
        ("row_shift", 3, row_shift),
    ]


def probe(torch):
    # The least the Model accepts (the gate's reading of the 1 MB rule for this problem): one row of the
    # normalised shape, 16 MiB at the real size; misaligned only in the batch, the one free extent: two rows,
    # signed values.
    g = torch.Generator().manual_seed(5000)
    return [("aligned", [torch.rand(1, features, dim1, dim2, generator=g)]),
            ("misaligned", [torch.randn(2, features, dim1, dim2, generator=g) * 2.0 + 0.5])]


def register(K, torch, ctypes):
    K.PROBLEMS["kb_layer_norm"] = dict(
        kb_file="40_LayerNorm.py",
        cuda=CUDA_SOURCE,
        kernel_name="layer_norm_rows_f32",
        ref=ref,
        launch=launch,
        suites=suites,
        probe=probe,
        model_state=("ln.weight", "ln.bias"),
    )
