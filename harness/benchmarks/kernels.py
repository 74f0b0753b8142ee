"""Time substrates on the GPU: `python -m harness.benchmarks.kernels [NAME ...]`.

Each substrate's kernel runs on trial 0 of its T0_original suite; the baseline, in the same
process, is a device-to-device copy of the same number of bytes (the bandwidth ceiling of a
byte mover). Times are CUDA-event times in milliseconds, medians of --repeats runs after
--warmup runs; bandwidth counts bytes read plus bytes written (`--bytes` per substrate below).
This is not a correctness check: gate first.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Timing:
    name: str
    kernel_ms: float
    copy_ms: float
    bytes_moved: int

    @property
    def kernel_gbps(self) -> float:
        return self.bytes_moved / self.kernel_ms / 1e6

    @property
    def copy_gbps(self) -> float:
        return self.bytes_moved / self.copy_ms / 1e6


def median_ms(run, warmup: int, repeats: int) -> float:
    """Median CUDA-event time of `run()` in milliseconds, after `warmup` untimed calls."""
    import torch

    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def time_entry(entry, backend, warmup: int, repeats: int) -> Timing:
    import torch

    from harness.candidates import call_builder
    from harness.compiler import signature

    kernel = backend.load(entry.cuda, entry.kernel_name, f"{entry.name}.cu")
    builder = dict((name, b) for name, _n, b in entry.suites())["T0_original"]
    inputs = call_builder(builder, 0, backend.device)
    out, grid, block, args = entry.launch(inputs, torch)
    objects = signature.to_ctypes(args)
    moved = out.numel() * out.element_size() + sum(
        x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
    kernel_ms = median_ms(lambda: backend.launch(kernel, grid, block, objects), warmup, repeats)
    # The copy reads and writes moved/2 bytes each way: the same traffic as the kernel.
    source = torch.empty(moved // 2, dtype=torch.uint8, device=backend.device)
    target = torch.empty_like(source)
    copy_ms = median_ms(lambda: target.copy_(source), warmup, repeats)
    backend.synchronize()
    return Timing(entry.name, kernel_ms, copy_ms, moved)


def format_table(timings: list[Timing]) -> str:
    lines = [f"{'substrate':<14} {'MB moved':>9} {'kernel ms':>10} {'GB/s':>7} {'copy GB/s':>10} {'of copy':>8}"]
    for t in timings:
        lines.append(f"{t.name:<14} {t.bytes_moved / 1e6:9.1f} {t.kernel_ms:10.4f} {t.kernel_gbps:7.0f} "
                     f"{t.copy_gbps:10.0f} {t.kernel_gbps / t.copy_gbps:8.0%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.benchmarks.kernels", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="substrates to time (default: every registered one)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs first (default: 10)")
    parser.add_argument("--repeats", type=int, default=100, help="timed runs; the median is kept (default: 100)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the timings as JSON")
    args = parser.parse_args(argv)
    if args.warmup < 0 or args.repeats < 1:
        parser.error(f"--warmup must be at least 0 and --repeats at least 1, not {args.warmup} and {args.repeats}")

    from harness.backends import BackendUnavailable, create_backend
    from harness.candidates import candidate_files, import_candidate, make_entry, register_candidate

    entries = {}
    for path in candidate_files():
        for name, raw in register_candidate(import_candidate(path), path).items():
            entry, problems = make_entry(name, raw, path)
            if entry is not None:
                entries[name] = entry
    unknown = [n for n in args.names if n not in entries]
    if unknown:
        print(f"harness.benchmarks.kernels: error: unknown substrate(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    try:
        backend = create_backend("cuda")
    except BackendUnavailable as error:
        print(f"harness.benchmarks.kernels: error: it times kernels on a GPU: {error}", file=sys.stderr)
        return 1
    timings = [time_entry(entries[n], backend, args.warmup, args.repeats) for n in (args.names or sorted(entries))]
    if args.json:
        args.json.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "device": backend.describe_device(),
            "warmup": args.warmup, "repeats": args.repeats,
            "timings": [dict(asdict(t), kernel_gbps=t.kernel_gbps, copy_gbps=t.copy_gbps) for t in timings],
        }, indent=2) + "\n")
    print(f"{backend.describe_device()}: median of {args.repeats} CUDA-event timings after {args.warmup} warm-up runs")
    print(format_table(timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
