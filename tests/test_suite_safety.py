"""harness.gate.checks.suite_safety: the do-nothing kernels and the second legitimate reference, as pure functions."""

import threading

import pytest
import torch

from harness.gate.checks.compare import Tolerance
from harness.gate.checks.suite_safety import TrivialKernels, agreement, float64_reference

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
    from harness.gate.checks.suite_safety import host_copy

    x = torch.arange(10.0)
    assert host_copy(x).data_ptr() == x.data_ptr()


@pytest.mark.gpu
def test_a_large_device_output_comes_to_the_host_through_page_locked_memory_unchanged():
    from harness.gate.checks.suite_safety import PINNED_FROM_BYTES, host_copy

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
    from harness.gate.checks.suite_safety import float64_route_bytes

    x, ints = torch.ones(10), torch.arange(4, dtype=torch.int32)
    # 3 parameters widened (24), then the larger of: 10 floats widened (80) + 4 int32 cloned (16) + 10 outputs in
    # float64 (80); or, the inputs let go, 10 outputs in float64 and in float32 (120)
    assert float64_route_bytes(_Scale(), [x, ints, 7], torch.ones(10)) == 24 + 80 + 16 + 80
    assert float64_route_bytes(_Scale(), [torch.ones(1)], torch.ones(100)) == 24 + 100 * 12


def _references_as_on_a_gpu(model):
    """SecondReferences whose device is the CPU, told it is a GPU: the device route's choices, without a GPU. Its
    foresight runs the meta device whether or not an earlier test imported its shape rules (run alone, none has)."""
    from harness.gate.checks.suite_safety import SecondReferences
    from harness.gate.foresight import OutputForesight

    references = SecondReferences(model, "cpu", CLOSE, foresight=OutputForesight(model, rules_ready=lambda: True))
    references.on_gpu = True
    return references


def test_a_small_trials_float64_route_runs_at_once_on_the_device_and_a_large_ones_in_the_thread(monkeypatch):
    from harness.gate.checks import suite_safety

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


GIB = 2**30


def test_the_float64_route_runs_on_the_device_where_it_stays_within_a_quarter_more_than_a_kernelbench_check():
    from harness.gate.checks.suite_safety import float64_fits_device, kernelbench_trial_bytes

    # KernelBench's check: the last trial's inputs and outputs beside the new inputs, or three outputs.
    assert kernelbench_trial_bytes(4 * GIB, 4 * GIB) == 16 * GIB
    assert kernelbench_trial_bytes(1 * GIB, 8 * GIB) == 25 * GIB
    # An elementwise 6 GiB trial: its route (widened input and output) is 24 GiB; 6 + 24 of 1.25 x 24.
    assert float64_fits_device(24 * GIB, 6 * GIB, 6 * GIB)
    assert not float64_fits_device(24 * GIB + 1, 6 * GIB, 6 * GIB)
    # A convolution whose output is eight times its input: 1 GiB in, 8 out, a route of 24 GiB (the output in
    # float64, then rounded): 25 of 1.25 x 25.
    assert float64_fits_device(24 * GIB, 1 * GIB, 8 * GIB)
    # A reduction of 8 GiB to 4 MiB: its widened input alone is 16 GiB; 24 GiB passes 1.25 x (2 x 8 GiB + 8 MiB).
    assert not float64_fits_device(16 * GIB + 8 * 2**20, 8 * GIB, 4 * 2**20)
    # Any route of at most a gigabyte runs there, whatever the trial.
    assert float64_fits_device(GIB, 1, 1) and not float64_fits_device(GIB + 1, 1, 1)


class _Doubled(torch.nn.Module):
    """x * 2 with no parameters: an elementwise trial's route fits the device exactly (float64_fits_device)."""

    def forward(self, x):
        return x * 2.0


class _Sparse(torch.nn.Module):
    """The positive values of x, doubled: an output whose size the meta device cannot foresee."""

    def forward(self, x):
        return x[x > 0] * 2.0


def test_a_trials_float64_route_runs_ahead_of_its_official_output_and_is_compared_when_it_exists():
    references = _references_as_on_a_gpu(_Scale())
    x = torch.rand(4, 8)
    ahead = references.ahead_of_official([x])
    assert ahead.output.dtype == torch.float32 and torch.equal(ahead.output, x * 2)
    references.submit("T0_original trial 0", [x], x * 2, device_inputs=[x], float64=ahead)
    assert ahead.output is None  # let go once compared
    assert references.on_device == 1 and not references._futures  # the thread had nothing left to run
    assert [(r.label, r.agreement.ok) for r in references.collect()] == [("in float64", True)]


def test_a_float64_route_ahead_that_disagrees_fails_the_trial_as_one_after_the_official_output_does():
    references = _references_as_on_a_gpu(_Scale())
    x = torch.rand(16)
    expected = x * 2
    expected[3] += 1.0  # an official output the float64 route does not reproduce
    references.submit("misaligned trial 2", [x], expected, float64=references.ahead_of_official([x]))
    [result] = references.collect()
    assert (result.where, result.label, result.agreement.ok, result.agreement.mismatches) == (
        "misaligned trial 2", "in float64", False, 1)


def test_a_float64_route_too_large_for_the_device_or_unforeseeable_is_left_to_the_thread(monkeypatch):
    from harness.gate.checks import suite_safety

    monkeypatch.setattr(suite_safety, "DEVICE_FLOAT64_MAX_BYTES", 0)
    monkeypatch.setattr(suite_safety, "FLOAT64_DEVICE_SHARE", 1.0)  # no route fits beside its inputs
    references = _references_as_on_a_gpu(_Scale())
    x = torch.rand(16)
    assert references.ahead_of_official([x]) is None
    references.submit("T0_original trial 0", [x], x * 2, device_inputs=[x])
    assert [(r.label, r.agreement.ok) for r in references.collect()] == [("in float64", True)]
    assert references.on_device == 0
    assert references.off_device == {"beside its inputs it would pass 1.0x what KernelBench's check holds on the "
                                     "device": 1}
    sparse = _references_as_on_a_gpu(_Sparse())
    y = torch.randn(64)
    assert sparse.ahead_of_official([y]) is None and sparse.foresight.meta_error.startswith("NotImplementedError")
    sparse.submit("T0_original trial 0", [y], y[y > 0] * 2, device_inputs=[y])
    assert [(r.label, r.agreement.ok) for r in sparse.collect()] == [("in float64", True)]
    assert [why.split(":")[0] for why in sparse.off_device] == [
        "over 0 MiB, and the meta device could not foresee its size"]


def test_a_float64_result_ahead_of_another_shape_than_the_official_output_is_redone_in_the_thread():
    from harness.gate.checks.suite_safety import DeviceFloat64

    references = _references_as_on_a_gpu(_Scale())
    x = torch.rand(16)
    references.submit("T0_original trial 0", [x], x * 2, float64=DeviceFloat64(torch.zeros(4)))
    assert references.on_device == 0 and len(references._futures) == 1
    assert [(r.label, r.agreement.ok) for r in references.collect()] == [("in float64", True)]


def test_past_the_sampling_size_only_a_suites_first_trial_takes_the_cpu_route_beside_float64_on_the_device(
        monkeypatch):
    from harness.gate.checks import suite_safety

    monkeypatch.setattr(suite_safety, "CPU_ROUTE_SAMPLE_FROM_BYTES", 128)  # 16 floats in and out: 128 bytes
    references = _references_as_on_a_gpu(_Scale())
    references.routes.append(("on the CPU", _Scale(), False))  # as a SecondReferences made on a GPU has
    large, small = torch.rand(16), torch.rand(4)
    trials = [("T0_original", 0, large), ("T0_original", 1, large), ("T0_original", 2, small),
              ("T0_original", 3, large), ("impulses", 0, large)]
    for suite, t, x in trials:
        where = f"{suite} trial {t}"
        references.submit(where, [x], x * 2, device_inputs=[x], float64=references.ahead_of_official([x]), suite=suite)
    results = references.collect()
    assert references.on_device == 5 and references.cpu_route_sampled_out == 2
    assert [(r.where, r.label) for r in results if r.label == "on the CPU"] == [
        ("T0_original trial 0", "on the CPU"), ("T0_original trial 2", "on the CPU"), ("impulses trial 0", "on the CPU")]
    assert all(r.agreement.ok for r in results) and len(results) == 8


def test_past_the_same_shapes_size_only_a_suites_first_trial_of_each_shape_takes_the_cpu_route(monkeypatch):
    # A compute-bound T0 (a 4096-square matmul: 192 MiB a trial, 137 GFLOP) is large in work, not in bytes.
    from harness.gate.checks import suite_safety

    monkeypatch.setattr(suite_safety, "CPU_ROUTE_SAMPLE_SAME_SHAPES_FROM_BYTES", 128)  # 16 floats in and out
    references = _references_as_on_a_gpu(_Scale())
    references.routes.append(("on the CPU", _Scale(), False))
    trials = [("T0_original", t, torch.rand(16)) for t in range(5)]
    trials += [("misaligned", t, torch.rand(n)) for t, n in enumerate((16, 17, 32))]
    trials += [("T0_original", 5, torch.rand(4))]  # under the size: always taken
    for suite, t, x in trials:
        references.submit(f"{suite} trial {t}", [x], x * 2, device_inputs=[x],
                          float64=references.ahead_of_official([x]), suite=suite)
    results = references.collect()
    assert references.on_device == 9 and references.cpu_route_sampled_out == 4
    assert [r.where for r in results if r.label == "on the CPU"] == [
        "T0_original trial 0", "misaligned trial 0", "misaligned trial 1", "misaligned trial 2", "T0_original trial 5"]
    assert all(r.agreement.ok for r in results)


def test_where_float64_runs_in_the_thread_too_the_cpu_route_takes_a_suites_first_trial_of_each_shape(monkeypatch):
    # A hinge loss's float64 route does not fit on the device: both routes ran in the thread for every trial.
    from harness.gate.checks import suite_safety

    monkeypatch.setattr(suite_safety, "DEVICE_FLOAT64_MAX_BYTES", 0)
    monkeypatch.setattr(suite_safety, "FLOAT64_DEVICE_SHARE", 0.0)
    monkeypatch.setattr(suite_safety, "CPU_ROUTE_SAMPLE_SAME_SHAPES_FROM_BYTES", 128)
    references = _references_as_on_a_gpu(_Scale())
    references.routes.append(("on the CPU", _Scale(), False))
    for t in range(3):
        x = torch.rand(16)
        references.submit(f"T0_original trial {t}", [x], x * 2, device_inputs=[x],
                          float64=references.ahead_of_official([x]), suite="T0_original")
    results = references.collect()
    assert references.on_device == 0 and references.cpu_route_sampled_out == 2
    assert [(r.where, r.label) for r in results] == [
        ("T0_original trial 0", "in float64"), ("T0_original trial 0", "on the CPU"),
        ("T0_original trial 1", "in float64"), ("T0_original trial 2", "in float64")]


def test_a_cpu_route_sample_is_a_suite_past_256_mib_a_suite_and_shapes_past_16_and_nothing_below():
    from harness.gate.checks.suite_safety import cpu_route_sample

    x = [torch.empty(4, 8, device="meta"), 3]
    assert cpu_route_sample("T0_original", x, 256 * 2**20) == "T0_original"
    assert cpu_route_sample("T0_original", x, 16 * 2**20) == ("T0_original", (("tensor", "float32", (4, 8)),
                                                                              ("value", 3)))
    assert cpu_route_sample("T0_original", x, 16 * 2**20 - 1) is None


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
    from harness.gate.checks.suite_safety import SecondReferences

    model = _Held()
    references = SecondReferences(model, "cpu", CLOSE)
    x = torch.rand(64)
    submitter, returned = _submit_in_background(references, [([x], x * 2)] * (SecondReferences.PENDING + 3))
    model.release.set()  # before asserting: a failure must not leave the threads waiting
    assert len(returned) == SecondReferences.PENDING + 3  # none waited for the busy thread
    submitter.join()
    assert [r.agreement.ok for r in references.collect()] == [True] * (SecondReferences.PENDING + 3)


def test_trials_past_the_host_byte_budget_wait_for_a_free_slot():
    from harness.gate.checks.suite_safety import SecondReferences

    model = _Held()
    references = SecondReferences(model, "cpu", CLOSE)
    references.pending_host_bytes = 1000
    x = torch.rand(64)  # 256 bytes in, 256 out: the third trial would make 1536 queued bytes
    submitter, returned = _submit_in_background(references, [([x], x * 2)] * 4)
    model.release.set()
    assert returned == list(range(SecondReferences.PENDING))  # PENDING queue; the next waits for the oldest
    submitter.join()
    assert len(references.collect()) == 4
    assert "second references (waiting for a free slot)" in references.clock.seconds()


@pytest.mark.parametrize("running, on_host, size, expected", [
    ([], False, 10**9, True),  # nothing queued: even a trial holding its output on the device
    ([(False, 100)], False, 100, True),  # fewer than PENDING (2)
    ([(False, 100), (True, 100)], False, 100, False),  # a second output would wait on the device: it waits
    ([(False, 100), (False, 100)], True, 100, True),  # a host-only trial queues behind outputs on the device
    ([(False, 600), (True, 300)], True, 200, False),  # but not past the host byte budget (1000)
    ([(True, 300), (True, 300), (True, 300)], True, 100, True),  # host-only behind host-only, within the budget
])
def test_may_queue_bounds_outputs_held_on_the_device_and_bytes_held_on_the_host(running, on_host, size, expected):
    from harness.gate.checks.suite_safety import may_queue

    assert may_queue(running, on_host, size, pending=2, pending_host_bytes=1000) is expected


def test_host_release_frees_what_it_is_handed_in_its_own_thread():
    from harness.gate.host_release import PHASE, HostRelease

    freed_in = []

    class Held:
        def __del__(self):
            freed_in.append(threading.current_thread().name)

    release = HostRelease()
    box = [Held()]
    release.let_go(box)
    release.close()
    assert freed_in == ["host-release"] and box == []
    assert release.clock.calls()[PHASE]["calls"] == 1
    release.close()  # closing twice, or with nothing handed over, is harmless
    HostRelease().close()


def test_drop_pages_gives_back_only_what_nothing_else_reads():
    from harness.gate.host_release import MADVISE_FROM_BYTES, drop_pages

    large = MADVISE_FROM_BYTES // 4
    assert drop_pages([torch.ones(large)]) >= MADVISE_FROM_BYTES - 2 * 4096  # its own: the pages go
    kept = torch.ones(large)
    box = [kept]
    assert drop_pages(box) == 0 and box == []  # another reference reads it: left whole
    base = torch.ones(large)
    view = base[: large // 2]
    box = [base]
    del base
    assert drop_pages(box) == 0  # another tensor on its storage
    assert drop_pages([torch.ones(1024)]) == 0  # small: freed as it is
    assert bool((kept == 1).all()) and bool((view == 1).all())


@pytest.mark.gpu
def test_on_a_gpu_a_small_trials_float64_route_runs_on_the_device_beside_the_cpu_route():
    from harness.gate.checks.suite_safety import SecondReferences

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
def test_on_a_gpu_the_threads_host_results_are_compared_on_the_device_and_freed_in_a_thread_of_their_own():
    from harness.gate.checks.suite_safety import SecondReferences
    from harness.gate.host_release import PHASE

    references = SecondReferences(_Scale().cuda(), "cuda", CLOSE)
    x = torch.rand(1 << 20, device="cuda")
    references.submit("T0_original trial 0", [x], x * 2)  # no device inputs: both routes run in the thread
    results = references.collect()
    assert [(r.label, r.agreement.ok) for r in results] == [("in float64", True), ("on the CPU", True)]
    assert references.compared_on_host == 0  # each host result went to the device, beside the official output
    assert references.clock.calls()[PHASE]["calls"] == 2
    assert "[thread] official Model on the CPU: to the device" in references.clock.seconds()


@pytest.mark.gpu
def test_a_large_float64_route_on_the_device_gives_its_blocks_back_to_the_driver():
    from harness.gate.checks.suite_safety import RELEASE_CACHE_FROM_BYTES, SecondReferences

    references = SecondReferences(_Scale().cuda(), "cuda", CLOSE)
    x = torch.rand(RELEASE_CACHE_FROM_BYTES // 16, device="cuda")  # a route of 24 + 16 * n bytes: just over
    expected = x * 2
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    references.submit("T0_original trial 0", [x], expected, device_inputs=[x])
    assert references.on_device == 1
    assert torch.cuda.memory_reserved() <= reserved  # the route's widened input and float64 output are not cached
    assert [r.agreement.ok for r in references.collect()] == [True, True]


class _OtherOnTheHost(torch.nn.Module):
    """x * 2 on a GPU, x * 2 + 1 elsewhere: its second references disagree with its official output everywhere."""

    def forward(self, x):
        return x * 2.0 if x.is_cuda else x * 2.0 + 1.0


@pytest.mark.gpu
def test_on_a_gpu_the_threads_results_reach_the_device_whole_on_a_stream_of_their_own_while_trials_run():
    from harness.gate.checks.suite_safety import SecondReferences
    from harness.gate.staged_copy import CHUNK_BYTES

    references = SecondReferences(_OtherOnTheHost(), "cuda", CLOSE)
    staged, copy_staged = [], references._staging.copy
    references._staging.copy = lambda host, *rest: staged.append(host.numel()) or copy_staged(host, *rest)
    # Past two chunks, the last a short one: the results go through the pinned buffers, which take turns.
    n = 2 * CHUNK_BYTES // 4 + 12345
    x = torch.rand(n, device="cuda")
    expected = _OtherOnTheHost()(x)
    references.submit("T0_original trial 0", [x], expected)  # no device route: both routes run in the thread
    del expected
    busy = torch.rand(4096, 4096, device="cuda")
    for _ in range(50):  # the trials' stream keeps working, and freeing, while the thread copies its results
        busy = (busy @ busy).clamp_(-1, 1)
    results = references.collect()
    torch.cuda.synchronize()
    # Each comparison read the whole copy: every element is 1 off, none read before it arrived.
    assert [(r.label, r.agreement.ok, r.agreement.mismatches) for r in results] == [
        ("in float64", False, n), ("on the CPU", False, n)]
    assert all(r.agreement.max_abs_error == pytest.approx(1.0, abs=1e-6) for r in results)
    assert "[thread] official Model on the CPU: to the device" in references.clock.seconds()
    assert references._copy_stream is not None and references._copy_stream != torch.cuda.default_stream()
    assert staged == [n, n] and references._staging._buffers == []  # both staged; the buffers given back at collect


@pytest.mark.gpu
def test_on_a_gpu_a_threads_result_the_full_device_cannot_take_is_compared_on_the_host_instead():
    from harness.gate.checks.suite_safety import SecondReferences

    references = SecondReferences(_OtherOnTheHost(), "cuda", CLOSE)

    def device_full(host, device):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 MiB.")

    references._to_device_beside = device_full  # other jobs hold the device's memory, as beside seven others
    x = torch.rand(1 << 20, device="cuda")
    references.submit("long_k trial 2", [x], _OtherOnTheHost()(x))
    results = references.collect()
    assert [(r.label, r.agreement.ok, r.agreement.mismatches) for r in results] == [
        ("in float64", False, 1 << 20), ("on the CPU", False, 1 << 20)]  # compared all the same, not raised
    assert references.compared_on_host == 2
    assert "[thread] official Model on the CPU: official output to the host" in references.clock.seconds()


def test_host_buffers_are_reused_for_the_same_shape_and_let_go_past_their_limit(monkeypatch):
    from harness.gate.checks import suite_safety
    from harness.gate.checks.suite_safety import HostBuffers

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
    from harness.gate.checks import suite_safety
    from harness.gate.checks.suite_safety import HostBuffers, cpu_reference, float64_reference, widened_model

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


@pytest.mark.gpu
def test_on_a_gpu_a_trial_over_a_gigabyte_runs_its_float64_route_ahead_within_the_routes_bytes():
    from harness.gate.checks.suite_safety import DEVICE_FLOAT64_MAX_BYTES, SecondReferences, float64_route_bytes

    references = SecondReferences(_Doubled(), "cuda", CLOSE)
    x = torch.rand((1 << 26) + (1 << 20), device="cuda")  # 260 MiB: a route of 16 bytes a value, past a gigabyte
    need = float64_route_bytes(references._official, [x], x)
    assert need > DEVICE_FLOAT64_MAX_BYTES
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    ahead = references.ahead_of_official([x])
    assert torch.cuda.max_memory_allocated() - before <= need + (1 << 20)
    assert ahead.output.device.type == "cuda" and ahead.output.dtype == torch.float32
    references.submit("T0_original trial 0", [x], x * 2, device_inputs=[x], float64=ahead)
    assert [(r.label, r.agreement.ok) for r in references.collect()] == [("in float64", True), ("on the CPU", True)]
    assert references.on_device == 1 and not references.off_device
