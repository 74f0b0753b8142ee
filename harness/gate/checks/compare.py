"""Compare a kernel's output with the reference: bit for bit, or within a tolerance.

Pure functions of two tensors. A comparison says how many elements differ, the worst error,
and the first few mismatches with their coordinates, in words a person can act on.
"""

from __future__ import annotations

import ctypes
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


def _first_indices(wrong: torch.Tensor, offset: int = 0) -> list[int]:
    return [offset + i for i in torch.nonzero(wrong.reshape(-1)).reshape(-1)[:SHOWN_MISMATCHES].tolist()]


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
    if _same_bytes(got_bits, expected_bits):  # the common case, without building a mask
        return Comparison(ok=True, total=expected.numel())
    wrong = got_bits != expected_bits
    return Comparison(ok=False, total=expected.numel(), mismatches=int(torch.count_nonzero(wrong)),
                      examples=_examples(got, expected, _first_indices(wrong)))


def compare_close(got: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> Comparison:
    """|got - expected| <= atol + rtol * |expected|, computed in float64; NaN matches only NaN, inf only itself.

    Works through the tensors COMPARE_CHUNK elements at a time, so the float64 temporaries of a
    KernelBench-sized output (billions of elements) stay small. Every chunk's figures are queued first
    and read in one transfer (on a GPU each read waits for the device: a 4 GiB output is 256 chunks);
    only a chunk with a NaN or an infinity is then compared by the general rules, and only the first
    chunks with a mismatch are gone through again for its coordinates.
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

    queued = [_finite_figures(*chunk(start), atol, rtol)[0] for start in starts]
    figures = torch.stack(queued).tolist() if queued else []
    mismatches, max_abs, max_rel, wrong_at = 0, 0.0, 0.0, []
    for start, (finite, chunk_abs, chunk_rel, chunk_mismatches) in zip(starts, figures):
        if finite and chunk_abs != float("inf"):  # every value finite: the figures are the general rules' too
            chunk_mismatches, wrong = int(chunk_mismatches), None
        else:
            chunk_mismatches, wrong, chunk_abs, chunk_rel = _general_chunk(*chunk(start), atol, rtol)
        max_abs, max_rel = max(max_abs, chunk_abs), max(max_rel, chunk_rel)
        if chunk_mismatches and len(wrong_at) < SHOWN_MISMATCHES:
            if wrong is None:
                wrong = _finite_figures(*chunk(start), atol, rtol)[1]
            wrong_at += _first_indices(wrong, start)
        mismatches += chunk_mismatches
    return Comparison(
        ok=mismatches == 0, total=expected.numel(), mismatches=mismatches,
        max_abs_error=max_abs, max_rel_error=max_rel,
        examples=_examples(got, flat_expected.reshape(expected.shape), wrong_at) if mismatches else [],
    )


def _general_chunk(g: torch.Tensor, e: torch.Tensor, atol: float, rtol: float):
    """(mismatches, wrong mask, max abs, max rel error) of a float64 chunk holding a NaN or an infinity."""
    both_nan = torch.isnan(g) & torch.isnan(e)
    same_inf = torch.isinf(e) & (g == e)
    diff = (g - e).abs()
    # Only a finite expectation gets a tolerance: around an infinity, atol + rtol*|inf| would admit anything.
    within = torch.isfinite(e) & (diff <= atol + rtol * e.abs())
    wrong = ~(both_nan | same_inf | within)
    finite = torch.isfinite(diff)
    max_abs = max_rel = 0.0
    if bool(finite.any()):
        max_abs = float(diff[finite].max())
        rel = diff / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
        max_rel = float(rel[finite].max())
    return int(wrong.sum()), wrong, max_abs, max_rel


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


def compare(got, expected: torch.Tensor, tolerance: Tolerance) -> Comparison:
    """Integer and bool outputs, and every output under an exact tolerance, compare bit for bit.

    A scalar compares as a scalar whether it is 0-dim or shape (1,).
    """
    got = _scalar_as_expected(got, expected)
    if compared_bitwise(expected, tolerance):
        return compare_bitwise(got, expected)
    return compare_close(got, expected, tolerance.atol, tolerance.rtol)


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


def compare_later(got, expected: torch.Tensor, tolerance: Tolerance) -> PendingComparison | None:
    """compare(got, expected, tolerance) queued on the device, for an output of at most COMPARED_LATER_MAX_ELEMENTS
    elements; None where it cannot be (a structure problem, an empty or larger output, another device): call
    compare() then."""
    got = _scalar_as_expected(got, expected)
    if (_structure_problem(got, expected) or got.device != expected.device
            or not 0 < expected.numel() <= COMPARED_LATER_MAX_ELEMENTS):
        return None
    total = expected.numel()
    if compared_bitwise(expected, tolerance):
        differ = (bits(got) != bits(expected)).any().to(torch.int64).reshape(1)
        return PendingComparison(differ, lambda values: None if values[0] else Comparison(ok=True, total=total))
    g, e = got.detach().reshape(-1).to(torch.float64), expected.detach().reshape(-1).to(torch.float64)
    figures, _wrong = _finite_figures(g, e, tolerance.atol, tolerance.rtol)
    figures = figures.view(torch.int64)  # the figures as float64 bit patterns: read with int64 signals

    def finish(values: list[int]) -> Comparison | None:
        finite, max_abs, max_rel, mismatches = struct.unpack("<4d", struct.pack("<4q", *values))
        if not finite or max_abs == float("inf") or mismatches:
            return None
        # What compare_close gives a finite chunk with no mismatch.
        return Comparison(ok=True, total=total, mismatches=0, max_abs_error=max(0.0, max_abs),
                          max_rel_error=max(0.0, max_rel))

    return PendingComparison(figures, finish)
