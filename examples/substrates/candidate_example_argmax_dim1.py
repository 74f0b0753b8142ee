"""example_argmax_dim1: argmax over dim 1 of a (B, R, C) tensor, one thread per output column.

Example substrate outside the padding family. Official reference:
examples/problems/example_argmax_dim1.py (torch.argmax(x, dim=1) of a float32 (16, 256, 256)
tensor, int64 out of shape (16, 256)). Thread i owns output (b, c) = (i / C, i % C) and walks
the R rows of that column, keeping the first row holding the largest value: a strict `>`
keeps the earlier index on ties, as torch documents. NaN is not handled (torch would return
the first NaN's index); no suite holds one.
"""

CUDA_SOURCE = r"""
extern "C" __global__ void argmax_dim1_f32(const float* __restrict__ x, long long* __restrict__ out,
                                           long long batch, long long rows, long long cols)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= batch * cols) return;
    long long b = i / cols;
    long long c = i - b * cols;
    const float* column = x + b * rows * cols + c;
    float best = column[0];
    long long best_row = 0;
    for (long long r = 1; r < rows; ++r) {
        float v = column[r * cols];
        if (v > best) { best = v; best_row = r; }
    }
    out[i] = best_row;
}
"""

BLOCK = 256
NAME = "example_argmax_dim1"


def ref(x):
    import torch

    return torch.argmax(x, dim=1)


def make_launch(ctypes):
    def launch(inputs, torch):
        if len(inputs) != 1:
            raise ValueError(f"{NAME}: expected one input x, got {len(inputs)}")
        (x,) = inputs
        if x.dtype != torch.float32 or not x.is_contiguous() or x.dim() != 3:
            raise ValueError(f"{NAME}: x must be a contiguous 3-D float32 tensor (B, R, C), got {x.dtype} of "
                             f"shape {tuple(x.shape)} (contiguous: {x.is_contiguous()})")
        batch, rows, cols = x.shape
        if rows < 1:
            raise ValueError(f"{NAME}: dim 1 is empty in {tuple(x.shape)}; argmax of nothing is undefined")
        out = torch.empty((batch, cols), dtype=torch.int64, device=x.device)
        n = batch * cols
        grid = (max(1, (n + BLOCK - 1) // BLOCK), 1, 1)
        args = [
            (ctypes.c_void_p, x.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, batch),
            (ctypes.c_longlong, rows),
            (ctypes.c_longlong, cols),
        ]
        return out, grid, (BLOCK, 1, 1), args

    return launch


# ---------------------------------------------------------------------------- inputs


def t0_original(t, device):
    # Exactly examples/problems/example_argmax_dim1.py:get_inputs(), seeded 1000 + t.
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        x = torch.randn(16, 256, 256)
    return [x.to(device)]


def misaligned(t, device):
    # B, R and C not multiples of 32 or 256: partial last block, a single row (answer 0), a single
    # column, and more columns than one block; signed values of large magnitude.
    import torch

    g = torch.Generator().manual_seed(2000 + t)
    shape = [(1, 1, 1), (3, 1, 77), (5, 37, 1), (7, 33, 65), (2, 100, 300), (1, 513, 3)][t]
    return [(torch.randn(shape, generator=g) * 1000.0).to(device)]


def ties(t, device):
    # Few distinct values (0..3, and -0.0 beside 0.0), so most columns hold their maximum at
    # several rows: the first of them must win. One trial is constant along dim 1 (answer 0).
    import torch

    g = torch.Generator().manual_seed(3000 + t)
    shape = [(4, 64, 96), (3, 17, 250), (2, 200, 33), (2, 9, 40)][t]
    x = torch.randint(0, 4, shape, generator=g).float()
    if t == 1:
        x = torch.where(torch.rand(shape, generator=g) < 0.5, x, -x)  # -0.0 ties 0.0
    if t == 3:
        x = x[:, :1, :].expand(shape).contiguous()
    return [x.to(device)]


def peak_position(t, device):
    # One maximum per column, planted at a chosen row: the first row, the last row, and rows
    # spread between, so an off-by-one in the row loop or a wrong row stride shows.
    import torch

    g = torch.Generator().manual_seed(4000 + t)
    batch, rows, cols = [(2, 256, 64), (3, 31, 100), (1, 1000, 40)][t]
    x = torch.rand(batch, rows, cols, generator=g) - 2.0  # every value in [-2, -1)
    where = torch.randint(0, rows, (batch, cols), generator=g)
    where[:, 0] = 0
    where[:, 1] = rows - 1
    x.scatter_(1, where.unsqueeze(1), 5.0)
    return [x.to(device)]


def suites():
    return [
        ("T0_original", 5, t0_original),
        ("misaligned", 6, misaligned),
        ("ties", 4, ties),
        ("peak_position", 3, peak_position),
    ]


def probe(torch):
    g = torch.Generator().manual_seed(5000)
    return [
        ("aligned", [torch.randn(4, 32, 64, generator=g)]),
        ("misaligned", [torch.randn(3, 45, 37, generator=g)]),
    ]


def register(K, torch, ctypes):
    K.PROBLEMS[NAME] = dict(
        kb_file="example_argmax_dim1.py",
        cuda=CUDA_SOURCE,
        kernel_name="argmax_dim1_f32",
        ref=ref,
        launch=make_launch(ctypes),
        suites=suites,
        probe=probe,
    )
