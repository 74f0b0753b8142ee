"""`python -m harness.report_diff A.json B.json`: do two campaigns give every mutant the same status?

Reads two reports written by `python -m harness.campaign --json` (the statuses are our own, kept
under the report's `substrateHarness` key, so Equivalent and Duplicate stay apart) and lists each
mutant whose status differs or that only one report has. Used to show that a campaign spread over
several GPUs decides exactly what the same campaign decides on one. A mutant a later oracle
killed (compute-sanitizer's tools, on a survivor of the value suites) reads "killed by <tool>";
with --values-only it reads as the value suites left it ("survived"), so a report made with the
oracles compares with one made before them.

Exit status: 0 the reports agree on every mutant, 1 they differ, 2 a report could not be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.engine.report import OWN_KEY


@dataclass(frozen=True)
class StatusDifference:
    substrate: str
    mutant_id: str
    first: str   # the status in the first report; "absent" when it lacks the mutant
    second: str


def statuses(report: dict, values_only: bool = False) -> dict[tuple[str, str], str]:
    """(substrate, mutant id) -> our status, for every mutant of a campaign report."""
    try:
        substrates = report[OWN_KEY]["substrates"]
    except (KeyError, TypeError):
        raise ValueError(f"not a campaign report: no {OWN_KEY}.substrates") from None
    return {(name, mutant_id): _status(outcome, values_only)
            for name, campaign in substrates.items() for mutant_id, outcome in campaign["outcomes"].items()}


def _status(outcome: dict, values_only: bool) -> str:
    if not outcome.get("oracle"):
        return outcome["status"]
    return "survived" if values_only else f"{outcome['status']} by {outcome['oracle']}"


def status_differences(first: dict, second: dict, values_only: bool = False) -> list[StatusDifference]:
    return _differences(statuses(first, values_only), statuses(second, values_only))


def _differences(a: dict, b: dict) -> list[StatusDifference]:
    return [StatusDifference(key[0], key[1], a.get(key, "absent"), b.get(key, "absent"))
            for key in sorted(a.keys() | b.keys()) if a.get(key) != b.get(key)]


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: {error}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.report_diff",
                                     description="Compare the mutant statuses of two campaign reports (--json).",
                                     epilog="Exit status: 0 same statuses, 1 they differ, 2 unreadable report.")
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--json", action="store_true", help="print the differences as JSON")
    parser.add_argument("--values-only", action="store_true",
                        help="compare what the value suites decided: a mutant a later oracle killed counts as survived")
    args = parser.parse_args(argv)
    try:
        first = statuses(_read(args.first), args.values_only)
        second = statuses(_read(args.second), args.values_only)
        differences = _differences(first, second)
        compared = len(first.keys() | second.keys())
    except ValueError as error:
        print(f"report_diff: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"mutants": compared, "differences": [d.__dict__ for d in differences]}, indent=2))
    else:
        for d in differences:
            print(f"{d.mutant_id}: {d.first} in {args.first}, {d.second} in {args.second}")
        print(f"{compared - len(differences)} of {compared} mutants have the same status in both reports")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
