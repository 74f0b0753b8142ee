"""Does a CUDA context made in one thread leave the process's other thread free to draw on the CPU?

A gate worker's start is mostly its CUDA context (the driver makes them one at a time: MEASUREMENTS.md), and its
first substrate's T0 is mostly CPU draws. Drawing while another thread makes the backend only pays if making it
releases the GIL. Each row is N fresh processes at once, each doing one of:

  draws    five float16 randn draws of get_inputs()'s size for pad_const_b2 (8.4 M values each), nothing else
  backend  harness.backends.create_backend("cuda"), nothing else
  both     the backend made in a thread while the main thread draws; `overlap` = (draws + backend - both) / the
           smaller of the two: 1 when one hides the other entirely, 0 when they ran one after the other

Usage (on the GPU machine, repository root): python tests/context_overlap_probe.py [--at-once 1 8]
"""
import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _draws() -> float:
    import torch

    began = time.perf_counter()
    for t in range(5):
        torch.manual_seed(1000 + t)
        torch.randn(8, 64, 128, 128, dtype=torch.float16)
    return time.perf_counter() - began


def _backend() -> float:
    from harness.backends import create_backend

    began = time.perf_counter()
    create_backend("cuda")
    return time.perf_counter() - began


def _child(mode: str) -> None:
    sys.path.insert(0, str(ROOT))
    import torch  # noqa: F401  (imported before the clock starts, as in a forked worker)

    import harness.backends  # noqa: F401

    input()  # released together
    if mode == "draws":
        print(f"{_draws():.3f}")
    elif mode == "backend":
        print(f"{_backend():.3f}")
    else:
        from concurrent.futures import ThreadPoolExecutor

        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=1) as pool:
            made = pool.submit(_backend)
            _draws()
            made.result()
        print(f"{time.perf_counter() - began:.3f}")


def _row(mode: str, at_once: int) -> float:
    procs = [subprocess.Popen([sys.executable, __file__, "--child", mode], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(at_once)]
    time.sleep(8)  # every child's imports done
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    seconds = [float(p.stdout.readline()) for p in procs]
    for p in procs:
        p.wait()
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at-once", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    for n in args.at_once:
        draws, backend, both = (_row(mode, n) for mode in ("draws", "backend", "both"))
        overlap = (draws + backend - both) / min(draws, backend)
        print(f"{n:2d} at once, medians: draws {draws:.2f} s, backend {backend:.2f} s, both {both:.2f} s; "
              f"overlap {overlap:.2f}", flush=True)


if __name__ == "__main__":
    main()
