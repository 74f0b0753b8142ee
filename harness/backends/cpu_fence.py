"""Host buffers between inaccessible pages, for what a kernel on the CPU backend may write.

On the GPU a kernel that runs past its output meets the guard bands, then other allocations or an
unmapped address, and the harness's own memory is out of its reach. On the CPU backend the kernel
runs in the harness's process: a loop that runs on past its output (kb_softmax's mutant with its
bound negated strode through the heap 1 KiB at a time) writes Python's objects and malloc's lists
before it meets an unmapped page, and the shim's handler catches that fault in a process already
damaged (a checker then raised TypeError, a worker lost its own attributes, glibc aborted on
"corrupted double-linked list"). A buffer from `fenced_bytes` has FENCE_BYTES of pages that
cannot be touched on each side, so such a run faults at the fence, having written nothing outside
the buffer; only a stride past the fence could land elsewhere.
"""

from __future__ import annotations

import ctypes
import mmap

import torch

# Reserved address space, never committed: a stride this long is a row of 16M floats.
FENCE_BYTES = 64 << 20
PROT_NONE = 0  # <sys/mman.h>; Python's mmap module has PROT_READ and PROT_WRITE only

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def fenced_bytes(nbytes: int) -> torch.Tensor:
    """A uint8 tensor of `nbytes` on the CPU whose first byte starts a page just after a fence of FENCE_BYTES
    inaccessible bytes, and whose page-rounded end meets another: a read or write past either end faults there.
    The mapping goes when the last tensor viewing it does."""
    if nbytes == 0:  # nothing to fence: no mapping
        return torch.empty((0,), dtype=torch.uint8)
    page = mmap.PAGESIZE
    body = -(-nbytes // page) * page
    region = mmap.mmap(-1, FENCE_BYTES + body + FENCE_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                       prot=mmap.PROT_READ | mmap.PROT_WRITE)
    start = ctypes.addressof(ctypes.c_char.from_buffer(region))  # the export ends with the temporary
    for fence in (start, start + FENCE_BYTES + body):
        if _libc.mprotect(fence, FENCE_BYTES, PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), f"mprotect of a fence of {FENCE_BYTES} bytes failed")
    return torch.frombuffer(region, dtype=torch.uint8, count=nbytes, offset=FENCE_BYTES)
