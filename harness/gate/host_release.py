"""Large host tensors given back to the system in a thread of their own, their pages first through madvise.

Giving a KernelBench-sized tensor's pages back is not free. After the CPU route's 4 GiB result of kb_matmul_small_k
was copied to the device, dropping it took the second references' thread 0.28 s (H200) and 0.13 s (H100), between
the copy's end and the agreement's start. Dropped in a thread of its own, the free took 0.19 s, and the trials'
thread and the agreement stalled for the same 0.19 s: munmap holds the process's memory map for writing while it
tears the pages down, and the CUDA calls beside it (a device allocation maps memory too) waited for it.
`madvise(MADV_DONTNEED)` first tears the pages down holding the map for reading only, through ctypes, which lets
the interpreter's lock go meanwhile; the free that follows unmaps an empty range.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
import threading
from queue import SimpleQueue

import torch

from harness.gate.phases import PhaseClock

PHASE = "[thread] host memory given back"
MADVISE_FROM_BYTES = 64 * 2**20
_MADV_DONTNEED = 4  # Linux's value, on every architecture torch runs on


def _madvise():
    """libc's madvise through ctypes (None where there is none): a foreign call made without the interpreter's lock."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.madvise
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    call.restype = ctypes.c_int
    return call


def drop_pages(box: list, madvise=None) -> int:
    """Empty `box`, first giving back the pages of each CPU tensor in it of MADVISE_FROM_BYTES or more that nothing
    else uses (no other reference to it, no other tensor on its storage): only then is nothing reading the values
    that go. Returns the bytes given back so."""
    madvise = madvise or _madvise()
    dropped = 0
    while box:
        x = box.pop()
        if sys.getrefcount(x) == 2 and madvise is not None:  # `x` here and the call's argument
            dropped += _pages_dropped(x, madvise)
        del x
    return dropped


def _pages_dropped(x, madvise) -> int:
    if not isinstance(x, torch.Tensor) or x.device.type != "cpu":
        return 0
    storage = x.untyped_storage()
    # Two users: the tensor and the handle just taken.
    if storage.nbytes() < MADVISE_FROM_BYTES or torch._C._storage_Use_Count(storage._cdata) > 2:
        return 0
    start = -(-storage.data_ptr() // mmap.PAGESIZE) * mmap.PAGESIZE
    end = (storage.data_ptr() + storage.nbytes()) // mmap.PAGESIZE * mmap.PAGESIZE
    if end <= start or madvise(start, end - start, _MADV_DONTNEED) != 0:
        return 0
    return end - start


class HostRelease:
    """A daemon thread that empties the boxes handed to it, their large CPU tensors' pages dropped first; started at
    the first box."""

    def __init__(self, clock: PhaseClock | None = None):
        self.clock = clock or PhaseClock()
        self._boxes: SimpleQueue = SimpleQueue()
        self._thread: threading.Thread | None = None

    def let_go(self, box: list) -> None:
        """What `box` holds is freed in the thread: the caller keeps no other reference to it (a tensor another
        reference keeps is left whole, and freed where that reference goes)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._empty_boxes, name="host-release", daemon=True)
            self._thread.start()
        self._boxes.put(box)

    def close(self) -> None:
        """After every box handed over so far is empty."""
        if self._thread is not None:
            self._boxes.put(None)
            self._thread.join()
            self._thread = None

    def _empty_boxes(self) -> None:
        madvise = _madvise()
        while (box := self._boxes.get()) is not None:
            with self.clock.timing(PHASE):
                drop_pages(box, madvise)
