"""harness.gate.checks.distribution: a T0 from get_inputs()'s distribution passes, one from another is rejected with the evidence."""

import math

import pytest
import torch

from harness.gate.checks.distribution import (ALPHA_PER_TEST, SUPPORT_K, chi_square_p_value, kolmogorov_p_value,
                                              same_distribution)

N = (512, 512)  # 262144 values: the sample test sees 65536 of each


def _g(seed):
    return torch.Generator().manual_seed(seed)


# Same distribution, other draws: each must pass (the false-rejection bound is 1e-6 per tensor).
SAME = {
    "rand": lambda g: torch.rand(N, generator=g),
    "randn": lambda g: torch.randn(N, generator=g),
    "rand scaled": lambda g: torch.rand(N, generator=g) * 3 - 1,
    "randint": lambda g: torch.randint(0, 10, N, generator=g),
    "bool": lambda g: torch.rand(N, generator=g) < 0.3,
    "plus or minus one": lambda g: torch.randint(0, 2, N, generator=g).float() * 2 - 1,
    "float64 normal": lambda g: torch.randn(N, generator=g, dtype=torch.float64),
}


@pytest.mark.parametrize("name", sorted(SAME))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_another_draw_of_the_same_distribution_passes(name, seed):
    draw = SAME[name]
    result = same_distribution(draw(_g(100 + seed)), draw(_g(200 + seed)))
    assert result.ok, result.describe()
    assert result.p_value >= ALPHA_PER_TEST and max(result.tails) < SUPPORT_K


# Another distribution: rejected, with the test that saw it.
OTHER = {
    "randn for rand": (lambda g: torch.randn(N, generator=g), lambda g: torch.rand(N, generator=g),
                       "two-sample Kolmogorov-Smirnov test rejects it"),
    "rand scaled by 1.01": (lambda g: torch.rand(N, generator=g) * 1.01, lambda g: torch.rand(N, generator=g),
                            "values beyond the other tensor's extremes"),
    "rand scaled by 0.99": (lambda g: torch.rand(N, generator=g) * 0.99, lambda g: torch.rand(N, generator=g),
                            "values beyond the other tensor's extremes"),
    "rand shifted": (lambda g: torch.rand(N, generator=g) + 0.05, lambda g: torch.rand(N, generator=g),
                     "two-sample Kolmogorov-Smirnov test rejects it"),
    "randint 0..10 for 0..9": (lambda g: torch.randint(0, 11, N, generator=g),
                               lambda g: torch.randint(0, 10, N, generator=g),
                               "chi-square test of value frequencies rejects it"),
    "randint 1..10 for 0..9": (lambda g: torch.randint(1, 11, N, generator=g),
                               lambda g: torch.randint(0, 10, N, generator=g),
                               "values beyond the other tensor's extremes"),
    "bool of another rate": (lambda g: torch.rand(N, generator=g) < 0.32, lambda g: torch.rand(N, generator=g) < 0.3,
                             "chi-square test of value frequencies rejects it"),
    "NaNs where there are none": (
        lambda g: torch.where(torch.rand(N, generator=g) < 1e-3, float("nan"), torch.rand(N, generator=g)),
        lambda g: torch.rand(N, generator=g), "non-finite values where get_inputs() gives none"),
}


@pytest.mark.parametrize("name", sorted(OTHER))
def test_another_distribution_is_rejected_with_its_evidence(name):
    candidate, official, words = OTHER[name]
    result = same_distribution(candidate(_g(1)), official(_g(2)))
    assert not result.ok
    assert words in result.describe(), result.describe()


def test_the_report_names_test_statistic_p_value_and_support():
    result = same_distribution(torch.rand(N, generator=_g(1)), torch.rand(N, generator=_g(2)))
    text = result.describe()
    assert text.startswith("two-sample Kolmogorov-Smirnov test: statistic ")
    assert ", p = " in text and "on 65536 + 65536 sampled values; support: " in text
    assert "above and" in text and "below get_inputs()'s extremes, get_inputs() " in text


def test_thresholds_bound_false_rejection_by_one_in_a_million_per_tensor():
    # Five tests per tensor (the sample test and four support tails), each at most ALPHA_PER_TEST.
    assert 5 * ALPHA_PER_TEST <= 1e-6 + 1e-18
    assert 4 * 2.0 ** -SUPPORT_K <= 4 * ALPHA_PER_TEST


def test_p_values_match_their_textbook_values():
    # Kolmogorov's distribution: P(K > 1.358) = 0.05; chi-square with 1 degree: P(X > 3.841) = 0.05.
    n = 10**6
    assert kolmogorov_p_value(1.358 / math.sqrt(n / 2), n, n) == pytest.approx(0.05, abs=2e-3)
    assert chi_square_p_value(3.841, 1) == pytest.approx(0.05, abs=1e-3)
    assert kolmogorov_p_value(0.0, 10, 10) == 1.0


def test_p_values_of_one_distribution_are_spread_as_they_should_be():
    """Under one distribution the KS p-value is roughly uniform: a test that fails would be too eager."""
    p = [same_distribution(torch.rand(20000, generator=_g(2 * i)), torch.rand(20000, generator=_g(2 * i + 1))).p_value
         for i in range(60)]
    assert min(p) > 1e-4
    assert 0.1 < sum(x < 0.5 for x in p) / len(p) < 0.9


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_support_counts_in_chunks_are_the_counts_over_the_whole_tensor(monkeypatch, dtype):
    from harness.gate.checks import distribution

    monkeypatch.setattr(distribution, "SUPPORT_CHUNK", 1000)  # 10 whole chunks and a tail of 537
    g = _g(7)
    if dtype == torch.bool:
        candidate, official = torch.rand(10537, generator=g) < 0.5, torch.zeros(10537, dtype=torch.bool)
    elif dtype == torch.int64:
        candidate, official = torch.randint(-3, 12, (10537,), generator=g), torch.randint(0, 10, (10537,), generator=g)
    else:
        candidate = (torch.randn(10537, generator=g) * 1.2).to(dtype)
        official = torch.randn(10537, generator=g).to(dtype)
        candidate[[5, 2500, 10400]] = torch.tensor([float("nan"), float("inf"), float("-inf")], dtype=dtype)
    tails, _note = distribution.support_tails(candidate, official)

    def exact(mine, theirs):
        mine, theirs = mine.to(torch.float64), theirs.to(torch.float64)
        mine, theirs = mine[torch.isfinite(mine)], theirs[torch.isfinite(theirs)]
        return int((mine > theirs.max()).sum()), int((mine < theirs.min()).sum())

    assert tails == (*exact(candidate, official), *exact(official, candidate))
    assert max(tails) > 0  # the comparison is not between zeros


def test_a_candidate_with_nans_is_counted_as_before_in_chunks(monkeypatch):
    from harness.gate.checks import distribution

    monkeypatch.setattr(distribution, "SUPPORT_CHUNK", 4096)
    candidate = torch.rand(3 * 4096 + 17, generator=_g(1))
    candidate[[0, 4096 * 2 + 3]] = float("nan")
    _tails, note = distribution.support_tails(candidate, torch.rand(3 * 4096 + 17, generator=_g(2)))
    assert note == "2 non-finite values where get_inputs() gives none"
