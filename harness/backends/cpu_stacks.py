"""The fiber stacks of the CPU backend's loaded objects, held to one budget per process.

A kernel with barriers runs one fiber per CUDA thread (cuda_cpu.h's Sched), each on a stack of
its own with a guard page below it; each object keeps its schedulers, stacks and all, between
launches, and an object is never unloaded. A guard page splits its stack's mapping in two, and
the kernel caps a process's mappings (vm.max_map_count, 65530 by default): a campaign's worker,
which loads an object per batch of mutants, reached the cap after a few hundred mutants of
1024-thread blocks, and a fence's mprotect then failed (ENOMEM) and ended the worker. The cap
is the process's, so the budget and the objects keeping their stacks are the process's too.
"""

from __future__ import annotations

import ctypes
import threading
from functools import lru_cache

# Objects whose stacks stay mapped between launches: a --matrix row alternates the mutant's object with the
# unmutated kernel's, and the checkers run the mutant again: three at most. The rest give theirs back.
WARM_OBJECTS = 4

_warm: dict[ctypes.CDLL, None] = {}  # the process's objects launched last, oldest first
_warm_lock = threading.Lock()


@lru_cache(maxsize=None)
def ledger() -> int:
    """The address of the count of guard pages the process's objects hold (cuda_cpu.h's kGuardBudget applies to
    it). Never freed: the objects' destructors still count into it at exit."""
    libc = ctypes.CDLL(None)
    libc.calloc.restype = ctypes.c_void_p
    libc.calloc.argtypes = (ctypes.c_size_t, ctypes.c_size_t)
    address = libc.calloc(1, ctypes.sizeof(ctypes.c_long))
    if not address:
        raise MemoryError("calloc of the CPU backend's guard-page ledger failed")
    return address


def guard_pages_held() -> int:
    """Guard pages below the fiber stacks of every object the process has loaded."""
    return ctypes.c_long.from_address(ledger()).value


def share_ledger(library: ctypes.CDLL) -> None:
    """Make a freshly loaded object count its guard pages into the process's ledger (before its first launch)."""
    library.harness_share_guard_ledger(ctypes.c_void_p(ledger()))


def launching(library: ctypes.CDLL) -> None:
    """`library` launches now: the object launched longest ago beyond WARM_OBJECTS gives its stacks back (it
    maps them again if it launches again)."""
    with _warm_lock:
        _warm.pop(library, None)
        _warm[library] = None
        while len(_warm) > WARM_OBJECTS:
            cold = next(iter(_warm))
            del _warm[cold]
            cold.harness_release_stacks()
