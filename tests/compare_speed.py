"""How long compare_close takes on a KernelBench-sized output: `python tests/compare_speed.py LABEL [--device D]`.

float32 elements (2^26 by default, 256 MiB; `--elements 1073741824` is kb_matmul_small_k's 4 GiB output), atol =
rtol = 1e-2: a matching output (`rand`, and the same plus 1e-4 * `randn`), then one with an element off by 1 and a
NaN. Each route is timed in the same process: compare's torch route, and on a GPU the CUDA backend's one pass
(Backend.close_figures). A figure is the median of --runs calls after one warm-up, timed on the device with CUDA
events (on the CPU with the clock), with the range; each one-pass line gives its ratio to the torch route's median
and whether the two Comparisons are equal. LABEL heads every line (a tree's name, when two trees are run in turn).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere: the repository's harness

from harness.gate.checks.compare import compare_close  # noqa: E402


def seconds_of(call, device: torch.device) -> float:
    """The seconds one call takes, all its device work included."""
    if device.type != "cuda":
        began = time.perf_counter()
        call()
        return time.perf_counter() - began
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000


def timed(call, device: torch.device, runs: int) -> list[float]:
    call()  # warm-up: the kernel's load, the allocator's blocks
    return [seconds_of(call, device) for _ in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--elements", type=int, default=1 << 26)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    device = torch.device(args.device)
    routes = [("torch route", None)]
    if device.type == "cuda":
        from harness.backends import create_backend

        backend = create_backend("cuda", cache_dir=Path(tempfile.mkdtemp(prefix="compare-speed-")))
        routes.append(("one pass", backend.close_figures))
    g = torch.Generator().manual_seed(0)
    expected = torch.rand(args.elements, generator=g)
    close = expected + torch.randn(args.elements, generator=g) * 1e-4
    off = close.clone()
    off[args.elements // 5] += 1.0
    off[args.elements * 3 // 4] = float("nan")
    expected, close, off = (x.to(device) for x in (expected, close, off))
    for case, got in (("matching", close), ("two mismatches, one NaN", off)):
        baseline, first = None, None
        for route, figures in routes:
            seconds = timed(lambda: compare_close(got, expected, 1e-2, 1e-2, figures), device, args.runs)
            result = compare_close(got, expected, 1e-2, 1e-2, figures)
            median = statistics.median(seconds)
            baseline, first = baseline or median, first or result
            versus = "" if route == routes[0][0] else f", {median / baseline:.3f}x the torch route, same: {result == first}"
            print(f"{args.label} {case}, {route}: median {median:.4f} s of {args.runs} ({min(seconds):.4f}.."
                  f"{max(seconds):.4f}){versus}; {result.describe()[:150]}", flush=True)


if __name__ == "__main__":
    main()
