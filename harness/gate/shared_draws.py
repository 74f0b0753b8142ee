"""Large random draws made straight into shared memory, for T0's helper processes (harness.gate.trial_inputs).

A helper hands its trial to the worker through shared memory: pickling a tensor drawn in private memory copies it into
a new shared segment (torch.multiprocessing's reduction). On the 2-core machine that copy took 8 to 13 s for a 2 GiB
draw that itself took 2.3 s, and for a moment the host held the draw twice. Under `draws_in_shared_memory`, a
torch.rand or torch.randn on the CPU of at least `min_bytes` allocates its tensor in shared memory and fills it in
place, as torch itself makes such a draw (an empty tensor, then uniform_(0, 1) or normal_(0, 1) with the same
generator): the same values, the same generator state after, and a tensor that pickles without a copy. A draw the
code goes on to change into a new tensor (`torch.rand(n) * 2`) pickles as before; any other call passes through.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

_FILL = {torch.rand: "uniform_", torch.randn: "normal_"}
# Keyword arguments that leave the draw an ordinary CPU tensor, at these values or None; any other passes the call on.
_PLAIN = {"requires_grad": False, "pin_memory": False, "layout": torch.strided}


class _DrawsInSharedMemory(TorchFunctionMode):
    def __init__(self, min_bytes: int):
        super().__init__()
        self.min_bytes = min_bytes
        self.drawn = 0  # draws made in shared memory

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _FILL and _plain_cpu_draw(kwargs):
            made = self._in_shared_memory(func, args, kwargs)
            if made is not None:
                return made
        return func(*args, **kwargs)

    def _in_shared_memory(self, func, args, kwargs) -> torch.Tensor | None:
        """The draw made in shared memory, or None where it is small or torch would not make it as asked."""
        generator = kwargs.get("generator")
        try:  # the meta device parses the size and dtype exactly as the call would, allocating nothing
            like = func(*args, **{k: v for k, v in kwargs.items() if k not in ("generator", "device")}, device="meta")
        except Exception:
            return None  # the call itself raises, and says why
        nbytes = like.numel() * like.element_size()
        if nbytes < self.min_bytes or not like.dtype.is_floating_point:
            return None
        try:
            storage = torch.UntypedStorage._new_shared(nbytes)
        except Exception:  # no shared memory to be had: drawn as usual, and pickling says what is wrong
            return None
        tensor = torch.empty(0, dtype=like.dtype).set_(storage, 0, like.shape)
        self.drawn += 1
        return getattr(tensor, _FILL[func])(0, 1, generator=generator)


def _plain_cpu_draw(kwargs: dict) -> bool:
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        return False
    if device is None and torch.get_default_device().type != "cpu":
        return False
    if kwargs.get("out") is not None or kwargs.get("names") is not None:
        return False
    return all(kwargs.get(name) is None or kwargs[name] == plain for name, plain in _PLAIN.items())


def draws_in_shared_memory(min_bytes: int) -> _DrawsInSharedMemory:
    """A context in which CPU draws by torch.rand and torch.randn of at least `min_bytes` are made in shared memory;
    `.drawn` counts them."""
    return _DrawsInSharedMemory(min_bytes)
