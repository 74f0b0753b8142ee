"""pad_backward_const_b1, _b2, _b4, _b8: gradient of constant pad for 1-, 2-, 4- and 8-byte elements, rank 1..8.

Ported from the Vulkan contracts (seeds/000): constant pad maps each input element to exactly
one output position (the pad slots come from the constant), so its backward is a 1:1 gather,
not an accumulation. One thread per grad_in (input-shaped) element decomposes its linear index
against grad_in's shape, shifts each coordinate by the axis's left pad, and copies grad_out at
that position. Every grad_in slot is written once; no atomics, no arithmetic on the elements:
bit-exact for every dtype of the width.

Inputs (see problems/pad_backward_const_bN.py): grad_out, pads (int64 (rank, 2), row d =
(left, right) of axis d). grad_in's shape is grad_out's minus both pads on every axis.
"""

# The kernel body is shared by the four widths; each source starts with its own typedef, so
# every line below appears verbatim in the compiled source (compile errors point here).
CUDA_BODY = r"""
// Shapes arrive by value (no device buffer to keep alive): rank, then per axis the grad_in
// extent, the grad_out extent and the left pad. Axes past `rank` are unused.
struct PadGeometry {
    int rank;
    long long in_shape[8];
    long long out_shape[8];
    long long left_pad[8];
};

extern "C" __global__ void KERNEL_NAME(const elem_t* __restrict__ grad_out, elem_t* __restrict__ grad_in,
                                       long long n_in, PadGeometry g)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_in) return;
    long long rest = i;         // grad_in index still to decompose, innermost axis first
    long long src = 0;          // linear grad_out index, built up axis by axis
    long long out_stride = 1;   // grad_out elements per step along axis d
    for (int d = g.rank - 1; d >= 0; --d) {
        long long c = rest % g.in_shape[d] + g.left_pad[d];
        rest = rest / g.in_shape[d];
        src += c * out_stride;
        out_stride *= g.out_shape[d];
    }
    grad_in[i] = grad_out[src];
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


def cuda_source(width: int) -> str:
    elem, _ = WIDTHS[width]
    header = f"typedef {elem} elem_t;\n"
    return header + CUDA_BODY.replace("KERNEL_NAME", f"pad_backward_const_b{width}")


def _checked_pads(grad_out, pads, name):
    rank = grad_out.dim()
    if not 1 <= rank <= MAX_RANK:
        raise ValueError(f"{name}: grad_out has rank {rank}; this kernel takes rank 1..{MAX_RANK}")
    rows = pads.tolist()
    if len(rows) != rank or any(len(r) != 2 for r in rows):
        raise ValueError(f"{name}: pads must be ({rank}, 2), one (left, right) row per axis; got {tuple(pads.shape)}")
    for axis, ((left, right), n) in enumerate(zip(rows, grad_out.shape)):
        if left < 0 or right < 0:
            raise ValueError(f"{name}: axis {axis} has pad ({left}, {right}); negative pads (crops) are not supported")
        if left + right > n:
            raise ValueError(f"{name}: axis {axis} has pad ({left}, {right}) but grad_out has only {n} elements "
                             f"along it; left + right must be at most {n}")
    return rows


def make_launch(width: int, ctypes):
    name = f"pad_backward_const_b{width}"

    class PadGeometry(ctypes.Structure):
        _fields_ = [("rank", ctypes.c_int), ("in_shape", ctypes.c_longlong * MAX_RANK),
                    ("out_shape", ctypes.c_longlong * MAX_RANK), ("left_pad", ctypes.c_longlong * MAX_RANK)]

    def launch(inputs, torch):
        grad_out, pads = inputs
        if grad_out.element_size() != width or not grad_out.is_contiguous():
            raise ValueError(f"{name}: grad_out must be a contiguous tensor of {width}-byte elements, "
                             f"got {grad_out.dtype}")
        rows = _checked_pads(grad_out, pads, name)
        in_shape = [n - left - right for n, (left, right) in zip(grad_out.shape, rows)]
        grad_in = torch.empty(in_shape, dtype=grad_out.dtype, device=grad_out.device)
        unused = [1] * (MAX_RANK - grad_out.dim())
        geometry = PadGeometry(
            grad_out.dim(),
            (ctypes.c_longlong * MAX_RANK)(*in_shape, *unused),
            (ctypes.c_longlong * MAX_RANK)(*grad_out.shape, *unused),
            (ctypes.c_longlong * MAX_RANK)(*[left for left, _ in rows], *[0] * len(unused)),
        )
        n_in = grad_in.numel()
        grid = (max(1, (n_in + BLOCK - 1) // BLOCK), 1, 1)
        args = [
            (ctypes.c_void_p, grad_out.data_ptr()),
            (ctypes.c_void_p, grad_in.data_ptr()),
            (ctypes.c_longlong, n_in),
            (PadGeometry, geometry),
        ]
        return grad_in, grid, (BLOCK, 1, 1), args

    return launch


def make_ref(width: int):
    """The candidate's own reference: F.pad of the bit view by the negated pads (a crop).

    The backward of padding by p is padding by -p; the official reference slices instead. The
    integer view keeps every bit pattern out of any float path.
    """

    def ref(grad_out, pads):
        import torch

        F = torch.nn.functional
        bit_dtype = getattr(torch, BIT_DTYPES[width])
        flat = []
        for left, right in reversed(pads.tolist()):  # F.pad lists the last axis first
            flat += [-left, -right]
        return F.pad(grad_out.view(bit_dtype), flat, mode="constant", value=0).view(grad_out.dtype)

    return ref


# ---------------------------------------------------------------------------- inputs

# Bit patterns a float path or a sign bug would change, per dtype: -0.0 (the top bit alone), a
# signalling NaN with a payload, a quiet NaN with a payload, -inf, +inf, the smallest subnormal,
# all ones (a negative NaN). Integer dtypes take the patterns of the float of their width.
SPECIAL_BITS = {
    "uint8": (0x80, 0x7F, 0x01, 0xFF, 0x00),
    "float16": (0x8000, 0x7C01, 0x7E55, 0xFC00, 0x7C00, 0x0001, 0xFFFF),
    "bfloat16": (0x8000, 0x7F81, 0x7FD5, 0xFF80, 0x7F80, 0x0001, 0xFFFF),
    "float32": (0x80000000, 0x7F800001, 0x7FC00123, 0xFF800000, 0x7F800000, 0x00000001, 0xFFFFFFFF),
    "float64": (0x8000000000000000, 0x7FF0000000000001, 0x7FF8000000000123, 0xFFF0000000000000,
                0x7FF0000000000000, 0x0000000000000001, 0xFFFFFFFFFFFFFFFF),
}
SPECIAL_BITS.update(int8=SPECIAL_BITS["uint8"], int16=SPECIAL_BITS["float16"], int32=SPECIAL_BITS["float32"],
                    int64=SPECIAL_BITS["float64"])


def _random_bits(torch, shape, dtype, generator):
    """Uniformly random bit patterns: every byte value, NaNs with payloads, infinities, subnormals."""
    width = torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (*shape, width), dtype=torch.uint8, generator=generator)
    return raw.view(dtype).reshape(shape)


def _from_bits(torch, patterns, dtype):
    """A 1-D tensor of `dtype` holding the given unsigned bit patterns exactly."""
    width = torch.empty((), dtype=dtype).element_size()
    bit_dtype = getattr(torch, BIT_DTYPES[width])
    if width > 1:  # the 2-, 4- and 8-byte bit views are signed
        patterns = [p - (1 << (8 * width)) if p >> (8 * width - 1) else p for p in patterns]
    return torch.tensor(patterns, dtype=bit_dtype).view(dtype)


def _bits_with_specials(torch, shape, dtype, generator):
    """Random bit patterns with every special pattern of the dtype planted at every 5th element."""
    x = _random_bits(torch, shape, dtype, generator)
    flat = x.reshape(-1)
    slots = flat[::5]
    specials = _from_bits(torch, SPECIAL_BITS[str(dtype).removeprefix("torch.")], dtype)
    slots.copy_(specials.repeat((slots.numel() + specials.numel() - 1) // specials.numel())[:slots.numel()])
    return x


def _pads(torch, rows):
    return torch.tensor(rows, dtype=torch.int64).reshape(len(rows), 2)


def _padded(shape, rows):
    """grad_out's shape: grad_in's shape plus both pads on every axis."""
    return [n + left + right for n, (left, right) in zip(shape, rows)]


def make_suites(width: int):
    dtype_names = WIDTHS[width][1]

    def t0_original(t, device):
        # Exactly problems/pad_backward_const_bN.py:get_inputs(), the same calls under
        # torch.manual_seed(1000 + t) (the global generator's state is restored afterwards).
        import torch

        shape = (7, 19, 137, 137)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1000 + t)
            if width == 1:
                grad_out = torch.randint(0, 256, shape, dtype=torch.uint8)
            else:
                dtype = {2: torch.float16, 4: torch.float32, 8: torch.float64}[width]
                grad_out = torch.randn(shape, dtype=dtype)
            pads = _pads(torch, [[1, 2], [0, 3], [5, 4], [3, 6]])
        return [grad_out.to(device), pads.to(device)]

    def special_values(t, device):
        # Random bit patterns in every dtype of the width, with -0.0, NaN payloads and infinities planted.
        import torch

        g = torch.Generator().manual_seed(2000 + t)
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        rows = [[1, 1], [2, 0], [7, 9]]
        grad_out = _bits_with_specials(torch, _padded((3, 17, 257), rows), dtype, g)
        return [grad_out.to(device), _pads(torch, rows).to(device)]

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
        grad_out = _random_bits(torch, _padded(shape, rows), dtype, g)
        return [grad_out.to(device), _pads(torch, rows).to(device)]

    # (grad_in shape, pads): an empty axis, extents of 1, rank-1 lengths not multiples of 4,
    # pads on only the first or only the last axis, rank 8 with no pad at all (a plain copy), the
    # widest pad the contract allows: a grad_out extent of 2**32 - 1, the largest a u32
    # shape_buf entry holds, with grad_out empty along another axis (so it holds nothing); and a
    # small padded rank 8 (misaligned's grad_out has 6 million elements), extents of 1 padded
    # beside an unpadded axis.
    edge_cases = [
        ((4, 0, 5), [[1, 1], [3, 2], [0, 7]]),
        ((1, 1, 1), [[2, 2], [0, 6], [1, 1]]),
        ((1,), [[0, 3]]),
        ((3,), [[2, 0]]),
        ((5,), [[1, 1]]),
        ((4097,), [[3, 5]]),
        ((4, 9, 1), [[0, 0], [0, 0], [16, 16]]),
        ((1, 3, 5), [[20, 21], [0, 0], [0, 0]]),
        ((3, 1, 5, 2, 3, 1, 7, 3), [[0, 0]] * 8),
        ((2, 0, 3), [[1, 1], [0, 0], [2**31 - 1, 2**31 - 3]]),
        ((2, 1, 3, 1, 2, 1, 1, 2), [[1, 0], [2, 2], [0, 0], [0, 3], [1, 1], [2, 0], [1, 1], [0, 2]]),
    ]

    def edge_pads(t, device):
        import torch

        g = torch.Generator().manual_seed(4000 + t)
        shape, rows = edge_cases[t]
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        grad_out = _random_bits(torch, _padded(shape, rows), dtype, g)
        return [grad_out.to(device), _pads(torch, rows).to(device)]

    def suites():
        return [
            ("T0_original", 5, t0_original),
            ("special_values", 2 * len(dtype_names), special_values),
            ("misaligned", 8, misaligned),
            ("edge_pads", len(edge_cases), edge_pads),
        ]

    return suites


def make_probe(width: int):
    def probe(torch):
        dtype = getattr(torch, WIDTHS[width][1][0])
        g = torch.Generator().manual_seed(5000)
        aligned_rows = [[1, 0], [0, 2], [3, 3], [4, 4]]
        odd_rows = [[1, 2], [0, 1], [3, 0]]
        # grad_out (3, 10, 38, 32): its innermost extent a multiple of 32.
        aligned = _random_bits(torch, _padded((2, 8, 32, 24), aligned_rows), dtype, g)
        odd = _random_bits(torch, _padded((3, 5, 7), odd_rows), dtype, g)
        return [
            ("aligned", [aligned, _pads(torch, aligned_rows)]),
            ("misaligned", [odd, _pads(torch, odd_rows)]),
        ]

    return probe


def register(K, torch, ctypes):
    for width in WIDTHS:
        K.PROBLEMS[f"pad_backward_const_b{width}"] = dict(
            kb_file=f"pad_backward_const_b{width}.py",
            cuda=cuda_source(width),
            kernel_name=f"pad_backward_const_b{width}",
            ref=make_ref(width),
            launch=make_launch(width, ctypes),
            suites=make_suites(width),
            probe=make_probe(width),
            exact=True,
        )
