"""The official output's shape and dtype for a trial's inputs, known before the output exists.

On a GPU the float64 route runs ahead of the official output where it fits beside the trial's
inputs (harness.gate.checks.suite_safety), and whether it fits depends on the output's size. That
size comes, in order, from what this gate already knows for inputs of the same signature
(suite_rules.portable_signature): discovery's meta run of the Model on get_inputs()'s signature,
handed to the worker (`official_output_signature`), and every earlier meta run of this worker;
else from the Model run on the meta device now.

The first meta run of a process imports torch._dynamo and sympy (about 1100 modules, 0.5 to 2 s;
on the H200 the first trial waited 0.7 to 1.6 s for it in gates of 2.3 to 24 s). A trial with under
FORESIGHT_FROM_BYTES of inputs is not run on the meta device unless those rules are imported
already: unforeseen, its float64 route runs after the official output, on the device when it
needs at most DEVICE_FLOAT64_MAX_BYTES. Nor does a worker import them in a thread beforehand: beside
the first trials that import stalled single calls of the main thread by 0.5 to 1.6 s each, in
phases that take milliseconds (MEASUREMENTS.md, thirty-third session).
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, field

import torch

from harness.gate.checks.suite_rules import portable_signature, signature_inputs
from harness.gate.trial_inputs import inputs_bytes

# The meta rules' import: torch._compile's wrappers of the meta kernels import torch._dynamo on their first call, and
# torch._check brings torch.fx's symbolic shapes with sympy. The fork server does not import it: every gate and
# campaign waits for the server's start, and campaigns never use the meta device.
META_SHAPES_MODULE = "torch._dynamo"
FORESIGHT_FROM_BYTES = 64 * 2**20  # a trial with fewer bytes of inputs is foreseen only where the rules are imported


def shape_rules_imported() -> bool:
    """Whether this process has the meta device's shape rules already (a meta run costs it nothing more)."""
    return META_SHAPES_MODULE in sys.modules


def official_output_signature(problem, inputs: list) -> tuple:
    """The official Model's output on `inputs` (get_inputs()'s, as meta tensors), built and run on the meta device,
    as a portable signature: (("tensor", dtype, shape),), or () where the meta device cannot say (a Model whose
    constructor or forward reads values, or whose output is not one tensor). Discovery's, for the workers."""
    try:
        with torch.device("meta"), torch.no_grad():
            init_inputs = list(problem.get_init_inputs())
            output = problem.Model(*init_inputs)(*inputs)
    except Exception:
        return ()
    if not isinstance(output, torch.Tensor):
        return ()
    return portable_signature([output]) or ()


@dataclass
class OutputForesight:
    """The official output's shape for a trial's inputs, from what is known, else from the Model on the meta device.

    `known` maps an input signature to its output's: discovery's for get_inputs()'s, and each meta run's.
    `rules_ready` says whether the meta device's shape rules are imported (a small trial does not import them).
    """

    official: torch.nn.Module
    known: dict = field(default_factory=dict)
    rules_ready: object = shape_rules_imported
    meta_error: str = ""  # why the Model cannot say its output's size on the meta device
    unforeseen_small: int = 0  # small trials left unforeseen, the rules not imported
    last_unforeseen: str = ""  # why output_like's last call foresaw nothing ('' where it did, or no tensor comes)
    _meta_model: torch.nn.Module | None = None

    @classmethod
    def from_discovery(cls, official: torch.nn.Module, inputs_signature: tuple | None, output_signature: tuple | None,
                       rules_ready=shape_rules_imported) -> "OutputForesight":
        known = {inputs_signature: output_signature} if inputs_signature and output_signature else {}
        return cls(official, known, rules_ready)

    def output_like(self, inputs: list, clock) -> torch.Tensor | None:
        """A meta tensor of the official output's shape and dtype on `inputs`; None where it is not foreseen."""
        self.last_unforeseen = ""
        signature = portable_signature(inputs)
        if signature is not None and signature in self.known:
            return _like(self.known[signature])
        if self.meta_error:
            self.last_unforeseen = f"the meta device could not foresee its size: {self.meta_error}"
            return None
        if inputs_bytes(inputs) < FORESIGHT_FROM_BYTES and not self.rules_ready():
            self.unforeseen_small += 1
            self.last_unforeseen = (f"its size was not foreseen (under {FORESIGHT_FROM_BYTES // 2**20} MiB of "
                                    f"inputs, and the meta device's shape rules not imported in this worker)")
            return None
        try:
            if self._meta_model is None:
                self._meta_model = copy.deepcopy(self.official).to("meta")
            with torch.no_grad(), clock.timing("the official output's shape, on the meta device"):
                like = self._meta_model(*[torch.empty_like(x, device="meta") if isinstance(x, torch.Tensor) else x
                                          for x in inputs])
        except Exception as error:  # data-dependent shapes, say: the route waits for the official output
            self.meta_error = f"{type(error).__name__}: {error}"
            self.last_unforeseen = f"the meta device could not foresee its size: {self.meta_error}"
            return None
        if not isinstance(like, torch.Tensor):
            return None
        if signature is not None:
            self.known[signature] = portable_signature([like])
        return like


def _like(output_signature: tuple) -> torch.Tensor | None:
    return signature_inputs(output_signature)[0] if output_signature else None
