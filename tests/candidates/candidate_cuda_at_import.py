"""A broken candidate: it allocates GPU memory at import, which the spec forbids."""

import importlib.util
from pathlib import Path

import torch

_WARM_UP = torch.zeros(1, device="cuda")  # the planted fault: CUDA work at import

_BASE_PATH = Path(__file__).resolve().parents[2] / "substrates" / "candidate_pad_const.py"


def register(K, torch, ctypes):
    spec = importlib.util.spec_from_file_location("cuda_at_import_base", _BASE_PATH)
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)

    class Collector:
        PROBLEMS = {}

    base.register(Collector, torch, ctypes)
    K.PROBLEMS["broken_cuda_at_import"] = Collector.PROBLEMS["pad_const_b1"]
