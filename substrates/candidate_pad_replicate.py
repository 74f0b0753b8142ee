"""pad_replicate_b1, _b2, _b4, _b8: replicate (edge-repeat) pad of 1-, 2-, 4- and 8-byte elements, rank 1..8.

Ported from the Vulkan contracts (seeds/000): one thread per output element decomposes its
linear index against the output shape, shifts each coordinate by the axis's left pad and
clamps it into [0, n-1] (the edge element repeats outward), then copies that input element.
No arithmetic on the elements: bit-exact for every dtype of the width.

The clamp is defined for any pad width, so there is no pad-size precondition; only an empty
axis, which has no edge element to repeat, must have zero pads (launch refuses it otherwise).

Inputs (see problems/pad_replicate_bN.py): x, pads (int64 (rank, 2), row d = (left, right) of
axis d).
"""

# The kernel body is shared by the four widths; each source starts with its own typedef, so
# every line below appears verbatim in the compiled source (compile errors point here).
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
                                       long long n_out, PadGeometry g)
{
    long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= n_out) return;
    long long rest = o;        // output index still to decompose, innermost axis first
    long long src = 0;         // linear input index, built up axis by axis
    long long in_stride = 1;   // input elements per step along axis d
    for (int d = g.rank - 1; d >= 0; --d) {
        long long i = rest % g.out_shape[d] - g.left_pad[d];
        rest = rest / g.out_shape[d];
        if (i < 0) i = 0;                                  // left pad repeats the first element
        if (i >= g.in_shape[d]) i = g.in_shape[d] - 1;     // right pad repeats the last element
        src += i * in_stride;
        in_stride *= g.in_shape[d];
    }
    out[o] = in[src];
}
"""

BLOCK = 256
MAX_RANK = 8

# width -> (element type, dtypes of that width)
WIDTHS = {
    1: ("unsigned char", ("uint8", "int8")),
    2: ("unsigned short", ("float16", "bfloat16", "int16")),
    4: ("unsigned int", ("float32", "int32")),
    8: ("unsigned long long", ("float64", "int64")),
}
BIT_DTYPES = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}

# Bit patterns planted among random bits, as unsigned ints: -0.0, infinities, quiet and
# signalling NaNs with payloads (of float16 and bfloat16 for width 2), the smallest and largest
# subnormals and finites, all ones.
SPECIAL_BITS = {
    1: (0x00, 0x80, 0xFF, 0x7F, 0x01, 0xFE),
    2: (0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFD5A, 0x7F80, 0xFF81, 0x7FC1, 0x0001, 0x83FF, 0x7BFF,
        0xFFFF),
    4: (0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC12345, 0x7FBFFFFF, 0x00000001,
        0x807FFFFF, 0x7F7FFFFF, 0xFFFFFFFF),
    8: (0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
        0x7FF0000000000001, 0xFFF8DEADBEEF0001, 0x7FF7FFFFFFFFFFFF, 0x0000000000000001,
        0x800FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF),
}


def cuda_source(width: int) -> str:
    elem, _ = WIDTHS[width]
    header = f"typedef {elem} elem_t;\n"
    return header + CUDA_BODY.replace("KERNEL_NAME", f"pad_replicate_b{width}")


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


def _check_edges_exist(x, rows, name):
    """A padded axis needs an edge element to repeat: an empty axis takes only zero pads."""
    for axis, (n, (left, right)) in enumerate(zip(x.shape, rows)):
        if n == 0 and (left > 0 or right > 0):
            raise ValueError(f"{name}: axis {axis} has pad ({left}, {right}) but dim 0; "
                             f"replicate has no edge element to repeat")


def make_launch(width: int, ctypes):
    name = f"pad_replicate_b{width}"

    class PadGeometry(ctypes.Structure):
        _fields_ = [("rank", ctypes.c_int), ("in_shape", ctypes.c_longlong * MAX_RANK),
                    ("out_shape", ctypes.c_longlong * MAX_RANK), ("left_pad", ctypes.c_longlong * MAX_RANK)]

    def launch(inputs, torch):
        x, pads = inputs
        if x.element_size() != width or not x.is_contiguous():
            raise ValueError(f"{name}: x must be a contiguous tensor of {width}-byte elements, got {x.dtype}")
        rows = _checked_pads(x, pads, name)
        _check_edges_exist(x, rows, name)
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
            (PadGeometry, geometry),
        ]
        return out, grid, (BLOCK, 1, 1), args

    return launch


def make_ref(width: int):
    """The candidate's own reference: x copied into the interior, then each axis's borders
    filled in place by broadcasting its edge slices.

    Independent of the official gather through clamped index maps. Axis by axis, on the slab
    that spans the whole output along the axes before it and only the interior along the axes
    after it, the left border is the first interior slice broadcast `left` times and the right
    border the last interior slice broadcast `right` times.
    """

    def ref(x, pads):
        rows = pads.tolist()
        out = x.new_empty([n + left + right for n, (left, right) in zip(x.shape, rows)])
        interior = out
        for axis, (n, (left, _right)) in enumerate(zip(x.shape, rows)):
            interior = interior.narrow(axis, left, n)
        interior.copy_(x)
        for axis, (n, (left, right)) in enumerate(zip(x.shape, rows)):
            slab = out
            for later in range(axis + 1, x.dim()):
                slab = slab.narrow(later, rows[later][0], x.shape[later])
            if left > 0:
                slab.narrow(axis, 0, left).copy_(slab.narrow(axis, left, 1))
            if right > 0:
                slab.narrow(axis, left + n, right).copy_(slab.narrow(axis, left + n - 1, 1))
        return out

    return ref


# ---------------------------------------------------------------------------- inputs


def _random_bits(torch, shape, dtype, generator):
    """Uniformly random bit patterns: every byte value, NaNs with payloads, -0.0, infinities, subnormals."""
    width = torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (*shape, width), dtype=torch.uint8, generator=generator)
    return raw.view(dtype).reshape(shape)


def _plant_specials(torch, x):
    """x with SPECIAL_BITS written over every third element, in turn, so every border holds some."""
    width = x.element_size()
    top = 1 << (8 * width - 1)
    signed = [b - (1 << (8 * width)) if width > 1 and b >= top else b for b in SPECIAL_BITS[width]]
    flat = x.view(getattr(torch, BIT_DTYPES[width])).view(-1)
    slots = flat[::3]
    patterns = torch.tensor(signed, dtype=flat.dtype)
    slots.copy_(patterns.repeat((slots.numel() + len(signed) - 1) // len(signed))[: slots.numel()])
    return x


def _pads(torch, rows):
    return torch.tensor(rows, dtype=torch.int64).reshape(len(rows), 2)


def make_suites(width: int):
    dtype_names = WIDTHS[width][1]

    def t0_original(t, device):
        # Exactly problems/pad_replicate_bN.py:get_inputs(), seeded 1000 + t.
        import torch

        g = torch.Generator().manual_seed(1000 + t)
        shape = (4, 32, 96, 96)
        if width == 1:
            x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
        else:
            dtype = {2: torch.float16, 4: torch.float32, 8: torch.float64}[width]
            x = torch.randn(shape, dtype=dtype, generator=g)
        pads = _pads(torch, [[1, 2], [0, 3], [5, 4], [3, 6]])
        return [x.to(device), pads.to(device)]

    def special_values(t, device):
        # Random bit patterns in every dtype of the width, with -0.0, infinities and NaN payloads planted.
        import torch

        g = torch.Generator().manual_seed(2000 + t)
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        x = _plant_specials(torch, _random_bits(torch, (3, 17, 257), dtype, g))
        rows = [[[1, 1], [2, 0], [7, 9]], [[4, 0], [0, 40], [300, 2]]][t % 2]
        return [x.to(device), _pads(torch, rows).to(device)]

    def misaligned(t, device):
        # Rank t + 1 (1..8), odd extents not divisible by 32, pads of 0..7 and a zero-padded axis;
        # redrawn until the output holds at most 400 000 elements.
        import torch

        g = torch.Generator().manual_seed(3000 + t)
        rank = t + 1
        budget = {1: 100_003, 2: 601, 3: 61, 4: 23, 5: 11, 6: 7, 7: 5, 8: 5}[rank]
        while True:
            shape = [int(torch.randint(1, budget + 1, (1,), generator=g)) | 1 for _ in range(rank)]
            rows = [[int(v) for v in torch.randint(0, 8, (2,), generator=g)] for _ in range(rank)]
            if rank > 1:
                rows[t % rank] = [0, 0]
            out_numel = 1
            for n, (left, right) in zip(shape, rows):
                out_numel *= n + left + right
            if out_numel <= 400_000:
                break
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        x = _random_bits(torch, shape, dtype, g)
        return [x.to(device), _pads(torch, rows).to(device)]

    # (x's shape, pads): pads several times wider than the input, extents of 1 at ranks 1 to 8,
    # an empty axis with zero pads (an empty output), and a rank 8 small enough to debug (the
    # other rank-8 trials write 200 000 elements or more), extents of 1 padded beside an
    # unpadded axis.
    wide_cases = [
        ((1, 3, 2), [[40, 0], [0, 33], [65, 64]]),
        ((1, 1, 1, 1, 1), [[2, 3], [1, 0], [0, 1], [4, 4], [255, 257]]),
        ((3,), [[1000, 2001]]),
        ((2, 1, 3, 1, 2, 1, 1, 2), [[3, 4], [0, 3], [5, 0], [2, 2], [0, 0], [1, 1], [1, 0], [4, 6]]),
        ((4, 0, 5), [[1, 1], [0, 0], [0, 7]]),
        ((2, 1, 3, 1, 2, 1, 1, 2), [[1, 0], [2, 2], [0, 0], [0, 3], [1, 1], [2, 0], [1, 1], [0, 2]]),
    ]

    def wide_pads(t, device):
        import torch

        g = torch.Generator().manual_seed(4000 + t)
        shape, rows = wide_cases[t]
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        x = _random_bits(torch, shape, dtype, g)
        return [x.to(device), _pads(torch, rows).to(device)]

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
        dtype = getattr(torch, WIDTHS[width][1][0])
        g = torch.Generator().manual_seed(5000)
        aligned = _random_bits(torch, (2, 8, 32, 32), dtype, g)
        odd = _random_bits(torch, (3, 5, 7), dtype, g)
        return [
            ("aligned", [aligned, _pads(torch, [[1, 0], [0, 2], [3, 3], [4, 4]])]),
            ("misaligned", [odd, _pads(torch, [[1, 2], [0, 1], [3, 0]])]),
        ]

    return probe


def register(K, torch, ctypes):
    for width in WIDTHS:
        K.PROBLEMS[f"pad_replicate_b{width}"] = dict(
            kb_file=f"pad_replicate_b{width}.py",
            cuda=cuda_source(width),
            kernel_name=f"pad_replicate_b{width}",
            ref=make_ref(width),
            launch=make_launch(width, ctypes),
            suites=make_suites(width),
            probe=make_probe(width),
            exact=True,
        )
