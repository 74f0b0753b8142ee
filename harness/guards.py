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

from harness.compare import bits

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
        self.buffer = torch.empty((GUARD_BYTES + self.nbytes + GUARD_BYTES,), dtype=torch.uint8, device=device)
        self.buffer[:GUARD_BYTES].fill_(guard_byte)
        self.buffer[GUARD_BYTES + self.nbytes:].fill_(guard_byte)
        middle = self.buffer[GUARD_BYTES:GUARD_BYTES + self.nbytes]
        self.tensor = middle.view(dtype).view(tuple(int(d) for d in shape))

    @classmethod
    def copy_of(cls, source: torch.Tensor, device, guard_byte: int = GUARD_BYTE) -> "GuardedTensor":
        guarded = cls(source.shape, source.dtype, device, guard_byte)
        guarded.tensor.copy_(source)
        return guarded

    def poison(self, pattern_byte: int) -> None:
        self.buffer[GUARD_BYTES:GUARD_BYTES + self.nbytes].fill_(pattern_byte)

    def damage(self) -> list[GuardDamage]:
        found = []
        before = self.buffer[:GUARD_BYTES] != self.guard_byte
        after = self.buffer[GUARD_BYTES + self.nbytes:] != self.guard_byte
        if bool(before.any()):
            changed = torch.nonzero(before).reshape(-1)
            found.append(GuardDamage("before", int(changed.numel()), GUARD_BYTES - 1 - int(changed.max())))
        if bool(after.any()):
            changed = torch.nonzero(after).reshape(-1)
            found.append(GuardDamage("after", int(changed.numel()), int(changed.min())))
        return found


def _poison_element(pattern_byte: int, itemsize: int, dtype: torch.dtype) -> torch.Tensor:
    """The poison pattern as one element of the same-width integer view."""
    return torch.tensor(list(bytes([pattern_byte]) * itemsize), dtype=torch.uint8).view(dtype)[0]


def unwritten_mask(first_run: torch.Tensor, second_run: torch.Tensor) -> torch.Tensor:
    """True where the output still held poison pattern one after run one and pattern two after run two."""
    itemsize = first_run.element_size()
    a, b = bits(first_run).reshape(-1), bits(second_run).reshape(-1)
    view = a.dtype
    still_first = a == _poison_element(POISON_BYTES[0], itemsize, view).to(a.device)
    if not bool(still_first.any()):  # the common case: every element was written in run one
        return torch.zeros(first_run.shape, dtype=torch.bool, device=first_run.device)
    return (still_first & (b == _poison_element(POISON_BYTES[1], itemsize, view).to(b.device))).reshape(first_run.shape)
