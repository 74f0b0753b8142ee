"""Compare a kernel's output with the reference: bit for bit, or within a tolerance.

Pure functions of two tensors. A comparison says how many elements differ, the worst error,
and the first few mismatches with their coordinates, in words a person can act on.
"""

from __future__ import annotations

import ctypes
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from harness.gate.checks.tolerance import (
    Tolerance,  # also named from here by compare's callers
)

SHOWN_MISMATCHES = 3
COMPARE_CHUNK = 1 << 22  # elements compared at once: 32 MiB per float64 temporary, a few of them

_BIT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@dataclass
class Comparison:
    ok: bool
    total: int = 0
    mismatches: int = 0
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    problem: str = ""  # shape or dtype mismatch: nothing element-wise was compared
    examples: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.problem:
            return self.problem
        if self.ok:
            return f"all {self.total} elements match"
        text = f"{self.mismatches} of {self.total} elements differ"
        if self.max_abs_error is not None:
            text += f" (max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g})"
        return text + "; " + "; ".join(self.examples)


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's raw bit patterns as a same-width integer tensor (bool as uint8)."""
    t = t.contiguous()
    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    return t.view(_BIT_VIEW[t.element_size()])


def _format_element(t: torch.Tensor, flat_index: int) -> str:
    value = t.reshape(-1)[flat_index]
    if t.dtype.is_floating_point:
        width = t.element_size() * 2
        raw = int(bits(value.reshape(1))[0]) & ((1 << (4 * width)) - 1)
        return f"{value.item()!r} (0x{raw:0{width}x})"
    return repr(value.item())


# Dtypes whose elements _element_text words from their bit patterns alone; the others are read one by one.
_FROM_BITS = {torch.float64: "<d", torch.float32: "<f", torch.float16: "<e", torch.bfloat16: None, torch.bool: None,
              torch.uint8: None, torch.int8: None, torch.int16: None, torch.int32: None, torch.int64: None}


def _element_text(dtype: torch.dtype, raw: int) -> str:
    """_format_element's words for an element of `dtype` (one of _FROM_BITS) whose bit pattern, as bits() gives it
    (sign-extended to a Python int), is `raw`."""
    size = dtype.itemsize
    pattern = raw & ((1 << (8 * size)) - 1)
    if dtype.is_floating_point:
        if dtype == torch.bfloat16:
            value = struct.unpack("<f", struct.pack("<I", pattern << 16))[0]
        else:
            value = struct.unpack(_FROM_BITS[dtype], pattern.to_bytes(size, "little"))[0]
        return f"{value!r} (0x{pattern:0{2 * size}x})"
    if dtype == torch.bool:
        return repr(bool(pattern))
    if dtype.is_signed and pattern >> (8 * size - 1):
        return repr(pattern - (1 << (8 * size)))
    return repr(pattern)


def coords_of(flat_index: int, shape) -> tuple[int, ...]:
    """The element at `flat_index` of a row-major `shape`, as coordinates (torch.unravel_index without its
    torch._check, whose first call imports sympy: 450 modules, a second or more in every worker that meets one)."""
    coords = []
    for dim in reversed(shape):
        coords.append(flat_index % dim)
        flat_index //= dim
    return tuple(reversed(coords))


def _examples(got, expected, flat_indices: list[int]) -> list[str]:
    return [
        f"at {coords_of(i, tuple(expected.shape))}: got {_format_element(got, i)}, expected {_format_element(expected, i)}"
        for i in flat_indices[:SHOWN_MISMATCHES]
    ]


SHOWN_SIGNALS = 3 * SHOWN_MISMATCHES  # _shown_signals' length


def _shown_signals(flat_got: torch.Tensor, flat_expected: torch.Tensor, wrong: torch.Tensor,
                   offset: int = 0) -> torch.Tensor:
    """The first SHOWN_MISMATCHES flat indices where `wrong` (1-d, not empty) holds, plus `offset` (-1 past the last
    one), then the bit patterns there of `flat_got` and of `flat_expected`: SHOWN_SIGNALS int64 on the device, read
    with the comparison's other figures in one transfer (torch.nonzero, and an element's every read, wait for it)."""
    at = torch.nonzero_static(wrong, size=SHOWN_MISMATCHES, fill_value=-1).reshape(-1)
    safe = at.clamp_min(0)
    return torch.cat([torch.where(at >= 0, at + offset, at), bits(flat_got)[safe].to(torch.int64),
                      bits(flat_expected)[safe].to(torch.int64)])


def _shown_examples(got: torch.Tensor, expected: torch.Tensor, shown: list[list[int]]) -> list[str]:
    """The examples of _shown_signals' values (`shown`: one list of SHOWN_SIGNALS a chunk, in order), worded as
    _examples words them: from the bit patterns read where the dtype allows, else read again element by element."""
    found = []
    for values in shown:
        at, got_bits, expected_bits = (values[k * SHOWN_MISMATCHES:(k + 1) * SHOWN_MISMATCHES] for k in range(3))
        found += [(i, g, e) for i, g, e in zip(at, got_bits, expected_bits) if i >= 0]
    found = found[:SHOWN_MISMATCHES]
    if got.dtype not in _FROM_BITS:
        return _examples(got, expected, [at for at, _, _ in found])
    shape = tuple(expected.shape)
    return [f"at {coords_of(at, shape)}: got {_element_text(got.dtype, raw_got)}, "
            f"expected {_element_text(expected.dtype, raw_expected)}" for at, raw_got, raw_expected in found]


def _structure_problem(got, expected) -> str:
    if not isinstance(got, torch.Tensor):
        return f"output is a {type(got).__name__}, not a tensor"
    if got.dtype != expected.dtype:
        return f"output dtype {got.dtype} but the reference gives {expected.dtype}"
    if tuple(got.shape) != tuple(expected.shape):
        return f"output shape {tuple(got.shape)} but the reference gives {tuple(expected.shape)}"
    return ""


@lru_cache(maxsize=None)
def _memcmp():
    memcmp = ctypes.CDLL(None).memcmp
    memcmp.restype, memcmp.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    return memcmp


def _same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """torch.equal of two contiguous bit views of one shape; in host memory, memcmp (torch.equal's CPU loop takes 21
    ms over 55 MB on this project's 2-core CPU, memcmp 14: a campaign compares every run's output)."""
    if a.device.type == "cpu" and b.device.type == "cpu" and a.dtype == b.dtype and a.shape == b.shape:
        return a.numel() == 0 or _memcmp()(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()) == 0
    return torch.equal(a, b)


def compare_bitwise(got: torch.Tensor, expected: torch.Tensor) -> Comparison:
    """Bit-for-bit equality: NaN payloads, -0.0 and infinities must all be reproduced exactly."""
    problem = _structure_problem(got, expected)
    if problem:
        return Comparison(ok=False, problem=problem)
    expected = expected.to(got.device)
    got_bits, expected_bits = bits(got), bits(expected)
    large = expected.numel() > COMPARE_CHUNK
    if large and got.device.type != "cpu":
        return _bitwise_in_chunks(got_bits.reshape(-1), expected_bits.reshape(-1), got, expected)
    if _same_bytes(got_bits, expected_bits):  # the common case, without building a mask
        return Comparison(ok=True, total=expected.numel())
    if large:  # in host memory too: a mask of the whole and its scan would be gigabytes
        return _bitwise_in_chunks(got_bits.reshape(-1), expected_bits.reshape(-1), got, expected)
    return _bitwise_comparison(_bitwise_signals(got_bits.reshape(-1), expected_bits.reshape(-1)).tolist(), got,
                               expected)


def _bitwise_in_chunks(flat_got: torch.Tensor, flat_expected: torch.Tensor, got: torch.Tensor,
                       expected: torch.Tensor) -> Comparison:
    """compare_bitwise of a large output on a device, COMPARE_CHUNK elements at a time: each chunk's differing
    elements counted, read in one transfer, then the first mismatches of the chunks that hold them. Over the whole at
    once, torch.equal's mask and torch.nonzero_static's scan took 2 to 32 GiB at 2^31 elements beside the large trial
    (the large-index oracle's comparisons ran out of the device's memory beside other processes, on the H200)."""
    starts = range(0, flat_expected.numel(), COMPARE_CHUNK)
    counts = torch.stack([(flat_got[start:start + COMPARE_CHUNK] != flat_expected[start:start + COMPARE_CHUNK]).sum()
                          for start in starts]).tolist()
    if not any(counts):
        return Comparison(ok=True, total=expected.numel())
    shown, seen = [], 0
    for start, count in zip(starts, counts):
        if count and seen < SHOWN_MISMATCHES:
            g, e = flat_got[start:start + COMPARE_CHUNK], flat_expected[start:start + COMPARE_CHUNK]
            shown.append(_shown_signals(g, e, g != e, offset=start).tolist())
            seen += count
    return Comparison(ok=False, total=expected.numel(), mismatches=sum(counts),
                      examples=_shown_examples(got, expected, shown))


def _bitwise_signals(flat_got: torch.Tensor, flat_expected: torch.Tensor) -> torch.Tensor:
    """The elements whose bits differ, counted, then _shown_signals of the first: int64 on the device."""
    wrong = bits(flat_got) != bits(flat_expected)
    return torch.cat([wrong.sum().reshape(1), _shown_signals(flat_got, flat_expected, wrong)])


def _bitwise_comparison(values: list[int], got: torch.Tensor, expected: torch.Tensor) -> Comparison:
    """compare_bitwise's Comparison from _bitwise_signals' values."""
    if not values[0]:
        return Comparison(ok=True, total=expected.numel())
    return Comparison(ok=False, total=expected.numel(), mismatches=values[0],
                      examples=_shown_examples(got, expected, [values[1:]]))


def _floats(values: list[int]) -> tuple[float, ...]:
    """float64 figures read as their int64 bit patterns (with int64 signals, in one transfer), as floats."""
    return struct.unpack(f"<{len(values)}d", struct.pack(f"<{len(values)}q", *values))


# A backend's one-pass route to every chunk's figures (Backend.close_figures): (flat got, flat expected, atol, rtol,
# chunk) -> a (chunks, 4) float64 tensor, each row _finite_figures' figures of that chunk, or None where it has none.
CloseFigures = Callable[[torch.Tensor, torch.Tensor, float, float, int], "torch.Tensor | None"]


def compare_close(got: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float,
                  figures: CloseFigures | None = None) -> Comparison:
    """|got - expected| <= atol + rtol * |expected|, computed in float64; NaN matches only NaN, inf only itself.

    Works through the tensors COMPARE_CHUNK elements at a time, so the float64 temporaries of a
    KernelBench-sized output (billions of elements) stay small. Every chunk's figures are queued first
    and read in one transfer (on a GPU each read waits for the device: a 4 GiB output is 256 chunks);
    where one says a NaN, an infinity or a mismatch, a second transfer reads that chunk's figures by the
    general rules and its first mismatches, for every chunk that may hold one of the first few.
    `figures`, where given, computes the queued figures of every chunk at once (the same figures, in
    one pass over the tensors on a GPU: harness.backends.close_figures).
    """
    problem = _structure_problem(got, expected)
    if problem:
        return Comparison(ok=False, problem=problem)
    flat_got = got.detach().reshape(-1)
    flat_expected = expected.detach().to(got.device).reshape(-1)
    starts = range(0, flat_expected.numel(), COMPARE_CHUNK)

    def chunk(start: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (flat_got[start:start + COMPARE_CHUNK].to(torch.float64),
                flat_expected[start:start + COMPARE_CHUNK].to(torch.float64))

    queued = figures(flat_got, flat_expected, atol, rtol, COMPARE_CHUNK) if figures is not None else None
    if queued is None and len(starts):
        queued = torch.stack([_finite_figures(*chunk(start), atol, rtol)[0] for start in starts])
    rows = queued.tolist() if queued is not None else []
    mismatches, max_abs, max_rel = 0, 0.0, 0.0
    general, shown, known = [], [], 0  # chunks under the general rules; chunks whose first mismatches are read
    for start, (finite, chunk_abs, chunk_rel, chunk_mismatches) in zip(starts, rows):
        regular = finite and chunk_abs != float("inf")  # every value finite: the figures are the general rules' too
        if regular:
            mismatches += int(chunk_mismatches)
            max_abs, max_rel = max(max_abs, chunk_abs), max(max_rel, chunk_rel)
        if known < SHOWN_MISMATCHES and (not regular or chunk_mismatches):
            g, e = chunk(start)
            chunk_figures, wrong = _finite_figures(g, e, atol, rtol) if regular else _general_figures(g, e, atol, rtol)
            if not regular:
                general.append(chunk_figures)
            shown.append(_shown_signals(flat_got[start:start + COMPARE_CHUNK],
                                        flat_expected[start:start + COMPARE_CHUNK], wrong, start))
            known += int(chunk_mismatches) if regular else 0
        elif not regular:
            general.append(_general_figures(*chunk(start), atol, rtol)[0])
    if general or shown:
        values = torch.cat([torch.stack(general).view(torch.int64).reshape(-1) if general else shown[0][:0],
                            *shown]).tolist()
        for k in range(len(general)):
            chunk_mismatches, chunk_abs, chunk_rel = _floats(values[3 * k:3 * k + 3])
            mismatches += int(chunk_mismatches)
            max_abs, max_rel = max(max_abs, chunk_abs), max(max_rel, chunk_rel)
        rest = values[3 * len(general):]
        shown = [rest[i:i + SHOWN_SIGNALS] for i in range(0, len(rest), SHOWN_SIGNALS)]
    return Comparison(
        ok=mismatches == 0, total=expected.numel(), mismatches=mismatches,
        max_abs_error=max_abs, max_rel_error=max_rel,
        examples=_shown_examples(got, flat_expected.reshape(expected.shape), shown) if mismatches else [],
    )


def _general_figures(g: torch.Tensor, e: torch.Tensor, atol: float, rtol: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(mismatches, max abs error, max rel error) as three float64 on the device, and the mask of the mismatches, of
    a float64 chunk holding a NaN or an infinity. The errors are over the finite differences, -inf where there is
    none (compare_close's maximum with 0.0 takes it to 0.0)."""
    both_nan = torch.isnan(g) & torch.isnan(e)
    same_inf = torch.isinf(e) & (g == e)
    diff = (g - e).abs()
    # Only a finite expectation gets a tolerance: around an infinity, atol + rtol*|inf| would admit anything.
    within = torch.isfinite(e) & (diff <= atol + rtol * e.abs())
    wrong = ~(both_nan | same_inf | within)
    finite = torch.isfinite(diff)
    none = torch.full((), -math.inf, dtype=torch.float64, device=g.device)
    rel = diff / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    figures = torch.stack([wrong.sum().to(torch.float64), torch.where(finite, diff, none).max(),
                           torch.where(finite, rel, none).max()])
    return figures, wrong


def _finite_figures(g: torch.Tensor, e: torch.Tensor, atol: float, rtol: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(whether every value is finite, the max abs error, the max rel error, the mismatches) of float64 `g` against
    `e`, not empty, as four float64 where they are, and the mask of the mismatches: compare_close's figures for a
    chunk, and compare_later's. Where every value is finite they are what the general rules give."""
    # Finite where the largest |g - e| and |e| are: a NaN in either makes the first NaN (torch's max propagates it),
    # an infinite e the second infinite, an infinite g the first; a difference that overflows (float64 inputs) says
    # not finite too, where the callers leave the chunk to the general rules anyway (its max abs error is infinite).
    # Two reductions of tensors made anyway, instead of four passes over g and e; in place where a temporary is not
    # read again.
    diff = torch.sub(g, e).abs_()
    magnitude = e.abs()
    largest = torch.stack([diff.max(), magnitude.max()])
    wrong = diff > magnitude.mul(rtol).add_(atol)  # atol + rtol * |e|, rounded as written (no fused multiply-add)
    rel = diff.div_(magnitude.clamp_min_(torch.finfo(torch.float64).tiny)).max()
    figures = torch.stack([torch.isfinite(largest).all().to(torch.float64), largest[0], rel,
                           wrong.sum().to(torch.float64)])
    return figures, wrong


_SCALAR_SHAPES = {(), (1,)}


def _scalar_as_expected(got, expected: torch.Tensor):
    """The spec lets a scalar output be a 0-dim or a shape-(1,) tensor, whichever the reference gives."""
    if (isinstance(got, torch.Tensor) and got.numel() == 1 == expected.numel()
            and {tuple(got.shape), tuple(expected.shape)} <= _SCALAR_SHAPES):
        return got.reshape(expected.shape)
    return got


def compared_bitwise(expected: torch.Tensor, tolerance: Tolerance) -> bool:
    """Whether compare() holds an output to `expected` bit for bit (so a match is the same bytes)."""
    return tolerance.exact or not expected.dtype.is_floating_point


def compare(got, expected: torch.Tensor, tolerance: Tolerance, figures: CloseFigures | None = None) -> Comparison:
    """Integer and bool outputs, and every output under an exact tolerance, compare bit for bit; the others within
    the tolerance (compare_close, its chunks' figures by `figures` where given: a backend's close_figures).

    A scalar compares as a scalar whether it is 0-dim or shape (1,).
    """
    got = _scalar_as_expected(got, expected)
    if compared_bitwise(expected, tolerance):
        return compare_bitwise(got, expected)
    return compare_close(got, expected, tolerance.atol, tolerance.rtol, figures)


# Outputs this small are compared by compare_later: its temporaries (a mask, float64 copies) are a few of these.
COMPARED_LATER_MAX_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class PendingComparison:
    """A comparison queued on the device, its verdict read later with other signals in one transfer (each read
    waits for the device: a campaign compares every run of every trial). `signals` are int64 where the output is;
    `finish(values)` turns their values into compare()'s Comparison, or None where only compare() can say (a
    mismatch, to be described; a NaN or an infinity, whose rules are compare_close's)."""

    signals: torch.Tensor
    finish: Callable[[list[int]], Comparison | None]


def compare_later(got, expected: torch.Tensor, tolerance: Tolerance, describe: bool = False,
                  max_elements: int = COMPARED_LATER_MAX_ELEMENTS,
                  figures: CloseFigures | None = None) -> PendingComparison | None:
    """compare(got, expected, tolerance) queued on the device, for an output of at most `max_elements` elements; None
    where it cannot be (a structure problem, an empty or larger output, another device): call compare() then. With
    `describe`, a mismatch's figures and first elements are queued too, and finish() never returns None: for a caller
    that expects mismatches (a --matrix row), whose second read each would cost. A caller may set its own
    `max_elements` (a queued --matrix row, whose temporaries are freed trial by trial). `figures` (a backend's
    close_figures) computes a tolerance's figures in one kernel where it can, in place of a score of torch's."""
    got = _scalar_as_expected(got, expected)
    if (_structure_problem(got, expected) or got.device != expected.device
            or not 0 < expected.numel() <= max_elements):
        return None
    if describe:
        return _described_later(got, expected, tolerance)
    total = expected.numel()
    if compared_bitwise(expected, tolerance):
        differ = (bits(got) != bits(expected)).any().to(torch.int64).reshape(1)
        return PendingComparison(differ, lambda values: None if values[0] else Comparison(ok=True, total=total))
    flat_got, flat_expected = got.detach().reshape(-1), expected.detach().reshape(-1)
    found = figures(flat_got, flat_expected, tolerance.atol, tolerance.rtol, total) if figures is not None else None
    if found is None:
        found, _wrong = _finite_figures(flat_got.to(torch.float64), flat_expected.to(torch.float64), tolerance.atol,
                                        tolerance.rtol)
    signals = found.reshape(-1).view(torch.int64)  # the figures as float64 bit patterns: read with int64 signals

    def finish(values: list[int]) -> Comparison | None:
        finite, max_abs, max_rel, mismatches = _floats(values)
        if not finite or max_abs == float("inf") or mismatches:
            return None
        # What compare_close gives a finite chunk with no mismatch.
        return Comparison(ok=True, total=total, mismatches=0, max_abs_error=max(0.0, max_abs),
                          max_rel_error=max(0.0, max_rel))

    return PendingComparison(signals, finish)


def _described_later(got: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> PendingComparison:
    """compare_later's `describe`: the mismatches counted, and for a tolerance the errors by the general rules (which
    are the finite rules' where every value is finite: the output is one of compare_close's chunks), with
    _shown_signals of the first mismatches, all in the signals."""
    total = expected.numel()
    flat_got, flat_expected = got.detach().reshape(-1), expected.detach().reshape(-1)
    if compared_bitwise(expected, tolerance):
        return PendingComparison(_bitwise_signals(flat_got, flat_expected),
                                 lambda values: _bitwise_comparison(values, got, expected))
    figures, wrong = _general_figures(flat_got.to(torch.float64), flat_expected.to(torch.float64), tolerance.atol,
                                      tolerance.rtol)
    signals = torch.cat([figures.view(torch.int64), _shown_signals(flat_got, flat_expected, wrong)])

    def finish_close(values: list[int]) -> Comparison:
        mismatches, max_abs, max_rel = _floats(values[:3])
        return Comparison(ok=not mismatches, total=total, mismatches=int(mismatches),
                          max_abs_error=max(0.0, max_abs), max_rel_error=max(0.0, max_rel),
                          examples=_shown_examples(got, expected, [values[3:]]) if mismatches else [])

    return PendingComparison(signals, finish_close)
