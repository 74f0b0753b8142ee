"""The `t0` checker: a substrate's own T0_original suite alone, at the gate's tolerance for the substrate.

What a campaign learns from it is how much the targeted suites add to KernelBench's distribution:
each T0 trial is built as the gate builds it (its builder under the gate's first determinism seed) and
moved to the device as the gate moves it, the official Model (built as KernelBench builds it) gives the
expected output, and the kernel's output must match it as the gate's `output_matches` compares
(`harness.gate.checks.compare.compare` at the entry's tolerance). A builder that raises, or a kernel that
raises, rejects. A campaign's worker builds each trial once for every kernel it judges (BuiltProblem.drawn).
"""

from __future__ import annotations

from harness.checkers.kernelbench import Judgement
from harness.checkers.under_test import kept, on_device
from harness.gate.checks.compare import compare
from harness.gate.checks.suite_rules import T0_NAME
from harness.gate.trial_inputs import build_trial


def judge_t0(entry, problem, kernel, device) -> Judgement:
    import torch

    t0 = [(n, builder) for name, n, builder in entry.suites() if name == T0_NAME]
    if not t0:
        return Judgement(False, f"{entry.name} has no {T0_NAME} suite")
    n_trials, builder = t0[0]
    model = problem.build_model(torch.device(device))
    with torch.no_grad():
        for t in range(n_trials):
            try:
                built = kept(problem, (T0_NAME, t), lambda t=t: build_trial(builder, t, device))
            except Exception as error:
                return Judgement(False, f"{T0_NAME} trial {t}: its builder raised {type(error).__name__}: {error}")
            inputs = [on_device(torch.device(device), x) for x in built]  # copies: the kernel may write its inputs
            expected = model(*inputs)
            try:
                output = kernel(*inputs)
            except Exception as error:
                return Judgement(False, f"{T0_NAME} trial {t}: the kernel raised {type(error).__name__}: {error}")
            comparison = compare(output, expected, entry.tolerance)
            if not comparison.ok:
                return Judgement(False, f"{T0_NAME} trial {t}: {comparison.describe()}")
    return Judgement(True)


def t0_checker(entry):
    """The checker `t0` for one substrate's entry: `function(problem, kernel, device) -> bool`."""

    def t0(problem, kernel, device) -> bool:
        return judge_t0(entry, problem, kernel, device).accepted

    return t0
