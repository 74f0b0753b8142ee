"""The tests beside the mutants, for `--matrix` and `--checker` campaigns: what the report and terminal add.

A test is a suite trial (`<substrate>/<suite>/<trial>`, from the matrix's cells) or a checker (`checker:<spec>`).
For the mutation-testing-elements report each gets an entry in `testFiles` (a file per substrate's suite, and one
for the checkers), and each mutant its `coveredBy` (the tests that ran it) and `killedBy` (those that killed it).
A checker's kills are its rejections, counted only on the substrates where it is sound (it accepts their unmutated
kernels).
Pure over stored records: `judged_view` reads them from the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.checkers import CheckerVerdicts
from harness.checkers.under_test import CheckerVerdict
from harness.engine import matrix
from harness.engine.report import DETECTED, NOT_VALID, MutantStatus, TestView, checker_cell
from harness.engine.store import ResultKey, ResultStore

CHECKERS_FILE = "checkers"


def checker_test_id(spec: str) -> str:
    return f"checker:{spec}"


@dataclass(frozen=True)
class SubstrateRecords:
    """One substrate's stored records, as the report needs them."""

    name: str
    statuses: dict[str, MutantStatus]  # mutant id -> its status as the value suites decided it
    records: dict[str, dict]  # mutant id -> its stored result
    unmutated: dict[str, CheckerVerdict] = field(default_factory=dict)  # spec -> its verdict on the unmutated kernel


@dataclass
class Judged:
    view: TestView
    matrix: dict | None = None  # matrix.matrix_json, under --matrix
    checkers: list[CheckerVerdicts] = field(default_factory=list)
    columns: dict[str, dict[str, str]] = field(default_factory=dict)  # spec -> substrate -> the table's cell
    per_substrate: dict[str, dict[str, dict]] = field(default_factory=dict)  # spec -> substrate -> its counts
    errors: list[str] = field(default_factory=list)  # what the checkers themselves got wrong, a line each


def substrate_records(plan, campaign, store: ResultStore, backend: str, checker_key) -> SubstrateRecords:
    """`plan`'s stored records; `checker_key(sha, backend)` is where the unmutated verdicts are (engine.run)."""
    statuses = {o.mutant_id: (MutantStatus.SURVIVED if o.oracle else o.status) for o in campaign.outcomes}
    records = {m: store.get(ResultKey(plan.source_sha256, backend, m)) for m in statuses}
    unmutated = (store.get(checker_key(plan.source_sha256, backend)) or {}).get("checkers", {})
    return SubstrateRecords(plan.name, statuses, {m: r for m, r in records.items() if r is not None},
                            {spec: CheckerVerdict.from_json(v) for spec, v in unmutated.items()})


def judged(substrates: list[SubstrateRecords], with_matrix: bool, specs: tuple[str, ...]) -> Judged:
    """The tests view, the matrix's analyses and each checker's verdicts over `substrates`."""
    test_files: dict[str, dict] = {}
    covered: dict[str, dict[str, list[str]]] = {s.name: {} for s in substrates}
    killed: dict[str, dict[str, list[str]]] = {s.name: {} for s in substrates}
    rows_by_substrate, row_ends = {}, {}
    for substrate in substrates:
        if with_matrix:
            rows, row_ends[substrate.name] = _matrix_rows(substrate)
            rows_by_substrate[substrate.name] = rows
            for row in rows:
                covered[substrate.name][row.mutant] = sorted(row.covered)
                killed[substrate.name][row.mutant] = sorted(row.killed_by)
    test_files.update(_trial_files({test for rows in rows_by_substrate.values() for row in rows
                                    for test in row.covered}))
    result = Judged(TestView(test_files, covered, killed),
                    matrix.matrix_json(rows_by_substrate, row_ends) if with_matrix else None)
    for spec in specs:
        verdicts, counts, errors = _checker(spec, substrates)
        result.checkers.append(verdicts)
        result.per_substrate[spec] = counts
        result.columns[spec] = {name: checker_cell(own) for name, own in counts.items()}
        result.errors += errors
        test = checker_test_id(spec)
        test_files.setdefault(CHECKERS_FILE, {"tests": []})["tests"].append({"id": test, "name": f"checker {spec}"})
        for substrate in substrates:
            for mutant, record in substrate.records.items():
                verdict = CheckerVerdict.from_json(record.get("checkers", {}).get(spec, {}))
                if verdict.accepted is None:
                    continue
                covered[substrate.name].setdefault(mutant, []).append(test)
                if counts[substrate.name]["sound"] and not verdict.accepted:
                    killed[substrate.name].setdefault(mutant, []).append(test)
    result.view.own = {**({"matrix": result.matrix} if with_matrix else {}),
                       **({"checkers": {v.name: checker_json(v, result.per_substrate[v.name]) for v in result.checkers}}
                          if specs else {})}
    return result


def _matrix_rows(substrate: SubstrateRecords) -> tuple[list, dict[str, str]]:
    """A row per valid mutant (equivalent, duplicate and compile-error mutants run no trial; a mutant stored without
    cells, not run under --matrix, has an empty one), and what ended each row that ended at a fault or a timeout."""
    rows, ends = [], {}
    for mutant, status in substrate.statuses.items():
        if status in NOT_VALID:
            continue
        cells = matrix.stored_cells(substrate.records.get(mutant)) or []
        rows.append(matrix.mutant_row(substrate.name, mutant, cells))
        # On its last trial too: report_diff reads a fault outside every allocation as memory's doing, wherever it fell.
        if end := matrix.row_end(cells):
            ends[mutant] = end
    return rows, ends


def _trial_files(tests: set[str]) -> dict[str, dict]:
    """testFiles for trial tests: a file per substrate's suite, its trials in order."""
    files: dict[str, dict] = {}
    for test in sorted(tests, key=lambda t: (t.rsplit("/", 1)[0], int(t.rsplit("/", 1)[1]))):
        _substrate, suite, trial = test.rsplit("/", 2)
        files.setdefault(test.rsplit("/", 1)[0], {"tests": []})["tests"].append(
            {"id": test, "name": f"{suite} trial {trial}"})
    return files


def _checker(spec: str, substrates: list[SubstrateRecords]) -> tuple[CheckerVerdicts, dict[str, dict], list[str]]:
    """One checker over every substrate: its verdicts, its counts per substrate (sound, detected mutants, those it
    judged and those it accepted), and its own errors (a line each)."""
    accepts, unjudged, unsound_on, uncounted, counts, errors = {}, [], [], [], {}, []
    for substrate in substrates:
        unmutated = substrate.unmutated.get(spec, CheckerVerdict(None, "no verdict on the unmutated kernel stored"))
        if unmutated.error:
            errors.append(f"{unmutated.why}, judging {substrate.name}'s unmutated kernel")
        if not unmutated.accepted:
            unsound_on.append(f"{substrate.name} ({unmutated.why or 'it returned False'})")
        mine = {m for m, status in substrate.statuses.items() if status in DETECTED}
        mine_accepts = {}
        for mutant in sorted(mine):
            verdict = CheckerVerdict.from_json(substrate.records.get(mutant, {}).get("checkers", {}).get(spec, {}))
            if verdict.error:
                errors.append(f"{verdict.why}, judging {mutant}")
            if verdict.accepted is not None:
                mine_accepts[mutant] = verdict.accepted
        counts[substrate.name] = {"sound": bool(unmutated.accepted), "detected": len(mine),
                                  "judged": len(mine_accepts), "accepted": sum(mine_accepts.values())}
        if unmutated.accepted:
            accepts.update(mine_accepts)
            unjudged += [m for m in mine if m not in mine_accepts]
        else:
            uncounted += mine
    judged_ids = sorted(accepts)
    verdicts = CheckerVerdicts(spec, not unsound_on, tuple(m for m in judged_ids if accepts[m]),
                               tuple(m for m in judged_ids if not accepts[m]), tuple(unsound_on),
                               tuple(sorted(unjudged)), tuple(sorted(uncounted)))
    return verdicts, counts, errors


def checker_json(verdicts: CheckerVerdicts, counts: dict[str, dict]) -> dict:
    return {"sound": verdicts.sound, "accepted": list(verdicts.accepted), "rejected": list(verdicts.rejected),
            "unjudged": list(verdicts.unjudged), "uncounted": list(verdicts.uncounted),
            "unsoundOn": list(verdicts.unsound_on),
            "headline": verdicts.headline(), "substrates": counts}
