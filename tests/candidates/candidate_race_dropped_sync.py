"""A race seeded by hand: example_softmax_rows without the `__syncthreads()` before the shared array's reuse.

After the max reduction every thread reads the row maximum from `red[0]`, then stores its partial sum of
the exponentials into `red[threadIdx.x]`; without the barrier between the two, thread 0 may overwrite
`red[0]` before the other threads have read the maximum, which they then take to be thread 0's sum. The
CPU backend runs a block's threads one at a time between barriers, so thread 0 always stores before
the threads after it read. Its problem file is a copy of examples/problems/example_softmax_rows.py in
tests/problems/. Not a real candidate: it lives under tests/, so `python gate.py` gates it only when asked.
"""

import importlib.util
from pathlib import Path

BASE = Path(__file__).resolve().parents[2] / "examples" / "substrates" / "candidate_example_softmax_rows.py"
GOOD = "    float row_max = red[0];\n    __syncthreads();  // sync-before-sum-reuse\n"
BUG = "    float row_max = red[0];\n    // BUG: no __syncthreads() before red is reused for the sums\n"


def register(K, torch, ctypes):
    spec = importlib.util.spec_from_file_location("race_dropped_sync_base", BASE)
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    good = {}
    collector = type("Collector", (), {"PROBLEMS": good})
    base.register(collector, torch, ctypes)
    entry = good[base.NAME]
    assert entry["cuda"].count(GOOD) == 1
    K.PROBLEMS["race_dropped_sync_softmax"] = dict(entry, cuda=entry["cuda"].replace(GOOD, BUG))
