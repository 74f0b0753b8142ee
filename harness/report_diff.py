"""`python -m harness.report_diff A.json B.json`: do two campaigns give every mutant the same status and killer?

Reads two reports written by `python -m harness.campaign --json` (the statuses are our own, kept
under the report's `substrateHarness` key, so Equivalent and Duplicate stay apart) and lists each
mutant whose status differs or that only one report has, then each mutant detected in both (killed,
a runtime error, a timeout) whose killer differs: the trial that detected it ("misaligned trial 6"),
the first of the trials a worker ran in its order that failed. Used to show that a campaign spread
over several GPUs, or made faster, decides exactly what the same campaign decides on one, but for
what no campaign decides: whether a kernel's access outside every allocation faults or reads whatever
lies there (a neighbouring buffer of the worker, the trials it keeps on the device, the order of its
allocations). Such a mutant may be a runtime error in one report and killed in the other, or faulted
on another trial: a detection either way, listed as told apart by memory and not counted as a
difference. A mutant a later oracle killed (compute-sanitizer's tools, on a survivor of the value
suites) reads "killed by <tool>"; with --values-only it reads as the value suites left it
("survived"), so a report made with the oracles compares with one made before them. --statuses-only
leaves the killers out.

Exit status: 0 the reports agree on every mutant (or differ only by memory), 1 they differ, 2 a report
could not be read.
"""

from __future__ import annotations

import argparse
import json
import re
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
    by_memory: bool = False  # both detected, told apart by an access outside every allocation (told_apart_by_memory)


@dataclass(frozen=True)
class KillerDifference:
    substrate: str
    mutant_id: str
    status: str  # the same in both reports
    first: str   # the killer in the first report ("" where its detail names no trial)
    second: str
    by_memory: bool = False


DETECTED = ("killed", "runtime_error", "timeout")
# A detail that starts with the trial that decided it ("misaligned trial 6: output_matches: ..."), or that names the
# step a worker was lost in ("the worker process died during <mutant id> wide_pads trial 2 (killed by signal ...)",
# "timed out after 3 s during <mutant id> probe trial 1 ...").
_TRIAL = re.compile(r"^([A-Za-z0-9_]+ trial \d+):")
_LOST_DURING = re.compile(r"\bduring \S+ ([A-Za-z0-9_]+ trial \d+)\b")
# A fault of an access outside every allocation: the GPU's (the address check foresees it as the GPU would raise it)
# and the CPU backend's.
_OUTSIDE_EVERY_ALLOCATION = re.compile(r"CUDA_ERROR_ILLEGAL_ADDRESS|outside every (allocation|mapping)")


def _outcomes(report: dict) -> dict[tuple[str, str], dict]:
    try:
        substrates = report[OWN_KEY]["substrates"]
    except (KeyError, TypeError):
        raise ValueError(f"not a campaign report: no {OWN_KEY}.substrates") from None
    return {(name, mutant_id): outcome
            for name, campaign in substrates.items() for mutant_id, outcome in campaign["outcomes"].items()}


def statuses(report: dict, values_only: bool = False) -> dict[tuple[str, str], str]:
    """(substrate, mutant id) -> our status, for every mutant of a campaign report."""
    return {key: _status(outcome, values_only) for key, outcome in _outcomes(report).items()}


def killers(report: dict) -> dict[tuple[str, str], str]:
    """(substrate, mutant id) -> the trial that detected it, for every mutant of the report killed, in a runtime error
    or timed out by the value suites ("" where the detail names no trial: a fault while loading, say)."""
    found = {}
    for key, outcome in _outcomes(report).items():
        if outcome["status"] in DETECTED and not outcome.get("oracle"):
            detail = outcome.get("detail", "")
            match = _TRIAL.match(detail) or _LOST_DURING.search(detail)
            found[key] = match.group(1) if match else ""
    return found


def faulted_outside_every_allocation(detail: str) -> bool:
    """Whether a runtime error's detail is a fault of an access outside every allocation (the GPU's, or the CPU
    backend's), which where memory lies decides."""
    return bool(_OUTSIDE_EVERY_ALLOCATION.search(detail))


def told_apart_by_memory(first: dict, second: dict) -> bool:
    """Whether two outcomes of one mutant differ only as the memory around its buffers decides: both detected by the
    value suites, and one of them a runtime error of an access outside every allocation, which the other run's
    memory may have mapped (then read, and the trial failed, or the fault met on a later trial)."""
    return (not first.get("oracle") and not second.get("oracle")
            and first["status"] in DETECTED and second["status"] in DETECTED
            and any(outcome["status"] == "runtime_error" and faulted_outside_every_allocation(outcome.get("detail", ""))
                    for outcome in (first, second)))


def _status(outcome: dict, values_only: bool) -> str:
    if not outcome.get("oracle"):
        return outcome["status"]
    return "survived" if values_only else f"{outcome['status']} by {outcome['oracle']}"


def status_differences(first: dict, second: dict, values_only: bool = False) -> list[StatusDifference]:
    """The mutants whose status differs, or that one report lacks; those told apart by memory alone say so."""
    return _differences(first, second, statuses(first, values_only), statuses(second, values_only))


def differences_beyond_memory(differences: list) -> list:
    """The differences (status or killer) that are not told apart by memory alone: the two campaigns disagree."""
    return [difference for difference in differences if not difference.by_memory]


def _differences(first: dict, second: dict, a: dict, b: dict) -> list[StatusDifference]:
    outcomes_a, outcomes_b = _outcomes(first), _outcomes(second)
    return [StatusDifference(key[0], key[1], a.get(key, "absent"), b.get(key, "absent"),
                             key in a and key in b and told_apart_by_memory(outcomes_a[key], outcomes_b[key]))
            for key in sorted(a.keys() | b.keys()) if a.get(key) != b.get(key)]


def killer_differences(first: dict, second: dict) -> list[KillerDifference]:
    """The mutants with the same status in both reports whose killers differ."""
    return _killer_comparison(first, second, statuses(first), statuses(second))[1]


def _killer_comparison(first: dict, second: dict, status_a: dict, status_b: dict) -> tuple[int, list[KillerDifference]]:
    """(how many mutants both reports detected with the same status, those of them whose killers differ), from the
    reports and their statuses."""
    a, b, outcomes_a, outcomes_b = killers(first), killers(second), _outcomes(first), _outcomes(second)
    same = [key for key in sorted(a.keys() & b.keys()) if status_a[key] == status_b[key]]
    return len(same), [KillerDifference(key[0], key[1], status_a[key], a[key], b[key],
                                        told_apart_by_memory(outcomes_a[key], outcomes_b[key]))
                       for key in same if a[key] != b[key]]


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: {error}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.report_diff",
                                     description="Compare the mutant statuses, and the trials that detected them, of "
                                                 "two campaign reports (--json).",
                                     epilog="Exit status: 0 same statuses and killers, 1 they differ, 2 unreadable "
                                            "report.")
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--json", action="store_true", help="print the differences as JSON")
    parser.add_argument("--values-only", action="store_true",
                        help="compare what the value suites decided: a mutant a later oracle killed counts as survived")
    parser.add_argument("--statuses-only", action="store_true",
                        help="compare the statuses alone, not which trial detected each mutant")
    args = parser.parse_args(argv)
    try:
        first_report, second_report = _read(args.first), _read(args.second)
        first = statuses(first_report, args.values_only)
        second = statuses(second_report, args.values_only)
        differences = _differences(first_report, second_report, first, second)
        compared = len(first.keys() | second.keys())
        # A mutant a killer is read for has no oracle's verdict: its status reads the same with --values-only.
        detected_in_both, killer_changes = _killer_comparison(first_report, second_report, first, second)
        if args.statuses_only:
            killer_changes = []
    except ValueError as error:
        print(f"report_diff: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"mutants": compared, "differences": [d.__dict__ for d in differences],
                          **({} if args.statuses_only else {"detected_in_both": detected_in_both,
                                                            "killer_differences": [d.__dict__ for d in killer_changes]})},
                         indent=2))
    else:
        _print_differences(args, differences, killer_changes, compared, detected_in_both)
    return 1 if differences_beyond_memory(differences) or differences_beyond_memory(killer_changes) else 0


def _print_differences(args, differences: list, killer_changes: list, compared: int, detected_in_both: int) -> None:
    by_memory = " (told apart by memory: an access outside every allocation)"
    for d in differences:
        print(f"{d.mutant_id}: {d.first} in {args.first}, {d.second} in {args.second}{by_memory * d.by_memory}")
    for d in killer_changes:
        print(f"{d.mutant_id}: {d.status} by {d.first or 'no trial named'} in {args.first}, by "
              f"{d.second or 'no trial named'} in {args.second}{by_memory * d.by_memory}")
    line = f"{compared - len(differences)} of {compared} mutants have the same status in both reports"
    if not args.statuses_only:
        line += (f"; {detected_in_both - len(killer_changes)} of the {detected_in_both} detected in both "
                 f"by the same trial")
    memory = sum(d.by_memory for d in (*differences, *killer_changes))
    if memory:
        line += (f"; {memory} told apart by memory alone (whether an access outside every allocation faults depends "
                 f"on what lies there: a detection either way)")
    print(line)


if __name__ == "__main__":
    sys.exit(main())
