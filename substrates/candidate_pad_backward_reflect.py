"""pad_backward_reflect_f32, _f64, _f16, _bf16: gradient of reflect (mirror) pad, rank 1..8.

Ported from the Vulkan contracts (seeds/000): one thread per grad_out element decomposes its
linear index against grad_out's shape, mirrors each coordinate i minus the axis's left pad into
[0, n - 1] (i < 0 -> -i, i >= n -> 2 * (n - 1) - i: the forward's gather map, the edge not
repeated), and atomically adds its gradient into that grad_in slot
with a compare-and-swap loop bounded at 1000 tries: a 32-bit CAS for f32, a 64-bit CAS for
f64, and for f16/bf16 a CAS on the enclosing aligned 32-bit word that rewrites only the
element's 16-bit lane, the add done in f32 and rounded to nearest even. launch zero-fills
grad_in, in whole 32-bit words so that the word around the last of an odd count of
16-bit elements is the buffer's too; the kernel only adds into it.

Inputs (see problems/pad_backward_reflect_<dtype>.py): grad_out, pads (int64 (rank, 2), row d
= (left, right) of axis d). grad_in has grad_out's shape minus the pads; as for F.pad, each pad
is at most n - 1, n being grad_in's extent on that axis.

Comparison, bit for bit (exact=True) although the order of the atomic adds changes from run to
run: every suite's gradients are nonzero small integers, few enough per slot that every partial
sum is exact in the dtype (|value| x contributions <= 256 for bf16, 2048 for f16), so every
order gives the same bits and a dropped, doubled or misplaced contribution changes them; one
suite has fractional values, at most two per slot, so each slot is rounded once whatever the
order, which catches a lane update that rounds the wrong way.
"""

# The kernel body is shared by the four dtypes; each source starts with its dtype's typedefs,
# conversions and atomic_accumulate, so every line below appears verbatim in the compiled
# source (compile errors point here).
CUDA_BODY = r"""
// Shapes arrive by value (no device buffer to keep alive): rank, then per axis grad_in's
// extent, grad_out's extent and the left pad. Axes past `rank` are unused.
struct PadGeometry {
    int rank;
    long long in_shape[8];
    long long out_shape[8];
    long long left_pad[8];
};

extern "C" __global__ void KERNEL_NAME(const elem_t* __restrict__ grad_out, elem_t* __restrict__ grad_in,
                                       long long n_out, PadGeometry g)
{
    long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= n_out) return;
    long long rest = o;        // grad_out index still to decompose, innermost axis first
    long long dst = 0;         // linear grad_in index, built up axis by axis
    long long in_stride = 1;   // grad_in elements per step along axis d
    for (int d = g.rank - 1; d >= 0; --d) {
        long long i = rest % g.out_shape[d] - g.left_pad[d];
        rest = rest / g.out_shape[d];
        if (i < 0) i = -i;                                        // left pad: mirrored about 0
        if (i >= g.in_shape[d]) i = 2 * (g.in_shape[d] - 1) - i;  // right pad: mirrored about n - 1
        dst += i * in_stride;
        in_stride *= g.in_shape[d];
    }
    atomic_accumulate(grad_in + dst, grad_out[o]);
}
"""

# The CAS of a whole element (f32: 32-bit word, f64: 64-bit word).
ACCUMULATE_WORD = r"""
// Bounded CAS loop: a lost race retries with the value that won; after MAX_CAS_TRIES the
// contribution is dropped (the contract's bound; the suites keep contention below it).
__device__ void atomic_accumulate(elem_t* slot, elem_t g)
{
    word_t* word = (word_t*)slot;
    word_t old = *word;
    for (int tries = 0; tries < MAX_CAS_TRIES; ++tries) {
        word_t sum = elem_as_word(word_as_elem(old) + g);
        word_t seen = atomicCAS(word, old, sum);
        if (seen == old) return;
        old = seen;
    }
}
"""

# The sub-word CAS of a 16-bit element (f16, bf16).
ACCUMULATE_LANE = r"""
// Sub-word CAS: the thread swaps the aligned 32-bit word that holds its element, rewriting
// only its own 16-bit lane and carrying the other lane (which another thread may be updating)
// over unchanged. The add is done in f32 and rounded once, to nearest even, into the lane.
// Bounded like the whole-word loop: after MAX_CAS_TRIES the contribution is dropped.
__device__ void atomic_accumulate(elem_t* slot, elem_t g)
{
    unsigned long long address = (unsigned long long)slot;
    unsigned int* word = (unsigned int*)(address & ~3ull);
    unsigned int shift = (unsigned int)(address & 2ull) * 8u;  // 0: low lane, 16: high lane
    float add = widen(g);
    unsigned int old = *word;
    for (int tries = 0; tries < MAX_CAS_TRIES; ++tries) {
        unsigned short lane = (unsigned short)(old >> shift);
        unsigned short sum = lane_bits(narrow(widen(lane_value(lane)) + add));
        unsigned int next = (old & ~(0xFFFFu << shift)) | ((unsigned int)sum << shift);
        unsigned int seen = atomicCAS(word, old, next);
        if (seen == old) return;
        old = seen;
    }
}
"""

# dtype -> (suffix, the source's head: includes, typedefs, conversions; its accumulate)
DTYPES = {
    "float32": ("f32", r"""
typedef float elem_t;
typedef unsigned int word_t;  // the CAS works on the element's own 32-bit word
__device__ __forceinline__ word_t elem_as_word(elem_t v) { return __float_as_uint(v); }
__device__ __forceinline__ elem_t word_as_elem(word_t w) { return __uint_as_float(w); }
""", ACCUMULATE_WORD),
    "float64": ("f64", r"""
typedef double elem_t;
typedef unsigned long long word_t;  // the CAS works on the element's own 64-bit word
__device__ __forceinline__ word_t elem_as_word(elem_t v) { return (word_t)__double_as_longlong(v); }
__device__ __forceinline__ elem_t word_as_elem(word_t w) { return __longlong_as_double((long long)w); }
""", ACCUMULATE_WORD),
    "float16": ("f16", r"""
#include <cuda_fp16.h>
typedef __half elem_t;
// The lane's conversions: widening is exact, narrowing rounds to nearest even.
__device__ __forceinline__ float widen(elem_t v) { return __half2float(v); }
__device__ __forceinline__ elem_t narrow(float v) { return __float2half_rn(v); }
__device__ __forceinline__ unsigned short lane_bits(elem_t v) { return __half_as_ushort(v); }
__device__ __forceinline__ elem_t lane_value(unsigned short bits) { return __ushort_as_half(bits); }
""", ACCUMULATE_LANE),
    "bfloat16": ("bf16", r"""
#include <cuda_bf16.h>
typedef __nv_bfloat16 elem_t;
// The lane's conversions: widening is exact, narrowing rounds to nearest even.
__device__ __forceinline__ float widen(elem_t v) { return __bfloat162float(v); }
__device__ __forceinline__ elem_t narrow(float v) { return __float2bfloat16_rn(v); }
__device__ __forceinline__ unsigned short lane_bits(elem_t v) { return __bfloat16_as_ushort(v); }
__device__ __forceinline__ elem_t lane_value(unsigned short bits) { return __ushort_as_bfloat16(bits); }
""", ACCUMULATE_LANE),
}

BLOCK = 256
MAX_RANK = 8
MODE = "reflect"


def substrate_name(dtype_name: str) -> str:
    return f"pad_backward_{MODE}_{DTYPES[dtype_name][0]}"


def cuda_source(dtype_name: str) -> str:
    _suffix, head, accumulate = DTYPES[dtype_name]
    bound = "#define MAX_CAS_TRIES 1000  // the contract's bound on every CAS loop\n"
    return bound + head + accumulate + CUDA_BODY.replace("KERNEL_NAME", substrate_name(dtype_name))


def _checked_pads(grad_out, pads, name, torch):
    """The pads as [(left, right)] per axis, after every check; grad_in's shape follows from them."""
    rank = grad_out.dim()
    if not 1 <= rank <= MAX_RANK:
        raise ValueError(f"{name}: grad_out has rank {rank}; this kernel takes rank 1..{MAX_RANK}")
    if pads.dtype != torch.int64:
        raise ValueError(f"{name}: pads must be int64, got {pads.dtype}")
    if tuple(pads.shape) != (rank, 2):
        raise ValueError(f"{name}: pads must be ({rank}, 2), one (left, right) row per axis; got {tuple(pads.shape)}")
    rows = pads.tolist()
    for axis, ((left, right), m) in enumerate(zip(rows, grad_out.shape)):
        if left < 0 or right < 0:
            raise ValueError(f"{name}: axis {axis} has pad ({left}, {right}); negative pads (crops) are not supported")
        if left + right > m:
            raise ValueError(f"{name}: axis {axis} has pad ({left}, {right}) but grad_out's extent there is only {m}")
        n = m - left - right
        if max(left, right) > max(n - 1, 0):
            raise ValueError(f"{name}: axis {axis} has pad ({left}, {right}) but input extent {n}: reflect "
                             f"needs each pad at most extent - 1 = {n - 1}")
    return rows


def zeroed_words(shape, dtype, device, torch):
    """Zeros of `shape` in storage of whole 32-bit words (the contract's buffers are u32 arrays).

    A 16-bit element's CAS swaps the aligned word around it: for the last of an odd count that word
    ends two bytes past the elements, which must still be this buffer's (compute-sanitizer's
    memcheck reports the read otherwise).
    """
    n = 1
    for extent in shape:
        n *= extent
    per_word = max(1, 4 // dtype.itemsize)
    words = torch.zeros(-(-n // per_word) * per_word, dtype=dtype, device=device)
    return words[:n].view(shape)


def make_launch(dtype_name: str, ctypes):
    name = substrate_name(dtype_name)

    class PadGeometry(ctypes.Structure):
        _fields_ = [("rank", ctypes.c_int), ("in_shape", ctypes.c_longlong * MAX_RANK),
                    ("out_shape", ctypes.c_longlong * MAX_RANK), ("left_pad", ctypes.c_longlong * MAX_RANK)]

    def launch(inputs, torch):
        grad_out, pads = inputs
        if grad_out.dtype != getattr(torch, dtype_name):
            raise ValueError(f"{name}: grad_out must be {dtype_name}, got {grad_out.dtype}")
        if not grad_out.is_contiguous():
            raise ValueError(f"{name}: grad_out must be contiguous")
        rows = _checked_pads(grad_out, pads, name, torch)
        in_shape = [m - left - right for m, (left, right) in zip(grad_out.shape, rows)]
        # The kernel only adds: grad_in starts at zero (the contract's wrapper zero-fills it).
        out = zeroed_words(in_shape, grad_out.dtype, grad_out.device, torch)
        unused = [1] * (MAX_RANK - grad_out.dim())
        geometry = PadGeometry(
            grad_out.dim(),
            (ctypes.c_longlong * MAX_RANK)(*in_shape, *unused),
            (ctypes.c_longlong * MAX_RANK)(*grad_out.shape, *unused),
            (ctypes.c_longlong * MAX_RANK)(*[left for left, _ in rows], *[0] * len(unused)),
        )
        n_out = grad_out.numel()
        grid = (max(1, (n_out + BLOCK - 1) // BLOCK), 1, 1)
        args = [
            (ctypes.c_void_p, grad_out.data_ptr()),
            (ctypes.c_void_p, out.data_ptr()),
            (ctypes.c_longlong, n_out),
            (PadGeometry, geometry),
        ]
        return out, grid, (BLOCK, 1, 1), args

    return launch


def _f_pad_axes(rows, in_shape):
    """How many trailing axes F.pad(mode='reflect') pads for these rows, or None where it cannot.

    F.pad pads the last k axes (k = 1, 2, 3) of a tensor of rank k + 1 or k + 2, and refuses an
    empty axis; every padded axis must be among the last k.
    """
    rank = len(rows)
    if 0 in in_shape:
        return None
    padded = [axis for axis, (left, right) in enumerate(rows) if left or right]
    fewest = rank - padded[0] if padded else 1
    for k in (1, 2, 3):
        if k >= fewest and rank - k in (1, 2):
            return k
    return None


def _mirror(i, n, torch):
    """The reflect map of one axis: i < 0 -> -i, i >= n -> 2 * (n - 1) - i."""
    i = i.abs()
    return torch.where(i >= n, 2 * (n - 1) - i, i)


def make_ref(dtype_name: str):
    """The candidate's own reference, independent of the official fold.

    Where F.pad covers the case: the float64 gradient autograd gives for F.pad(mode='reflect').
    Elsewhere: the forward's gather map (each grad_out element's grad_in index, the mirror per
    axis), and one index_add_ of grad_out over it into float64 zeros. Rounded once to the dtype.
    """

    def ref(grad_out, pads):
        import torch

        F = torch.nn.functional
        rows = pads.tolist()
        in_shape = [m - left - right for m, (left, right) in zip(grad_out.shape, rows)]
        grad = grad_out.to(torch.float64)
        k = _f_pad_axes(rows, in_shape)
        if k is not None:
            flat = [p for left, right in reversed(rows[len(rows) - k:]) for p in (left, right)]
            with torch.enable_grad():
                x = torch.zeros(in_shape, dtype=torch.float64, device=grad.device, requires_grad=True)
                # The gradient of sum(pad(x) * grad_out) with respect to pad(x) is grad_out exactly
                # (backward(grad_out) would do the same but imports sympy, a second at start-up).
                (F.pad(x, flat, mode=MODE) * grad).sum().backward()
            return x.grad.to(grad_out.dtype)
        index = torch.zeros(grad_out.shape, dtype=torch.int64, device=grad.device)
        stride = 1
        for axis in reversed(range(len(rows))):
            left, _right = rows[axis]
            n = in_shape[axis]
            source = _mirror(torch.arange(grad_out.shape[axis], device=grad.device) - left, n, torch)
            view = [1] * len(rows)
            view[axis] = grad_out.shape[axis]
            index += (source * stride).reshape(view)
            stride *= n
        total = 1
        for n in in_shape:
            total *= n
        grad_in = torch.zeros(total, dtype=torch.float64, device=grad.device)
        grad_in.index_add_(0, index.reshape(-1), grad.reshape(-1))
        return grad_in.reshape(in_shape).to(grad_out.dtype)

    return ref


# ---------------------------------------------------------------------------- inputs
#
# The comparison design. The atomic adds land in an order that changes from run to run, and
# floating-point addition is not associative, so a gradient is only comparable bit for bit if
# every order gives the same bits. Two ways are used:
# - integers: nonzero values in [-M, M] with M * (most contributions to one slot) within the
#   dtype's exact-integer range (EXACT_INTEGERS): every partial sum, in any order, is an exact
#   integer, so the sum is the only result; a dropped, doubled or misplaced (nonzero)
#   contribution changes an exact integer sum. M is 4, less only where one slot gets very many.
# - fractional values, at most two per slot: 0 + a + b rounds once (b + a the same), so any
#   order gives the correctly rounded sum, and a lane update that truncates instead of rounding
#   to nearest even is caught. Added in f32 and then narrowed, the sum of two f16 or bf16 values
#   still comes out as if rounded once: f32's 24 significand bits are at least twice theirs (11,
#   8) plus two, which makes that double rounding innocuous (so is the reference's, f64 for f32).
# Contention is kept to MAX_CONTENTION contributions per CAS word (a 16-bit slot shares its word
# with its neighbour): a thread loses at most one race to each other contender, so no CAS loop
# reaches its 1000-try bound. (On an H200, a bound of 64 tries does drop contributions in the
# heavy_overlap suite; 500 and 1000 never did, in 100 runs of every trial but T0's.)

EXACT_INTEGERS = {"float16": 2048, "bfloat16": 256, "float32": 2**24, "float64": 2**53}
MAX_CONTENTION = 480
MAGNITUDE = 4


def _pads(torch, rows):
    return torch.tensor(rows, dtype=torch.int64).reshape(len(rows), 2)


def _axis_counts(torch, n, left, right):
    """How many grad_out positions of one axis land on each of its n grad_in positions."""
    return torch.bincount(_mirror(torch.arange(n + left + right) - left, n, torch), minlength=n)


def most_contributions(torch, in_shape, rows):
    """The most grad_out elements that land on one grad_in slot (the map is a product over axes)."""
    most = 1
    for n, (left, right) in zip(in_shape, rows):
        most *= int(_axis_counts(torch, n, left, right).max()) if n else 0
    return most


def _magnitude(torch, dtype_name, in_shape, rows, lanes):
    """The largest |gradient| (at most MAGNITUDE) that keeps every partial sum of every slot exact.

    `lanes` slots share one CAS word (2 for f16/bf16), so a word sees at most lanes * most.
    """
    most = most_contributions(torch, in_shape, rows)
    assert most * lanes <= MAX_CONTENTION, f"{most} contributions to one slot, {lanes} slot(s) per CAS word: " \
                                           f"keep them to {MAX_CONTENTION}"
    magnitude = min(MAGNITUDE, EXACT_INTEGERS[dtype_name] // max(most, 1))
    assert magnitude >= 1, f"{most} contributions to one slot: no integer sum of them is exact in {dtype_name}"
    return magnitude


def _integer_grads(torch, shape, dtype, generator, magnitude=MAGNITUDE):
    """Nonzero integers drawn uniformly from [-magnitude, -1] and [1, magnitude]."""
    choices = torch.tensor([v for v in range(-magnitude, magnitude + 1) if v], dtype=dtype)
    return choices[torch.randint(0, len(choices), tuple(shape), generator=generator)]


def _fractional_grads(torch, shape, dtype, generator):
    """Non-integer gradients for slots of at most two contributions.

    Three in four are sign * 2**e * (1 + u), e in [-4, 3], rounded to the dtype: sums of two of
    them need rounding and truncation would differ from round-to-nearest-even. The rest are
    random bit patterns (every exponent, subnormals included) that are finite, nonzero and at
    most a quarter of the dtype's largest value, so no sum of two overflows.
    """
    shape = tuple(shape)
    sign = torch.randint(0, 2, shape, generator=generator) * 2 - 1
    exponent = torch.randint(-4, 4, shape, generator=generator)
    mantissa = 1 + torch.rand(shape, dtype=torch.float64, generator=generator)
    close = (sign * torch.ldexp(mantissa, exponent)).to(dtype)
    width = torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (*shape, width), dtype=torch.uint8, generator=generator).view(dtype).reshape(shape)
    usable = torch.isfinite(raw) & (raw != 0) & (raw.abs() <= torch.finfo(dtype).max / 4)
    wide = (torch.randint(0, 4, shape, generator=generator) == 0) & usable
    return torch.where(wide, raw, close)


def _grad_shape(in_shape, rows):
    return [n + left + right for n, (left, right) in zip(in_shape, rows)]


def make_suites(dtype_name: str):
    # 16-bit slots share a CAS word with their neighbour, so they may take half as many.
    lanes = 2 if dtype_name in ("float16", "bfloat16") else 1

    def integer_case(in_shape, rows, generator, device):
        import torch

        dtype = getattr(torch, dtype_name)
        magnitude = _magnitude(torch, dtype_name, in_shape, rows, lanes)
        grad = _integer_grads(torch, _grad_shape(in_shape, rows), dtype, generator, magnitude)
        return [grad.to(device), _pads(torch, rows).to(device)]

    def t0_original(t, device):
        # Exactly problems/pad_backward_reflect_<dtype>.py:get_inputs(), the same calls under
        # torch.manual_seed(1000 + t) (the global generator's state is restored afterwards).
        import torch

        dtype = getattr(torch, dtype_name)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1000 + t)
            values = torch.tensor([-4, -3, -2, -1, 1, 2, 3, 4], dtype=dtype)
            grad = values[torch.randint(0, 8, (8, 24, 101, 104))]
            pads = torch.tensor([[0, 0], [0, 0], [3, 2], [2, 4]], dtype=torch.int64)
        return [grad.to(device), pads.to(device)]

    def heavy_overlap(t, device):
        # Trials 4..6 are the adjacent-lane cases below, under their own seeds.
        if t >= 4:
            return adjacent_lanes(t - 4, device)
        # Pads at the limit n - 1: both pads mirror onto the middle of an axis, so a slot takes up
        # to 3 contributions per axis, 3**4 * 2 = 162 in trial 0; extents 1 and 2; one-sided pads.
        import torch

        g = torch.Generator().manual_seed(2000 + t)
        in_shape, rows = [((3, 3, 3, 3, 2), [[2, 2], [2, 2], [2, 2], [2, 2], [1, 1]]),
                          ((1001,), [[1000, 1000]]),
                          ((5, 4, 2, 5), [[4, 4], [3, 3], [1, 1], [4, 4]]),
                          ((1, 7, 2, 6), [[0, 0], [6, 0], [1, 1], [0, 5]])][t]
        return integer_case(in_shape, rows, g, device)

    def misaligned(t, device):
        # Rank t + 1 (1..8), odd extents not divisible by 32, pads up to 5, some axes unpadded.
        # Trial 8: an empty axis, unpadded (a pad there would mirror into nothing; launch refuses
        # one), beside pads at the reflect limit n - 1: grad_out and grad_in are both empty.
        import torch

        g = torch.Generator().manual_seed(3000 + t)
        if t == 8:
            in_shape, rows = ((3, 0, 5), [[2, 2], [0, 0], [4, 4]])
            return integer_case(in_shape, rows, g, device)
        rank = t + 1
        budget = {1: 100_003, 2: 501, 3: 61, 4: 23, 5: 11, 6: 7, 7: 5, 8: 5}[rank]
        in_shape = [int(torch.randint(1, budget + 1, (1,), generator=g)) | 1 for _ in range(rank)]
        rows = [[int(v) for v in torch.randint(0, 6, (2,), generator=g)] for _ in range(rank)]
        rows[t % rank] = [0, 0]
        rows = [[min(left, n - 1), min(right, n - 1)] for n, (left, right) in zip(in_shape, rows)]
        for axis in range(rank):  # unpad axes until no slot gets more than 32 contributions
            if most_contributions(torch, in_shape, rows) > 32:
                rows[axis] = [0, 0]
        return integer_case(in_shape, rows, g, device)

    def adjacent_lanes(t, device):  # heavy_overlap's trials 4..6
        # Neighbouring slots under concurrent updates: for f16/bf16 the two lanes of one CAS
        # word, at even and odd element offsets; innermost extents 2, 3 (rows straddle words)
        # and 1 (consecutive rows' slots share a word).
        import torch

        g = torch.Generator().manual_seed(4000 + t)
        in_shape, rows = [((5, 7, 2), [[1, 1], [2, 3], [1, 1]]),
                          ((33, 3), [[0, 0], [2, 2]]),
                          ((17, 3, 1), [[16, 16], [2, 1], [0, 0]])][t]
        return integer_case(in_shape, rows, g, device)

    def fractional(t, device):
        # Non-integer values, at most two contributions per slot (one padded axis whose left
        # and right mirrors do not overlap): in trial 0 every slot, both lanes of every 16-bit
        # CAS word, takes two (extent 2, pads (1, 1)); in the last trial none is padded: every
        # slot one contribution, kept bit for bit.
        import torch

        g = torch.Generator().manual_seed(5000 + t)
        in_shape, rows = [((50_001, 2), [[0, 0], [1, 1]]),
                          ((257, 129), [[0, 0], [64, 63]]),
                          ((3, 5, 17, 33), [[0, 0], [1, 2], [0, 0], [0, 0]]),
                          ((31, 33, 65), [[0, 0], [0, 0], [0, 0]])][t]
        assert most_contributions(torch, in_shape, rows) <= 2
        grad = _fractional_grads(torch, _grad_shape(in_shape, rows), getattr(torch, dtype_name), g)
        return [grad.to(device), _pads(torch, rows).to(device)]

    def suites():
        return [
            ("T0_original", 5, t0_original),
            ("heavy_overlap", 4 + 3, heavy_overlap),
            ("misaligned", 8 + 1, misaligned),
            ("fractional", 4, fractional),
        ]

    return suites


def make_probe(dtype_name: str):
    def probe(torch):
        dtype = getattr(torch, dtype_name)
        g = torch.Generator().manual_seed(6000)
        aligned_rows = [[0, 0], [1, 0], [2, 2], [3, 1]]
        odd_rows = [[1, 2], [0, 1], [3, 0]]
        # grad_out (2, 9, 36, 32): its innermost extent a multiple of 32.
        aligned = _integer_grads(torch, _grad_shape((2, 8, 32, 28), aligned_rows), dtype, g)
        odd = _integer_grads(torch, _grad_shape((3, 5, 7), odd_rows), dtype, g)
        return [
            ("aligned", [aligned, _pads(torch, aligned_rows)]),
            ("misaligned", [odd, _pads(torch, odd_rows)]),
        ]

    return probe


def register(K, torch, ctypes):
    for dtype_name in DTYPES:
        name = substrate_name(dtype_name)
        K.PROBLEMS[name] = dict(
            kb_file=f"{name}.py",
            cuda=cuda_source(dtype_name),
            kernel_name=name,
            ref=make_ref(dtype_name),
            launch=make_launch(dtype_name, ctypes),
            suites=make_suites(dtype_name),
            probe=make_probe(dtype_name),
            exact=True,
            accumulates=True,
        )
