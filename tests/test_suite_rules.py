"""harness.gate.checks.suite_rules: its pure functions, apart from the gate runs of tests/test_spec_rules.py."""

import pytest
import torch

from harness.gate.checks.suite_rules import SAME_PREFIX, first_difference


def test_builds_that_differ_anywhere_in_their_bits_are_told_apart_past_the_quick_prefix():
    a = torch.zeros(SAME_PREFIX + 10)
    late, signed_zero = a.clone(), a.clone()
    late[-1] = 1.0  # past the prefix compared first
    signed_zero[0] = -0.0  # equal as values, not as bits
    assert first_difference([a, 3], [a.clone(), 3]) == ""
    assert first_difference([a], [late]) == "input 0 is float32[4106], then float32[4106] with different contents"
    assert first_difference([a], [signed_zero]).startswith("input 0 is float32[4106]")
    assert first_difference([a.reshape(2, -1).t()], [late.reshape(2, -1).t()]).startswith("input 0")  # strided


def test_get_inputs_signature_travels_as_plain_data_and_comes_back_as_meta_tensors():
    import pickle

    from harness.gate.checks.suite_rules import portable_signature, signature_inputs

    inputs = [torch.zeros(4, 8, dtype=torch.float16), torch.zeros((), dtype=torch.uint8), 3, 0.5, None]
    signature = portable_signature(inputs)
    assert signature == (("tensor", "float16", (4, 8)), ("tensor", "uint8", ()), ("value", 3), ("value", 0.5),
                         ("value", None))
    rebuilt = signature_inputs(pickle.loads(pickle.dumps(signature)))
    assert [(x.dtype, tuple(x.shape), x.device.type) for x in rebuilt[:2]] == [
        (torch.float16, (4, 8), "meta"), (torch.uint8, (), "meta")]
    assert rebuilt[2:] == [3, 0.5, None]
    # An input that is neither a tensor nor a plain value: no signature, and the worker builds its own.
    assert portable_signature([torch.zeros(2), object()]) is None


# ---------------------------------------------------------------- a value get_inputs() draws once per call

_SHAPE = (256, 2048)


def _official_scaled(t: int, softmax: bool = False) -> list:
    """A get_inputs() that draws one scale per call (94_MSELoss's form; with softmax, 98_KLDivLoss's)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        scale = torch.rand(())
        x = torch.rand(*_SHAPE) * scale
        return [x.softmax(dim=-1) if softmax else x, torch.rand(*_SHAPE)]


def _own_scaled(t: int, law: str = "call", draw=torch.rand, softmax: bool = False, seed: int = 77) -> list:
    g = torch.Generator().manual_seed(seed + t)
    scale = {"call": lambda: torch.rand((), generator=g), "row": lambda: torch.rand(_SHAPE[0], 1, generator=g),
             "element": lambda: torch.rand(*_SHAPE, generator=g)}[law]()
    x = draw(*_SHAPE, generator=g) * scale
    return [x.softmax(dim=-1) if softmax else x, torch.rand(*_SHAPE, generator=g)]


def _settled(draw_trial, softmax: bool = False) -> tuple[list, list]:
    from harness.gate.checks.suite_rules import settle_t0, t0_trial_match

    matches = [t0_trial_match(t, draw_trial(t), _official_scaled(t, softmax)) for t in range(5)]
    direct = [p for m in matches for p in m.problems]
    problems, notes = settle_t0(matches)
    return direct + problems, notes


@pytest.mark.parametrize("softmax", [False, True], ids=["scaled", "softmax of scaled"])
@pytest.mark.parametrize("seed", [77, 5000])
def test_a_t0_drawn_with_its_own_per_call_scale_is_admitted(softmax, seed):
    problems, notes = _settled(lambda t: _own_scaled(t, softmax=softmax, seed=seed), softmax)
    assert problems == []
    assert len(notes) == 5 and all("it draws a value once per call; free of it" in n for n in notes), notes


@pytest.mark.parametrize("law, draw, softmax", [("row", torch.rand, False), ("element", torch.rand, False),
                                                ("call", torch.randn, False), ("call", torch.randn, True)],
                         ids=["per-row scale", "per-element scale", "randn for rand", "randn for rand, softmax"])
def test_a_t0_of_another_scale_law_or_distribution_is_rejected_with_the_evidence(law, draw, softmax):
    problems, notes = _settled(lambda t: _own_scaled(t, law=law, draw=draw, softmax=softmax), softmax)
    assert notes == [] and len(problems) == 5, problems
    assert all(p.startswith("T0_original trial ") and "is not drawn from get_inputs()'s distribution: get_inputs() "
               "itself gives tensors of two distributions" in p and "two-sample Kolmogorov-Smirnov test: statistic"
               in p for p in problems), problems[0]


def test_without_a_per_call_value_a_failed_t0_stays_rejected():
    """A scale of the candidate's own, where get_inputs() draws none: its scale-free ratios would agree, but no
    per-call value shows in get_inputs()'s own trials, so the plain test's rejection stands."""
    from harness.gate.checks.suite_rules import settle_t0, t0_trial_match

    def official(t):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1000 + t)
            return [torch.rand(*_SHAPE)]

    matches = [t0_trial_match(t, [torch.rand(*_SHAPE, generator=torch.Generator().manual_seed(t)) * 0.5],
                              official(t)) for t in range(5)]
    problems, notes = settle_t0(matches)
    assert notes == [] and len(problems) == 5
    assert all("neither its values under torch.manual_seed(" in p and "once per call" not in p for p in problems)


def test_the_per_call_tests_reject_no_correct_t0_over_many_draws():
    """The false-rejection bound, checked the other way: 40 own-generator T0s of the scaled form all pass (each
    tensor's tests reject with probability under 1e-6 by construction; 40 draws would show a gross error)."""
    from harness.gate.checks.distribution import scale_free_sample, scale_free_test

    for seed in range(40):
        mine = _own_scaled(0, seed=10_000 + seed)[0]
        theirs = _own_scaled(0, seed=20_000 + seed)[0]
        assert scale_free_test(scale_free_sample(mine, "scale"), scale_free_sample(theirs, "scale")).ok, seed


# ---------------------------------------------------------------- a rule no correct candidate can meet

class _FixedLayerNorm:
    """A KernelBench-style problem whose Model normalises over a fixed (32, 64, 256) trailing shape (2 MiB of float32
    a batch row, every dimension aligned), so that the least input it accepts, a batch of one, is over 1 MB."""

    class Model(torch.nn.Module):
        def __init__(self, shape):
            super().__init__()
            self.ln = torch.nn.LayerNorm(shape)

        def forward(self, x):
            return self.ln(x)

    @staticmethod
    def get_init_inputs():
        return [(32, 64, 256)]


def _layer_norm_probe(aligned_batch: int, misaligned_batch: int) -> list:
    return [("aligned", [torch.rand(aligned_batch, 32, 64, 256)]),
            ("misaligned", [torch.randn(misaligned_batch, 32, 64, 256)])]


def test_a_probe_at_the_least_the_model_accepts_is_admitted_with_the_reading_said():
    from harness.gate.checks.suite_rules import model_accepts, probe_problems

    official = [torch.empty(4, 32, 64, 256, device="meta")]
    problems, readings = probe_problems(_layer_norm_probe(1, 2), official, model_accepts(_FixedLayerNorm))
    assert problems == []
    assert readings == [
        "probe entry 'aligned' holds 2,097,152 bytes, over the spec's 1 MB, and is the least the official Model "
        "accepts (no dimension of (float32[1, 32, 64, 256]) can be smaller): no correct candidate can meet the rule, "
        "so the least the Model accepts is taken in its place",
        "probe entry 'misaligned' holds 4,194,304 bytes, over the spec's 1 MB, and is the least the official Model "
        "accepts (no dimension of (float32[2, 32, 64, 256]) can be smaller): no correct candidate can meet the rule, "
        "so the least the Model accepts is taken in its place"]


def test_a_probe_larger_than_the_model_needs_is_still_rejected_and_told_what_it_accepts():
    from harness.gate.checks.suite_rules import model_accepts, probe_problems

    official = [torch.empty(4, 32, 64, 256, device="meta")]
    problems, _readings = probe_problems(_layer_norm_probe(2, 3), official, model_accepts(_FixedLayerNorm))
    assert problems == [
        "probe entry 'aligned' holds 4,194,304 bytes; each entry must be under 1 MB (1,000,000 bytes); the official "
        "Model accepts (float32[1, 32, 64, 256])",
        "probe entry 'misaligned' holds 6,291,456 bytes; each entry must be under 1 MB (1,000,000 bytes); the "
        "official Model accepts (float32[1, 32, 64, 256])"]  # batch 2 of 'aligned' is misaligned: either may shrink


def test_without_the_model_the_size_rule_is_the_spec_s():
    from harness.gate.checks.suite_rules import probe_problems

    official = [torch.empty(4, 32, 64, 256, device="meta")]
    problems, readings = probe_problems(_layer_norm_probe(1, 2), official)
    assert readings == [] and problems[0] == ("probe entry 'aligned' holds 2,097,152 bytes; each entry must be "
                                              "under 1 MB (1,000,000 bytes)")
