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

Where both reports hold more, that is compared too (--statuses-only leaves it out): the --matrix row of each mutant
both give the same status (the trials that ran it and those that killed it, from the schema's coveredBy and killedBy),
and each --checker both ran (whether it is sound, and its verdict on each mutant both detected). A row or a verdict of
a mutant whose access outside every allocation faulted in either report (its status, or what ended its row) is told
apart by memory as above: what it read instead is whatever lay there.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class RowDifference:
    """One mutant's --matrix rows, where both reports give it the same status: the trials that killed it in each."""

    substrate: str
    mutant_id: str
    first: tuple[str, ...]   # the trial tests (`<substrate>/<suite>/<trial>`) that killed it in the first report
    second: tuple[str, ...]
    ran_first: int           # how many trials ran it there
    ran_second: int
    by_memory: bool = False


@dataclass(frozen=True)
class CheckerDifference:
    """A checker's verdict on one mutant ("accepted", "rejected", "not judged", "not counted"), or with no mutant_id its
    soundness ("sound", "unsound"), where the two reports differ."""

    checker: str
    mutant_id: str
    first: str
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
            and any(map(_faulted_outside, (first, second))))


def _faulted_outside(outcome: dict) -> bool:
    """Whether an outcome is a runtime error of an access outside every allocation."""
    return outcome["status"] == "runtime_error" and faulted_outside_every_allocation(outcome.get("detail", ""))


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


def _is_trial(test: str) -> bool:
    """Whether a test id is a suite trial's (`<substrate>/<suite>/<trial>`), not a checker's or an oracle's."""
    parts = test.rsplit("/", 2)
    return len(parts) == 3 and parts[2].isdigit()


def matrix_rows(report: dict) -> dict[tuple[str, str], tuple[frozenset, frozenset]]:
    """(substrate, mutant id) -> (the trials that ran it, those that killed it), for each mutant with a --matrix row
    in the report (the schema's coveredBy and killedBy, their trial tests)."""
    files, rows = report.get("files") or {}, {}
    for name, campaign in report[OWN_KEY]["substrates"].items():
        for mutant in files.get(campaign.get("file"), {}).get("mutants", ()):
            ran = frozenset(test for test in mutant.get("coveredBy", ()) if _is_trial(test))
            if ran:
                rows[(name, mutant["id"])] = (ran, frozenset(t for t in mutant.get("killedBy", ()) if _is_trial(t)))
    return rows


def _row_ends(report: dict) -> dict[tuple[str, str], str]:
    ends = (report[OWN_KEY].get("matrix") or {}).get("rowEnds") or {}
    return {(name, mutant): end for name, by_mutant in ends.items() for mutant, end in by_mutant.items()}


def _memory_decides(report: dict) -> set[tuple[str, str]]:
    """The mutants whose access outside every allocation faulted in the report: their status says so, or what ended
    their --matrix row. What such a kernel reads elsewhere, or whether it faults, is whatever memory lies there."""
    faulted = {key for key, outcome in _outcomes(report).items() if _faulted_outside(outcome)}
    return faulted | {key for key, end in _row_ends(report).items() if faulted_outside_every_allocation(end)}


def _row_comparison(first: dict, second: dict, status_a: dict, status_b: dict,
                    by_memory: set[tuple[str, str]]) -> tuple[int, list[RowDifference]]:
    """(how many mutants both reports give a --matrix row and the same status, those of them whose rows differ);
    `by_memory`: the mutants _memory_decides in either."""
    rows_a, rows_b = matrix_rows(first), matrix_rows(second)
    same = [key for key in sorted(rows_a.keys() & rows_b.keys()) if status_a.get(key) == status_b.get(key)]
    return len(same), [RowDifference(key[0], key[1], tuple(sorted(rows_a[key][1])), tuple(sorted(rows_b[key][1])),
                                     len(rows_a[key][0]), len(rows_b[key][0]), key in by_memory)
                       for key in same if rows_a[key] != rows_b[key]]


CHECKER_VERDICTS = (("accepted", "accepted"), ("rejected", "rejected"), ("unjudged", "not judged"),
                    ("uncounted", "not counted"))


def checker_verdicts(report: dict) -> dict[str, tuple[bool, dict[str, str]]]:
    """checker -> (whether it is sound, mutant id -> "accepted", "rejected", "not judged" or "not counted"), for each
    --checker of the report (its verdicts are on the mutants the suites detect; "not counted" on those of a substrate
    whose unmutated kernel it did not accept)."""
    found = {}
    for name, checker in (report[OWN_KEY].get("checkers") or {}).items():
        verdicts = {mutant: said for key, said in CHECKER_VERDICTS for mutant in checker.get(key, ())}
        found[name] = (bool(checker.get("sound")), verdicts)
    return found


def _checker_comparison(first: dict, second: dict, by_memory: set[tuple[str, str]]
                        ) -> tuple[dict[str, int], list[CheckerDifference], list[str]]:
    """(checker -> how many mutants both reports have its verdict on, the differing soundness and verdicts, a line
    for each checker that only one report ran); `by_memory`: the mutants _memory_decides in either."""
    a, b = checker_verdicts(first), checker_verdicts(second)
    memory_ids = {mutant for _substrate, mutant in by_memory}  # a checker's verdicts are by mutant id
    compared, differences = {}, []
    for name in sorted(a.keys() & b.keys()):
        (sound_a, verdicts_a), (sound_b, verdicts_b) = a[name], b[name]
        if sound_a != sound_b:
            differences.append(CheckerDifference(name, "", *("sound" if s else "unsound" for s in (sound_a, sound_b))))
        both = sorted(verdicts_a.keys() & verdicts_b.keys())
        compared[name] = len(both)
        differences += [CheckerDifference(name, mutant, verdicts_a[mutant], verdicts_b[mutant], mutant in memory_ids)
                        for mutant in both if verdicts_a[mutant] != verdicts_b[mutant]]
    alone = [f"checker {name}: in the {which} report only, not compared"
             for which, names in (("first", a.keys() - b.keys()), ("second", b.keys() - a.keys()))
             for name in sorted(names)]
    return compared, differences, alone


@dataclass
class Comparison:
    """Everything two reports were compared on, and where they differ."""

    mutants: int
    differences: list[StatusDifference]
    detected_in_both: int | None = None  # None: the killers were not compared (--statuses-only)
    killer_differences: list[KillerDifference] = field(default_factory=list)
    rows_compared: int = 0
    row_differences: list[RowDifference] = field(default_factory=list)
    checkers_compared: dict[str, int] = field(default_factory=dict)
    checker_differences: list[CheckerDifference] = field(default_factory=list)
    not_compared: list[str] = field(default_factory=list)

    def every_difference(self) -> list:
        return [*self.differences, *self.killer_differences, *self.row_differences, *self.checker_differences]

    def agree(self) -> bool:
        """Whether the reports agree on everything compared, or differ only where memory decides."""
        return not differences_beyond_memory(self.every_difference())

    def to_json(self) -> dict:
        found = {"mutants": self.mutants, "differences": [d.__dict__ for d in self.differences]}
        if self.detected_in_both is not None:
            found.update(detected_in_both=self.detected_in_both,
                         killer_differences=[d.__dict__ for d in self.killer_differences])
        if self.rows_compared:
            found.update(rows_compared=self.rows_compared, row_differences=[d.__dict__ for d in self.row_differences])
        if self.checkers_compared or self.not_compared:
            found.update(checkers_compared=self.checkers_compared, not_compared=self.not_compared,
                         checker_differences=[d.__dict__ for d in self.checker_differences])
        return found


def compare(first: dict, second: dict, values_only: bool = False, statuses_only: bool = False) -> Comparison:
    """The two reports compared: statuses, and unless `statuses_only` the killers, the --matrix rows and the
    checkers' verdicts. Raises ValueError where either is no campaign report."""
    status_a, status_b = statuses(first, values_only), statuses(second, values_only)
    found = Comparison(len(status_a.keys() | status_b.keys()), _differences(first, second, status_a, status_b))
    if statuses_only:
        return found
    # A mutant a killer is read for has no oracle's verdict: its status reads the same with --values-only.
    found.detected_in_both, found.killer_differences = _killer_comparison(first, second, status_a, status_b)
    by_memory = _memory_decides(first) | _memory_decides(second)
    found.rows_compared, found.row_differences = _row_comparison(first, second, status_a, status_b, by_memory)
    found.checkers_compared, found.checker_differences, found.not_compared = _checker_comparison(first, second,
                                                                                                 by_memory)
    return found


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: {error}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.report_diff",
                                     description="Compare the mutant statuses, the trials that detected them, the "
                                                 "--matrix rows and the --checker verdicts of two campaign reports "
                                                 "(--json).",
                                     epilog="Exit status: 0 they agree (or differ only where memory decides), 1 they "
                                            "differ, 2 unreadable report.")
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--json", action="store_true", help="print the differences as JSON")
    parser.add_argument("--values-only", action="store_true",
                        help="compare what the value suites decided: a mutant a later oracle killed counts as survived")
    parser.add_argument("--statuses-only", action="store_true",
                        help="compare the statuses alone, not which trial detected each mutant, the matrix rows or "
                             "the checkers")
    args = parser.parse_args(argv)
    try:
        found = compare(_read(args.first), _read(args.second), args.values_only, args.statuses_only)
    except ValueError as error:
        print(f"report_diff: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(found.to_json(), indent=2) if args.json else "\n".join(_lines(found, args.first, args.second)))
    return 0 if found.agree() else 1


BY_MEMORY = " (told apart by memory: an access outside every allocation)"


def _trials(tests: set, most: int = 4) -> str:
    named = [test.split("/", 1)[1].replace("/", " trial ") for test in sorted(tests)]
    return ", ".join(named[:most]) + (f" and {len(named) - most} more" if len(named) > most else "")


def _lines(found: Comparison, first: Path, second: Path) -> list[str]:
    lines = [f"{d.mutant_id}: {d.first} in {first}, {d.second} in {second}{BY_MEMORY * d.by_memory}"
             for d in found.differences]
    lines += [f"{d.mutant_id}: {d.status} by {d.first or 'no trial named'} in {first}, by "
              f"{d.second or 'no trial named'} in {second}{BY_MEMORY * d.by_memory}" for d in found.killer_differences]
    for d in found.row_differences:
        only = [f"only in {where}: {_trials(set(mine) - set(other))}"
                for where, mine, other in ((first, d.first, d.second), (second, d.second, d.first))
                if set(mine) - set(other)]
        lines.append(f"{d.mutant_id}: matrix row killed by {len(d.first)} of {d.ran_first} trials in {first}, "
                     f"{len(d.second)} of {d.ran_second} in {second}" + "".join(f"; {o}" for o in only)
                     + BY_MEMORY * d.by_memory)
    lines += [f"checker {d.checker}: {d.first} in {first}, {d.second} in {second}" if not d.mutant_id else
              f"{d.mutant_id}: checker {d.checker} {d.first} it in {first}, {d.second} in {second}"
              f"{BY_MEMORY * d.by_memory}" for d in found.checker_differences]
    lines += found.not_compared
    return [*lines, _summary(found)]


def _summary(found: Comparison) -> str:
    line = f"{found.mutants - len(found.differences)} of {found.mutants} mutants have the same status in both reports"
    if found.detected_in_both is not None:
        line += (f"; {found.detected_in_both - len(found.killer_differences)} of the {found.detected_in_both} "
                 f"detected in both by the same trial")
    if found.rows_compared:
        line += f"; {found.rows_compared - len(found.row_differences)} of {found.rows_compared} matrix rows the same"
    for name, compared in found.checkers_compared.items():
        differing = sum(1 for d in found.checker_differences if d.checker == name and d.mutant_id)
        line += f"; checker {name}: {compared - differing} of {compared} verdicts the same"
    memory = sum(d.by_memory for d in found.every_difference())
    if memory:
        line += (f"; {memory} told apart by memory alone (whether an access outside every allocation faults depends "
                 f"on what lies there: a detection either way)")
    return line


if __name__ == "__main__":
    sys.exit(main())
