"""A race seeded by hand: pad_backward_reflect_f32 with a plain store where its atomic is needed.

The CAS is replaced by a plain store of the sum and the loop believes it won: a read-modify-write
without an atomic. Right whenever no other thread stores to the slot between this thread's load and its
store: only contention shows it (on the GPU, where the threads of a warp load before any of them stores,
and on the CPU backend, where a plain store into memory the thread loaded first yields to the block's
next thread). Not a real candidate: it lives under tests/, so `python gate.py` gates it only when asked.
"""

import importlib.util
from pathlib import Path

BASE = Path(__file__).resolve().parents[2] / "substrates" / "candidate_pad_backward_reflect.py"
DTYPE = "float32"
GOOD = "        word_t seen = atomicCAS(word, old, sum);"
BUG = ("        *word = sum;  // BUG: a plain store where the CAS is needed\n"
       "        word_t seen = old;")


def register(K, torch, ctypes):
    spec = importlib.util.spec_from_file_location("race_plain_store_base", BASE)
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    good = base.cuda_source(DTYPE)
    assert good.count(GOOD) == 1
    name = base.substrate_name(DTYPE)
    K.PROBLEMS["race_plain_store_f32"] = dict(
        kb_file=f"{name}.py",
        cuda=good.replace(GOOD, BUG),
        kernel_name=name,
        ref=base.make_ref(DTYPE),
        launch=base.make_launch(DTYPE, ctypes),
        suites=base.make_suites(DTYPE),
        probe=base.make_probe(DTYPE),
        exact=True,
        accumulates=True,
    )
