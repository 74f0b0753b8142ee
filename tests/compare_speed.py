"""How long compare_close takes on a KernelBench-sized output: `python tests/compare_speed.py LABEL [--device D]`.

2^26 float32 elements (256 MiB), atol = rtol = 1e-2: a matching output (`rand`, and the same plus 1e-4 * `randn`),
then one with an element off by 1 and a NaN. Each the median of 7 after one warm-up, with the range and the
description, on one line headed LABEL (a tree's name, when two trees are run in turn). On a GPU each call ends with
the device synchronised, so the figures are the whole comparison's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere: the repository's harness

from harness.gate.checks.compare import compare_close  # noqa: E402

ELEMENTS = 1 << 26
RUNS = 7


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    g = torch.Generator().manual_seed(0)
    expected = torch.rand(ELEMENTS, generator=g)
    close = expected + torch.randn(ELEMENTS, generator=g) * 1e-4
    off = close.clone()
    off[12345678] += 1.0
    off[50000000] = float("nan")
    expected, close, off = (x.to(args.device) for x in (expected, close, off))
    for case, got in (("matching", close), ("two mismatches, one NaN", off)):
        compare_close(got, expected, 1e-2, 1e-2)
        seconds = []
        for _ in range(RUNS):
            began = time.perf_counter()
            result = compare_close(got, expected, 1e-2, 1e-2)
            if expected.device.type == "cuda":
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - began)
        print(f"{args.label} {case}: median {statistics.median(seconds):.3f} s of {RUNS} ({min(seconds):.3f}.."
              f"{max(seconds):.3f}); {result.describe()[:150]}")


if __name__ == "__main__":
    main()
