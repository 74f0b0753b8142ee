"""Two checks of a candidate's suites rather than its kernel.

No false kill: a suite must not be able to reject a correct kernel. For every trial, the official
Model is run a second legitimate way, in float64 (floating inputs and parameters widened, the
output rounded back) and, on a GPU, in float32 on the CPU, and must agree with the official output
within the tolerance the kernel is held to. Where it does not (catastrophic cancellation in a long
signed sum, say), two correct implementations can disagree, so the suite would reject a correct
kernel. On a GPU the float64 route runs on the device, ahead of the official output, wherever it
fits within FLOAT64_DEVICE_SHARE of what KernelBench's own check holds on the device for such a
trial (`float64_fits_device`): a KernelBench convolution's takes 2 to 34 s per gate on the host
and well under a second on the device. What does not fit, and the float32 route on the CPU, run in
a thread beside the device work (`SecondReferences`).

Can fail: a suite whose reference outputs are all (nearly) zero, or all (nearly) the same, lets a
kernel that computes nothing pass (KernelBench's zeros pass its Softmax, FrobeniusNorm and L2Norm
problems). Three kernels that compute nothing, one writing zeros, one copying its first input and
one writing a constant, must each be rejected by some trial of some suite.
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from harness.gate.checks.compare import CloseFigures, Comparison, Tolerance, compare, compare_bitwise
from harness.gate.checks.suite_rules import portable_signature
from harness.gate.foresight import OutputForesight
from harness.gate.host_release import HostRelease
from harness.gate.phases import PhaseClock
from harness.gate.staged_copy import PinnedStaging
from harness.gate.trial_inputs import host_memory_available, inputs_bytes


def _is_float(x) -> bool:
    return isinstance(x, torch.Tensor) and x.dtype.is_floating_point


def widened_model(model: torch.nn.Module) -> torch.nn.Module:
    return copy.deepcopy(model).double()


REUSE_FROM_BYTES = 64 * 2**20
HOST_BUFFER_SHARE = 0.15  # of the host's available memory, at most, held in HostBuffers between trials


class HostBuffers:
    """Host tensors the CPU routes copy a trial into, kept from one trial to the next of the same shapes.

    A KernelBench-sized trial's widened inputs, its rounded float64 output and the CPU route's input
    copies are gigabytes of fresh memory per trial, and fresh pages are faulted in one at a time: on
    the 2-core machine widening 2^27 floats took 0.21 s into fresh memory and 0.045 s into a buffer
    already touched. Tensors under REUSE_FROM_BYTES are made fresh (cheap, and their shapes vary), and
    so is one that would take the buffers held past `limit_bytes` (the helpers' trials drawn ahead
    need the host's memory too). A buffer is overwritten by the next trial: what `copy` returns is
    valid until then.
    """

    def __init__(self, limit_bytes: int):
        self.limit_bytes = limit_bytes
        self._held: dict = {}

    def held_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self._held.values())

    def copy(self, slot, x: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        dtype = dtype or x.dtype
        size = x.numel() * dtype.itemsize
        if x.device.type != "cpu" or size < REUSE_FROM_BYTES:
            return x.to(dtype=dtype, copy=True)
        held = self._held.get(slot)
        if held is None or held.shape != x.shape or held.dtype != dtype:
            self._held.pop(slot, None)  # let the old one go before the new one is made
            if self.held_bytes() + size > self.limit_bytes:
                return x.to(dtype=dtype, copy=True)
            held = self._held[slot] = torch.empty(x.shape, dtype=dtype)
        return held.copy_(x)

    def clear(self) -> None:
        self._held.clear()


FRESH = HostBuffers(limit_bytes=0)  # holds nothing: every copy is a fresh tensor (the device route's)


def float64_reference(model64: torch.nn.Module, inputs: list, like: torch.Tensor,
                      buffers: HostBuffers = FRESH) -> torch.Tensor | None:
    """The official output computed in float64 and rounded to `like`'s dtype; None when nothing is floating-point.

    The widened inputs and the rounded output are copies made by `buffers` (the CPU thread's keeps them).
    """
    has_float_parameters = any(p.dtype.is_floating_point for p in model64.parameters())
    if not (any(_is_float(x) for x in inputs) or has_float_parameters or like.dtype.is_floating_point):
        return None
    widened = [buffers.copy(("widened", i), x, torch.float64 if _is_float(x) else None)
               if isinstance(x, torch.Tensor) else x for i, x in enumerate(inputs)]
    with torch.no_grad():
        wide = model64(*widened)
    del widened  # before the rounding: on a GPU the widened inputs are the route's largest part
    return wide if wide.dtype == like.dtype else buffers.copy("rounded", wide, like.dtype)


def float64_route_bytes(model: torch.nn.Module, inputs: list, like: torch.Tensor) -> int:
    """Device bytes the float64 route holds at most: widened inputs and parameters, and the float64 output, then
    the float64 output and its rounding (the inputs are let go first).

    The Model's own temporaries are not counted: for the level-1 problems they are at most an
    output or two, inside DEVICE_FLOAT64_MAX_BYTES's margin.
    """
    widened = sum(x.numel() * (8 if _is_float(x) else x.element_size()) for x in inputs if isinstance(x, torch.Tensor))
    parameters = sum(p.numel() * 8 for p in list(model.parameters()) + list(model.buffers()) if p.dtype.is_floating_point)
    return parameters + max(widened + like.numel() * 8, like.numel() * (8 + like.element_size()))


def cpu_reference(model_cpu: torch.nn.Module, inputs: list, buffers: HostBuffers = FRESH) -> torch.Tensor:
    """The official Model on the CPU, on copies of the inputs (it may change them in place)."""
    copies = [buffers.copy(("copied", i), x.cpu()) if isinstance(x, torch.Tensor) else x
              for i, x in enumerate(inputs)]
    with torch.no_grad():
        return model_cpu(*copies)


def agreement(alternative: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance,
              figures: CloseFigures | None = None) -> Comparison:
    """Do two legitimate references agree as closely as a kernel must agree with one of them?

    Under a bitwise comparison NaN payloads are exempt: a float64 round trip may quiet a NaN,
    which says nothing about whether the suite can reject a correct kernel. On a device whose
    backend compares in one pass (`figures`, Backend.close_figures), that pass decides at once;
    elsewhere a quick pass in the tensors' own dtype first.
    """
    alternative = alternative.to(expected.device)
    bitwise = tolerance.exact or not expected.dtype.is_floating_point
    if bitwise and expected.dtype.is_floating_point and alternative.shape == expected.shape:
        nan = torch.isnan(expected) & torch.isnan(alternative)
        alternative = torch.where(nan, expected, alternative)
    if bitwise:
        return compare_bitwise(alternative, expected)
    if (figures is None or expected.device.type == "cpu") and _within_quickly(alternative, expected, tolerance):
        return Comparison(ok=True, total=expected.numel())
    # Element by element, in float64, to say where and how much.
    return compare(alternative, expected, tolerance, figures)


# 4M elements: a chunk's temporaries (16 MiB each) are reused from the allocator's free memory,
# where 64M-element ones were fresh mappings, page-faulted in at every chunk (4x slower on the CPU).
QUICK_CHUNK = 1 << 22


def _within_quickly(got: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> bool:
    """True when every element is within the tolerance, judged in the tensors' own dtype, in large chunks.

    The second references of a KernelBench-sized trial are compared on the CPU, where compare()'s
    float64 chunks take seconds per gigabyte. Rounding in float32 moves |got - expected| by about
    1e-7 of the values, far inside a 1e-2 tolerance, and only a pass is decided here: anything else
    goes to compare(), which finds and describes the mismatches exactly.
    """
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return False
    flat_got, flat_expected = got.reshape(-1), expected.reshape(-1)
    for start in range(0, flat_expected.numel(), QUICK_CHUNK):
        g, e = flat_got[start:start + QUICK_CHUNK], flat_expected[start:start + QUICK_CHUNK]
        if not bool(torch.isfinite(e).all()):
            return False  # NaN and infinities: compare() knows the rules
        if not bool(((g - e).abs() <= tolerance.atol + tolerance.rtol * e.abs()).all()):
            return False
    return True


# ---------------------------------------------------------------- second references, beside the device work


@dataclass
class SecondReference:
    """One second computation of one trial's official output: its comparison, or why it could not run."""

    where: str
    label: str
    agreement: Comparison | None = None
    error: str = ""


PINNED_FROM_BYTES = 64 * 2**20


def host_copy(x: torch.Tensor) -> torch.Tensor:
    """`x` on the host: a device tensor of PINNED_FROM_BYTES or more goes through page-locked memory.

    A pageable copy of a KernelBench-sized output runs at about 1 GB/s (6 s for 6.4 GB, most of it
    faulting in fresh pages); a page-locked one at the link's speed, and torch's host allocator
    keeps the block for the next trial.
    """
    x = x.detach()
    if x.device.type != "cuda" or x.numel() * x.element_size() < PINNED_FROM_BYTES or not x.is_contiguous():
        return x.cpu()
    host = torch.empty(x.shape, dtype=x.dtype, pin_memory=True)
    host.copy_(x)
    return host


# A float64 route of at most this many bytes runs on the GPU: next to the gigabyte a CUDA context,
# cuBLAS and the allocator's segments hold anyway it is small, and the device does in milliseconds
# what takes the CPU thread tenths of a second per trial (and the gate waits on that thread).
DEVICE_FLOAT64_MAX_BYTES = 1 << 30
# A larger one runs there when the trial's inputs and the route together stay within this share of
# what KernelBench's check holds for the trial (issue 42 bounds the gate's peak at 1.5x that check's).
# Below the 1.5x: the Model's own float64 temporaries are not counted, and at 1.5 an argmin over an 8 GiB
# input peaked at 2.0x KernelBench's check (32 GiB against 16; min over a dimension at 1.50x).
FLOAT64_DEVICE_SHARE = 1.25
# A trial of at least this many bytes (inputs and output) gets the float32 route on the CPU only if it is its
# suite's first such trial: at KernelBench's sizes that route and its comparison took 4 to 21 s of a convolution's
# gate per trial (a 10 s check in KernelBench's way), and a suite's further trials are further draws of the same
# kind, each still checked in float64 (on the device, or in the thread where it does not fit there: a hinge loss's
# thread took 26.3 s of its 41.4 s gate for both routes of five trials, the gate waiting 22.1 s for it, against a
# 36.3 s check; MEASUREMENTS.md, thirty-first session).
CPU_ROUTE_SAMPLE_FROM_BYTES = 256 * 2**20
# From this size, the same holds among a suite's trials of the same shapes and dtypes (T0's five draws of
# get_inputs()'s): only the first takes the CPU route. A compute-bound problem's trials are large in work, not in
# bytes: on the H200's host the CPU route of five 4096-square matmuls took 3.9 s of a 6.5 s gate, which waited 3.4 s
# of it at its end, against a 2.1 s check in KernelBench's way (MEASUREMENTS.md, thirty-first session).
CPU_ROUTE_SAMPLE_SAME_SHAPES_FROM_BYTES = 16 * 2**20


def cpu_route_sample(suite: str, inputs: list, host_bytes: int):
    """What a trial is a draw of, for the float32 route on the CPU: its suite from
    CPU_ROUTE_SAMPLE_FROM_BYTES, its suite and input signature from CPU_ROUTE_SAMPLE_SAME_SHAPES_FROM_BYTES;
    None below (every such trial takes the route). The CPU route takes the first trial of each."""
    if host_bytes >= CPU_ROUTE_SAMPLE_FROM_BYTES:
        return suite
    if host_bytes >= CPU_ROUTE_SAMPLE_SAME_SHAPES_FROM_BYTES:
        return suite, portable_signature(inputs) or len(inputs)
    return None


def kernelbench_trial_bytes(input_bytes: int, output_bytes: int) -> int:
    """Device bytes KernelBench's check (eval.py's trial loop) holds at least for a trial of these sizes.

    It rebinds `inputs`, `output` and `output_new` only once the new ones exist: while a trial's
    inputs reach the device the last trial's inputs and two outputs are still held, and while its
    reference output is computed, the last trial's kernel output beside the last reference output.
    """
    return max(2 * input_bytes + 2 * output_bytes, input_bytes + 3 * output_bytes)


def float64_fits_device(need: int, input_bytes: int, output_bytes: int) -> bool:
    """May a float64 route of `need` bytes run on the device beside a trial's inputs, before its official output?

    Run then, the trial peaks at its inputs plus the route; afterwards it holds the rounded result
    beside the official output and the candidate's ref output (inputs and three outputs), which is
    within kernelbench_trial_bytes already.
    """
    return (need <= DEVICE_FLOAT64_MAX_BYTES
            or input_bytes + need <= FLOAT64_DEVICE_SHARE * kernelbench_trial_bytes(input_bytes, output_bytes))


@dataclass
class DeviceFloat64:
    """The float64 route's result, computed on the device ahead of the official output: rounded to the official
    output's dtype, or None where nothing is floating-point (the float64 route is then the official one)."""

    output: torch.Tensor | None
    release: bool = False  # the route's blocks go back to the driver: so do its result's and its comparison's
# From this size the route's blocks (twice a float32 input's) are returned to the driver before and after it:
# interleaved with the kernel's runs' smaller blocks they fragmented the allocator's cache, and a 4096-square
# matmul's gate reserved 0.87 GiB where it allocated about 0.6 (a KernelBench-style check: 0.53).
RELEASE_CACHE_FROM_BYTES = 64 * 2**20
FLOAT64 = "in float64"
ON_THE_CPU = "on the CPU"  # the float32 route: the official Model on the CPU, beside a GPU's official output


class SecondReferences:
    """The official Model in float64 and (when the device is not the CPU) in float32 on the CPU, per trial.

    On a GPU, `ahead_of_official` runs a trial's float64 route on the device before its official
    output exists, where float64_fits_device allows (the Model run on the meta device says how
    large the output will be), and `submit` compares its result there once the output exists
    (`on_device` counts those trials). A trial whose route did not run ahead, because its output
    could not be foreseen, runs it in `submit` when it needs at most DEVICE_FLOAT64_MAX_BYTES. One
    that runs out of device memory there goes to the thread.

    `submit` hands the rest over and returns at once; the work runs in one background thread, at most
    PENDING trials behind that hold an official output on the device, and behind them any number that hold
    nothing there, within `pending_host_bytes` (may_queue).
    `collect` waits for the rest. A route that raises once (a problem whose Model cannot run in
    float64, say) is not tried again.

    The thread's models run on the CPU; each result is compared with the official output where that
    output is, so on a GPU the official outputs of pending trials whose float64 route did not run on
    the device stay there (at most PENDING of them). Comparing 1.6e9 float32 pairs took 6-7 s on the
    H200's host CPU, against milliseconds on the device and a second to move the result there. A
    trial whose float64 route ran on the device hands the thread a host copy of its official output,
    so the device holds nothing for it while the CPU route runs (a 4096-square matmul's gate peaked
    at 1.0 GiB, against 0.5 for a KernelBench-style check, with two outputs waiting there).
    """

    PENDING = 2
    # Beyond PENDING, trials that hold nothing on the device queue host copies up to the larger of these: a
    # 4096-square matmul's gate waited 0.5 s of its 2.2 s for a free slot while its five T0 trials (192 MiB each)
    # took turns with the CPU route, and a KernelBench convolution's T0 trials hold about 1 GiB each.
    PENDING_HOST_BYTES = 1 << 30
    PENDING_HOST_SHARE = 0.1  # of the host's available memory

    def __init__(self, official: torch.nn.Module, device, tolerance: Tolerance, clock: PhaseClock | None = None,
                 foresight: OutputForesight | None = None, figures: CloseFigures | None = None):
        """`foresight` says the official output's shape ahead (harness.gate.foresight); by default from the meta
        device alone. `figures`: the backend's one-pass comparison (Backend.close_figures), for the agreements."""
        self.tolerance = tolerance
        self.figures = figures
        self.clock = clock or PhaseClock()
        self.routes = [(FLOAT64, widened_model(copy.deepcopy(official).cpu()), True)]
        self.on_gpu = torch.device(device).type != "cpu"
        if self.on_gpu:
            self.routes.append((ON_THE_CPU, copy.deepcopy(official).cpu(), False))
        self._official = official
        self._model64_on_device: torch.nn.Module | None = None
        self.foresight = foresight or OutputForesight(official)
        self.device_float64_error = ""  # why the float64 route cannot run on the device (then it runs on the CPU)
        self.on_device = 0  # trials whose float64 route ran on the device
        self.off_device: Counter = Counter()  # why the others' did not, trials per reason
        self._cpu_route_samples: set = set()  # the suites (and suites' shapes) whose first trial the CPU route took
        self.cpu_route_sampled_out = 0  # large trials left to their float64 route alone
        self.compared_on_host = 0  # thread results compared on the host, the device too full to take them
        self.unavailable: dict[str, str] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="second-references")
        self._copy_stream = None  # the thread's CUDA stream for its results' copies to the device (made at first use)
        self._staging = PinnedStaging()  # and its pinned buffers for a large result (made at first use)
        self._futures: list[tuple[Future, bool, int]] = []  # (the trial's work, on the host only, its host bytes)
        self._release = HostRelease(self.clock)  # a CPU route's large result, once on the device, freed there
        self._done: list[tuple[int, int, SecondReference]] = []  # (trial order, route order, result)
        # The thread's alone: it runs one route of one trial at a time.
        available = host_memory_available() or 0
        self._buffers = HostBuffers(int(HOST_BUFFER_SHARE * available))
        self.pending_host_bytes = max(self.PENDING_HOST_BYTES, int(self.PENDING_HOST_SHARE * available))
        self.submitted = 0  # trials handed over

    def labels(self) -> list[str]:
        return [label for label, _model, _widen in self.routes]

    def ahead_of_official(self, inputs: list) -> DeviceFloat64 | None:
        """The float64 route of a trial on `inputs` (on the device), run now when it fits; None: left to `submit`."""
        if not self._device_route_open():
            return None
        like = self.foresight.output_like(inputs, self.clock)
        if like is None:
            return None
        need = float64_route_bytes(self._official, inputs, like)
        if not float64_fits_device(need, inputs_bytes(inputs), like.numel() * like.element_size()):
            self.off_device[f"beside its inputs it would pass {FLOAT64_DEVICE_SHARE}x what KernelBench's check "
                            f"holds on the device"] += 1
            return None
        return self._device_route(inputs, like, need)

    def _device_route_open(self) -> bool:
        return self.on_gpu and not self.device_float64_error and FLOAT64 not in self.unavailable

    def _device_route(self, inputs: list, like: torch.Tensor, need: int) -> DeviceFloat64 | None:
        """The float64 route on the device; None where it ran out of memory or cannot run there."""
        release = need >= RELEASE_CACHE_FROM_BYTES
        try:
            with self.clock.timing("official Model in float64 on the device"):
                if release:
                    torch.cuda.empty_cache()
                if self._model64_on_device is None:
                    self._model64_on_device = widened_model(self._official)
                return DeviceFloat64(float64_reference(self._model64_on_device, inputs, like), release)
        except torch.OutOfMemoryError:
            self.off_device["out of device memory"] += 1
            return None  # this trial's float64 route goes to the CPU; a smaller one may still fit
        except Exception as error:  # the CPU may still run it; if it cannot either, the thread says so
            self.device_float64_error = f"{type(error).__name__}: {error}"
            return None
        finally:
            if release:
                torch.cuda.empty_cache()

    def submit(self, where: str, inputs: list, expected: torch.Tensor, device_inputs: list | None = None,
               float64: DeviceFloat64 | None = None, suite: str | None = None) -> None:
        """`inputs` as the trial built them (any device; copied to the host here); `expected` where it is.

        `float64`, what `ahead_of_official` returned, is compared with `expected` here. Without it,
        `device_inputs`, the same inputs on the GPU, let a small trial's float64 route run there now.
        `suite` names the trial's suite (cpu_route_sample); by default each trial is its own.
        """
        order = self.submitted
        self.submitted += 1
        host_bytes = inputs_bytes([*inputs, expected])
        if float64 is not None:
            ran = self._record_device_float64(order, where, float64, expected)
        else:
            ran = device_inputs is not None and self._float64_on_device(order, where, device_inputs, expected)
        skip = (FLOAT64,) if ran else ()
        if self._cpu_route_sampled_out(suite or where, inputs, host_bytes):
            skip += (ON_THE_CPU,)
        with self._lock:
            if all(label in skip or label in self.unavailable for label in self.labels()):
                return  # no route is left for the thread
        if ran and host_bytes < CPU_ROUTE_SAMPLE_FROM_BYTES:  # else compared on the device (the host takes s per GiB)
            with self.clock.timing("second references (host copies)"):
                expected = host_copy(expected)  # compared on the host: nothing held on the device for the thread
        on_host = expected.device.type == "cpu"
        held_on_host = host_bytes if on_host else inputs_bytes(inputs)
        while not self._may_queue(on_host, held_on_host):
            oldest = next(f for f, _on_host, _bytes in self._futures if not f.done())
            with self.clock.timing("second references (waiting for a free slot)"):
                oldest.result()  # a trial behind it waits for it anyway
        with self.clock.timing("second references (host copies)"):
            host_inputs = [host_copy(x) if isinstance(x, torch.Tensor) else x for x in inputs]
        future = self._pool.submit(self._run, order, where, host_inputs, expected.detach(), skip)
        self._futures.append((future, on_host, held_on_host))

    def _cpu_route_sampled_out(self, suite: str, inputs: list, host_bytes: int) -> bool:
        """Whether the float32 route on the CPU leaves this trial out: an earlier trial took it for what this one is a
        further draw of (cpu_route_sample). Counted in cpu_route_sampled_out."""
        sample = cpu_route_sample(suite, inputs, host_bytes) if ON_THE_CPU in self.labels() else None
        if sample is None:
            return False
        if sample in self._cpu_route_samples:
            self.cpu_route_sampled_out += 1
            return True
        self._cpu_route_samples.add(sample)
        return False

    def _may_queue(self, on_host: bool, host_bytes: int) -> bool:
        running = [(on, size) for f, on, size in self._futures if not f.done()]
        return may_queue(running, on_host, host_bytes, self.PENDING, self.pending_host_bytes)

    def _float64_on_device(self, order: int, where: str, inputs: list, expected: torch.Tensor) -> bool:
        """The float64 route on the device now, if it is there and small enough; False: leave it to the thread."""
        if not self._device_route_open():
            return False
        need = float64_route_bytes(self._official, inputs, expected)
        if need > DEVICE_FLOAT64_MAX_BYTES:
            unforeseen = self.foresight.last_unforeseen
            if unforeseen:  # otherwise ahead_of_official said why
                self.off_device[f"over {DEVICE_FLOAT64_MAX_BYTES // 2**20} MiB, and {unforeseen}"] += 1
            return False
        result = self._device_route(inputs, expected, need)
        return result is not None and self._record_device_float64(order, where, result, expected)

    def _record_device_float64(self, order: int, where: str, result: DeviceFloat64, expected: torch.Tensor) -> bool:
        """Compare a device float64 result with the official output; False: it does not have the output's shape
        and dtype (the meta device foresaw another), so the thread runs the route instead."""
        other = result.output
        if other is not None and (other.shape != expected.shape or other.dtype != expected.dtype):
            return False
        if other is not None:  # None: nothing floating-point, the float64 route is the official one
            with self.clock.timing("official Model in float64 on the device: agreement"):
                comparison = agreement(other, expected, self.tolerance, self.figures)
            with self._lock:
                self._done.append((order, 0, SecondReference(where, FLOAT64, comparison)))
            result.output = None
            if result.release:
                del other
                torch.cuda.empty_cache()  # the rounded result's and the comparison's blocks, as the route's others
        self.on_device += 1
        return True

    def _run(self, order: int, where: str, inputs: list, expected: torch.Tensor, skip: tuple = ()) -> None:
        for position, (label, model, widen) in enumerate(self.routes):
            with self._lock:
                if label in self.unavailable or label in skip:
                    continue
            try:
                with self.clock.timing(f"[thread] official Model {label}"):
                    other = (float64_reference(model, inputs, expected, self._buffers) if widen
                             else cpu_reference(model, inputs, self._buffers))
            except Exception as error:
                with self._lock:
                    self.unavailable[label] = f"{type(error).__name__}: {error}"
                continue
            if other is None:  # nothing floating-point: the float64 route is the official one
                continue
            moved, beside = self._beside(label, other, expected)
            if moved is not other:  # the host result's pages given back beside the next trial's work, not before it
                box = [other]
                del other
                self._release.let_go(box)
            other = moved
            del moved
            with self.clock.timing(f"[thread] official Model {label}: agreement"):
                result = SecondReference(where, label, agreement(other, beside, self.tolerance, self.figures))
            del other, beside
            with self._lock:
                self._done.append((order, position, result))

    def _beside(self, label: str, other: torch.Tensor, expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The route's result and the official output on one device: the result copied to the official output's,
        else (the device's memory full, other jobs holding it) the official output copied to the host, where the
        comparison then runs. Counted in compared_on_host."""
        if not (expected.is_cuda and other.device.type == "cpu"):
            return other, expected
        try:
            with self.clock.timing(f"[thread] official Model {label}: to the device"):
                return self._to_device_beside(other, expected.device), expected
        except torch.OutOfMemoryError:
            with self.clock.timing(f"[thread] official Model {label}: official output to the host"):
                on_host = host_copy(expected)
            with self._lock:
                self.compared_on_host += 1
            return other, on_host

    def _to_device_beside(self, host: torch.Tensor, device: torch.device) -> torch.Tensor:
        """`host` copied to `device` on the thread's own stream, which the trials' stream does not wait for, a
        result past one chunk through pinned buffers (harness.gate.staged_copy).

        The copy of a CPU route's 4 GiB result from pageable memory held the trials back 0.45 s of kb_matmul_small_k's
        2.0 s gate (H100), on the trials' stream and on a stream of its own alike. The copy's memory is allocated
        before the switch, from the trials' stream's pool: a stream's own pool would keep a second output's worth
        cached for that stream alone. That block may have been freed by a trial whose kernels are still queued, so
        the copy first waits for what the trials' stream holds now (not for what it is given later), and it is
        complete before the agreement reads it on the trials' stream."""
        copied = torch.empty(host.shape, dtype=host.dtype, device=device)
        if self._copy_stream is None:
            self._copy_stream = torch.cuda.Stream(device)
        self._copy_stream.wait_stream(torch.cuda.default_stream(device))  # the trials run there
        self._staging.copy(host, copied, self._copy_stream)
        self._copy_stream.synchronize()
        return copied

    def collect(self) -> list[SecondReference]:
        """Every comparison made, in trial order, after waiting for those still running."""
        for future, _on_host, _bytes in self._futures:
            future.result()
        self._pool.shutdown(wait=True)
        self._release.close()
        self._buffers.clear()
        self._staging.release()
        return [result for _order, _position, result in sorted(self._done, key=lambda done: done[:2])]


def may_queue(running: list[tuple[bool, int]], on_host: bool, host_bytes: int, pending: int,
              pending_host_bytes: int) -> bool:
    """May a trial join the second references' queue, given the unfinished ones (each: whether it holds nothing on
    the device, its bytes on the host)? One holding its official output on the device while it waits: while fewer than
    `pending` trials are unfinished. One holding nothing there: also past `pending`, behind any, while the host bytes
    of the unfinished and its own stay within `pending_host_bytes`. (A small trial waited behind a CPU route's 4 GiB
    result for 0.30 s of kb_matmul_small_k's 1.7 s gate on the H200, its host copies a few kilobytes.)"""
    if len(running) < pending:
        return True
    return on_host and sum(size for _on, size in running) + host_bytes <= pending_host_bytes


# ---------------------------------------------------------------- kernels that compute nothing


TYPICAL_SAMPLE = 1 << 20  # values of an output the constant is the median of


def _typical_value(output: torch.Tensor):
    """The median of a reference output (NaNs ignored): the constant a lazy kernel would write.

    Taken over at most TYPICAL_SAMPLE evenly spaced values: a median sorts, and sorting a
    KernelBench-sized output (billions of values) on the device would take more memory than the trial.
    """
    values = output.detach().reshape(-1)
    if values.numel() > TYPICAL_SAMPLE:
        values = values[:: -(-values.numel() // TYPICAL_SAMPLE)]
    if values.dtype == torch.bool:
        return bool(values.float().mean() >= 0.5)
    if values.dtype.is_floating_point:
        finite = values[torch.isfinite(values)].to(torch.float64)
        return float(finite.median()) if finite.numel() else 0.0
    return int(values.to(torch.int64).median())


_WHAT_IT_MATCHES = ("zero", "its input", "the same value")
WRITER_CHUNK = 1 << 22  # elements of a do-nothing kernel's output made at once


def _first_input_chunk(inputs: list, like: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Elements start..stop of input 0 flattened, cast to `like`'s dtype, zero past its end."""
    first = next((x for x in inputs if isinstance(x, torch.Tensor)), None)
    chunk = torch.zeros(stop - start, dtype=like.dtype, device=like.device)
    if first is not None:
        values = first.reshape(-1)[start:stop].to(device=like.device, dtype=like.dtype)
        chunk[: values.numel()] = values
    return chunk


def passes_everywhere(write_chunk, expected: torch.Tensor, tolerance: Tolerance) -> bool:
    """Does the output `write_chunk(start, stop)` describes match `expected` (chunk by chunk, never whole)?"""
    from harness.gate.checks.compare import (
        _scalar_as_expected,  # the scalar rule of compare(), for a (1,) vs 0-dim output
    )

    flat = expected.detach().reshape(-1)
    if flat.numel() <= WRITER_CHUNK:
        return compare(_scalar_as_expected(write_chunk(0, flat.numel()).reshape(expected.shape), expected),
                       expected, tolerance).ok
    for start in range(0, flat.numel(), WRITER_CHUNK):
        stop = min(start + WRITER_CHUNK, flat.numel())
        if not compare(write_chunk(start, stop), flat[start:stop], tolerance).ok:
            return False
    return True


@dataclass
class TrivialKernels:
    """Runs three do-nothing kernels against every suite trial; each must be rejected somewhere."""

    tolerance: Tolerance
    constant: object = None
    caught_by: dict[str, str] = field(default_factory=dict)  # kernel -> the trial that first rejected it
    suites_catching: dict[str, set] = field(default_factory=dict)  # suite -> kernels it rejects
    observed: int = 0  # trials seen: with none, nothing can be said about the suites

    def kernels(self) -> list[str]:
        return ["writes zeros", "copies input 0", f"writes the constant {self.constant!r:.12}"]

    def observe(self, suite: str, t: int, inputs: list, expected: torch.Tensor) -> None:
        if not isinstance(expected, torch.Tensor):
            return
        self.observed += 1
        if self.constant is None and expected.numel():
            self.constant = _typical_value(expected)
        catching = self.suites_catching.setdefault(suite, set())
        writers = [lambda a, b: torch.zeros(b - a, dtype=expected.dtype, device=expected.device),
                   lambda a, b: _first_input_chunk(inputs, expected, a, b)]
        if self.constant is not None:  # the third kernel writes a constant seen in an output
            # Through a tensor, not full: a constant found in a uint8 trial wraps into an int8 one.
            value = torch.tensor(self.constant).to(device=expected.device, dtype=expected.dtype)
            writers.append(lambda a, b: value.expand(b - a).contiguous())
        for kernel, write in zip(self.kernels(), writers):
            # Enough is known once the kernel is caught somewhere and this suite is known not to be idle.
            if kernel in catching or (kernel in self.caught_by and catching):
                continue
            if not passes_everywhere(write, expected, self.tolerance):
                catching.add(kernel)
                self.caught_by.setdefault(kernel, f"{suite} trial {t}")

    def problems(self) -> list[str]:
        return [f"a kernel that {kernel} passes every trial of every suite ({self.tolerance.describe()}), so the "
                f"suites cannot tell it from a correct kernel; add a suite whose reference outputs are not all "
                f"(nearly) {_WHAT_IT_MATCHES[i]}"
                for i, kernel in enumerate(self.kernels()) if kernel not in self.caught_by]

    def summary(self) -> str:
        caught = "; ".join(f"a kernel that {kernel} is rejected by {where}" for kernel, where in self.caught_by.items())
        idle = [suite for suite, kernels in self.suites_catching.items() if not kernels]
        return caught + (f" (suites that reject none of them: {', '.join(idle)})" if idle else "")
