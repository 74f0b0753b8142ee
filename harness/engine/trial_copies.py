"""A campaign's trials, built once per substrate and kept in host memory for the workers that come after a fault.

On the GPU a mutant that faults ends its worker (the CUDA context is lost), and the worker that takes over used to
build the substrate's trials again: the builders' draws on the CPU and the official outputs (on the H200, 0.41 and
0.17 s a worker, 100 of the 128 workers of a campaign over the 28). The first worker of a substrate now writes its
trials (inputs, official outputs, whether those hold poison) to a file in the campaign's folder, under /dev/shm
where there is one; a later worker maps that file and copies the tensors to its device. The builders are
deterministic (the gate built every trial twice under two RNG states), so the copy is the trials a rebuild gives.

A file is written whole under a temporary name and renamed, so a reader never sees half of one; a substrate whose
trials exceed MAX_BYTES, or do not fit the folder's free space twice over, is not written (its workers build).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

MAX_BYTES = 4 * 2**30
SHARED_MEMORY = Path("/dev/shm")


def trials_bytes(trials: list) -> int:
    import torch

    return sum(x.numel() * x.element_size() for trial in trials for x in [*trial.inputs, trial.expected]
               if isinstance(x, torch.Tensor))


def copy_path(folder: str, name: str) -> Path:
    return Path(folder) / f"{name}.trials.pt"


def save(path: Path, trials: list) -> bool:
    """Write `trials` (harness.engine.worker.Trial) to `path`, their tensors moved to the host; False where they are
    too large for MAX_BYTES or the folder's free space, and nothing is written."""
    import torch

    size = trials_bytes(trials)
    if size > MAX_BYTES or shutil.disk_usage(path.parent).free < 2 * size:
        return False
    on_host = [{"suite": trial.suite, "t": trial.t, "expected_poison": trial.expected_poison,
                "inputs": [x.cpu() if isinstance(x, torch.Tensor) else x for x in trial.inputs],
                "expected": trial.expected.cpu() if isinstance(trial.expected, torch.Tensor) else trial.expected}
               for trial in trials]
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    torch.save(on_host, partial)
    os.replace(partial, path)
    return True


def load(path: Path, device) -> list | None:
    """The trials written to `path`, their tensors on `device`; None where there is no such file."""
    import torch

    from harness.engine.worker import Trial

    try:
        on_host = torch.load(path, mmap=True, weights_only=True)
    except FileNotFoundError:
        return None

    def placed(x):
        return x.to(device) if isinstance(x, torch.Tensor) else x

    return [Trial(record["suite"], record["t"], [placed(x) for x in record["inputs"]], placed(record["expected"]),
                  None if record["expected_poison"] is None else tuple(record["expected_poison"]))
            for record in on_host]


@contextlib.contextmanager
def campaign_folder(backend: str):
    """The folder a campaign's workers keep their trials in, removed when the campaign ends; None on the CPU
    backend, whose workers a fault seldom ends (the copy would cost more than it saves)."""
    if backend != "cuda":
        yield None
        return
    where = SHARED_MEMORY if SHARED_MEMORY.is_dir() and os.access(SHARED_MEMORY, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="harness-trials-", dir=where) as folder:
        yield folder
