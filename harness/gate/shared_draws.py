"""Large random draws made straight into shared memory, and made once for two builds, in T0's helper processes.

A helper hands its trial to the worker through shared memory: pickling a tensor drawn in private memory copies it into
a new shared segment (torch.multiprocessing's reduction). On the 2-core machine that copy took 8 to 13 s for a 2 GiB
draw that itself took 2.3 s, and for a moment the host held the draw twice. Under `draws_in_shared_memory`, a
torch.rand or torch.randn on the CPU of at least `min_bytes` allocates its tensor in shared memory and fills it in
place, as torch itself makes such a draw (an empty tensor, then uniform_(0, 1) or normal_(0, 1) with the same
generator): the same values, the same generator state after, and a tensor that pickles without a copy. A draw the
code goes on to change into a new tensor (`torch.rand(n) * 2`) pickles as before; any other call passes through.

A T0 trial is drawn twice, by get_inputs() under its seed and by the candidate's builder, and most builders make the
very same calls. With a `DrawLog`, get_inputs()'s large draws are recorded (the generator's state before and after
each), and the builder's draw that is the same call on a generator in the same state is given the recorded tensor
itself, its generator moved to the recorded state after: torch's CPU draws are a function of the call and the
generator's state alone, so the values are those a second draw would make. A recorded tensor changed in place before
the builder asks for it (or made to require grad) is not given; one the builder changes in place afterwards (it is
get_inputs()'s too) makes `DrawLog.intact` false, and the caller draws get_inputs() again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode

_FILL = {torch.rand: "uniform_", torch.randn: "normal_"}
# Keyword arguments that leave the draw an ordinary CPU tensor, at these values or None; any other passes the call on.
_PLAIN = {"requires_grad": False, "pin_memory": False, "layout": torch.strided}


@dataclass
class _Drawn:
    func: object
    shape: torch.Size
    dtype: torch.dtype
    before: torch.Tensor  # the generator's state before the draw, and after it
    after: torch.Tensor
    tensor: torch.Tensor
    version: int  # the tensor's version counter as drawn: an in-place change moves it
    given: bool = False


@dataclass
class DrawLog:
    """The large draws of one build, recorded to be given to another (`draws_in_shared_memory(record=...)`, then
    `replay=`). `given` counts the draws the second build was given."""

    drawn: list[_Drawn] = field(default_factory=list)
    given: int = 0

    def take(self, func, like: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
        """The recorded tensor of this call on this generator's state, unchanged since, the generator moved past it."""
        state = None
        for draw in self.drawn:
            if (draw.given or draw.func is not func or draw.shape != like.shape or draw.dtype != like.dtype
                    or draw.tensor._version != draw.version or draw.tensor.requires_grad):
                continue
            state = generator.get_state() if state is None else state
            if torch.equal(state, draw.before):
                generator.set_state(draw.after)
                draw.given = True
                self.given += 1
                return draw.tensor
        return None

    def intact(self) -> bool:
        """Whether every tensor given is as drawn: a build that changed one in place changed the other build's too."""
        return all(draw.tensor._version == draw.version for draw in self.drawn if draw.given)


class _DrawsInSharedMemory(TorchFunctionMode):
    def __init__(self, min_bytes: int, record: DrawLog | None, replay: DrawLog | None):
        super().__init__()
        self.min_bytes, self.record, self.replay = min_bytes, record, replay
        self.drawn = 0  # draws made in shared memory

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _FILL and _plain_cpu_draw(kwargs):
            made = self._large_draw(func, args, kwargs)
            if made is not None:
                return made
        return func(*args, **kwargs)

    def _large_draw(self, func, args, kwargs) -> torch.Tensor | None:
        """The draw given from the replayed log or made in shared memory; None where it is small or torch would not
        make it as asked."""
        try:  # the meta device parses the size and dtype exactly as the call would, allocating nothing
            like = func(*args, **{k: v for k, v in kwargs.items() if k not in ("generator", "device")}, device="meta")
        except Exception:
            return None  # the call itself raises, and says why
        if like.numel() * like.element_size() < self.min_bytes or not like.dtype.is_floating_point:
            return None
        generator = kwargs.get("generator") or torch.default_generator
        given = self.replay.take(func, like, generator) if self.replay is not None else None
        if given is not None:
            return given
        try:
            storage = torch.UntypedStorage._new_shared(like.numel() * like.element_size())
        except Exception:  # no shared memory to be had: drawn as usual, and pickling says what is wrong
            return None
        tensor = torch.empty(0, dtype=like.dtype).set_(storage, 0, like.shape)
        before = generator.get_state() if self.record is not None else None
        getattr(tensor, _FILL[func])(0, 1, generator=kwargs.get("generator"))
        self.drawn += 1
        if self.record is not None:
            self.record.drawn.append(_Drawn(func, like.shape, like.dtype, before, generator.get_state(), tensor,
                                            tensor._version))
        return tensor


def _plain_cpu_draw(kwargs: dict) -> bool:
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        return False
    if device is None and torch.get_default_device().type != "cpu":
        return False
    generator = kwargs.get("generator")
    if generator is not None and generator.device.type != "cpu":
        return False
    if kwargs.get("out") is not None or kwargs.get("names") is not None:
        return False
    return all(kwargs.get(name) is None or kwargs[name] == plain for name, plain in _PLAIN.items())


def draws_in_shared_memory(min_bytes: int, record: DrawLog | None = None,
                           replay: DrawLog | None = None) -> _DrawsInSharedMemory:
    """A context in which CPU draws by torch.rand and torch.randn of at least `min_bytes` are made in shared memory
    (`.drawn` counts them): recorded in `record`, or given from `replay` where it holds the same draw."""
    return _DrawsInSharedMemory(min_bytes, record, replay)
