"""harness/gate/checks/compare.py: bitwise and tolerance comparison of a kernel's output with the reference."""

import math

import pytest
import torch

from harness.gate.checks.compare import Comparison, Tolerance, bits, compare, compare_bitwise, compare_close

INF = math.inf
NAN = math.nan
EXACT = Tolerance(exact=True)
LOOSE = Tolerance(atol=100.0, rtol=100.0)

_SIGNED = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
           torch.float64: torch.int64}


def from_bits(patterns, dtype):
    """A 1-D tensor of `dtype` holding exactly the given unsigned bit patterns."""
    width = torch.empty((), dtype=dtype).element_size() * 8
    signed = [p - (1 << width) if p >= 1 << (width - 1) else p for p in patterns]
    return torch.tensor(signed, dtype=_SIGNED[dtype]).view(dtype)


# --- Tolerance ---------------------------------------------------------------------------------

@pytest.mark.parametrize("tolerance, expected", [
    (Tolerance(exact=True), "bitwise"),
    (Tolerance(), "atol=0.01, rtol=0.01"),
    (Tolerance(atol=1e-5, rtol=0.0), "atol=1e-05, rtol=0"),
    (Tolerance(atol=0.5, rtol=2.0), "atol=0.5, rtol=2"),
])
def test_tolerance_describe(tolerance, expected):
    assert tolerance.describe() == expected


# --- bits ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, view", [
    (torch.bool, torch.uint8),
    (torch.int8, torch.uint8),
    (torch.uint8, torch.uint8),
    (torch.float16, torch.int16),
    (torch.bfloat16, torch.int16),
    (torch.float32, torch.int32),
    (torch.int32, torch.int32),
    (torch.float64, torch.int64),
])
def test_bits_views_each_dtype_as_same_width_integers(dtype, view):
    t = torch.zeros(3, dtype=dtype)
    assert bits(t).dtype == view
    assert bits(t).shape == (3,)


def test_bits_of_non_contiguous_tensor_follow_logical_order():
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).t()
    assert bits(t).tolist() == [[0x3F800000, 0x40400000], [0x40000000, 0x40800000]]


# --- bitwise comparison: every bit counts --------------------------------------------------------

@pytest.mark.parametrize("dtype, got, expected, text", [
    (torch.float32, 0x7FC00000, 0x7FC00001,
     "1 of 1 elements differ; at (0,): got nan (0x7fc00000), expected nan (0x7fc00001)"),
    (torch.float32, 0x00000000, 0x80000000,
     "1 of 1 elements differ; at (0,): got 0.0 (0x00000000), expected -0.0 (0x80000000)"),
    (torch.float32, 0x7F800000, 0xFF800000,
     "1 of 1 elements differ; at (0,): got inf (0x7f800000), expected -inf (0xff800000)"),
    (torch.float16, 0x7E00, 0x7E01,
     "1 of 1 elements differ; at (0,): got nan (0x7e00), expected nan (0x7e01)"),
    (torch.float16, 0x8000, 0x0000,
     "1 of 1 elements differ; at (0,): got -0.0 (0x8000), expected 0.0 (0x0000)"),
    (torch.bfloat16, 0x0000, 0x8000,
     "1 of 1 elements differ; at (0,): got 0.0 (0x0000), expected -0.0 (0x8000)"),
    (torch.bfloat16, 0xFF80, 0x7F80,
     "1 of 1 elements differ; at (0,): got -inf (0xff80), expected inf (0x7f80)"),
    (torch.float64, 0x7FF8000000000000, 0x7FF8000000000001,
     "1 of 1 elements differ; at (0,): got nan (0x7ff8000000000000), expected nan (0x7ff8000000000001)"),
    (torch.float64, 0x8000000000000000, 0x0000000000000000,
     "1 of 1 elements differ; at (0,): got -0.0 (0x8000000000000000), expected 0.0 (0x0000000000000000)"),
])
def test_bitwise_tells_apart_what_compares_equal_as_numbers(dtype, got, expected, text):
    result = compare(from_bits([got], dtype), from_bits([expected], dtype), EXACT)
    assert not result.ok
    assert (result.total, result.mismatches) == (1, 1)
    assert result.max_abs_error is None and result.max_rel_error is None
    assert result.describe() == text


@pytest.mark.parametrize("dtype, pattern", [
    (torch.float32, 0x7FC00001),
    (torch.float32, 0x80000000),
    (torch.float32, 0xFF800000),
    (torch.float16, 0x7E01),
    (torch.bfloat16, 0x8000),
    (torch.float64, 0x7FF8000000000001),
])
def test_bitwise_identical_special_values_match(dtype, pattern):
    result = compare_bitwise(from_bits([pattern, pattern], dtype), from_bits([pattern, pattern], dtype))
    assert result.ok
    assert result.describe() == "all 2 elements match"


@pytest.mark.parametrize("dtype, got, expected", [
    (torch.float32, 0x7FC00000, 0x7FC00001),  # two NaNs
    (torch.float32, 0x00000000, 0x80000000),  # 0.0 and -0.0
    (torch.float16, 0x7E00, 0x7E01),
])
def test_tolerance_comparison_ignores_nan_payload_and_zero_sign(dtype, got, expected):
    result = compare(from_bits([got], dtype), from_bits([expected], dtype), Tolerance())
    assert result.ok
    assert result.describe() == "all 1 elements match"


@pytest.mark.parametrize("dtype, got, expected, text", [
    (torch.int8, [5, 7], [5, 8], "1 of 2 elements differ; at (1,): got 7, expected 8"),
    (torch.uint8, [5, 255], [5, 254], "1 of 2 elements differ; at (1,): got 255, expected 254"),
    (torch.int16, [-1, 7], [1, 7], "1 of 2 elements differ; at (0,): got -1, expected 1"),
    (torch.int32, [5, 7], [5, 8], "1 of 2 elements differ; at (1,): got 7, expected 8"),
    (torch.int64, [2**40, 0], [2**40 + 1, 0],
     "1 of 2 elements differ; at (0,): got 1099511627776, expected 1099511627777"),
    (torch.bool, [True, False], [False, False], "1 of 2 elements differ; at (0,): got True, expected False"),
])
def test_integer_and_bool_outputs_compare_exactly_under_a_loose_tolerance(dtype, got, expected, text):
    result = compare(torch.tensor(got, dtype=dtype), torch.tensor(expected, dtype=dtype), LOOSE)
    assert not result.ok
    assert result.max_abs_error is None
    assert result.describe() == text


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.bool,
                                   torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.uint16, torch.float8_e4m3fn])
def test_examples_worded_from_bit_patterns_read_as_each_element_read_alone_words_them(dtype):
    # compare_bitwise reads the first mismatches' bit patterns with its count in one transfer and words them itself
    # (or, for a dtype it does not know, reads each element again); either way the words are those of one element read.
    from harness.gate.checks.compare import _format_element

    width = torch.empty((), dtype=dtype).element_size() * 8
    patterns = torch.tensor([0, 1, (1 << (width - 1)) - 1, -(1 << (width - 1)), -1, 5, 0x3c, 0x7f],
                            dtype=torch.int64)
    view = {8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[width]
    got = patterns.to(view).view(dtype) if dtype != torch.bool else (patterns % 2).to(torch.bool)
    expected = torch.zeros_like(got) if dtype != torch.bool else ~got
    result = compare_bitwise(got, expected)
    wrong = [i for i in range(len(patterns)) if not torch.equal(bits(got[i:i + 1]), bits(expected[i:i + 1]))][:3]
    assert result.examples == [f"at ({i},): got {_format_element(got, i)}, expected {_format_element(expected, i)}"
                               for i in wrong]


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool])
def test_equal_integer_outputs_match_under_a_loose_tolerance(dtype):
    values = torch.tensor([0, 1, 1], dtype=dtype)
    result = compare(values, values.clone(), LOOSE)
    assert result.ok
    assert result.describe() == "all 3 elements match"


# --- structure problems ------------------------------------------------------------------------

@pytest.mark.parametrize("got, expected, text", [
    (torch.zeros(3, dtype=torch.float32), torch.zeros(3, dtype=torch.float64),
     "output dtype torch.float32 but the reference gives torch.float64"),
    (torch.zeros(3, dtype=torch.int64), torch.zeros(3, dtype=torch.int32),
     "output dtype torch.int64 but the reference gives torch.int32"),
    (torch.zeros(2, 3), torch.zeros(3, 2), "output shape (2, 3) but the reference gives (3, 2)"),
    (torch.zeros(6), torch.zeros(2, 3), "output shape (6,) but the reference gives (2, 3)"),
    (torch.zeros(1, 1), torch.zeros(()), "output shape (1, 1) but the reference gives ()"),
    # dtype is reported before shape
    (torch.zeros(2, dtype=torch.float16), torch.zeros(3), "output dtype torch.float16 but the reference gives torch.float32"),
    ([1.0, 2.0], torch.zeros(2), "output is a list, not a tensor"),
    (None, torch.zeros(2), "output is a NoneType, not a tensor"),
    (1.5, torch.zeros(()), "output is a float, not a tensor"),
    ((torch.zeros(2),), torch.zeros(2), "output is a tuple, not a tensor"),
    (None, torch.zeros(2, dtype=torch.int32), "output is a NoneType, not a tensor"),
])
@pytest.mark.parametrize("tolerance", [EXACT, Tolerance()], ids=["exact", "tolerance"])
def test_structure_mismatch_is_reported_instead_of_elements(got, expected, text, tolerance):
    result = compare(got, expected, tolerance)
    assert result == Comparison(ok=False, problem=text)
    assert result.describe() == text


# --- tolerance comparison ----------------------------------------------------------------------

# atol = 0.25, rtol = 0.125: the bound around expected=4 is 0.25 + 0.5 = 0.75, all exact in binary.
@pytest.mark.parametrize("got, expected, ok", [
    (4.75, 4.0, True),
    (3.25, 4.0, True),
    (4.75 + 2**-40, 4.0, False),
    (3.25 - 2**-40, 4.0, False),
    (-4.75, -4.0, True),
    (-4.75 - 2**-40, -4.0, False),
    (0.25, 0.0, True),  # atol alone at zero
    (0.25 + 2**-40, 0.0, False),
    (4.0, 4.0, True),
])
def test_tolerance_bound_is_atol_plus_rtol_times_expected(got, expected, ok):
    result = compare(torch.tensor([got], dtype=torch.float64), torch.tensor([expected], dtype=torch.float64),
                     Tolerance(atol=0.25, rtol=0.125))
    assert result.ok is ok
    assert result.mismatches == (0 if ok else 1)


def test_relative_part_scales_with_expected_not_got():
    tol = Tolerance(atol=0.0, rtol=0.5)
    assert compare(torch.tensor([4.0]), torch.tensor([8.0]), tol).ok  # |4-8| = 4 <= 0.5*8
    assert not compare(torch.tensor([8.0]), torch.tensor([4.0]), tol).ok  # |8-4| = 4 > 0.5*4


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_tolerance_just_inside_and_just_outside_in_each_float_dtype(dtype):
    expected = torch.tensor([1.0], dtype=dtype)
    tol = Tolerance(atol=0.25, rtol=0.25)  # bound 0.5 at 1.0
    inside = torch.tensor([1.5], dtype=dtype)
    outside = (bits(inside) + 1).view(dtype)  # the next representable value above 1.5
    assert outside.item() > 1.5
    assert compare(inside, expected, tol).ok
    assert not compare(outside, expected, tol).ok


@pytest.mark.parametrize("got, expected, ok", [
    (NAN, NAN, True),
    (NAN, 1.0, False),
    (1.0, NAN, False),
    (NAN, INF, False),
    (INF, NAN, False),
    (INF, INF, True),
    (-INF, -INF, True),
    (INF, 1.0, False),
    (-INF, 1.0, False),
    (-INF, INF, False),
    (INF, -INF, False),
    (1.0, INF, False),
    (1e30, -INF, False),
])
def test_nan_matches_only_nan_and_inf_only_the_same_inf(got, expected, ok):
    result = compare(torch.tensor([got]), torch.tensor([expected]), Tolerance())
    assert result.ok is ok


@pytest.mark.parametrize("got, expected", [(-INF, INF), (INF, -INF), (1.0, INF)])
def test_opposite_or_finite_value_for_an_infinity_fails_when_rtol_is_zero(got, expected):
    result = compare(torch.tensor([got]), torch.tensor([expected]), Tolerance(atol=0.01, rtol=0.0))
    assert not result.ok


def test_failure_describe_lists_count_worst_errors_and_first_three_examples():
    got = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    expected = torch.tensor([1.5, 2.0, 3.5, 4.5, 5.5])
    result = compare(got, expected, Tolerance())
    assert (result.ok, result.total, result.mismatches) == (False, 5, 4)
    assert result.max_abs_error == 0.5
    assert result.max_rel_error == pytest.approx(1 / 3)
    assert len(result.examples) == 3
    assert result.describe() == (
        "4 of 5 elements differ (max abs error 0.5, max rel error 0.333); "
        "at (0,): got 1.0 (0x3f800000), expected 1.5 (0x3fc00000); "
        "at (2,): got 3.0 (0x40400000), expected 3.5 (0x40600000); "
        "at (3,): got 4.0 (0x40800000), expected 4.5 (0x40900000)"
    )


def test_nan_mismatch_does_not_poison_the_worst_error():
    result = compare(torch.tensor([NAN, 1.5]), torch.tensor([1.0, 1.0]), Tolerance())
    assert result.max_abs_error == 0.5
    assert result.describe() == (
        "2 of 2 elements differ (max abs error 0.5, max rel error 0.5); "
        "at (0,): got nan (0x7fc00000), expected 1.0 (0x3f800000); "
        "at (1,): got 1.5 (0x3fc00000), expected 1.0 (0x3f800000)"
    )


def test_worst_errors_are_taken_over_every_element():
    # Element 0 passes (|diff| 1 <= 0.01 + 0.01*100) yet has the largest absolute error; element 1 fails.
    result = compare(torch.tensor([101.0, 1.5]), torch.tensor([100.0, 1.0]), Tolerance())
    assert result.mismatches == 1
    assert result.max_abs_error == 1.0
    assert result.max_rel_error == 0.5


@pytest.mark.parametrize("shape, index, coords", [
    ((2, 3), (1, 1), "(1, 1)"),
    ((2, 3, 4), (1, 2, 3), "(1, 2, 3)"),
    ((4, 1), (3, 0), "(3, 0)"),
])
def test_examples_give_coordinates_in_the_output_shape(shape, index, coords):
    expected = torch.zeros(shape, dtype=torch.int32)
    got = expected.clone()
    got[index] = 9
    result = compare(got, expected, EXACT)
    assert result.describe() == f"1 of {expected.numel()} elements differ; at {coords}: got 9, expected 0"


def test_examples_of_a_non_contiguous_output_use_its_logical_coordinates():
    expected = torch.zeros(3, 2)
    got = torch.zeros(2, 3).t()  # a transposed view, shape (3, 2)
    got[2, 0] = 1.0
    result = compare(got, expected, EXACT)
    assert result.describe() == "1 of 6 elements differ; at (2, 0): got 1.0 (0x3f800000), expected 0.0 (0x00000000)"


def test_no_more_than_three_examples_are_shown():
    result = compare(torch.ones(10, dtype=torch.int64), torch.zeros(10, dtype=torch.int64), EXACT)
    assert result.describe() == (
        "10 of 10 elements differ; at (0,): got 1, expected 0; at (1,): got 1, expected 0; at (2,): got 1, expected 0"
    )


@pytest.mark.parametrize("dtype, text", [
    (torch.float16, "1 of 1 elements differ (max abs error 1, max rel error 0.4); "
                    "at (): got 1.5 (0x3e00), expected 2.5 (0x4100)"),
    (torch.bfloat16, "1 of 1 elements differ (max abs error 1, max rel error 0.4); "
                     "at (): got 1.5 (0x3fc0), expected 2.5 (0x4020)"),
    (torch.float32, "1 of 1 elements differ (max abs error 1, max rel error 0.4); "
                    "at (): got 1.5 (0x3fc00000), expected 2.5 (0x40200000)"),
    (torch.float64, "1 of 1 elements differ (max abs error 1, max rel error 0.4); "
                    "at (): got 1.5 (0x3ff8000000000000), expected 2.5 (0x4004000000000000)"),
])
def test_zero_dim_tensors_compare_within_tolerance(dtype, text):
    result = compare(torch.tensor(1.5, dtype=dtype), torch.tensor(2.5, dtype=dtype), Tolerance())
    assert result.describe() == text
    assert compare(torch.tensor(2.5, dtype=dtype), torch.tensor(2.5, dtype=dtype), Tolerance()).describe() == \
        "all 1 elements match"


def test_zero_dim_tensors_compare_bitwise():
    result = compare(torch.tensor(1.5), torch.tensor(2.5), EXACT)
    assert result.describe() == "1 of 1 elements differ; at (): got 1.5 (0x3fc00000), expected 2.5 (0x40200000)"
    assert compare(torch.tensor(7), torch.tensor(7), Tolerance()).describe() == "all 1 elements match"


@pytest.mark.parametrize("tolerance", [EXACT, Tolerance()], ids=["exact", "tolerance"])
def test_matching_outputs_describe_the_element_count(tolerance):
    values = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    result = compare(values, values.clone(), tolerance)
    assert (result.ok, result.total, result.mismatches, result.examples) == (True, 6, 0, [])
    assert result.describe() == "all 6 elements match"


@pytest.mark.parametrize("tolerance", [EXACT, Tolerance()], ids=["exact", "tolerance"])
def test_empty_outputs_match(tolerance):
    result = compare(torch.zeros(0, 3), torch.zeros(0, 3), tolerance)
    assert result.ok
    assert result.describe() == "all 0 elements match"


def test_tolerance_comparison_of_half_precision_is_done_in_float64():
    # 2049 is not a float16; 2048 and 2050 are. |2050 - 2048| = 2 against a bound of 0 + 2**-10 * 2048 = 2.
    tol = Tolerance(atol=0.0, rtol=2**-10)
    assert compare(torch.tensor([2050.0], dtype=torch.float16), torch.tensor([2048.0], dtype=torch.float16), tol).ok
    tight = Tolerance(atol=0.0, rtol=2**-11)
    assert not compare(torch.tensor([2050.0], dtype=torch.float16),
                       torch.tensor([2048.0], dtype=torch.float16), tight).ok


def test_compare_does_not_modify_its_inputs():
    got = torch.tensor([1.0, NAN, 3.0])
    expected = torch.tensor([1.5, 2.0, 3.0])
    got_bits, expected_bits = bits(got).clone(), bits(expected).clone()
    compare(got, expected, Tolerance())
    compare(got, expected, EXACT)
    assert torch.equal(bits(got), got_bits) and torch.equal(bits(expected), expected_bits)


@pytest.mark.parametrize("tolerance", [EXACT, Tolerance()], ids=["exact", "tolerance"])
@pytest.mark.parametrize("got, expected", [(torch.tensor([2.5]), torch.tensor(2.5)), (torch.tensor(2.5), torch.tensor([2.5]))],
                         ids=["shape (1,) for 0-dim", "0-dim for shape (1,)"])
def test_a_scalar_is_a_scalar_whether_0_dim_or_shape_1(got, expected, tolerance):
    assert compare(got, expected, tolerance).ok
    wrong = compare(got + 1, expected, tolerance)
    assert not wrong.ok and wrong.mismatches == 1


def test_comparing_in_chunks_gives_what_comparing_at_once_gives(monkeypatch):
    from harness.gate.checks import compare as compare_module

    g = torch.Generator().manual_seed(0)
    expected = torch.randn(13, 29, generator=g)
    got = expected.clone()
    got.view(-1)[[3, 100, 101, 376]] += torch.tensor([1.0, -2.0, float("nan"), 0.5])
    at_once = compare_close(got, expected, 1e-2, 1e-2)
    monkeypatch.setattr(compare_module, "COMPARE_CHUNK", 7)
    assert compare_close(got, expected, 1e-2, 1e-2) == at_once
    assert at_once.mismatches == 4 and len(at_once.examples) == 3


def _element_by_element(got: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> tuple:
    """compare_close's rules written out one element at a time: (mismatches, max abs, max rel, first three indices)."""
    import math

    mismatches, max_abs, max_rel, first = 0, 0.0, 0.0, []
    for i, (g, e) in enumerate(zip(got.double().reshape(-1).tolist(), expected.double().reshape(-1).tolist())):
        diff = abs(g - e)
        ok = (math.isnan(g) and math.isnan(e)) or (math.isinf(e) and g == e) or (
            math.isfinite(e) and diff <= atol + rtol * abs(e))
        if math.isfinite(diff):
            max_abs = max(max_abs, diff)
            max_rel = max(max_rel, diff / max(abs(e), torch.finfo(torch.float64).tiny))
        if not ok:
            mismatches += 1
            first += [i][: 3 - len(first)]
    return mismatches, max_abs, max_rel, first


@pytest.mark.parametrize("seed", range(12))
def test_chunks_read_together_give_the_element_by_element_verdict_and_figures(monkeypatch, seed):
    # Chunks of 16: finite ones with and without mismatches, and ones with a NaN, an infinity or an overflowing
    # difference (float64), in any order; the first three mismatches may lie in a later chunk than the first.
    from harness.gate.checks import compare as compare_module
    from harness.gate.checks.compare import coords_of

    monkeypatch.setattr(compare_module, "COMPARE_CHUNK", 16)
    g = torch.Generator().manual_seed(seed)
    dtype = (torch.float32, torch.float64, torch.float16)[seed % 3]
    expected = (torch.randn(9, 23, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(-3, 3, (9, 23), generator=g))
    got = expected + torch.randn(9, 23, generator=g, dtype=torch.float64) * 1e-3
    flat_got, flat_expected = got.view(-1), expected.view(-1)
    for i in torch.randint(207, (6,), generator=g).tolist():
        flat_got[i] += float(torch.randn(1, generator=g)) * 10
    specials = [float("nan"), float("inf"), float("-inf")]
    for i in torch.randint(207, (3,), generator=g).tolist():
        (flat_got if i % 2 else flat_expected)[i] = specials[i % 3]
    if dtype == torch.float64 and seed % 2:
        flat_got[40], flat_expected[40] = 1.5e308, -1.5e308  # finite values whose difference overflows
    got, expected = got.to(dtype), expected.to(dtype)
    result = compare_close(got, expected, 1e-2, 1e-2)
    mismatches, max_abs, max_rel, first = _element_by_element(got, expected, 1e-2, 1e-2)
    assert (result.ok, result.mismatches, result.total) == (mismatches == 0, mismatches, 207)
    assert (result.max_abs_error, result.max_rel_error) == (max_abs, max_rel)
    assert [example.split(":")[0] for example in result.examples] == [f"at {coords_of(i, (9, 23))}" for i in first]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("tolerance", [Tolerance(atol=1e-2, rtol=1e-2), EXACT], ids=["tolerance", "exact"])
def test_a_comparison_described_ahead_is_what_compare_gives(seed, tolerance):
    # compare_later(describe=True) queues the figures and the first mismatches with the verdict (a --matrix cell reads
    # them in the run's one transfer): its finish() gives compare()'s Comparison, mismatch or not, NaN or not.
    from harness.gate.checks.compare import compare_later

    g = torch.Generator().manual_seed(seed)
    dtype = (torch.float32, torch.float64, torch.float16, torch.bfloat16)[seed % 4]
    expected = torch.randn(7, 31, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(-3, 3, (7, 31), generator=g)
    got = expected + torch.randn(7, 31, generator=g, dtype=torch.float64) * 1e-3 * (seed % 3)
    flat_got, flat_expected = got.view(-1), expected.view(-1)
    for i in torch.randint(217, (seed % 5,), generator=g).tolist():
        flat_got[i] += float(torch.randn(1, generator=g)) * 10
    specials = [float("nan"), float("inf"), float("-inf")]
    for i in torch.randint(217, (seed % 4,), generator=g).tolist():
        (flat_got if i % 2 else flat_expected)[i] = specials[i % 3]
        if seed % 2:
            flat_got[i] = flat_expected[i]  # a NaN or an infinity where both agree
    got, expected = got.to(dtype), expected.to(dtype)
    pending = compare_later(got, expected, tolerance, describe=True)
    assert pending.finish(pending.signals.tolist()) == compare(got, expected, tolerance)


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.float32])
def test_a_large_bitwise_comparison_goes_chunk_by_chunk_and_says_what_the_whole_at_once_says(monkeypatch, dtype):
    # At 2^31 elements a mask of the whole output and its scan took 2 to 32 GiB beside the large-index oracle's trial.
    from harness.gate.checks import compare as compare_module

    expected = torch.arange(50).to(dtype)
    got = expected.clone()
    for at in (3, 20, 21, 40):
        got[at] = 7 if at != 3 else 9
    whole = compare_bitwise(got, expected)
    equal = compare_bitwise(expected.clone(), expected)
    monkeypatch.setattr(compare_module, "COMPARE_CHUNK", 8)
    chunked = compare_bitwise(got, expected)
    assert chunked == whole and not chunked.ok and chunked.mismatches == 4 and len(chunked.examples) == 3
    assert chunked.examples[0].startswith("at (3,): got 9")
    assert compare_bitwise(expected.clone(), expected) == equal and equal.ok
