"""The official output's shape and dtype for a trial's inputs, known before the output exists.

On a GPU the float64 route runs ahead of the official output where it fits beside the trial's
inputs (harness.gate.checks.suite_safety), and whether it fits depends on the output's size. That
size comes, in order, from what this gate already knows for inputs of the same signature
(suite_rules.portable_signature): discovery's meta run of the Model on get_inputs()'s signature,
handed to the worker (`official_output_signature`), and every earlier meta run of this worker;
else from the Model run on the meta device now.

The first meta run of a process imports torch._dynamo and sympy (about 1100 modules, 0.5 to 2 s;
a gate worker starts that import in a thread beside its CUDA context). A trial with under
FORESIGHT_FROM_BYTES of inputs does not wait for it: unforeseen, its float64 route runs after the
official output, on the device when it needs at most DEVICE_FLOAT64_MAX_BYTES. On the H200 that
wait was 0.7 to 1.6 s of gates taking 2.3 to 24 s (MEASUREMENTS.md, thirty-first session).
"""

from __future__ import annotations

import copy
import importlib
import threading
from dataclasses import dataclass, field

import torch

from harness.gate.checks.suite_rules import portable_signature, signature_inputs
from harness.gate.trial_inputs import inputs_bytes

# The meta rules' import: torch._compile's wrappers of the meta kernels import torch._dynamo on their first call, and
# torch._check brings torch.fx's symbolic shapes with sympy. The fork server does not import it: every gate and
# campaign waits for the server's start, and campaigns never use the meta device.
META_SHAPES_MODULE = "torch._dynamo"
FORESIGHT_FROM_BYTES = 64 * 2**20  # a trial with fewer bytes of inputs is foreseen only once the rules are imported


def import_meta_shapes_in_background() -> threading.Thread:
    """META_SHAPES_MODULE imported in a daemon thread. Call it after the process's last fork: a child forked
    while the thread holds an import lock would inherit the lock held."""

    def load() -> None:
        try:
            importlib.import_module(META_SHAPES_MODULE)
        except Exception:
            pass  # the meta run imports it again, and says what failed (OutputForesight.meta_error)

    thread = threading.Thread(target=load, name="import of the meta device's shape rules", daemon=True)
    thread.start()
    return thread


class ShapeRulesImport:
    """The meta device's shape rules imported once per worker, in a background thread (`start`), and whether that
    import has finished (`ready`: never, where it was not started)."""

    def __init__(self):
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = import_meta_shapes_in_background()

    def ready(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()


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
    `rules_ready` says whether the meta rules' import has finished (a small trial does not wait for it).
    """

    official: torch.nn.Module
    known: dict = field(default_factory=dict)
    rules_ready: object = lambda: True
    meta_error: str = ""  # why the Model cannot say its output's size on the meta device
    unforeseen_while_importing: int = 0  # small trials left unforeseen while the rules were importing
    last_unforeseen: str = ""  # why output_like's last call foresaw nothing ('' where it did, or no tensor comes)
    _meta_model: torch.nn.Module | None = None

    @classmethod
    def from_discovery(cls, official: torch.nn.Module, inputs_signature: tuple | None, output_signature: tuple | None,
                       rules_ready=lambda: True) -> "OutputForesight":
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
            self.unforeseen_while_importing += 1
            self.last_unforeseen = (f"its size was not foreseen (under {FORESIGHT_FROM_BYTES // 2**20} MiB of "
                                    f"inputs, met while the meta device's shape rules were being imported)")
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
