"""Deliberately broken substrates: pad_const_b4 with one planted fault each.

Every check of the gate must be able to fail; each entry here breaks exactly one thing, and
tests assert that the gate rejects it for that reason. Not a real candidate: it lives under
tests/ so `python gate.py` never gates it unless asked.
"""

import importlib.util
from pathlib import Path

_BASE_PATH = Path(__file__).resolve().parents[2] / "substrates" / "candidate_pad_const.py"

# name -> (text in the CUDA source, its replacement); each must occur in the source.
SOURCE_FAULTS = {
    "broken_wrong_value": ("out[o] = inside ? in[src] : (elem_t)fill;", "out[o] = inside ? in[src] ^ 1u : (elem_t)fill;"),
    "broken_unwritten": ("if (o >= n_out) return;", "if (o >= n_out) return;\n    if (o % 7 == 3) return;"),
    "broken_out_of_bounds": ("if (o >= n_out) return;", "if (o >= n_out + 16) return;"),
    "broken_changes_input": ("out[o] = inside ? in[src] : (elem_t)fill;",
                             "out[o] = inside ? in[src] : (elem_t)fill;\n    if (inside) ((elem_t*)in)[src] = ~in[src];"),
    "broken_illegal_address": ("out[o] = inside", "out[o + (1LL << 40)] = inside"),
    "broken_hangs": ("if (o >= n_out) return;",
                     "if (o >= n_out) return;\n    while (((volatile elem_t*)out)[0] != 0x13579BDFu) { }"),
    "broken_compile_error": ("rest = rest / g.out_shape[d];", "rest = rest / g.out_shap[d];"),
}


def _load_base():
    spec = importlib.util.spec_from_file_location("broken_pad_base", _BASE_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Collector:
    def __init__(self):
        self.PROBLEMS = {}


def register(K, torch, ctypes):
    base = _Collector()
    _load_base().register(base, torch, ctypes)
    good = base.PROBLEMS["pad_const_b4"]
    good_suites = good["suites"]

    def small_suites():
        # Only the misaligned suite: enough to expose each fault, quick to run.
        return [s for s in good_suites() if s[0] == "misaligned"]

    quick = dict(good, suites=small_suites)
    for name, (old, new) in SOURCE_FAULTS.items():
        assert old in quick["cuda"], f"{name}: {old!r} is not in the source"
        K.PROBLEMS[name] = dict(quick, cuda=quick["cuda"].replace(old, new))

    def narrowed_launch(inputs, torch):
        out, grid, block, args = good["launch"](inputs, torch)
        args[2] = (ctypes.c_int, args[2][1])  # the kernel takes long long n_out
        return out, grid, block, args

    K.PROBLEMS["broken_wrong_arguments"] = dict(quick, launch=narrowed_launch)

    def dangling_launch(inputs, torch):
        out, grid, block, args = good["launch"](inputs, torch)
        scratch = inputs[0].clone()  # freed when this function returns
        args[0] = (ctypes.c_void_p, scratch.data_ptr())
        return out, grid, block, args

    K.PROBLEMS["broken_dangling_pointer"] = dict(quick, launch=dangling_launch)

    def flipped_ref(x, pads, value):
        out = good["ref"](x, pads, value)
        flat = out.reshape(-1)
        flat[0:1] = (flat[0:1].view(torch.int32) ^ 1).view(out.dtype)
        return out

    K.PROBLEMS["broken_ref"] = dict(quick, ref=flipped_ref)

    K.PROBLEMS["broken_unknown_problem"] = dict(quick, kb_file="pad_const_b3.py")
    K.PROBLEMS["broken_missing_key"] = {k: v for k, v in quick.items() if k != "probe"}

    def raising_suites():
        def builder(t, device):
            raise IndexError(f"no trial {t}")

        return [("misaligned", 2, builder)]

    K.PROBLEMS["broken_builder"] = dict(quick, suites=raising_suites)
