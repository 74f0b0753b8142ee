"""A race seeded by hand: pad_backward_replicate_f64 whose CAS loop reuses a stale value.

The sum is computed once, from the value read before the loop; a thread that loses the race retries
with the value that won as `old` but still swaps in its first sum, overwriting the winner's
contribution. Right whenever no other thread updates the slot between the read and the exchange:
only contention shows it (on the GPU, and on the CPU backend, whose atomics yield to the block's next
thread). Not a real candidate: it lives under tests/, so `python gate.py` gates it only when asked.
"""

import importlib.util
from pathlib import Path

BASE = Path(__file__).resolve().parents[2] / "substrates" / "candidate_pad_backward_replicate.py"
DTYPE = "float64"
GOOD = """    word_t old = *word;
    for (int tries = 0; tries < MAX_CAS_TRIES; ++tries) {
        word_t sum = elem_as_word(word_as_elem(old) + g);
        word_t seen = atomicCAS(word, old, sum);"""
BUG = """    word_t old = *word;
    word_t sum = elem_as_word(word_as_elem(old) + g);  // BUG: computed once, from a value that goes stale
    for (int tries = 0; tries < MAX_CAS_TRIES; ++tries) {
        word_t seen = atomicCAS(word, old, sum);"""


def register(K, torch, ctypes):
    spec = importlib.util.spec_from_file_location("race_stale_cas_base", BASE)
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    good = base.cuda_source(DTYPE)
    assert good.count(GOOD) == 1
    name = base.substrate_name(DTYPE)
    K.PROBLEMS["race_stale_cas_f64"] = dict(
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
