"""The full kill matrix of a `--matrix` campaign: its cells, its rows, and what its analyses print and store.

Under `--matrix` a worker runs each mutant on every trial of every suite, in the suites' order, past its first
failure; a fault (or a timeout, which the parent sees) ends the mutant's row. Each trial gives a `Cell`, kept in
the mutant's stored result under `cells`, so a matrix resumes as any campaign does: a mutant whose stored result
has no cells (a campaign without `--matrix` stored it) runs again. `harness.engine.kill_matrix` analyses the rows;
this module turns stored results into its rows and its answers into the report's JSON and the terminal's lines.
Pure: no torch.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from harness.engine import kill_matrix
from harness.engine.kill_matrix import MutantRow, trial_test_id

T0_SUITE = "T0_original"  # harness.gate.checks.suite_rules.T0_NAME, named here without importing the suites' rules (torch)
CELLS = "cells"  # the stored result's key


class CellStatus(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"  # a check of the trial failed: `check` names it
    FAULT = "fault"  # the kernel faulted: the row ends here
    TIMEOUT = "timeout"  # the worker was silent past its limit on this trial: the row ends here
    SKIPPED = "skipped"  # an accumulating kernel failed where the unmutated kernel fails too (another sum order)


KILLING = frozenset({CellStatus.FAILED, CellStatus.FAULT, CellStatus.TIMEOUT})


@dataclass(frozen=True)
class Cell:
    suite: str
    trial: int
    status: CellStatus
    check: str = ""  # the first check the trial failed (output_matches, writes_in_bounds, ...)
    detail: str = ""
    max_abs_error: float | None = None  # of the first output comparison, where one was made
    max_rel_error: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "status", CellStatus(self.status))

    @property
    def where(self) -> str:
        return f"{self.suite} trial {self.trial}"

    def to_json(self) -> dict:
        """The stored form; what is empty is left out (a matrix holds every mutant's every trial)."""
        record = {"suite": self.suite, "trial": self.trial, "status": self.status.value, "check": self.check,
                  "detail": self.detail, "maxAbsError": self.max_abs_error, "maxRelError": self.max_rel_error}
        return {key: value for key, value in record.items() if value not in ("", None)}

    @staticmethod
    def from_json(record: dict) -> "Cell":
        return Cell(record["suite"], int(record["trial"]), CellStatus(record["status"]), record.get("check", ""),
                    record.get("detail", ""), record.get("maxAbsError"), record.get("maxRelError"))


def failed_cell(suite: str, trial: int, failure: str, errors: tuple = (None, None)) -> Cell:
    """The cell of a trial whose first failed check is `failure`, as harness.engine.worker.first_failure words it
    ("check: detail")."""
    check, _, detail = failure.partition(": ")
    return Cell(suite, trial, CellStatus.FAILED, check, detail, *errors)


def row_verdict(cells: list[Cell]) -> tuple[str, str]:
    """A row's status (as harness.engine.report.MutantStatus values) and detail: the first cell that is not a pass
    decides, as the first failing trial decides a campaign without --matrix."""
    for cell in cells:
        if cell.status is CellStatus.FAILED:
            return "killed", f"{cell.where}: {cell.check}: {cell.detail}"
        if cell.status is CellStatus.FAULT:
            return "runtime_error", f"{cell.where}: {cell.detail}"
        if cell.status is CellStatus.TIMEOUT:
            return "timeout", f"{cell.where}: {cell.detail}"
    return "survived", f"passed all {len(cells)} trials"


def stored_cells(record: dict | None) -> list[Cell] | None:
    """The cells of a stored result, or None where it holds none (stored without --matrix)."""
    if record is None or CELLS not in record:
        return None
    return [Cell.from_json(cell) for cell in record[CELLS]]


def row_end(cells: list[Cell]) -> str:
    """The fault or timeout that ended a row ("T0_original trial 3: fault: <detail>"), or "" for a row that ran to
    its last trial and passed or failed there: a row that covers fewer trials than its neighbours says why."""
    if cells and cells[-1].status in (CellStatus.FAULT, CellStatus.TIMEOUT):
        return f"{cells[-1].where}: {cells[-1].status.value}: {cells[-1].detail}"
    return ""


def mutant_row(substrate: str, mutant_id: str, cells: list[Cell]) -> MutantRow:
    tests = [(trial_test_id(substrate, cell.suite, cell.trial), cell.status) for cell in cells]
    return MutantRow(mutant_id, frozenset(test for test, _ in tests),
                     frozenset(test for test, status in tests if status in KILLING))


def by_suite_name(rows: list[MutantRow]) -> list[MutantRow]:
    """The rows with each test renamed `<suite>/<substrate>:<trial>`: kill_matrix's suites are then the suites'
    names over every substrate (T0_original of every substrate one suite), where a test id keeps them apart."""
    def renamed(test: str) -> str:
        substrate, suite, trial = test.rsplit("/", 2)
        return f"{suite}/{substrate}:{trial}"

    return [MutantRow(row.mutant, frozenset(map(renamed, row.covered)), frozenset(map(renamed, row.killed_by)))
            for row in rows]


def _suite_name(test: str) -> str:
    return test.rsplit("/", 2)[-2]


def _percent(share: float) -> float:
    return round(100.0 * share, 2)


def analyses(rows: list[MutantRow]) -> dict:
    """kill_matrix's answers over `rows` (test ids `<substrate>/<suite>/<trial>`), suites pooled by name."""
    pooled = by_suite_name(rows)
    suites = sorted({kill_matrix.suite_of(test) for row in pooled for test in row.covered})
    trials = sorted({test for row in rows for test in row.covered})
    subsuming = kill_matrix.subsuming_mutants(rows)
    return {
        "mutants": len(rows),
        "killed": sum(1 for row in rows if row.killed_by),
        "score": _percent(kill_matrix.score(rows)),
        "t0Score": _percent(kill_matrix.score(rows, lambda test: _suite_name(test) == T0_SUITE)),
        "perSuite": [{"suite": s.suite, "killed": s.killed, "alone": s.alone} for s in kill_matrix.per_suite(pooled)],
        "suites": len(suites),
        "minimalSuites": kill_matrix.greedy_cover(pooled),
        "trials": len(trials),
        "minimalTrials": kill_matrix.greedy_cover(rows, group=lambda test: test),
        "idleTrials": kill_matrix.idle_tests(rows),
        "subsuming": subsuming,
        # None where nothing was killed: no mutant subsumes, and a score over none says nothing
        "subsumingScore": _percent(kill_matrix.subsuming_score(rows)) if subsuming else None,
    }


def matrix_json(rows_by_substrate: dict[str, list[MutantRow]], row_ends: dict[str, dict[str, str]] | None = None
                ) -> dict:
    """The report's `substrateHarness.matrix`: each substrate's analyses and those over every substrate, and where
    `row_ends` has any, what ended each row that ended at a fault or a timeout (substrate -> mutant id -> row_end's)."""
    every = [row for rows in rows_by_substrate.values() for row in rows]
    return {
        "definitions": {
            "score": "100 * mutants some trial kills (fails, faults on or times out on) / mutants with a row",
            "t0Score": f"the score with the {T0_SUITE} suite's trials alone",
            "perSuite": "per suite name: mutants some trial of it kills, and mutants no other suite kills",
            "minimalSuites": "a greedy set cover: suites that together kill every mutant the whole set kills",
            "minimalTrials": "the same over single trials",
            "idleTrials": "trials that ran and killed no mutant",
            "subsuming": "dynamic subsumption (Kurtz and Ammann): one killed mutant of each class of equal "
                         "killing tests that no other killed mutant's killing tests strictly contain",
            "subsumingScore": "the score over the subsuming mutants only",
            "rowEnds": "per substrate, each mutant whose row ended at a fault or a timeout (its last trial's too): "
                       "the trial and what ended it",
        },
        "total": analyses(every),
        "substrates": {name: analyses(rows) for name, rows in rows_by_substrate.items()},
        "rowEnds": {name: ends for name, ends in (row_ends or {}).items() if ends},
    }


def _shown(percent: float | None) -> str:
    return "-" if percent is None else f"{percent:.1f}%"


def format_matrix(report: dict) -> str:
    """The terminal's account of `matrix_json`'s report: totals, the per-suite table, the minimal sets, then a line
    per substrate."""
    total = report["total"]
    lines = [f"kill matrix: {total['mutants']} mutants over {total['trials']} trials; score {total['score']:.1f}% "
             f"with every suite, {total['t0Score']:.1f}% with {T0_SUITE} alone; {len(total['subsuming'])} subsuming "
             f"mutants of {total['killed']} killed, score over them {_shown(total['subsumingScore'])}"]
    heads = ["suite", "killed", "alone"]
    rows = [[s["suite"], str(s["killed"]), str(s["alone"])] for s in total["perSuite"]]
    widths = [max(len(r[i]) for r in rows + [heads]) for i in range(3)]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
              for r in [heads] + rows]
    lines.append(f"minimal suites: {len(total['minimalSuites'])} of {total['suites']} kill all the suites kill: "
                 + ", ".join(total["minimalSuites"]))
    lines.append(f"minimal trials: {len(total['minimalTrials'])} of {total['trials']}; idle trials: "
                 f"{len(total['idleTrials'])}")
    for name, own in report["substrates"].items():
        lines.append(f"  {name}: score {own['score']:.1f}%, {T0_SUITE} alone {own['t0Score']:.1f}%; minimal suites "
                     f"{len(own['minimalSuites'])} of {own['suites']} ({', '.join(own['minimalSuites'])}); minimal "
                     f"trials {len(own['minimalTrials'])} of {own['trials']}; idle trials {len(own['idleTrials'])}; "
                     f"subsuming {len(own['subsuming'])} of {own['killed']} killed "
                     f"(score {_shown(own['subsumingScore'])})")
    return "\n".join(lines)
