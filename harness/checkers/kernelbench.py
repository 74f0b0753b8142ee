"""KernelBench's own correctness check, as `eval_kernel_against_ref` makes it (src/kernelbench/eval.py, HEAD 423217d).

The official Model built under seed 42 (`Problem.build_model`); five trial seeds drawn by
`torch.randint` after `torch.manual_seed(42)`; per trial, the seed set, `get_inputs()` moved to the
device, the seed set again, the reference output, then the kernel on the same inputs; a shape
mismatch or any exception fails the check at once, a value mismatch (`torch.allclose(reference,
output)` at atol = rtol = the tolerance) fails its trial and the next trial runs; the check passes
when every trial passes. Tolerance 1e-4 for float32 (`kernelbench`), or 1e-2, the value before
KernelBench's precision-dependent tolerances (`kernelbench_v0`).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.checkers.under_test import kept, on_device
from harness.problems import KERNELBENCH_SEED

TRIALS = 5  # num_correct_trials in KernelBench's scripts
FP32_TOLERANCE = 1e-4
V0_TOLERANCE = 1e-2


@dataclass(frozen=True)
class Judgement:
    accepted: bool
    why: str = ""  # the first failure, where it rejected


def trial_seeds(seed: int = KERNELBENCH_SEED, trials: int = TRIALS) -> list[int]:
    """The per-trial seeds eval.py draws: torch.manual_seed(seed), then one randint below 2^32 - 1 per trial."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(trials)]


def set_seed(torch, seed: int, on_gpu: bool) -> None:
    """eval.py's set_seed: torch.manual_seed, and torch.cuda.manual_seed where there is a GPU."""
    torch.manual_seed(seed)
    if on_gpu:
        torch.cuda.manual_seed(seed)


def judge(problem, kernel, device, tolerance: float = FP32_TOLERANCE, trials: int = TRIALS) -> Judgement:
    """KernelBench's check of `kernel` against `problem` on `device`, with the first failure where it rejects."""
    import torch

    device = torch.device(device)
    model = problem.build_model(device)
    failures = []
    with torch.no_grad():
        for trial, seed in enumerate(trial_seeds(KERNELBENCH_SEED, trials)):
            set_seed(torch, seed, device.type == "cuda")
            inputs = [on_device(device, x) for x in drawn(problem, seed)]
            set_seed(torch, seed, device.type == "cuda")
            reference = model(*inputs)
            try:
                output = kernel(*inputs)
            except Exception as error:
                return Judgement(False, f"trial {trial}: the kernel raised {type(error).__name__}: {error}")
            if not isinstance(output, torch.Tensor) or output.shape != reference.shape:
                got = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
                return Judgement(False, f"trial {trial}: output shape {got}, expected {tuple(reference.shape)}")
            if not torch.allclose(reference, output, atol=tolerance, rtol=tolerance):
                failures.append(f"trial {trial}: output mismatch beyond atol = rtol = {tolerance:g}")
    return Judgement(not failures, failures[0] if failures else "")


def drawn(problem, seed: int) -> list:
    """problem.get_inputs() for a trial whose seed is set: drawn once per worker where the problem keeps them
    (harness.checkers.under_test.BuiltProblem.drawn), else drawn now."""
    return kept(problem, seed, problem.get_inputs)


def kernelbench(problem, kernel, device) -> bool:
    return judge(problem, kernel, device, FP32_TOLERANCE).accepted


def kernelbench_v0(problem, kernel, device) -> bool:
    return judge(problem, kernel, device, V0_TOLERANCE).accepted
