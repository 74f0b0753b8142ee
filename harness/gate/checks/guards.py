"""Buffers with guard bands and poison patterns, to catch writes out of bounds and unwritten output.

Each tensor the kernel sees lives in the middle of a larger byte buffer whose bands before and
after hold GUARD_BYTE; a kernel that writes past either end changes a band. The output is
filled with a poison pattern before each run; it runs twice with two patterns, so an element
still equal to the first pattern after run one and to the second after run two was never
written, whatever the element's value could legitimately be.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from harness.gate.checks.compare import bits

# A multiple of 256 bytes, so the guarded tensor keeps the alignment of a fresh allocation.
GUARD_BYTES = 4096
GUARD_BYTE = 0xC3
# Each input's bands hold a byte of their own, and read as a float every one is large and finite
# (0x7B7B7B7B is 1.3e36 as float32, 61280 as float16): a kernel that reads past the end of two
# inputs and combines them (x[n] - y[n]) must neither see equal values that cancel nor tiny ones
# that vanish in a mean.
INPUT_GUARD_BYTES = (0x7B, 0x6E, 0x4D, 0x77, 0x66, 0x55, 0x71, 0x62)
POISON_BYTES = (0xA5, 0x5A)


@dataclass(frozen=True)
class GuardDamage:
    side: str  # "before" or "after"
    changed_bytes: int
    nearest_offset: int  # bytes from the tensor's edge to the closest changed byte

    def describe(self, label: str) -> str:
        return (f"{self.changed_bytes} bytes changed in the guard band {self.side} {label} "
                f"(nearest {self.nearest_offset} bytes from its edge)")


def _band_buffer(nbytes: int, device) -> torch.Tensor:
    """The bytes of a guarded tensor: on the CPU between fences (harness.backends.cpu_fence), where a kernel runs in
    the harness's own process and a write past the bands would land in its heap."""
    if torch.device(device).type == "cpu":
        from harness.backends.cpu_fence import fenced_bytes

        return fenced_bytes(nbytes)
    return torch.empty((nbytes,), dtype=torch.uint8, device=device)


class GuardedTensor:
    """A tensor of `shape` and `dtype` inside a byte buffer with guard bands on both sides."""

    def __init__(self, shape, dtype: torch.dtype, device, guard_byte: int = GUARD_BYTE):
        self.guard_byte = guard_byte
        itemsize = torch.empty((), dtype=dtype).element_size()
        numel = 1
        for d in shape:
            numel *= int(d)
        self.nbytes = numel * itemsize
        # Only the bands are filled here: the middle is always overwritten (a copy, or poison) before use.
        self.buffer = _band_buffer(GUARD_BYTES + self.nbytes + GUARD_BYTES, device)
        self.restore_bands()
        middle = self.buffer[GUARD_BYTES:GUARD_BYTES + self.nbytes]
        self.tensor = middle.view(dtype).view(tuple(int(d) for d in shape))

    def restore_bands(self) -> None:
        """Both bands back to the guard byte, whatever a run wrote into them."""
        self.buffer[:GUARD_BYTES].fill_(self.guard_byte)
        self.buffer[GUARD_BYTES + self.nbytes:].fill_(self.guard_byte)

    @classmethod
    def copy_of(cls, source: torch.Tensor, device, guard_byte: int = GUARD_BYTE) -> "GuardedTensor":
        guarded = cls(source.shape, source.dtype, device, guard_byte)
        guarded.tensor.copy_(source)
        return guarded

    def poison(self, pattern_byte: int) -> None:
        self.buffer[GUARD_BYTES:GUARD_BYTES + self.nbytes].fill_(pattern_byte)

    def _changed_bands(self) -> tuple[torch.Tensor, torch.Tensor]:
        """True where the band before, and the band after, no longer hold the guard byte."""
        return self.buffer[:GUARD_BYTES] != self.guard_byte, self.buffer[GUARD_BYTES + self.nbytes:] != self.guard_byte

    def bands_changed(self) -> torch.Tensor:
        """Whether the band before and the band after changed, as two int64 (0 or 1) on the device: read with
        other signals in one transfer (each host read waits for the device); damage() says how, when one did."""
        before, after = self._changed_bands()
        return torch.stack([before.any(), after.any()]).to(torch.int64)

    def damage(self) -> list[GuardDamage]:
        """How each band changed: its changed bytes and the one nearest the tensor, read in one transfer."""
        before, after = self._changed_bands()
        offsets = torch.arange(GUARD_BYTES, device=before.device)
        changed_before, last_before, changed_after, first_after = torch.stack([
            before.sum(), torch.where(before, offsets, -1).max(),
            after.sum(), torch.where(after, offsets, GUARD_BYTES).min()]).tolist()
        return ([GuardDamage("before", changed_before, GUARD_BYTES - 1 - last_before)] if changed_before else []) + \
            ([GuardDamage("after", changed_after, first_after)] if changed_after else [])


class GuardedBuffers:
    """Guarded buffers kept from call to call of run_kernel, one per role (out, input i), for a caller that runs
    trials of the same shapes over and over (a campaign): a fresh allocation of a KernelBench-sized tensor pays its
    page faults at every run (46 ms against 16 to poison 55 MB on this project's 2-core CPU). A role keeps only its
    last shape, so memory stays at one trial's."""

    def __init__(self):
        self._held: dict[object, GuardedTensor] = {}

    def take(self, role, shape, dtype: torch.dtype, device, guard_byte: int = GUARD_BYTE) -> GuardedTensor:
        """A guarded tensor of `shape` and `dtype` on `device` for `role`, bands intact; the middle holds whatever it
        held (the caller fills it: a copy, or poison)."""
        held = self._held.get(role)
        if (held is None or tuple(held.tensor.shape) != tuple(int(d) for d in shape) or held.tensor.dtype != dtype
                or held.tensor.device != torch.device(device) or held.guard_byte != guard_byte):
            self._held.pop(role, None)  # freed before the next is allocated
            held = self._held[role] = GuardedTensor(shape, dtype, device, guard_byte)
        else:
            held.restore_bands()
        return held

    def copy_of(self, role, source: torch.Tensor, device, guard_byte: int = GUARD_BYTE) -> GuardedTensor:
        """GuardedTensor.copy_of, in `role`'s buffer."""
        guarded = self.take(role, source.shape, source.dtype, device, guard_byte)
        guarded.tensor.copy_(source)
        return guarded


def _holds_poison(t: torch.Tensor, pattern_byte: int) -> torch.Tensor:
    """True where an element of `t` (flattened) holds the poison pattern in every byte.

    The pattern is compared as a Python integer of the same-width integer view (bits(): uint8, else signed), so
    no tensor of it is built and copied to the device at every run.
    """
    flat = bits(t).reshape(-1)
    element = int.from_bytes(bytes([pattern_byte]) * t.element_size(), "little", signed=flat.dtype != torch.uint8)
    return flat == element


def poison_held(t: torch.Tensor, pattern_byte: int) -> torch.Tensor:
    """Whether some element of `t` holds the poison pattern, as one int64 (0 or 1) on the device (read with other
    signals; any() and not a count: summing a bool tensor on the CPU converts it to int64 first, 30 times slower)."""
    return _holds_poison(t, pattern_byte).any().to(torch.int64).reshape(1)


def poison_where(t: torch.Tensor, pattern_byte: int) -> torch.Tensor:
    """True where an element of `t` holds the poison pattern in every byte, in `t`'s shape: kept after run one where
    poison_held said the pattern is left somewhere (nothing is read here)."""
    return _holds_poison(t, pattern_byte).reshape(t.shape)


def unwritten_mask(first_run: torch.Tensor, second_run: torch.Tensor) -> torch.Tensor:
    """True where the output still held poison pattern one after run one and pattern two after run two."""
    return _unwritten_after(poison_where(first_run, POISON_BYTES[0]), second_run)


def _unwritten_after(still_first: torch.Tensor, second_run: torch.Tensor) -> torch.Tensor:
    """unwritten_mask with run one's mask `still_first` (poison_where's) kept in place of its output: one output
    buffer serves both runs."""
    return still_first & poison_where(second_run, POISON_BYTES[1])


def unwritten_signals(still_first: torch.Tensor, second_run: torch.Tensor) -> torch.Tensor:
    """How many elements are unwritten (_unwritten_after's) and the first one's flat index (-1 if none), as two
    int64 on the device: one read, where a count, a test and torch.nonzero each wait for the device."""
    unwritten = _unwritten_after(still_first, second_run).reshape(-1)
    return torch.cat([unwritten.sum().reshape(1), torch.nonzero_static(unwritten, size=1, fill_value=-1).reshape(-1)])


def fill_bytes(t: torch.Tensor, pattern_byte: int) -> None:
    """Fill every byte of `t`'s storage with `pattern_byte`, whatever its dtype and strides."""
    storage = t.untyped_storage()
    if storage.nbytes():
        torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage).fill_(pattern_byte)


def tensor_checksum(x: torch.Tensor) -> int:
    """A sum of the tensor's bytes, read as 64-bit words (wrapping) and the last few as bytes, where it lives.

    One read of the tensor: cheap enough to take for every input before and after every run, so that
    no second copy of a gigabyte input is needed to see whether it changed. A change that keeps the
    sum is a coincidence no fault pattern makes.
    """
    return sum(checksum_parts(x).tolist())


def read_together(parts: list[torch.Tensor]) -> list[list[int]]:
    """Each 1-d tensor's values, read in one transfer where they share a device (each read from a GPU waits for
    it): the signals of checksum_parts, bands_changed, poison_held and the like."""
    if len({part.device for part in parts}) > 1:
        return [part.tolist() for part in parts]
    values = torch.cat(parts).tolist() if parts else []
    read, first = [], 0
    for part in parts:
        read.append(values[first:first + part.numel()])
        first += part.numel()
    return read


def checksum_parts(x: torch.Tensor) -> torch.Tensor:
    """tensor_checksum's two terms, the words' sum and the tail bytes' sum, as two int64 where `x` lives: their
    sum as Python integers is the checksum (read with other signals in one transfer)."""
    raw = x.detach().contiguous().reshape(-1).view(torch.uint8)
    if raw.storage_offset() % 8:  # a misaligned view: words need an aligned copy
        raw = raw.clone()
    whole = raw.numel() // 8 * 8
    return torch.stack([raw[:whole].view(torch.int64).sum(), raw[whole:].sum(dtype=torch.int64)])


# Allocations whose contents are whatever the memory held: a launch that returns one of these as out
# without writing it has not initialised out.
_UNINITIALISED = ("empty.memory_format", "empty_like.default", "empty_strided.default", "new_empty.default",
                  "new_empty_strided.default")


def poisoned_allocations(pattern_byte: int):
    """A context in which every uninitialised torch allocation (torch.empty and kin) is filled with the pattern.

    Two `launch` calls under two patterns give `out` the same bytes exactly when launch initialises
    out itself (zeros for an atomic reduction, a constant), whatever memory the allocator hands back;
    a `torch.empty` out that launch leaves alone comes back holding the pattern.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    class PoisonAllocations(TorchDispatchMode):
        # A subclass that does not opt out has its __torch_dispatch__ wrapped in torch._disable_dynamo, whose first
        # call imports torch._dynamo (800 modules, 1 to 2 s a process); nothing here ever runs under Dynamo.
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if str(func).removeprefix("aten.") in _UNINITIALISED:
                fill_bytes(out, pattern_byte)
            return out

    return PoisonAllocations()
