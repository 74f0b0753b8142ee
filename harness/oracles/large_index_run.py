"""The program of the large-index oracle: one substrate's unmutated kernel, then its survivors, on one large trial.

`python -m harness.oracles.large_index_run PLAN.json EVENTS.jsonl`; a campaign runs it in a worker forked
from the fork server (`run_in_worker`), a new one in milliseconds after a kernel that ends one. The trial is T0's trial 0 tiled
along its first axis (every input of the first input's shape alike, so a mask stays aligned; pads
and scalars unchanged), enough times that the input and the output both have more than
`min_elements` elements: the same values, the same pads, so within every precondition T0 meets,
and indices past 2^31 (the contract's counts are u32: `min_elements` stays below 2^32). The
official Model's output is made once (the tiling is done on the device; a device without the memory
for it makes the program say `skipped` with the bytes); then each kernel runs once and is compared as the gate
compares. Events: `trial` (its shapes), then a `result` per kernel, the unmutated source first; a
kernel that faults, or changes an input or the official output (there are no guard bands at this
size), is killed and ends the process, and the parent starts another for the kernels after it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LOST_EXIT = 3


def _tiled_elements(main_shape, output_shape, factor: int, torch) -> tuple[int, int]:
    """(first input, output) element counts once the trial is tiled `factor` times along axis 0."""
    rows, out_rows = main_shape[0], output_shape[0]
    per_row_in = int(torch.Size(main_shape).numel()) // rows
    per_row_out = int(torch.Size(output_shape).numel()) // max(1, out_rows)
    # the pads add to (or take from) axis 0 the same rows whatever the factor
    return factor * rows * per_row_in, (factor * rows + out_rows - rows) * per_row_out


def tile_factor(inputs: list, output_shape, min_elements: int, torch) -> int:
    """How many times T0 trial 0 (`inputs`, its official output of `output_shape`) is tiled along axis 0 so
    that its first input and its output both have more than `min_elements` elements (a power of two)."""
    factor = 1
    while min(_tiled_elements(inputs[0].shape, output_shape, factor, torch)) <= min_elements:
        factor *= 2
    return factor


def tiled(inputs: list, factor: int, device, torch) -> list:
    """Every input of the first input's shape repeated `factor` times along axis 0, on `device`."""
    shape = inputs[0].shape
    return [x.to(device).repeat(factor, *[1] * (x.dim() - 1)) if isinstance(x, torch.Tensor) and x.shape == shape
            else (x.to(device) if isinstance(x, torch.Tensor) else x) for x in inputs]


def needed_bytes(inputs: list, output_shape, output_dtype, factor: int, torch) -> int:
    """The device memory the trial takes: its inputs, and its output three times over (the official one,
    a kernel's, the comparison's chunks and the Model's own temporaries, roughly)."""
    main = inputs[0]
    in_bytes = sum(x.numel() * x.element_size() * (factor if x.shape == main.shape else 1)
                   for x in inputs if isinstance(x, torch.Tensor))
    _in, out_elements = _tiled_elements(main.shape, output_shape, factor, torch)
    return in_bytes + 3 * out_elements * output_dtype.itemsize


def _write(events, **record) -> None:
    events.write(json.dumps(record) + "\n")
    events.flush()


def main(argv: list[str]) -> int:
    import torch

    from harness.backends import create_backend
    from harness.candidates import import_candidate, make_entry, register_candidate
    from harness.problems import ProblemSearch, load_problem
    from harness.suite_rules import official_inputs

    plan = json.loads(Path(argv[0]).read_text())
    if plan.get("watch_pid"):  # the campaign: gone, this run is for nothing
        from harness.worker import watch_process

        watch_process(plan["watch_pid"])
    backend = create_backend(plan["backend"], cache_dir=Path(plan["cache_dir"]) if plan.get("cache_dir") else None)
    device = backend.device
    path = Path(plan["file"])
    entry, _problems = make_entry(plan["name"], register_candidate(import_candidate(path), path)[plan["name"]], path)
    problem = load_problem(entry.kb_file, ProblemSearch.for_candidate(path, Path(plan["kb_root"])
                                                                      if plan.get("kb_root") else None))
    model = problem.build_model(device)
    small = official_inputs(problem, 0)
    with torch.no_grad():
        small_out = model(*[x.to(device) if isinstance(x, torch.Tensor) else x for x in small])
    factor = tile_factor(small, tuple(small_out.shape), plan["min_elements"], torch)
    need = needed_bytes(small, tuple(small_out.shape), small_out.dtype, factor, torch)
    free, total = backend.memory_info()
    with open(argv[1], "a") as events:
        if total and need > free:
            _write(events, event="skipped", why=f"the large trial needs about {need / 2**30:.1f} GiB of device "
                                               f"memory; {free / 2**30:.1f} GiB of {total / 2**30:.1f} GiB are free")
            return 0
        inputs = tiled(small, factor, device, torch)
        del small_out
        with torch.no_grad():
            expected = model(*inputs)
        _write(events, event="trial", factor=factor, out=list(expected.shape),
               shapes=[list(x.shape) for x in inputs if isinstance(x, torch.Tensor)])
        return _judge_all(plan, entry, backend, inputs, expected, events, torch)


def _judge_all(plan, entry, backend, inputs, expected, events, torch) -> int:
    from harness import signature
    from harness.compare import compare
    from harness.guards import tensor_checksum

    sums = [tensor_checksum(x) if isinstance(x, torch.Tensor) else None for x in inputs]
    expected_sum = tensor_checksum(expected)

    def judge(key: str, cuda: str) -> bool:
        try:
            kernel = backend.load(cuda, entry.kernel_name, f"{key}.cu")
            out, grid, block, args = entry.launch(inputs, torch)
        except Exception as error:
            _write(events, event="result", key=key, killed=False, error=f"{type(error).__name__}: {error}")
            return True
        try:
            backend.launch(kernel, tuple(grid), tuple(block), signature.to_ctypes(args))
            backend.synchronize()
        except Exception as error:  # a fault on an input within the contract: detected
            _write(events, event="result", key=key, killed=True, ends=True,
                   detail=f"the kernel faulted: {type(error).__name__}: {error}")
            return False
        comparison = compare(out, expected, entry.tolerance)
        del out
        # No guard bands here: a kernel that wrote outside its output may have changed what the next is judged
        # by. It is killed for that, and a fresh process takes the kernels after it.
        harmed = [f"input {i}" for i, (x, before) in enumerate(zip(inputs, sums))
                  if before is not None and tensor_checksum(x) != before]
        harmed += ["the official output"] if tensor_checksum(expected) != expected_sum else []
        if harmed:
            _write(events, event="result", key=key, killed=True, ends=True,
                   detail=f"wrote outside its output: {', '.join(harmed)} changed")
            return False
        _write(events, event="result", key=key, killed=not comparison.ok,
               detail="" if comparison.ok else comparison.describe())
        return True

    for key, cuda in plan["kernels"]:  # the unmutated source first, under the substrate's own name
        if not judge(key, cuda):
            return LOST_EXIT
    return 0


def run_in_worker(plan_path: str, events_path: str, stderr_path: str, conn) -> None:
    """main() as a campaign's forked worker runs it (harness.engine.judge): its stderr to a file the parent
    reads for the words of an end, its exit status main's."""
    import os

    log = open(stderr_path, "a", buffering=1)
    os.dup2(log.fileno(), 2)
    sys.stderr = log
    conn.close()  # the parent waits for this process's exit, not for messages
    sys.exit(main([plan_path, events_path]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
