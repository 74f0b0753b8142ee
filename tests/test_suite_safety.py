"""harness.suite_safety: the do-nothing kernels and the second legitimate reference, as pure functions."""

import threading

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


class _Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(3))

    def forward(self, x):
        return x * 2.0


def test_the_float64_route_counts_widened_inputs_parameters_and_both_outputs():
    from harness.suite_safety import float64_route_bytes

    x, ints = torch.ones(10), torch.arange(4, dtype=torch.int32)
    # 3 parameters widened (24), then the larger of: 10 floats widened (80) + 4 int32 cloned (16) + 10 outputs in
    # float64 (80); or, the inputs let go, 10 outputs in float64 and in float32 (120)
    assert float64_route_bytes(_Scale(), [x, ints, 7], torch.ones(10)) == 24 + 80 + 16 + 80
    assert float64_route_bytes(_Scale(), [torch.ones(1)], torch.ones(100)) == 24 + 100 * 12


def _references_as_on_a_gpu(model):
    """SecondReferences whose device is the CPU, told it is a GPU: the device route's choices, without a GPU."""
    from harness.suite_safety import SecondReferences

    references = SecondReferences(model, "cpu", CLOSE)
    references.on_gpu = True
    return references


def test_a_small_trials_float64_route_runs_at_once_on_the_device_and_a_large_ones_in_the_thread(monkeypatch):
    from harness import suite_safety

    monkeypatch.setattr(suite_safety, "DEVICE_FLOAT64_MAX_BYTES", 400)
    references = _references_as_on_a_gpu(_Scale())
    small, large = torch.rand(8), torch.rand(32)  # 24 + 8 * (8 + 8) = 152 bytes; 24 + 32 * (8 + 8) = 536
    references.submit("T0_original trial 0", [large], large * 2, device_inputs=[large])
    references.submit("misaligned trial 0", [small], small * 2, device_inputs=[small])
    assert references.on_device == 1 and len(references._futures) == 1  # only the large trial went to the thread
    assert [(r.where, r.label, r.agreement.ok) for r in references.collect()] == [
        ("T0_original trial 0", "in float64", True), ("misaligned trial 0", "in float64", True)]  # trial order


def test_a_float64_route_out_of_device_memory_runs_on_the_cpu_instead():
    class OutOfMemoryOnce(torch.nn.Module):
        calls = []

        def forward(self, x):
            OutOfMemoryOnce.calls.append(x.dtype)
            if len(OutOfMemoryOnce.calls) == 1:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return x + 1

    references = _references_as_on_a_gpu(OutOfMemoryOnce())
    x = torch.rand(16)
    references.submit("T0_original trial 0", [x], x + 1, device_inputs=[x])
    results = references.collect()
    assert references.on_device == 0 and not references.device_float64_error and not references.unavailable
    assert [(r.label, r.agreement.ok) for r in results] == [("in float64", True)]
    assert OutOfMemoryOnce.calls == [torch.float64, torch.float64]  # once on the device, then in the thread


def test_a_model_that_cannot_run_in_float64_on_the_device_is_not_tried_there_again():
    class DeviceOnlyFails(torch.nn.Module):
        device_calls = 0

        def forward(self, x):
            if not hasattr(self, "on_cpu"):
                DeviceOnlyFails.device_calls += 1
                raise RuntimeError('"addmm_cuda" not implemented for \'Double\'')
            return x + 1

    model = DeviceOnlyFails()
    references = _references_as_on_a_gpu(model)
    for label, cpu_model, _widen in references.routes:
        cpu_model.on_cpu = True  # the thread's copies run; the device's copy (made from `model`) raises
    x = torch.rand(16)
    for t in range(3):
        references.submit(f"T0_original trial {t}", [x], x + 1, device_inputs=[x])
    results = references.collect()
    assert DeviceOnlyFails.device_calls == 1 and references.on_device == 0
    assert references.device_float64_error == 'RuntimeError: "addmm_cuda" not implemented for \'Double\''
    assert [r.where for r in results] == [f"T0_original trial {t}" for t in range(3)]


class _Held(torch.nn.Module):
    """x * 2, once `release` is set: the second references' thread stays busy until the test lets it go."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def forward(self, x):
        assert self.release.wait(timeout=60)
        return x * 2.0

    def __deepcopy__(self, memo):  # the routes' copies share the event
        return self


def _submit_in_background(references, trials):
    """Submit each (inputs, expected) in a thread; the count that returned after a moment (submit may block)."""
    returned = []

    def submit_all():
        for t, (inputs, expected) in enumerate(trials):
            references.submit(f"T0_original trial {t}", inputs, expected)
            returned.append(t)

    submitter = threading.Thread(target=submit_all, daemon=True)
    submitter.start()
    submitter.join(timeout=2)
    return submitter, list(returned)


def test_small_host_trials_queue_past_pending_while_the_thread_is_busy():
    from harness.suite_safety import SecondReferences

    model = _Held()
    references = SecondReferences(model, "cpu", CLOSE)
    x = torch.rand(64)
    submitter, returned = _submit_in_background(references, [([x], x * 2)] * (SecondReferences.PENDING + 3))
    model.release.set()  # before asserting: a failure must not leave the threads waiting
    assert len(returned) == SecondReferences.PENDING + 3  # none waited for the busy thread
    submitter.join()
    assert [r.agreement.ok for r in references.collect()] == [True] * (SecondReferences.PENDING + 3)


def test_trials_past_the_host_byte_budget_wait_for_a_free_slot(monkeypatch):
    from harness.suite_safety import SecondReferences

    monkeypatch.setattr(SecondReferences, "PENDING_HOST_BYTES", 1000)
    model = _Held()
    references = SecondReferences(model, "cpu", CLOSE)
    x = torch.rand(64)  # 256 bytes in, 256 out: the third trial would make 1536 queued bytes
    submitter, returned = _submit_in_background(references, [([x], x * 2)] * 4)
    model.release.set()
    assert returned == list(range(SecondReferences.PENDING))  # PENDING queue; the next waits for the oldest
    submitter.join()
    assert len(references.collect()) == 4
    assert "second references (waiting for a free slot)" in references.clock.seconds()


@pytest.mark.gpu
def test_on_a_gpu_a_small_trials_float64_route_runs_on_the_device_beside_the_cpu_route():
    from harness.suite_safety import SecondReferences

    references = SecondReferences(_Scale().cuda(), "cuda", CLOSE)
    x = torch.rand(1 << 20, device="cuda")
    expected = x * 2
    before = torch.cuda.memory_allocated()
    references.submit("T0_original trial 0", [x], expected, device_inputs=[x])
    del expected
    # The thread compares the CPU route with a host copy: the 4 MiB official output is not held on the device.
    assert torch.cuda.memory_allocated() <= before - (1 << 22) + 4096
    results = references.collect()
    assert references.on_device == 1
    assert [(r.label, r.agreement.ok) for r in results] == [("in float64", True), ("on the CPU", True)]


@pytest.mark.gpu
def test_a_large_float64_route_on_the_device_gives_its_blocks_back_to_the_driver():
    from harness.suite_safety import RELEASE_CACHE_FROM_BYTES, SecondReferences

    references = SecondReferences(_Scale().cuda(), "cuda", CLOSE)
    x = torch.rand(RELEASE_CACHE_FROM_BYTES // 16, device="cuda")  # a route of 24 + 16 * n bytes: just over
    expected = x * 2
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    references.submit("T0_original trial 0", [x], expected, device_inputs=[x])
    assert references.on_device == 1
    assert torch.cuda.memory_reserved() <= reserved  # the route's widened input and float64 output are not cached
    assert [r.agreement.ok for r in references.collect()] == [True, True]


def test_host_buffers_are_reused_for_the_same_shape_and_let_go_past_their_limit(monkeypatch):
    from harness import suite_safety
    from harness.suite_safety import HostBuffers

    monkeypatch.setattr(suite_safety, "REUSE_FROM_BYTES", 64)
    buffers = HostBuffers(limit_bytes=1000)
    first = buffers.copy("widened", torch.arange(50.0), torch.float64)  # 400 bytes: held
    second = buffers.copy("widened", torch.arange(50.0) + 1, torch.float64)
    assert second.data_ptr() == first.data_ptr() and torch.equal(second, torch.arange(50.0, dtype=torch.float64) + 1)
    assert buffers.copy("rounded", torch.arange(10.0)).data_ptr() != buffers.copy("rounded", torch.arange(10.0)).data_ptr()
    big = buffers.copy("copied", torch.zeros(200))  # 800 bytes more would pass the limit: a fresh copy, not held
    assert buffers.held_bytes() == 400 and torch.equal(big, torch.zeros(200))
    reshaped = buffers.copy("widened", torch.ones(2, 25), torch.float64)  # another shape replaces the buffer
    assert reshaped.shape == (2, 25) and buffers.held_bytes() == 400
    buffers.clear()
    assert buffers.held_bytes() == 0


def test_routes_through_host_buffers_give_the_same_outputs_and_keep_the_inputs_apart(monkeypatch):
    from harness import suite_safety
    from harness.suite_safety import HostBuffers, cpu_reference, float64_reference, widened_model

    class ScalesInPlace(torch.nn.Module):
        def forward(self, x, n):
            x.mul_(3.0)  # a Model may change its inputs: the caller's must not change
            return x.sum(dim=1) + n.sum()

    monkeypatch.setattr(suite_safety, "REUSE_FROM_BYTES", 64)
    buffers = HostBuffers(limit_bytes=1 << 20)
    x, n = torch.rand(16, 8, generator=torch.Generator().manual_seed(3)), torch.arange(4)
    before = x.clone()
    expected = ScalesInPlace()(x.clone(), n)
    for _trial in range(2):
        assert torch.equal(float64_reference(widened_model(ScalesInPlace()), [x, n], expected, buffers),
                           float64_reference(widened_model(ScalesInPlace()), [x, n], expected))
        assert torch.equal(cpu_reference(ScalesInPlace(), [x, n], buffers), expected)
    assert torch.equal(x, before) and buffers.held_bytes() == 16 * 8 * 8 + 16 * 4 + 16 * 8 * 4  # widened x, the rounded output, copied x
