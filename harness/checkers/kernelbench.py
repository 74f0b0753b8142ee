"""KernelBench's own correctness check, as `eval_kernel_against_ref` makes it (src/kernelbench/eval.py, HEAD 423217d).

The official Model built under seed 42 (`Problem.build_model`); five trial seeds drawn by
`torch.randint` after `torch.manual_seed(42)`; per trial, the seed set, `get_inputs()` moved to the
device, the seed set again, the reference output, then the kernel on the same inputs; a shape
mismatch or any exception fails the check at once, a value mismatch (`torch.allclose(reference,
output)` at atol = rtol = the tolerance) fails its trial and the next trial runs; the check passes
when every trial passes. Tolerance 1e-4 for float32 (`kernelbench`), or 1e-2, the value before
KernelBench's precision-dependent tolerances (`kernelbench_v0`).

In a campaign the two judge the same kernel on the same trials: one run of the trials serves both (the kernel
`shared` between the checkers judging it, harness.checkers.under_test.KernelCall), each tolerance's verdict taken
from the same outputs. At real sizes a run is seconds of reference and kernel per trial.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.checkers.under_test import kept, on_device
from harness.problems import KERNELBENCH_SEED

TRIALS = 5  # num_correct_trials in KernelBench's scripts
FP32_TOLERANCE = 1e-4
V0_TOLERANCE = 1e-2
TOLERANCES = (FP32_TOLERANCE, V0_TOLERANCE)
SHARED_RUN_KEY = "kernelbench"  # where in KernelCall.shared the run of the trials is left (shared_judgement)
SHARED_RUN_READERS = frozenset({"kernelbench", "kernelbench-v0"})  # the --checker names that read it


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
    return judge_at(problem, kernel, device, (tolerance,), trials)[tolerance]


def judge_at(problem, kernel, device, tolerances: tuple[float, ...], trials: int = TRIALS) -> dict[float, Judgement]:
    """KernelBench's check at each of `tolerances` from one run of the trials: what a run at each alone would say
    of the same outputs (a fault or a wrong shape rejects at every tolerance, at once)."""
    import torch

    device = torch.device(device)
    model = problem.build_model(device)
    failures: dict[float, list[str]] = {tolerance: [] for tolerance in tolerances}
    with torch.no_grad():
        for trial, seed in enumerate(trial_seeds(KERNELBENCH_SEED, trials)):
            set_seed(torch, seed, device.type == "cuda")
            inputs = [on_device(device, x) for x in drawn(problem, seed)]
            set_seed(torch, seed, device.type == "cuda")
            reference = model(*inputs)
            try:
                output = kernel(*inputs)
            except Exception as error:
                return dict.fromkeys(tolerances, Judgement(
                    False, f"trial {trial}: the kernel raised {type(error).__name__}: {error}"))
            if not isinstance(output, torch.Tensor) or output.shape != reference.shape:
                got = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
                return dict.fromkeys(tolerances, Judgement(
                    False, f"trial {trial}: output shape {got}, expected {tuple(reference.shape)}"))
            for tolerance in tolerances:
                if not torch.allclose(reference, output, atol=tolerance, rtol=tolerance):
                    # Its figures for the first failure alone, the one a rejection says (they take buffers the size
                    # of the output).
                    how = "" if failures[tolerance] else f" ({mismatch(reference, output, tolerance)})"
                    failures[tolerance].append(
                        f"trial {trial}: output mismatch beyond atol = rtol = {tolerance:g}{how}")
    return {tolerance: Judgement(not said, said[0] if said else "") for tolerance, said in failures.items()}


def mismatch(reference, output, tolerance: float) -> str:
    """How far `output` is from `reference` where `torch.allclose(reference, output)` at atol = rtol = `tolerance` says
    they differ: the largest absolute difference, and the largest as a multiple of what allclose allows there
    (atol + rtol * |output|: allclose scales by its second argument). Never raises: where the figures cannot be had
    (the device's memory short of the buffers they take), it says so, and the verdict stands."""
    import torch

    try:
        output, reference = (x if x.is_floating_point() else x.float() for x in (output, reference))
        nan = output.isnan() | reference.isnan()
        if nan.any():
            return f"{int(nan.sum())} element(s) NaN in the output or the reference"
        # Equal infinities are no difference (inf - inf would read as NaN).
        difference = torch.where(output == reference, 0.0, (output - reference).abs())
        worst = float((difference / (tolerance + tolerance * output.abs())).max())
        return f"max abs error {float(difference.max()):.3g}, at worst {worst:.3g}x the difference allowed"
    except RuntimeError as error:  # torch.OutOfMemoryError among them
        return f"how far not measured: {type(error).__name__}"


def shared_judgement(problem, kernel, device, tolerance: float) -> Judgement:
    """judge() at `tolerance` (one of TOLERANCES), from the run of the trials another built-in KernelBench checker
    made of the same kernel where it made one (`kernel.shared`), else from a run made now for both tolerances and
    left there. The errors the kernel raised in that run are the kernel's under each checker (`kernel.raised`)."""
    shared = getattr(kernel, "shared", None)
    if shared is None:
        return judge(problem, kernel, device, tolerance)
    if SHARED_RUN_KEY in shared:
        judgements, raised = shared[SHARED_RUN_KEY]
        kernel.raised.extend(raised)
    else:
        before = len(kernel.raised)
        judgements = judge_at(problem, kernel, device, TOLERANCES)
        shared[SHARED_RUN_KEY] = (judgements, kernel.raised[before:])
    kernel.rejection = judgements[tolerance].why  # the verdict's why, where it rejects (judge_with)
    return judgements[tolerance]


def drawn(problem, seed: int) -> list:
    """problem.get_inputs() for a trial whose seed is set: drawn once per worker where the problem keeps them
    (harness.checkers.under_test.BuiltProblem.drawn), else drawn now."""
    return kept(problem, seed, problem.get_inputs)


def kernelbench(problem, kernel, device) -> bool:
    return shared_judgement(problem, kernel, device, FP32_TOLERANCE).accepted


def kernelbench_v0(problem, kernel, device) -> bool:
    return shared_judgement(problem, kernel, device, V0_TOLERANCE).accepted
