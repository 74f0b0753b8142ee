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
    tails: tuple[int, int, int, int] | None = (0, 0, 0, 0)  # see support_tails; None: not tested
    detail: str = ""

    def describe(self) -> str:
        text = f"{self.test}: statistic {self.statistic:.4g}, p = {self.p_value:.3g} on {self.sampled} + {self.sampled} "
        if self.tails is None:
            return text + "values" + (f"; {self.detail}" if self.detail else "")
        c_above, c_below, o_above, o_below = self.tails
        text += (f"sampled values; support: {c_above} above and {c_below} below get_inputs()'s "
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


# ---------------------------------------------------------------- a value get_inputs() draws once per call
#
# 94_MSELoss's get_inputs() draws `scale = torch.rand(())` and multiplies a whole tensor by it: one call's elements
# are independent only given that scale, so a T0 drawn with its own generator (its own scale) fails the test above
# against the official tensor of its trial, whose scale is another. The tests below compare what the scale cannot
# change. They are used only where get_inputs() shows such a value: two of its own calls (two T0 seeds) fail the
# test above against each other, which for independent elements happens with probability under 1e-6.
#
# - "scale": x_a / max|x_S| over a set S of SPREAD other positions anywhere in the tensor is the same for x and s * x,
#   so a per-call scale vanishes exactly; S spans rows, so a per-row scale (another law) does not.
# - "log within rows": (l_a - l_b) / (max l_S - min l_S) of l = log x, the positions all in one row (the last
#   dimension), for positive tensors: exp(s * u) / (a per-row sum), 98_KLDivLoss's softmax of a scaled tensor,
#   vanishes exactly.
# The first of the two under which get_inputs()'s own calls all agree is the one used. No two ratios share a
# position, so the ratios of one tensor are independent given the per-call value and the KS test's p-value holds;
# dividing by the extremes of SPREAD values (not by one value) keeps the shape of the values in the ratio, so
# `randn` for `rand` shows. What stays untested is the law of the per-call value itself: five calls are five values
# of it, too few to reject anything at 1e-6.

SPREAD = 16
SPREADING_STEP = 0x9E3779B97  # odd, about numel's golden section: consecutive positions land far apart


def _disjoint_positions(count: int, numel: int, generator: torch.Generator) -> torch.Tensor:
    """Up to `count` distinct positions below `numel`, drawn independently of the values: a random permutation of
    a small tensor's positions; in a large one (where drawing and deduplicating a million took a quarter of a
    second) start + i * step modulo numel, step coprime with numel, so that no two coincide."""
    if numel <= 1 << 22:
        return torch.randperm(numel, generator=generator)[:count]
    step = SPREADING_STEP
    while math.gcd(step, numel) != 1:
        step += 2
    start = int(torch.randint(numel, (1,), generator=generator))
    return (torch.arange(min(count, numel), dtype=torch.int64) * step + start) % numel


def _groups(flat: torch.Tensor, positions: torch.Tensor, size: int) -> torch.Tensor | None:
    """The values at `positions`, in float64 on the host, a row per group of `size`; None when there are none."""
    positions = positions[: positions.numel() // size * size]
    if positions.numel() == 0:
        return None
    return flat[positions.to(flat.device)].to(torch.float64).reshape(-1, size).cpu()


def _scale_ratios(x: torch.Tensor, g: torch.Generator) -> torch.Tensor | None:
    """x_a / max|x_S|, S the SPREAD other values of the group, groups anywhere in the tensor."""
    flat = x.detach().reshape(-1)
    groups = _groups(flat, _disjoint_positions((SPREAD + 1) * SAMPLE, flat.numel(), g), SPREAD + 1)
    return None if groups is None else groups[:, 0] / groups[:, 1:].abs().amax(dim=1)


def _log_row_ratios(x: torch.Tensor, g: torch.Generator) -> torch.Tensor | None:
    """(l_a - l_b) / (max l_S - min l_S) of l = log x, each group of SPREAD + 2 within one row (the last dimension);
    None where a value of the groups is not positive (read from them alone: a whole-tensor pass costs seconds at
    8 GiB)."""
    size, row = SPREAD + 2, x.shape[-1]
    slots_per_row, rows = row // size, x.numel() // max(1, row)
    if slots_per_row == 0:
        return None
    slots = _disjoint_positions(SAMPLE, rows * slots_per_row, g)
    starts = (slots // slots_per_row) * row + (slots % slots_per_row) * size
    groups = _groups(x.detach().reshape(-1), (starts[:, None] + torch.arange(size)).reshape(-1), size)
    if groups is None or bool((groups <= 0).any()):
        return None
    logs = groups.log()
    return (logs[:, 0] - logs[:, 1]) / (logs[:, 2:].amax(dim=1) - logs[:, 2:].amin(dim=1))


# Each form: its ratios, and how a rejection names it.
SCALE_FREE_FORMS = {"scale": _scale_ratios, "log within rows": _log_row_ratios}
SCALE_FREE_FORM_WORDS = ("its ratios to the largest of other values", "the ratios of its logarithms within rows")


def scale_free_sample(x: torch.Tensor, form: str) -> torch.Tensor | None:
    """The `form` ratios (see above) of up to SAMPLE disjoint groups of `x`'s elements, the finite ones; None where
    the form does not apply (a log of a value that is not positive among the groups, rows too short for a group)."""
    if not x.dtype.is_floating_point or x.dim() == 0:
        return None
    ratios = SCALE_FREE_FORMS[form](x, torch.Generator(device="cpu").manual_seed(SAMPLE_SEED + 1))
    return None if ratios is None else ratios[torch.isfinite(ratios)]


def scale_free_test(candidate: torch.Tensor, official: torch.Tensor) -> DistributionTest:
    """The KS test of two samples of scale_free_sample (the same form): no support test, the ratios have none."""
    statistic, p_value = ks_two_sample(candidate, official)
    ok = p_value >= ALPHA_PER_TEST
    return DistributionTest(ok=ok, test="two-sample Kolmogorov-Smirnov test", statistic=statistic, p_value=p_value,
                            sampled=min(candidate.numel(), official.numel()), tails=None,
                            detail="" if ok else f"the test rejects it (p < {ALPHA_PER_TEST:.2g})")


@dataclass(frozen=True)
class CallSamples:
    """What one T0 trial keeps of one official tensor, and of the candidate's, for the per-call tests at the end."""

    official: torch.Tensor  # _sample of get_inputs()'s tensor under this trial's seed
    forms_official: dict  # form -> its scale_free_sample, or None
    forms_candidate: dict  # the same of the candidate's tensor, only where it failed its trial's test ({} elsewhere)

    @classmethod
    def of(cls, candidate: torch.Tensor, official: torch.Tensor, failed: bool) -> "CallSamples":
        """The official tensor's samples for every trial (the per-call tests compare get_inputs()'s calls), the
        candidate's only where they will be tested: a T0 that passes costs no gathers of its own."""
        return cls(_sample(official).cpu(), {f: scale_free_sample(official, f) for f in SCALE_FREE_FORMS},
                   {f: scale_free_sample(candidate, f) for f in SCALE_FREE_FORMS} if failed else {})


def drawn_once_per_call(samples: dict[int, CallSamples]) -> str:
    """'' when get_inputs()'s tensors of every two trials pass the test against each other, else the evidence
    that they do not (a value drawn once per call). `samples`: trial -> its CallSamples."""
    trials = sorted(samples)
    for i, a in enumerate(trials):
        for b in trials[i + 1:]:
            statistic, p_value = ks_two_sample(samples[a].official, samples[b].official)
            if p_value < ALPHA_PER_TEST:
                return (f"get_inputs() itself gives tensors of two distributions in T0 trials {a} and {b} "
                        f"(two-sample Kolmogorov-Smirnov test: statistic {statistic:.4g}, p = {p_value:.3g}): it "
                        f"draws a value once per call")
    return ""


def scale_free_form(samples: dict[int, CallSamples]) -> str:
    """The first form under which get_inputs()'s own tensors of every two trials agree; '' when none does."""
    trials = sorted(samples)
    for form in SCALE_FREE_FORMS:
        drawn = [samples[t].forms_official[form] for t in trials]
        if any(d is None or d.numel() < 2 for d in drawn):
            continue
        if all(scale_free_test(drawn[i], drawn[j]).ok for i in range(len(drawn)) for j in range(i + 1, len(drawn))):
            return form
    return ""
