"""A race seeded by hand: pad_backward_replicate_f16 whose sub-word CAS clobbers the other lane.

The thread carries the other 16-bit lane of the word over from its first read of the word, not from
the value its last CAS saw: a retry after the neighbour's lane changed swaps the neighbour's old value
back in, losing its contribution. Right whenever the two lanes are not updated at once: only contention
shows it (on the GPU, and on the CPU backend, whose atomics yield to the block's next thread). Not a
real candidate: it lives under tests/, so `python gate.py` gates it only when asked.
"""

import importlib.util
from pathlib import Path

BASE = Path(__file__).resolve().parents[2] / "substrates" / "candidate_pad_backward_replicate.py"
DTYPE = "float16"
GOOD = """    unsigned int old = *word;
    for (int tries = 0; tries < MAX_CAS_TRIES; ++tries) {
        unsigned short lane = (unsigned short)(old >> shift);
        unsigned short sum = lane_bits(narrow(widen(lane_value(lane)) + add));
        unsigned int next = (old & ~(0xFFFFu << shift)) | ((unsigned int)sum << shift);"""
BUG = """    unsigned int first = *word;
    unsigned int old = first;
    for (int tries = 0; tries < MAX_CAS_TRIES; ++tries) {
        unsigned short lane = (unsigned short)(old >> shift);
        unsigned short sum = lane_bits(narrow(widen(lane_value(lane)) + add));
        // BUG: the other lane from the first read, stale once the neighbour has updated it
        unsigned int next = (first & ~(0xFFFFu << shift)) | ((unsigned int)sum << shift);"""


def register(K, torch, ctypes):
    spec = importlib.util.spec_from_file_location("race_lane_clobber_base", BASE)
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    good = base.cuda_source(DTYPE)
    assert good.count(GOOD) == 1
    name = base.substrate_name(DTYPE)
    K.PROBLEMS["race_lane_clobber_f16"] = dict(
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
