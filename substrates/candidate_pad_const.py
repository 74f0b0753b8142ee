"""pad_const_b1, _b2, _b4, _b8: constant-fill pad of 1-, 2-, 4- and 8-byte elements, rank 1..8.

Ported from the Vulkan contracts (seeds/000): one thread per output element decomposes its
linear index against the output shape, shifts each coordinate by the axis's left pad, and
copies the input element if every coordinate lands inside the input, else stores the fill
value's bit pattern. No arithmetic on the elements: bit-exact for every dtype of the width.

Inputs (see problems/pad_const_bN.py): x, pads (int64 (rank, 2), row d = (left, right) of
axis d), value (0-dim tensor of x's dtype whose bits are the fill).
"""

# The kernel body is shared by the four widths; each source starts with its own two typedefs,
# so every line below appears verbatim in the compiled source (compile errors point here).
CUDA_BODY = r"""
// Shapes arrive by value (no device buffer to keep alive): rank, then per axis the input
// extent, the output extent and the left pad. Axes past `rank` are unused.
struct PadGeometry {
    int rank;
    long long in_shape[8];
    long long out_shape[8];
    long long left_pad[8];
};

extern "C" __global__ void KERNEL_NAME(const elem_t* __restrict__ in, elem_t* __restrict__ out,
                                       long long n_out, fill_t fill, PadGeometry g)
{
    long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= n_out) return;
    long long rest = o;        // output index still to decompose, innermost axis first
    long long src = 0;         // linear input index, built up axis by axis
    long long in_stride = 1;   // input elements per step along axis d
    bool inside = true;
    for (int d = g.rank - 1; d >= 0; --d) {
        long long c = rest % g.out_shape[d] - g.left_pad[d];
        rest = rest / g.out_shape[d];
        if (c < 0 || c >= g.in_shape[d]) inside = false;
        src += c * in_stride;
        in_stride *= g.in_shape[d];
    }
    out[o] = inside ? in[src] : (elem_t)fill;
}
"""

BLOCK = 256
MAX_RANK = 8

# width -> (element type, fill parameter type, dtypes of that width)
WIDTHS = {
    1: ("unsigned char", "unsigned int", ("uint8", "int8")),
    2: ("unsigned short", "unsigned int", ("float16", "bfloat16", "int16")),
    4: ("unsigned int", "unsigned int", ("float32", "int32")),
    8: ("unsigned long long", "unsigned long long", ("float64", "int64")),
}
BIT_DTYPES = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}


def cuda_source(width: int) -> str:
    elem, fill, _ = WIDTHS[width]
    header = f"typedef {elem} elem_t;\ntypedef {fill} fill_t;\n"
    return header + CUDA_BODY.replace("KERNEL_NAME", f"pad_const_b{width}")


def _fill_bits(torch, value, width):
    """The fill's bit pattern as a non-negative int of `width` bytes."""
    bits = value.reshape(1).view(getattr(torch, BIT_DTYPES[width])).item()
    return bits & ((1 << (8 * width)) - 1)


def _checked_pads(x, pads, name):
    rank = x.dim()
    if not 1 <= rank <= MAX_RANK:
        raise ValueError(f"{name}: x has rank {rank}; this kernel takes rank 1..{MAX_RANK}")
    rows = pads.tolist()
    if len(rows) != rank or any(len(r) != 2 for r in rows):
        raise ValueError(f"{name}: pads must be ({rank}, 2), one (left, right) row per axis; got {tuple(pads.shape)}")
    for axis, (left, right) in enumerate(rows):
        if left < 0 or right < 0:
            raise ValueError(f"{name}: axis {axis} has pad ({left}, {right}); negative pads (crops) are not supported")
    return rows


def make_launch(width: int, ctypes):
    name = f"pad_const_b{width}"

    class PadGeometry(ctypes.Structure):
        _fields_ = [("rank", ctypes.c_int), ("in_shape", ctypes.c_longlong * MAX_RANK),
                    ("out_shape", ctypes.c_longlong * MAX_RANK), ("left_pad", ctypes.c_longlong * MAX_RANK)]

    fill_ctype = ctypes.c_ulonglong if width == 8 else ctypes.c_uint

    def launch(inputs, torch):
        x, pads, value = inputs
        if x.element_size() != width or not x.is_contiguous():
            raise ValueError(f"{name}: x must be a contiguous tensor of {width}-byte elements, got {x.dtype}")
        rows = _checked_pads(x, pads, name)
        out_shape = [n + left + right for n, (left, right) in zip(x.shape, rows)]
        out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        unused = [1] * (MAX_RANK - x.dim())
        geometry = PadGeometry(
            x.dim(),
            (ctypes.c_longlong * MAX_RANK)(*x.shape, *unused),
            (ctypes.c_longlong * MAX_RANK)(*out_shape, *unused),
            (ctypes.c_longlong * MAX_RANK)(*[left for left, _ in rows], *[0] * len(unused)),
        )
        n_out = out.numel()
        grid = (max(1, (n_out + BLOCK - 1) // BLOCK), 1, 1)
        args = [
            (ctypes.c_void_p, x.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, n_out),
            (fill_ctype, _fill_bits(torch, value, width)),
            (PadGeometry, geometry),
        ]
        return out, grid, (BLOCK, 1, 1), args

    return launch


def make_ref(width: int):
    """The candidate's own reference: F.pad of the bit view, then the fill put in by mask.

    F.pad's fill goes through a double, which cannot hold every 8-byte pattern, so the fill is
    placed with torch.where on the integer view instead.
    """

    def ref(x, pads, value):
        import torch

        F = torch.nn.functional
        bit_dtype = getattr(torch, BIT_DTYPES[width])
        flat = []
        for left, right in reversed(pads.tolist()):  # F.pad lists the last axis first
            flat += [left, right]
        x_bits = x.view(bit_dtype)
        is_pad = F.pad(torch.zeros(x.shape, dtype=torch.uint8, device=x.device), flat, value=1).bool()
        padded = F.pad(x_bits, flat, mode="constant", value=0)
        return torch.where(is_pad, value.reshape(1).view(bit_dtype), padded).view(x.dtype)

    return ref


# ---------------------------------------------------------------------------- inputs


def _random_bits(torch, shape, dtype, generator):
    """Uniformly random bit patterns: every byte value, NaNs with payloads, -0.0, infinities, subnormals."""
    width = torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (*shape, width), dtype=torch.uint8, generator=generator)
    return raw.view(dtype).reshape(shape)


def _special_fill(torch, dtype, t):
    """A fill whose bits a float conversion would change: a NaN with a payload, -0.0, -inf, or the top bit alone."""
    width = torch.empty((), dtype=dtype).element_size()
    bit_dtype = getattr(torch, BIT_DTYPES[width])
    top = 1 << (8 * width - 1)
    exponent_all_ones = {1: 0x7F, 2: 0x7E01 if dtype == torch.bfloat16 else 0x7C01, 4: 0x7F800001,
                         8: 0x7FF0000000000001}[width]
    patterns = [exponent_all_ones | 0x5, top, (top | exponent_all_ones) & ~1, top | 1]
    signed = patterns[t % len(patterns)]
    if width > 1 and signed >= top:  # the 2-, 4- and 8-byte bit views are signed
        signed -= 1 << (8 * width)
    return torch.tensor(signed, dtype=bit_dtype).view(dtype)


def _pads(torch, rows):
    return torch.tensor(rows, dtype=torch.int64).reshape(len(rows), 2)


def make_suites(width: int):
    dtype_names = WIDTHS[width][2]

    def t0_original(t, device):
        # Exactly problems/pad_const_bN.py:get_inputs(), seeded 1000 + t.
        import torch

        g = torch.Generator().manual_seed(1000 + t)
        shape = (8, 64, 128, 128)
        if width == 1:
            x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
            value = torch.tensor(0x5A, dtype=torch.uint8)
        else:
            dtype = {2: torch.float16, 4: torch.float32, 8: torch.float64}[width]
            x = torch.randn(shape, dtype=dtype, generator=g)
            value = torch.tensor(-1.5, dtype=dtype)
        pads = _pads(torch, [[1, 2], [0, 3], [5, 4], [3, 6]])
        return [x.to(device), pads.to(device), value.to(device)]

    def special_values(t, device):
        # Random bit patterns in every dtype of the width, and fills no float conversion preserves.
        import torch

        g = torch.Generator().manual_seed(2000 + t)
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        x = _random_bits(torch, (3, 17, 257), dtype, g)
        pads = _pads(torch, [[1, 1], [2, 0], [7, 9]])
        return [x.to(device), pads.to(device), _special_fill(torch, dtype, t).to(device)]

    def misaligned(t, device):
        # Rank t + 1 (1..8), odd extents not divisible by 32, odd pads, zero pads on some axes.
        import torch

        g = torch.Generator().manual_seed(3000 + t)
        rank = t + 1
        budget = {1: 1_000_003, 2: 1001, 3: 97, 4: 31, 5: 13, 6: 9, 7: 5, 8: 5}[rank]
        shape = [int(torch.randint(1, budget + 1, (1,), generator=g)) | 1 for _ in range(rank)]
        rows = [[int(v) for v in torch.randint(0, 6, (2,), generator=g)] for _ in range(rank)]
        rows[t % rank] = [0, 0]
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        x = _random_bits(torch, shape, dtype, g)
        return [x.to(device), _pads(torch, rows).to(device), _random_bits(torch, (), dtype, g).to(device)]

    # (x's shape, pads): pads far wider than the input, extents of 1, and an empty axis: mostly,
    # or only, fill; a padded rank-1 x (misaligned's rank 1 has its only axis unpadded); an empty
    # axis with zero pads (an empty output); the widest pad the contract allows: an output extent
    # of 2**32 - 1, the largest a u32 shape_buf entry holds, which keeps n_out (a u32) in range
    # only where another axis makes the output empty; and a small rank 8 (misaligned's writes
    # 6 million elements) with padded extents of 1 beside an unpadded axis.
    wide_cases = [
        ((1, 3, 2), [[40, 0], [0, 33], [65, 64]]),
        ((1, 1, 1, 1, 1), [[2, 3], [1, 0], [0, 1], [4, 4], [255, 257]]),
        ((4, 0, 5), [[1, 1], [3, 2], [0, 7]]),
        ((7,), [[700, 1301]]),
        ((5, 0, 3), [[2, 1], [0, 0], [4, 4]]),
        ((2, 0, 3), [[1, 1], [0, 0], [2**31 - 1, 2**31 - 3]]),
        ((2, 1, 3, 1, 2, 1, 1, 2), [[1, 0], [2, 2], [0, 0], [0, 3], [1, 1], [2, 0], [1, 1], [0, 2]]),
    ]

    def wide_pads(t, device):
        import torch

        g = torch.Generator().manual_seed(4000 + t)
        shape, rows = wide_cases[t]
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        x = _random_bits(torch, shape, dtype, g)
        return [x.to(device), _pads(torch, rows).to(device), _random_bits(torch, (), dtype, g).to(device)]

    def suites():
        return [
            ("T0_original", 5, t0_original),
            ("special_values", 2 * len(dtype_names), special_values),
            ("misaligned", 8, misaligned),
            ("wide_pads", len(wide_cases), wide_pads),
        ]

    return suites


def make_probe(width: int):
    def probe(torch):
        dtype = getattr(torch, WIDTHS[width][2][0])
        g = torch.Generator().manual_seed(5000)
        aligned = _random_bits(torch, (2, 8, 32, 32), dtype, g)
        odd = _random_bits(torch, (3, 5, 7), dtype, g)
        return [
            ("aligned", [aligned, _pads(torch, [[1, 0], [0, 2], [3, 3], [4, 4]]), _random_bits(torch, (), dtype, g)]),
            ("misaligned", [odd, _pads(torch, [[1, 2], [0, 1], [3, 0]]), _random_bits(torch, (), dtype, g)]),
        ]

    return probe


def register(K, torch, ctypes):
    for width in WIDTHS:
        K.PROBLEMS[f"pad_const_b{width}"] = dict(
            kb_file=f"pad_const_b{width}.py",
            cuda=cuda_source(width),
            kernel_name=f"pad_const_b{width}",
            ref=make_ref(width),
            launch=make_launch(width, ctypes),
            suites=make_suites(width),
            probe=make_probe(width),
            exact=True,
        )
