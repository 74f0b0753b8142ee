"""Deliberately broken atomic backwards: pad_backward_reflect/replicate with one planted fault each.

The comparison design of the atomic-accumulate substrates (exact integer sums, compared bit for
bit) must catch every contribution that is dropped, doubled or misplaced, whatever order the
atomics run in, and the fractional suite must catch a lane update that truncates instead of
rounding to nearest even. Each entry here plants one such fault in a good source; tests assert
that the gate rejects it with output_matches failing. Not a real candidate: it lives under tests/
so `python gate.py` never gates it unless asked.
"""

import importlib.util
from pathlib import Path

_SUBSTRATES = Path(__file__).resolve().parents[2] / "substrates"

# name -> (mode, dtype suffixes, the suite that exposes the fault, text in the CUDA source, its
# replacement); the text must occur once. The planted substrate keeps the good one's full suite
# list, since the gate's suite rules ask for T0_original and two or three targeted suites.
SOURCE_FAULTS = {
    # Every thread whose index is 3 mod 7 adds nothing.
    "dropped": ("reflect", ("f32", "bf16"), "misaligned", "if (o >= n_out) return;",
                "if (o >= n_out) return;\n    if (o % 7 == 3) return;"),
    # Every thread whose index is 1 mod 5 adds its gradient twice.
    "doubled": ("replicate", ("f32", "bf16"), "misaligned", "atomic_accumulate(grad_in + dst, grad_out[o]);",
                "atomic_accumulate(grad_in + dst, grad_out[o]);\n"
                "    if (o % 5 == 1) atomic_accumulate(grad_in + dst, grad_out[o]);"),
    # The right-hand mirror is off by one: 2n - 1 - i instead of 2(n - 1) - i (still in bounds).
    "misplaced": ("reflect", ("f32", "bf16"), "misaligned", "i = 2 * (g.in_shape[d] - 1) - i;",
                  "i = 2 * g.in_shape[d] - 1 - i;"),
    # The lane update truncates (rounds toward zero) instead of rounding to nearest even: integer
    # sums are exact either way, so only the fractional suite can see it.
    "truncates": ("replicate", ("f16", "bf16"), "fractional", "_rn(v); }", "_rz(v); }"),
}


def _load(mode):
    path = _SUBSTRATES / f"candidate_pad_backward_{mode}.py"
    spec = importlib.util.spec_from_file_location(f"broken_backward_base_{mode}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Collector:
    def __init__(self):
        self.PROBLEMS = {}


def register(K, torch, ctypes):
    good = {}
    for mode in ("reflect", "replicate"):
        base = _Collector()
        _load(mode).register(base, torch, ctypes)
        good.update(base.PROBLEMS)

    for fault, (mode, suffixes, suite, old, new) in SOURCE_FAULTS.items():
        for suffix in suffixes:
            entry = good[f"pad_backward_{mode}_{suffix}"]

            assert entry["cuda"].count(old) == 1, f"{fault}: {old!r} is not once in the {mode}_{suffix} source"
            assert suite in [name for name, _n, _builder in entry["suites"]()], f"{fault}: no suite {suite}"
            K.PROBLEMS[f"broken_backward_{fault}_{suffix}"] = dict(entry, cuda=entry["cuda"].replace(old, new))
