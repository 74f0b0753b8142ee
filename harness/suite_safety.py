"""Two checks of a candidate's suites rather than its kernel.

No false kill: a suite must not be able to reject a correct kernel. For every trial, the official
Model is run a second legitimate way, in float64 (floating inputs and parameters widened, the
output rounded back) and, on a GPU, on the CPU, and must agree with the official output within
the tolerance the kernel is held to. Where it does not (catastrophic cancellation in a long signed
sum, say), two correct implementations can disagree, so the suite would reject a correct kernel.

Can fail: a suite whose reference outputs are all (nearly) zero, or all (nearly) the same, lets a
kernel that computes nothing pass (KernelBench's zeros pass its Softmax, FrobeniusNorm and L2Norm
problems). Three kernels that compute nothing, one writing zeros, one copying its first input and
one writing a constant, must each be rejected by some trial of some suite.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch

from harness.compare import Comparison, Tolerance, compare, compare_bitwise


def _is_float(x) -> bool:
    return isinstance(x, torch.Tensor) and x.dtype.is_floating_point


def widened_model(model: torch.nn.Module) -> torch.nn.Module:
    return copy.deepcopy(model).double()


def float64_reference(model64: torch.nn.Module, inputs: list, like: torch.Tensor) -> torch.Tensor | None:
    """The official output computed in float64 and rounded to `like`'s dtype; None when nothing is floating-point."""
    has_float_parameters = any(p.dtype.is_floating_point for p in model64.parameters())
    if not (any(_is_float(x) for x in inputs) or has_float_parameters or like.dtype.is_floating_point):
        return None
    widened = [x.to(torch.float64) if _is_float(x) else (x.clone() if isinstance(x, torch.Tensor) else x)
               for x in inputs]
    with torch.no_grad():
        return model64(*widened).to(like.dtype)


def cpu_reference(model_cpu: torch.nn.Module, inputs: list) -> torch.Tensor:
    with torch.no_grad():
        return model_cpu(*[x.cpu().clone() if isinstance(x, torch.Tensor) else x for x in inputs])


def agreement(alternative: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> Comparison:
    """Do two legitimate references agree as closely as a kernel must agree with one of them?

    Under a bitwise comparison NaN payloads are exempt: a float64 round trip may quiet a NaN,
    which says nothing about whether the suite can reject a correct kernel.
    """
    alternative = alternative.to(expected.device)
    bitwise = tolerance.exact or not expected.dtype.is_floating_point
    if bitwise and expected.dtype.is_floating_point and alternative.shape == expected.shape:
        nan = torch.isnan(expected) & torch.isnan(alternative)
        alternative = torch.where(nan, expected, alternative)
    return compare(alternative, expected, tolerance) if not bitwise else compare_bitwise(alternative, expected)


# ---------------------------------------------------------------- kernels that compute nothing


def _copy_of_first_input(inputs: list, like: torch.Tensor) -> torch.Tensor:
    first = next((x for x in inputs if isinstance(x, torch.Tensor)), None)
    flat = torch.zeros(like.numel(), dtype=like.dtype, device=like.device)
    if first is not None:
        values = first.reshape(-1)[: like.numel()].to(device=like.device, dtype=like.dtype)
        flat[: values.numel()] = values
    return flat.reshape(like.shape)


def _typical_value(output: torch.Tensor):
    """The median of a reference output (NaNs ignored): the constant a lazy kernel would write."""
    values = output.detach().reshape(-1)
    if values.dtype == torch.bool:
        return bool(values.float().mean() >= 0.5)
    if values.dtype.is_floating_point:
        finite = values[torch.isfinite(values)].to(torch.float64)
        return float(finite.median()) if finite.numel() else 0.0
    return int(values.to(torch.int64).median())


_WHAT_IT_MATCHES = ("zero", "its input", "the same value")


@dataclass
class TrivialKernels:
    """Runs three do-nothing kernels against every suite trial; each must be rejected somewhere."""

    tolerance: Tolerance
    constant: object = None
    caught_by: dict[str, str] = field(default_factory=dict)  # kernel -> the trial that first rejected it
    suites_catching: dict[str, set] = field(default_factory=dict)  # suite -> kernels it rejects

    def kernels(self) -> list[str]:
        return ["writes zeros", "copies input 0", f"writes the constant {self.constant!r:.12}"]

    def observe(self, suite: str, t: int, inputs: list, expected: torch.Tensor) -> None:
        if not isinstance(expected, torch.Tensor):
            return
        if self.constant is None and expected.numel():
            self.constant = _typical_value(expected)
        catching = self.suites_catching.setdefault(suite, set())
        writers = [lambda: torch.zeros_like(expected), lambda: _copy_of_first_input(inputs, expected)]
        if self.constant is not None:  # the third kernel writes a constant seen in an output
            writers.append(lambda: self._constant_like(expected))
        for kernel, write in zip(self.kernels(), writers):
            # Enough is known once the kernel is caught somewhere and this suite is known not to be idle.
            if kernel in catching or (kernel in self.caught_by and catching):
                continue
            output = write()  # one output at a time: a KernelBench-sized output is gigabytes
            if not compare(output, expected, self.tolerance).ok:
                catching.add(kernel)
                self.caught_by.setdefault(kernel, f"{suite} trial {t}")
            del output

    def _constant_like(self, expected: torch.Tensor) -> torch.Tensor:
        # Through a tensor, not full_like: a constant found in a uint8 trial wraps into an int8 one.
        constant = torch.tensor(self.constant).to(device=expected.device, dtype=expected.dtype)
        return constant.expand(expected.shape).contiguous()

    def problems(self) -> list[str]:
        return [f"a kernel that {kernel} passes every trial of every suite ({self.tolerance.describe()}), so the "
                f"suites cannot tell it from a correct kernel; add a suite whose reference outputs are not all "
                f"(nearly) {_WHAT_IT_MATCHES[i]}"
                for i, kernel in enumerate(self.kernels()) if kernel not in self.caught_by]

    def summary(self) -> str:
        caught = "; ".join(f"a kernel that {kernel} is rejected by {where}" for kernel, where in self.caught_by.items())
        idle = [suite for suite, kernels in self.suites_catching.items() if not kernels]
        return caught + (f" (suites that reject none of them: {', '.join(idle)})" if idle else "")
