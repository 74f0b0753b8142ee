"""masked_fill_b1, _b2, _b4, _b8: masked fill of 1-, 2-, 4- and 8-byte elements, any shape.

Ported from the Vulkan contracts (seeds/000): out[i] = mask[i] ? fill : x[i], one thread per
element over the flat index (elementwise, so the shape plays no part). The mask is always
torch.bool (one byte per element), the same shape as x, never broadcast. No arithmetic on the
elements, the fill arrives as its bit pattern: bit-exact for every dtype of the width.

Inputs (see problems/masked_fill_bN.py): x, mask (torch.bool, x's shape), value (0-dim tensor
of x's dtype whose bits are the fill).
"""

# The kernel body is shared by the four widths; each source starts with its own two typedefs,
# so every line below appears verbatim in the compiled source (compile errors point here).
CUDA_BODY = r"""
extern "C" __global__ void KERNEL_NAME(const elem_t* __restrict__ in, const unsigned char* __restrict__ mask,
                                       elem_t* __restrict__ out, long long n, fill_t fill)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = mask[i] != 0 ? (elem_t)fill : in[i];
}
"""

BLOCK = 256

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
    return header + CUDA_BODY.replace("KERNEL_NAME", f"masked_fill_b{width}")


def _fill_bits(torch, value, width):
    """The fill's bit pattern as a non-negative int of `width` bytes."""
    bits = value.reshape(1).view(getattr(torch, BIT_DTYPES[width])).item()
    return bits & ((1 << (8 * width)) - 1)


def make_launch(width: int, ctypes):
    name = f"masked_fill_b{width}"
    fill_ctype = ctypes.c_ulonglong if width == 8 else ctypes.c_uint

    def launch(inputs, torch):
        x, mask, value = inputs
        if x.element_size() != width or not x.is_contiguous():
            raise ValueError(f"{name}: x must be a contiguous tensor of {width}-byte elements, got {x.dtype}")
        if mask.dtype != torch.bool:
            raise ValueError(f"{name}: mask must be torch.bool, got {mask.dtype}")
        if mask.shape != x.shape:
            raise ValueError(f"{name}: mask has shape {tuple(mask.shape)} but x has shape {tuple(x.shape)}; "
                             f"the mask must have x's shape (no broadcasting)")
        if not mask.is_contiguous():
            raise ValueError(f"{name}: mask must be contiguous")
        if value.dim() != 0 or value.dtype != x.dtype:
            raise ValueError(f"{name}: value must be a 0-dim tensor of x's dtype {x.dtype}, got {value.dtype} "
                             f"of shape {tuple(value.shape)}")
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        n = out.numel()
        grid = (max(1, (n + BLOCK - 1) // BLOCK), 1, 1)
        args = [
            (ctypes.c_void_p, x.data_ptr()),
            (ctypes.c_void_p, mask.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, n),
            (fill_ctype, _fill_bits(torch, value, width)),
        ]
        return out, grid, (BLOCK, 1, 1), args

    return launch


def make_ref(width: int):
    """The candidate's own reference: a branch-free select in integer arithmetic on the bit views.

    out = x ^ ((x ^ fill) & m), where m is all ones where the mask is set and zero elsewhere;
    the official reference uses torch.where on the values instead.
    """

    def ref(x, mask, value):
        import torch

        bit_dtype = getattr(torch, BIT_DTYPES[width])
        x_bits = x.view(bit_dtype)
        fill_bits = value.view(bit_dtype)  # 0-dim: x of rank 0 stays rank 0
        all_ones = torch.tensor(0xFF if width == 1 else -1, dtype=bit_dtype, device=x.device)  # every bit set
        m = mask.to(bit_dtype) * all_ones
        return (x_bits ^ ((x_bits ^ fill_bits) & m)).view(x.dtype)

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


def _specials(torch, dtype):
    return _from_bits(torch, SPECIAL_BITS[str(dtype).removeprefix("torch.")], dtype)


def _bits_with_specials(torch, shape, dtype, generator):
    """Random bit patterns with every special pattern of the dtype planted at every 5th element."""
    x = _random_bits(torch, shape, dtype, generator)
    slots = x.reshape(-1)[::5]
    specials = _specials(torch, dtype)
    slots.copy_(specials.repeat((slots.numel() + specials.numel() - 1) // specials.numel())[:slots.numel()])
    return x


def _random_mask(torch, shape, generator, p=0.5):
    return torch.rand(shape, generator=generator) < p


def make_suites(width: int):
    dtype_names = WIDTHS[width][2]

    def t0_original(t, device):
        # Exactly problems/masked_fill_bN.py:get_inputs(), seeded 1000 + t.
        import torch

        g = torch.Generator().manual_seed(1000 + t)
        shape = (4, 8, 256, 256)
        if width == 1:
            x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
            value = torch.tensor(0x5A, dtype=torch.uint8)
        else:
            dtype = {2: torch.float16, 4: torch.float32, 8: torch.float64}[width]
            x = torch.randn(shape, dtype=dtype, generator=g)
            value = torch.tensor(float("-inf"), dtype=dtype)
        mask = _random_mask(torch, shape, g)
        return [x.to(device), mask.to(device), value.to(device)]

    def special_values(t, device):
        # Random bit patterns in every dtype of the width with the special ones planted, and a
        # fill no float conversion preserves (a signalling NaN with a payload, -0.0, ...).
        import torch

        g = torch.Generator().manual_seed(2000 + t)
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        shape = (3, 17, 257)
        x = _bits_with_specials(torch, shape, dtype, g)
        specials = _specials(torch, dtype)
        value = specials[t // len(dtype_names)].clone()  # -0.0 then a signalling NaN, in every dtype
        return [x.to(device), _random_mask(torch, shape, g).to(device), value.to(device)]

    # Masks over a (5, 4097) x: everything, nothing, every other element, only the first and
    # the last element, runs of 7 (not aligned to any word), and sparse.
    mask_kinds = ("all_true", "all_false", "alternating", "ends_only", "runs_of_7", "sparse")

    def masks(t, device):
        import torch

        g = torch.Generator().manual_seed(3000 + t)
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        shape = (5, 4097)
        index = torch.arange(shape[0] * shape[1]).reshape(shape)
        kind = mask_kinds[t]
        if kind == "all_true":
            mask = torch.ones(shape, dtype=torch.bool)
        elif kind == "all_false":
            mask = torch.zeros(shape, dtype=torch.bool)
        elif kind == "alternating":
            mask = index % 2 == 1
        elif kind == "ends_only":
            mask = (index == 0) | (index == index.numel() - 1)
        elif kind == "runs_of_7":
            mask = index // 7 % 2 == 0
        else:
            mask = _random_mask(torch, shape, g, p=0.02)
        x = _random_bits(torch, shape, dtype, g)
        return [x.to(device), mask.to(device), _random_bits(torch, (), dtype, g).to(device)]

    # Rank 0 to 8, lengths that are not multiples of 4, odd extents, an empty tensor.
    shapes = [(), (1,), (3,), (5,), (4097,), (65_537,), (3, 5, 7), (2, 3, 1, 5, 7, 3, 1, 9), (4, 0, 5)]

    def misaligned(t, device):
        import torch

        g = torch.Generator().manual_seed(4000 + t)
        dtype = getattr(torch, dtype_names[t % len(dtype_names)])
        shape = shapes[t]
        x = _random_bits(torch, shape, dtype, g)
        mask = _random_mask(torch, shape, g)
        return [x.to(device), mask.to(device), _random_bits(torch, (), dtype, g).to(device)]

    def suites():
        return [
            ("T0_original", 5, t0_original),
            ("special_values", 2 * len(dtype_names), special_values),
            ("masks", len(mask_kinds), masks),
            ("misaligned", len(shapes), misaligned),
        ]

    return suites


def make_probe(width: int):
    def probe(torch):
        dtype = getattr(torch, WIDTHS[width][2][0])
        g = torch.Generator().manual_seed(5000)
        aligned = _random_bits(torch, (2, 8, 32, 32), dtype, g)
        odd = _random_bits(torch, (3, 5, 7), dtype, g)
        return [
            ("aligned", [aligned, _random_mask(torch, aligned.shape, g), _random_bits(torch, (), dtype, g)]),
            ("misaligned", [odd, _random_mask(torch, odd.shape, g), _random_bits(torch, (), dtype, g)]),
        ]

    return probe


def register(K, torch, ctypes):
    for width in WIDTHS:
        K.PROBLEMS[f"masked_fill_b{width}"] = dict(
            kb_file=f"masked_fill_b{width}.py",
            cuda=cuda_source(width),
            kernel_name=f"masked_fill_b{width}",
            ref=make_ref(width),
            launch=make_launch(width, ctypes),
            suites=make_suites(width),
            probe=make_probe(width),
            exact=True,
        )
