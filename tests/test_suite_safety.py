"""harness.suite_safety: the do-nothing kernels and the second legitimate reference, as pure functions."""

import pytest
import torch

from harness.compare import Tolerance
from harness.suite_safety import TrivialKernels, agreement, float64_reference

CLOSE, EXACT = Tolerance(), Tolerance(exact=True)


def test_outputs_within_the_tolerance_of_zero_let_every_do_nothing_kernel_but_the_copy_through():
    kernels = TrivialKernels(CLOSE)
    for t in range(3):
        x = torch.randn(8, 64, generator=torch.Generator().manual_seed(t))
        kernels.observe("T0_original", t, [x], 1e-3 * x)
    assert [p.split(" passes")[0] for p in kernels.problems()] == [
        "a kernel that writes zeros", f"a kernel that writes the constant {kernels.constant!r:.12}"]
    assert kernels.caught_by == {"copies input 0": "T0_original trial 0"}


def test_a_suite_that_varies_its_outputs_rejects_all_three_and_idle_suites_are_named():
    kernels = TrivialKernels(CLOSE)
    kernels.observe("flat", 0, [torch.ones(4)], torch.ones(4))
    kernels.observe("varied", 0, [torch.arange(4.0)], torch.arange(4.0) * 3 - 2)
    assert kernels.problems() == []
    assert kernels.summary() == ("a kernel that writes zeros is rejected by flat trial 0; a kernel that copies input 0 "
                                 "is rejected by varied trial 0; a kernel that writes the constant 1.0 is rejected by "
                                 "varied trial 0")
    lazy_first = TrivialKernels(CLOSE)
    lazy_first.observe("idle", 0, [torch.zeros(2)], torch.zeros(2))
    lazy_first.observe("varied", 0, [torch.arange(4.0)], torch.arange(4.0) * 3 - 2)
    assert lazy_first.problems() == []
    assert lazy_first.summary().endswith("writes the constant 0.0 is rejected by varied trial 0 (suites that reject "
                                         "none of them: idle)")


def test_a_constant_from_one_dtype_wraps_into_another_of_the_same_width():
    kernels = TrivialKernels(EXACT)
    kernels.observe("T0_original", 0, [torch.zeros(3, dtype=torch.uint8)], torch.full((3,), 128, dtype=torch.uint8))
    kernels.observe("special_values", 0, [torch.zeros(3, dtype=torch.int8)], torch.full((3,), -128, dtype=torch.int8))
    assert kernels.constant == 128
    # -128 is 128 wrapped into int8: the constant kernel passes that trial too, without an overflow error.
    assert "writes the constant 128" not in kernels.caught_by
    assert kernels.problems()[0].startswith("a kernel that writes the constant 128 passes every trial of every suite")


def test_float64_agrees_bitwise_on_byte_moves_with_nan_payloads_exempt():
    quiet, signalling = torch.tensor([0x7E01, 0x7C01], dtype=torch.int16).view(torch.float16)
    expected = torch.stack([quiet, signalling, torch.tensor(-0.0, dtype=torch.float16)])
    model = torch.nn.Identity()
    widened = float64_reference(model, [expected], expected)
    assert agreement(widened, expected, EXACT).ok


def test_float64_disagrees_with_float32_on_a_cancelling_sum():
    class RowSum(torch.nn.Module):
        def forward(self, x):
            return x.sum(dim=1)

    g = torch.Generator().manual_seed(0)
    big = torch.rand(4, 4096, generator=g) * 1e7
    row = torch.cat([big, -big, torch.randn(4, 16, generator=g)], dim=1)
    row = torch.gather(row, 1, torch.argsort(torch.rand(row.shape, generator=g), dim=1))
    expected = RowSum()(row)
    assert not agreement(float64_reference(RowSum().double(), [row], expected), expected, CLOSE).ok


def test_nothing_floating_point_means_no_float64_route():
    ints = torch.arange(6, dtype=torch.int32)
    assert float64_reference(torch.nn.Identity(), [ints], ints) is None


def test_a_host_copy_of_a_cpu_tensor_is_the_tensor_itself():
    from harness.suite_safety import host_copy

    x = torch.arange(10.0)
    assert host_copy(x).data_ptr() == x.data_ptr()


@pytest.mark.gpu
def test_a_large_device_output_comes_to_the_host_through_page_locked_memory_unchanged():
    from harness.suite_safety import PINNED_FROM_BYTES, host_copy

    large = torch.rand(PINNED_FROM_BYTES // 4 + 1, device="cuda")
    small = torch.rand(1000, device="cuda")
    large_host, small_host = host_copy(large), host_copy(small)
    assert large_host.is_pinned() and not small_host.is_pinned()
    assert torch.equal(large_host, large.cpu()) and torch.equal(small_host, small.cpu())
