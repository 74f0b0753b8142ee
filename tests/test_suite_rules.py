"""harness.suite_rules: its pure functions, apart from the gate runs of tests/test_spec_rules.py."""

import torch

from harness.suite_rules import SAME_PREFIX, first_difference


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

    from harness.suite_rules import portable_signature, signature_inputs

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
