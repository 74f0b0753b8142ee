"""A checker judging one kernel inside a campaign worker: the `kernel` callable it is given, and its verdict.

`kernel(*inputs)` runs the kernel as the substrate's `launch` says (its model_state tensors appended, as the
gate appends them), waits for it and returns the output; a fault raises. An exception out of the checker is the
kernel's where the kernel raised it (a rejection, as KernelBench's own check counts any exception), and the
checker's own error otherwise: no verdict, and a message naming the checker.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.gate.phases import PhaseClock

# The host memory a worker keeps the checkers' drawn inputs in whatever the host has (BuiltProblem.drawn): the 28
# family problems' five trials take at most a few hundred MiB. Past it, a draw is kept while the host keeps
# HOST_RESERVE_SHARE (harness.gate.trial_inputs) of its memory available beside it (the campaign's other workers
# keep theirs likewise, and each one's kept draws are counted in what the others see); else it is drawn again for
# each kernel, as eval.py draws it.
# A KernelBench problem at its real size draws GiBs a trial, on the CPU, for tens of seconds.
DRAWN_BYTES = 512 * 2**20


def host_has_room() -> bool:
    """Whether the host's available memory (a draw just made counted in it) keeps HOST_RESERVE_SHARE of the whole
    (harness.gate.trial_inputs); False where the system does not say."""
    from harness.gate.trial_inputs import keeps_host_reserve

    kept = keeps_host_reserve()
    return kept is not None and kept[0]


def kept(problem, key, draw) -> list:
    """`draw()`'s values, drawn once per worker where the problem keeps them (BuiltProblem.drawn), else drawn now."""
    keeps = getattr(problem, "drawn", None)
    return keeps(key, draw) if keeps is not None else draw()


def on_device(device, x):
    """x on the device as eval.py moves it (`.to(device)`); a copy where it is there already, so that a kernel that
    writes its inputs does not change what the problem keeps."""
    import torch

    if not isinstance(x, torch.Tensor):
        return x
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:  # `cuda` is the current device: .to() would hand x back
        device = torch.device("cuda", torch.cuda.current_device())
    return x.clone() if x.device == device else x.to(device)


class BuiltProblem:
    """The substrate's Problem as a checker gets it, its official Model built once per worker: `build_model(device)`
    on the worker's device is the Model the worker built (as KernelBench builds it, seed 42), not a second one per
    mutant and checker. Its outputs are a fresh Model's: nothing a kernel runs can change its weights (the kernel
    gets copies of the tensors model_state names), and the mode is the one a Model starts in."""

    def __init__(self, problem, model, device, room=host_has_room, clock=None, ahead=None):
        """`ahead`: the draws helpers make at once (harness.engine.draws_ahead.DrawsAhead), taken at their keys."""
        self.problem, self.model, self.device = problem, model, device
        self.ahead = ahead
        self.clock = clock or PhaseClock()  # the draws timed on it (`checkers: inputs drawn`)
        self.Model, self.get_inputs, self.get_init_inputs = problem.Model, problem.get_inputs, problem.get_init_inputs
        self._drawn: dict = {}  # key: (the draw's values, their checksums where a kernel shares their memory)
        self._given: dict = {}  # key: values the worker built already (its own trials), for the draw of that key
        self._room = room  # whether the host has room to keep a draw past DRAWN_BYTES

    def build_model(self, device):
        import torch

        return self.model if torch.device(device) == torch.device(self.device) else self.problem.build_model(device)

    def give(self, key, values: list) -> None:
        """`values` are what `draw()` for `key` makes, built already by the worker (its T0 trials, built as the gate
        builds them): drawn() hands them over without a draw. The worker keeps them whole (its runs' input sums); the
        checkers give kernels copies."""
        self._given[key] = list(values)

    def drawn(self, key, draw) -> list:
        """`draw()`'s values (get_inputs under a trial's seed, or a T0 trial as the gate builds it, on the CPU), drawn
        once per worker and `key` where they fit DRAWN_BYTES or the host has room (HOST_RESERVE_SHARE): every kernel
        a worker judges is checked on the same trials, and drawing them on the CPU took most of a checker's time. The
        caller copies them to the device as eval.py does, so the device's allocations (and what a stale buffer holds)
        are eval.py's. Where kernels run on the CPU (and share the host's memory), values a kernel changed are drawn
        again."""
        import torch

        from harness.gate.checks.guards import tensor_checksum

        if key in self._given:
            return self._given[key]
        if key in self._drawn:
            values, sums = self._drawn[key]
            if sums is None or sums == [tensor_checksum(x) for x in _tensors(values)]:
                return values
            del self._drawn[key]
        with self.clock.timing("checkers: inputs drawn"):
            values = self.ahead.take(key) if self.ahead is not None else None
            if values is None:
                values = draw()
        tensors = _tensors(values)
        size = sum(x.numel() * x.element_size() for x in tensors)
        if all(x.device.type == "cpu" for x in tensors) and (size <= DRAWN_BYTES - self._drawn_bytes()
                                                             or self._room()):
            shared = torch.device(self.device).type == "cpu"
            self._drawn[key] = (values, [tensor_checksum(x) for x in tensors] if shared else None)
        return values

    def _drawn_bytes(self) -> int:
        return sum(x.numel() * x.element_size() for values, _ in self._drawn.values() for x in _tensors(values))


def _tensors(values) -> list:
    import torch

    return [x for x in values if isinstance(x, torch.Tensor)]


@dataclass(frozen=True)
class CheckerVerdict:
    accepted: bool | None  # None: not judged (the checker failed, or the mutant ended its worker first)
    why: str = ""
    error: bool = False  # the checker itself raised or returned no bool: `why` says so
    # Not judged yet: the mutant's fault on the suites ended its worker, and a fresh worker judges it with the
    # checkers alone (CampaignJob.checkers_apart); a campaign resumed judges it so too.
    apart: bool = False

    def to_json(self) -> dict:
        return {"accepted": self.accepted, "why": self.why, **({"error": True} if self.error else {}),
                **({"apart": True} if self.apart else {})}

    @staticmethod
    def from_json(record: dict) -> "CheckerVerdict":
        return CheckerVerdict(record.get("accepted"), record.get("why", ""), bool(record.get("error")),
                              bool(record.get("apart")))


class KernelCall:
    """`kernel(*inputs)` for a checker; remembers what it raised, and whether a fault left the device unusable.

    The kernel writes a guarded copy of launch's `out` (harness.gate.checks.guards), copied back into `out` after it ran: a
    mutant writing past out's ends then hits the bands and, on the CPU backend, the fences beyond them, not the
    worker's heap (which would take the worker, and the mutant's verdicts, with it); what the checker gets is what
    the kernel wrote into out, and out's contents where it wrote nothing, as without the copy.
    """

    def __init__(self, entry, backend, kernel, state: tuple = (), shared: dict | None = None, clock=None,
                 buffers=None):
        self.entry, self.backend, self.kernel, self.state = entry, backend, kernel, tuple(state)
        # The worker's guarded buffers (GuardedBuffers), where out's copy is kept from call to call: on the CPU a fresh
        # one is a fresh fenced mapping, whose page faults cost 20 times a reused block's (4 MiB: 1.8 against 0.09 ms).
        self.buffers = buffers
        # The kernel's runs and its output's guarded copies timed on it: the rest of a checker's time is its own
        # (drawing, references, comparing).
        self.clock = clock or PhaseClock()
        self.raised: list[BaseException] = []
        self.poisoned = False  # a fault that poisons the CUDA context: the worker must end
        self.rejection = ""  # why a built-in checker rejected the kernel, where it says (checkers.kernelbench)
        # What the checkers judging this same kernel leave each other (one dict for all their calls): a run of the
        # trials one built-in checker made that another's verdict can be read from (checkers.kernelbench).
        self.shared = shared

    def __call__(self, *inputs):
        import torch

        from harness.compiler import signature
        from harness.backends import KernelFault

        from harness.gate.checks.guards import GuardedTensor
        from harness.gate.pipeline import _redirect_pointers

        try:
            # Copies of the Model's own tensors: a mutant that writes its inputs must not change the worker's Model.
            views = [*inputs, *(tensor.clone() for tensor in self.state)]
            out, grid, block, args = self.entry.launch(views, torch)
            with self.clock.timing("checkers: the kernel's output guarded"):
                guarded = (self.buffers.copy_of("checker out", out, out.device) if self.buffers is not None
                           else GuardedTensor.copy_of(out, out.device))
            args, problems = _redirect_pointers(list(args), out, guarded.tensor, views)
            problems += signature.check_arguments(self.kernel.params, args)
            if problems:
                raise ValueError(f"launch's arguments: {problems[0]}")
            with self.clock.timing("checkers: the kernel's runs"):
                self.backend.launch(self.kernel, tuple(grid), tuple(block), signature.to_ctypes(args))
                self.backend.synchronize()
            with self.clock.timing("checkers: the kernel's output guarded"):
                out.copy_(guarded.tensor)
        except Exception as error:
            self.raised.append(error)
            if isinstance(error, KernelFault) and error.poisons_context:
                self.poisoned = True
            raise
        return out


class RunOver:
    """A kernel that cannot run again (a fault in a checker's run of it left the device unusable), given to a checker
    whose verdict a run another checker made of it holds (`shared`, as KernelCall.shared): running it raises."""

    def __init__(self, shared: dict):
        self.shared, self.raised, self.rejection = shared, [], ""

    def __call__(self, *inputs):
        raise RuntimeError("the kernel cannot run again: a fault in an earlier checker's run left the device unusable")


def judged_from_shared_run(spec: str, checker, problem, shared: dict, device) -> CheckerVerdict | None:
    """`checker`'s verdict read from the run of the same kernel another checker left in `shared` (the built-in
    KernelBench checkers read one run at each tolerance), where the kernel can no longer run; None where `spec`
    reads no such run, or none was left."""
    from harness.checkers.kernelbench import SHARED_RUN_KEY, SHARED_RUN_READERS

    if spec not in SHARED_RUN_READERS or SHARED_RUN_KEY not in shared:
        return None
    return judge_with(spec, checker, problem, RunOver(shared), device)


def judge_with(spec: str, checker, problem, call: KernelCall, device) -> CheckerVerdict:
    """`checker`'s verdict (named `spec`, as --checker gave it) on the kernel `call` runs."""
    from harness.backends.base import out_of_device_memory

    try:
        result = checker(problem, call, device)
    except Exception as error:
        if out_of_device_memory(error):
            return CheckerVerdict(None, f"not judged: the device's memory ran out ({_first_line(error)})")
        if any(error is raised for raised in call.raised):
            return CheckerVerdict(False, f"the kernel raised {type(error).__name__}: {_first_line(error)}")
        return CheckerVerdict(None, f"checker {spec} raised {type(error).__name__}: {_first_line(error)}", error=True)
    if not isinstance(result, bool):
        return CheckerVerdict(None, f"checker {spec} returned {type(result).__name__}, not True or False", error=True)
    if result:
        return CheckerVerdict(True)
    # The kernel's run out of memory (launch's output, its guards): the checker's rejection says nothing of it.
    short = next((error for error in call.raised if out_of_device_memory(error)), None)
    if short is not None:
        return CheckerVerdict(None, f"not judged: the device's memory ran out as the kernel ran ({_first_line(short)})")
    why = f"the kernel raised {type(call.raised[-1]).__name__}: {_first_line(call.raised[-1])}" if call.raised else ""
    return CheckerVerdict(False, why or getattr(call, "rejection", "") or "it returned False")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""
