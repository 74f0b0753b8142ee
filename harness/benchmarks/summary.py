"""`python -m harness.benchmarks.summary RUN.json ...`: bench_gate's runs (`--json`), many calls, one table.

KernelBench's corpus does not fit one device call: its rows come from several runs of
`python -m harness.benchmarks.gate --json`. This reads them (files in the order given, later ones newer) and keeps
each substrate's latest measured row: a gate verdict and a baseline that ran every trial. It prints each row's gate
and baseline wall seconds, their ratio, the memory ratio, the device and the file; then, per device (ratios of
different machines are not comparable), the sum of the gates' seconds against the sum of the baselines', and the rows
over `--over` (the issue's 1.2x by default). `--json PATH` writes the same.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

EXIT_OK, EXIT_USAGE = 0, 2


@dataclass(frozen=True)
class Measured:
    """One substrate's latest row with both sides measured."""

    substrate: str
    gate_seconds: float
    baseline_seconds: float
    memory_ratio: float | None
    verdict: str
    device: str
    date: str
    commit: str
    source: str  # the file it came from

    @property
    def ratio(self) -> float:
        return self.gate_seconds / self.baseline_seconds


def measured_rows(run: dict, source: str) -> list[Measured]:
    """The rows of one bench_gate run whose gate ran and whose baseline ran every trial, in the run's order."""
    found = []
    for row in run.get("rows", []):
        baseline = row.get("baseline") or {}
        complete = baseline.get("trials_run") is not None and baseline.get("trials_run") == baseline.get("trials")
        if row.get("gate_verdict") and row.get("gate_wall_seconds") and complete and baseline.get("wall_seconds"):
            found.append(Measured(row["substrate"], row["gate_wall_seconds"], baseline["wall_seconds"],
                                  row.get("memory_ratio"), row["gate_verdict"], run.get("device") or "?",
                                  run.get("date", ""), run.get("commit") or "", source))
    return found


def latest(runs: list[tuple[str, dict]]) -> list[Measured]:
    """Each substrate's last measured row over `runs` (oldest first), in the order substrates were first seen."""
    kept: dict[str, Measured] = {}
    for source, run in runs:
        for row in measured_rows(run, source):
            kept[row.substrate] = row
    return list(kept.values())


def totals(rows: list[Measured]) -> dict[str, dict]:
    """Per device: the rows, the gates' and the baselines' seconds summed, and the ratio of the sums."""
    by_device: dict[str, dict] = {}
    for row in rows:
        t = by_device.setdefault(row.device, {"rows": 0, "gate_seconds": 0.0, "baseline_seconds": 0.0})
        t["rows"] += 1
        t["gate_seconds"] += row.gate_seconds
        t["baseline_seconds"] += row.baseline_seconds
    for t in by_device.values():
        t["ratio"] = t["gate_seconds"] / t["baseline_seconds"]
    return by_device


def format_summary(rows: list[Measured], over: float) -> str:
    width = max([len("substrate")] + [len(r.substrate) for r in rows])
    lines = [f"{'substrate':<{width}}  verdict   gate s  base s  time x  mem x  device / file"]
    for r in rows:
        memory = f"{r.memory_ratio:.2f}" if r.memory_ratio is not None else "n/a"
        lines.append(f"{r.substrate:<{width}}  {r.verdict:<8} {r.gate_seconds:7.1f} {r.baseline_seconds:7.1f} "
                     f"{r.ratio:7.2f} {memory:>6}  {r.device} / {r.source}")
    for device, t in totals(rows).items():
        lines.append(f"{device}: {t['rows']} substrate(s), gates {t['gate_seconds']:.1f} s against baselines "
                     f"{t['baseline_seconds']:.1f} s: {t['ratio']:.2f}x")
    slow = [r for r in rows if r.ratio > over]
    lines.append(f"over {over:g}x: " + (", ".join(f"{r.substrate} {r.ratio:.2f}x" for r in slow) if slow else "none"))
    return "\n".join(lines)


def _read(path: Path) -> dict:
    run = json.loads(path.read_text())
    if not isinstance(run, dict) or not isinstance(run.get("rows"), list):
        raise ValueError("not a bench_gate run (no rows)")
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.benchmarks.summary", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN.json",
                        help="bench_gate --json files, oldest first (a later row of a substrate replaces an earlier)")
    parser.add_argument("--over", type=float, default=1.2, help="name the rows whose time ratio passes this "
                                                                  "(default: 1.2)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the rows and the totals as JSON")
    args = parser.parse_args(argv)
    runs = []
    for path in args.runs:
        try:
            runs.append((str(path), _read(path)))
        except (OSError, ValueError) as error:
            parser.error(f"{path}: {error}")
    rows = latest(runs)
    if not rows:
        parser.error("no row of these runs has both a gate and a complete baseline")
    print(format_summary(rows, args.over))
    if args.json:
        args.json.write_text(json.dumps({"rows": [dict(asdict(r), ratio=r.ratio) for r in rows],
                                         "totals": totals(rows), "over": args.over}, indent=2) + "\n")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
