"""Is a T0 input drawn from the same distribution as get_inputs()'s? Pure functions of two tensors.

The spec asks T0_original for "EXACTLY the shapes/distribution of the problem's get_inputs()".
A T0 tensor that is not bit-identical to get_inputs() under `torch.manual_seed(1000 + t)` is
accepted when it cannot be told apart from it statistically, each tensor tested against the
official one of the same trial:

- continuous values: the two-sample Kolmogorov-Smirnov test on SAMPLE values of each (positions
  drawn with a fixed generator), asymptotic p-value;
- integers, booleans, and floats taking few distinct values (the {-1, 1} targets of a hinge
  loss): a chi-square test of homogeneity of the value frequencies, on the same subsample;
- the support, on every element: how many candidate values lie above the official maximum and
  below its minimum, and how many official values lie beyond the candidate's (a T0 scaled by 0.99
  has all its values inside the official range, yet the official top values are all beyond its
  maximum). For two samples of the same size from one continuous distribution, the chance that
  the k largest of all 2n values come from one of them is C(2n-k, n)/C(2n, n) <= 2^-k, whatever
  the distribution (with ties, strictly beyond is rarer still), so k >= SUPPORT_K rejects with
  probability under 2^-SUPPORT_K per tail. Non-finite values in one tensor and none in the other
  are outside the support.

Each of the five tests (frequencies or KS; four support tails) rejects with probability
at most ALPHA_PER_TEST under the same distribution, so a correct candidate is falsely rejected
with probability at most 1e-6 per tensor. The subsample is independent of the values, and the
official and candidate draws are independent of each other, which is what the tests assume: a
trial whose get_inputs() draws a scale once and multiplies a whole tensor by it (94_MSELoss) has
no such independence across trials, so such a T0 must be identical, and the test says so by
failing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

FALSE_REJECTION_PER_TENSOR = 1e-6
TESTS_PER_TENSOR = 5  # the sample test and the four support tails
ALPHA_PER_TEST = FALSE_REJECTION_PER_TENSOR / TESTS_PER_TENSOR
SUPPORT_K = math.ceil(-math.log2(ALPHA_PER_TEST))  # 2^-23 < 2e-7
SAMPLE = 1 << 16  # values drawn from each tensor for the sample test
SAMPLE_SEED = 0x7E57
DISCRETE_MAX_VALUES = 64  # a float tensor with at most this many distinct sampled values is tested by frequency
SUPPORT_CHUNK = 1 << 22  # elements per chunk of the support counts


@dataclass(frozen=True)
class DistributionTest:
    """One tensor's verdict: which test, its statistic and p-value on how many values, and the support tails."""

    ok: bool
    test: str
    statistic: float
    p_value: float
    sampled: int
    tails: tuple[int, int, int, int] = (0, 0, 0, 0)  # see support_tails
    detail: str = ""

    def describe(self) -> str:
        c_above, c_below, o_above, o_below = self.tails
        text = (f"{self.test}: statistic {self.statistic:.4g}, p = {self.p_value:.3g} on {self.sampled} + "
                f"{self.sampled} sampled values; support: {c_above} above and {c_below} below get_inputs()'s "
                f"extremes, get_inputs() {o_above} above and {o_below} below this tensor's")
        return text + (f"; {self.detail}" if self.detail else "")


def _sample(x: torch.Tensor) -> torch.Tensor:
    flat = x.detach().reshape(-1)
    if flat.numel() <= SAMPLE:
        return flat.clone()
    g = torch.Generator(device="cpu").manual_seed(SAMPLE_SEED)
    positions = torch.randint(flat.numel(), (SAMPLE,), generator=g)
    return flat[positions.to(flat.device)]
def kolmogorov_p_value(statistic: float, n: int, m: int) -> float:
    """P(D >= statistic) for two samples of n and m values (asymptotic, with Stephens' correction)."""
    if statistic <= 0:
        return 1.0
    en = math.sqrt(n * m / (n + m))
    lam = (en + 0.12 + 0.11 / en) * statistic
    if lam < 0.2:
        return 1.0
    total = sum(2 * (-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return min(1.0, max(0.0, total))


def _float64_array(x: torch.Tensor) -> np.ndarray:
    return x.detach().to(torch.float64).reshape(-1).cpu().numpy()


def ks_two_sample(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    """(D, p): the largest gap between the two samples' empirical distribution functions.

    In numpy: torch's CPU sort and searchsorted took 80 and 100 ms for two 65536-value samples (on
    the H200's host, beside a CPU matmul, a T0 trial's test was a fifth of a second of the gate's
    critical path); numpy's take 1 and 10.
    """
    a, b = np.sort(_float64_array(a)), np.sort(_float64_array(b))
    points = np.concatenate([a, b])
    fa = np.searchsorted(a, points, side="right") / a.size
    fb = np.searchsorted(b, points, side="right") / b.size
    statistic = float(np.abs(fa - fb).max())
    return statistic, kolmogorov_p_value(statistic, a.size, b.size)


def chi_square_p_value(statistic: float, degrees: int) -> float:
    if degrees <= 0:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(degrees / 2, dtype=torch.float64),
                                         torch.tensor(statistic / 2, dtype=torch.float64)))


def frequency_test(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    """(chi-square, p) of homogeneity of the value counts of two samples; rare values pooled into one class."""
    a, b = a.reshape(-1).to(torch.float64), b.reshape(-1).to(torch.float64)
    values, inverse = torch.unique(torch.cat([a, b]), return_inverse=True)
    counts_a = torch.bincount(inverse[: a.numel()], minlength=values.numel()).to(torch.float64)
    counts_b = torch.bincount(inverse[a.numel():], minlength=values.numel()).to(torch.float64)
    total = counts_a + counts_b
    # Expected counts under 5 make the chi-square approximation unsafe: pool those classes.
    rare = total * min(a.numel(), b.numel()) / (a.numel() + b.numel()) < 5
    if bool(rare.any()):
        counts_a = torch.cat([counts_a[~rare], counts_a[rare].sum().reshape(1)])
        counts_b = torch.cat([counts_b[~rare], counts_b[rare].sum().reshape(1)])
        total = counts_a + counts_b
    keep = total > 0
    counts_a, counts_b, total = counts_a[keep], counts_b[keep], total[keep]
    n, m = counts_a.sum(), counts_b.sum()
    expected_a, expected_b = total * n / (n + m), total * m / (n + m)
    statistic = float(((counts_a - expected_a) ** 2 / expected_a).sum() + ((counts_b - expected_b) ** 2 / expected_b).sum())
    return statistic, chi_square_p_value(statistic, int(total.numel()) - 1)


@dataclass
class _Chunks:
    """A flat tensor in chunks of SUPPORT_CHUNK elements, with each chunk's finite minimum and maximum.

    One aminmax over every chunk at once is the only full read; counting values beyond a bound then
    reads only the chunks whose extremes cross it (one or two under one distribution: a chunk of 4M
    values, where the whole 48M-value tensors of a matmul's T0 were read again for each count).
    """

    flat: torch.Tensor
    bounds: list  # (start, min, max) per chunk with finite values, as Python numbers
    nonfinite: int

    @classmethod
    def of(cls, flat: torch.Tensor) -> "_Chunks":
        bounds, nonfinite = [], 0
        starts = range(0, flat.numel(), SUPPORT_CHUNK)
        # Chunk by chunk (a reduction along dim 1 of a (chunks, SUPPORT_CHUNK) view was 10 times slower on
        # the CPU), then every chunk's extremes in one transfer.
        extremes = [torch.aminmax(flat[start:start + SUPPORT_CHUNK]) for start in starts]
        values = torch.stack([e for pair in extremes for e in pair]).tolist() if extremes else []
        for start, lo, hi in zip(starts, values[0::2], values[1::2]):
            if flat.dtype.is_floating_point and not (math.isfinite(lo) and math.isfinite(hi)):
                chunk = flat[start:start + SUPPORT_CHUNK]
                finite = torch.isfinite(chunk)  # the slow path, only where NaN or infinity stand
                nonfinite += int((~finite).sum())
                chunk = chunk[finite]
                if not chunk.numel():
                    continue
                lo, hi = (v.item() for v in torch.aminmax(chunk))
            bounds.append((start, lo, hi))
        return cls(flat, bounds, nonfinite)

    def extremes(self):
        """(min, max) as Python numbers (exact for every dtype tested), so they compare with a tensor anywhere."""
        if not self.bounds:
            return None, None
        return min(lo for _s, lo, _h in self.bounds), max(hi for _s, _l, hi in self.bounds)

    def beyond(self, lo, hi) -> tuple[int, int]:
        """How many finite values lie above `hi` and below `lo` (every one when there are no bounds)."""
        if hi is None:
            return sum(self._finite(start).numel() for start, _l, _h in self.bounds), 0
        above = below = 0
        for start, chunk_lo, chunk_hi in self.bounds:
            if chunk_hi > hi:
                above += int(torch.count_nonzero(self._finite(start) > hi))
            if chunk_lo < lo:
                below += int(torch.count_nonzero(self._finite(start) < lo))
        return above, below

    def _finite(self, start: int) -> torch.Tensor:
        chunk = self.flat[start:start + SUPPORT_CHUNK]
        return chunk[torch.isfinite(chunk)] if self.nonfinite else chunk


def _flat(x: torch.Tensor) -> torch.Tensor:
    flat = x.detach().reshape(-1)
    return flat.to(torch.uint8) if flat.dtype == torch.bool else flat


def support_tails(candidate: torch.Tensor, official: torch.Tensor) -> tuple[tuple[int, int, int, int], str]:
    """((candidate above, below the official extremes, official above, below the candidate's), note).

    The note names non-finite values one tensor has and the other has none of.
    """
    chunks_c, chunks_o = _Chunks.of(_flat(candidate)), _Chunks.of(_flat(official))
    tails = (*chunks_c.beyond(*chunks_o.extremes()), *chunks_o.beyond(*chunks_c.extremes()))
    note = ""
    if chunks_c.nonfinite and not chunks_o.nonfinite:
        note = f"{chunks_c.nonfinite} non-finite values where get_inputs() gives none"
    elif chunks_o.nonfinite and not chunks_c.nonfinite:
        note = f"no non-finite values where get_inputs() gives {chunks_o.nonfinite}"
    return tails, note


def same_distribution(candidate: torch.Tensor, official: torch.Tensor) -> DistributionTest:
    """Could `candidate` be a draw of the distribution `official` was drawn from? (same shape and dtype)"""
    a, b = _sample(candidate).cpu(), _sample(official).cpu()
    discrete = (not official.dtype.is_floating_point
                or np.unique(_float64_array(b), equal_nan=False).size <= DISCRETE_MAX_VALUES)
    if discrete:
        test = "chi-square test of value frequencies"
        statistic, p_value = frequency_test(a, b)
    else:
        test = "two-sample Kolmogorov-Smirnov test"
        statistic, p_value = ks_two_sample(a[torch.isfinite(a)], b[torch.isfinite(b)])
    tails, note = support_tails(candidate, official)
    failures = []
    if p_value < ALPHA_PER_TEST:
        failures.append(f"the {test} rejects it (p < {ALPHA_PER_TEST:.2g})")
    if max(tails) >= SUPPORT_K:
        failures.append(f"{SUPPORT_K} or more values beyond the other tensor's extremes: probability under "
                        f"2^-{SUPPORT_K} for one distribution")
    if note:
        failures.append(note)
    return DistributionTest(ok=not failures, test=test, statistic=statistic, p_value=p_value, sampled=a.numel(),
                            tails=tails, detail="; ".join(failures))
