"""The reports of a mutation campaign: a mutation-testing-elements JSON report, and a page that renders it.

`report_json` writes stryker-mutator's mutation-testing-report-schema, schemaVersion "2" (the schema of the
npm package `mutation-testing-report-schema`; checked against version 3.8.4 of it): one file entry per
substrate, keyed `<substrate>.cu`, holding its CUDA source and one mutant per outcome. `report_html` writes
one page that renders such a report with the `<mutation-test-report-app>` web component of the npm package
`mutation-testing-elements`, loaded from a CDN, or inlined from a local copy of its
`dist/mutation-test-elements.js` so the page works offline. The campaign's `--html` writes our own page,
`harness.engine.page`, which needs neither; this one only under `--elements-js`.

Statuses: ours are stored as `MutantStatus` and mapped to the schema's when the report is written
(`SCHEMA_STATUS`); equivalent and duplicate mutants both become Ignored, with a `statusReason` that says
which. Our own status of each mutant, and our scores, are kept under the report's top-level key
`substrateHarness` (the schema allows extra keys at the top level).

Oracles: a survivor of the value suites that a later oracle (harness.engine.judge: compute-sanitizer's
tools) kills is Killed, with `killedBy` naming the tool and our `oracle` field beside its status; `valueScore`
is the score as if those had survived, so reports from before the oracles stay comparable.

Scores: ours is `100 * detected / valid`, detected = killed + timeout + runtime error, valid = every mutant
but the equivalent, duplicate and compile-error ones. The web component computes its own score, Stryker's:
(Killed + Timeout) / (Killed + Timeout + Survived + NoCoverage), which leaves RuntimeError mutants out of
both sides; the two agree whenever no mutant is a runtime error.

Locations: 1-based line and column, counted in characters as `harness.engine.mutants` counts them; the end is
exclusive, as the schema says, and is computed from the start and the replaced text (which may span lines).
"""

from __future__ import annotations

import base64
import enum
import html
import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.engine.store import ResultKey, ResultStore

SCHEMA_VERSION = "2"
THRESHOLDS = {"high": 80, "low": 60}
FRAMEWORK_NAME = "substrate-harness"
ELEMENTS_VERSION = "3.9.0"  # the mutation-testing-elements release the page was checked with
ELEMENTS_CDN = f"https://www.unpkg.com/mutation-testing-elements@{ELEMENTS_VERSION}/dist/mutation-test-elements.js"
OWN_KEY = "substrateHarness"


class MutantStatus(str, enum.Enum):
    KILLED = "killed"
    SURVIVED = "survived"
    EQUIVALENT = "equivalent"        # compiled code identical to the unmutated source's
    DUPLICATE = "duplicate"          # compiled code identical to an earlier mutant's
    COMPILE_ERROR = "compile_error"
    TIMEOUT = "timeout"
    RUNTIME_ERROR = "runtime_error"  # a fault, or a worker that died


DETECTED = frozenset({MutantStatus.KILLED, MutantStatus.TIMEOUT, MutantStatus.RUNTIME_ERROR})
# not counted in the score's denominator:
NOT_VALID = frozenset({MutantStatus.EQUIVALENT, MutantStatus.DUPLICATE, MutantStatus.COMPILE_ERROR})

SCHEMA_STATUS = {
    MutantStatus.KILLED: "Killed",
    MutantStatus.SURVIVED: "Survived",
    MutantStatus.EQUIVALENT: "Ignored",
    MutantStatus.DUPLICATE: "Ignored",
    MutantStatus.COMPILE_ERROR: "CompileError",
    MutantStatus.TIMEOUT: "Timeout",
    MutantStatus.RUNTIME_ERROR: "RuntimeError",
}
EQUIVALENT_REASON = "equivalent: compiled code identical to the original's"


@dataclass(frozen=True)
class MutantOutcome:
    mutant_id: str
    operator: str          # e.g. "relational_boundary"
    line: int              # 1-based start in the CUDA source
    column: int
    original: str          # the replaced span of the source (several lines for a deleted statement)
    replacement: str
    description: str
    status: MutantStatus
    # why: the trial that killed it, the compiler error, the fault; for a duplicate, the mutant it
    # duplicates ("compiled code identical to <id>'s"), which its statusReason repeats
    detail: str = ""
    seconds: float = 0.0
    oracle: str = ""  # "" when the value suites decided; else the oracle that killed a survivor of them ("racecheck")

    def __post_init__(self):
        object.__setattr__(self, "status", MutantStatus(self.status))
        if self.line < 1 or self.column < 1:
            raise ValueError(f"{self.mutant_id}: line {self.line}, column {self.column}: both start at 1")
        if self.status is MutantStatus.DUPLICATE and not self.detail:
            raise ValueError(f"{self.mutant_id}: a duplicate's detail must name the mutant it duplicates")

    def end(self) -> tuple[int, int]:
        """(line, column) just after `original`: the schema's exclusive end."""
        lines = self.original.split("\n")
        if len(lines) == 1:
            return self.line, self.column + len(self.original)
        return self.line + len(lines) - 1, len(lines[-1]) + 1


@dataclass
class SubstrateCampaign:
    name: str
    source: str            # the CUDA source the mutants were made from
    source_sha256: str
    backend: str
    device: str
    outcomes: list[MutantOutcome] = field(default_factory=list)

    def counts(self) -> dict[MutantStatus, int]:
        """How many mutants have each status, every status present (in `MutantStatus` order)."""
        return _counts(self.outcomes)

    def score(self) -> float | None:
        """100 * detected / valid (see the module docstring); None when no mutant is valid."""
        return _score(self.outcomes)

    def value_score(self) -> float | None:
        """The score as the value suites alone give it: every mutant an oracle killed counted a survivor."""
        return _score(_by_values(self.outcomes))


def _counts(outcomes) -> dict[MutantStatus, int]:
    counts = dict.fromkeys(MutantStatus, 0)
    for outcome in outcomes:
        counts[outcome.status] += 1
    return counts


def _by_values(outcomes) -> list:
    return [o if not o.oracle else MutantOutcome(o.mutant_id, o.operator, o.line, o.column, o.original, o.replacement,
                                                o.description, MutantStatus.SURVIVED, o.detail, o.seconds)
            for o in outcomes]


def _score(outcomes) -> float | None:
    counts = _counts(outcomes)
    valid = sum(counts.values()) - sum(counts[s] for s in NOT_VALID)
    return None if valid == 0 else 100.0 * sum(counts[s] for s in DETECTED) / valid


def file_key(name: str) -> str:
    """The report's file entry of a substrate."""
    return f"{name}.cu"


def _check_span(source: str, outcome: MutantOutcome) -> None:
    """Raise unless `outcome.original` stands in `source` at its line and column."""
    lines = source.split("\n")
    if outcome.line > len(lines):
        raise ValueError(f"{outcome.mutant_id}: line {outcome.line}, but the source has {len(lines)} lines")
    if outcome.column - 1 > len(lines[outcome.line - 1]):
        raise ValueError(f"{outcome.mutant_id}: column {outcome.column}, but line {outcome.line} has "
                         f"{len(lines[outcome.line - 1])} characters")
    offset = sum(len(line) + 1 for line in lines[:outcome.line - 1]) + outcome.column - 1
    found = source[offset:offset + len(outcome.original)]
    if found != outcome.original:
        raise ValueError(f"{outcome.mutant_id}: the source at L{outcome.line}C{outcome.column} reads {found!r}, "
                         f"not {outcome.original!r}")


def status_reason(outcome: MutantOutcome) -> str:
    """The schema's statusReason: why the mutant has its status ("" when nothing is known)."""
    if outcome.status is MutantStatus.EQUIVALENT:
        return EQUIVALENT_REASON
    if outcome.status is MutantStatus.DUPLICATE:
        return f"duplicate: {outcome.detail}"
    return outcome.detail


@dataclass
class TestView:
    """Tests beside the mutants (harness.engine.tests_view: --matrix's trials, --checker's checkers): the schema's
    `testFiles`, and per substrate and mutant the ids of the tests that ran it and of those that killed it; `own`
    goes under the report's OWN_KEY beside ours."""

    test_files: dict[str, dict]
    covered: dict[str, dict[str, list[str]]]
    killed: dict[str, dict[str, list[str]]]
    own: dict = field(default_factory=dict)


def mutant_json(outcome: MutantOutcome, covered: list[str] | None = None, killed: list[str] = ()) -> dict:
    """One entry of a file's `mutants` in the schema; `covered` and `killed` (a TestView's) its coveredBy and
    killedBy, the oracle that killed it among the killers."""
    end_line, end_column = outcome.end()
    entry = {
        "id": outcome.mutant_id,
        "mutatorName": outcome.operator,
        "replacement": outcome.replacement,
        "location": {"start": {"line": outcome.line, "column": outcome.column},
                     "end": {"line": end_line, "column": end_column}},
        "status": SCHEMA_STATUS[outcome.status],
        "description": outcome.description,
        "duration": outcome.seconds * 1000.0,  # the schema's unit: milliseconds
    }
    reason = status_reason(outcome)
    if reason:
        entry["statusReason"] = reason
    if outcome.oracle:
        entry["killedBy"] = [outcome.oracle]  # the schema's test ids: here the oracle that killed it
    if covered is not None:
        entry["coveredBy"] = list(covered) + ([outcome.oracle] if outcome.oracle else [])
        entry["killedBy"] = list(killed) + ([outcome.oracle] if outcome.oracle else [])
    return entry


def _oracle_tests(substrates: list[SubstrateCampaign]) -> dict[str, dict]:
    """testFiles for the oracles that killed a mutant, which a TestView's killedBy names beside its tests."""
    oracles = sorted({o.oracle for c in substrates for o in c.outcomes if o.oracle})
    return {"oracles": {"tests": [{"id": o, "name": f"oracle {o}"} for o in oracles]}} if oracles else {}


def report_json(substrates: list[SubstrateCampaign], thresholds: dict[str, int] | None = None,
                tests: TestView | None = None) -> dict:
    """The mutation-testing-report-schema report of a campaign (see the module docstring); with `tests`, its
    testFiles and each mutant's coveredBy and killedBy.

    Raises ValueError when two substrates share a name or a mutant's `original` is not what its source holds
    at its line and column (the report would then mark the wrong text).
    """
    files, own = {}, {}
    for campaign in substrates:
        key = file_key(campaign.name)
        if key in files:
            raise ValueError(f"two substrates named {campaign.name!r}")
        ids = [o.mutant_id for o in campaign.outcomes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{campaign.name}: mutant ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
        for outcome in campaign.outcomes:
            _check_span(campaign.source, outcome)
        covered = tests.covered.get(campaign.name, {}) if tests else {}
        killed = tests.killed.get(campaign.name, {}) if tests else {}
        files[key] = {"language": "cpp", "source": campaign.source,
                      "mutants": [mutant_json(o, covered.get(o.mutant_id, []) if tests else None,
                                              killed.get(o.mutant_id, [])) for o in campaign.outcomes]}
        own[campaign.name] = {
            "file": key,
            "sourceSha256": campaign.source_sha256,
            "backend": campaign.backend,
            "device": campaign.device,
            "mutants": len(campaign.outcomes),
            "counts": {s.value: n for s, n in campaign.counts().items()},
            "score": campaign.score(),
            "valueScore": campaign.value_score(),
            "outcomes": {o.mutant_id: {"status": o.status.value, "detail": o.detail, "seconds": o.seconds,
                                       **({"oracle": o.oracle} if o.oracle else {})}
                         for o in campaign.outcomes},
        }
    every = [o for c in substrates for o in c.outcomes]
    return {
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": dict(thresholds or THRESHOLDS),
        "framework": {"name": FRAMEWORK_NAME},
        "files": files,
        **({"testFiles": {**tests.test_files, **_oracle_tests(substrates)}} if tests else {}),
        OWN_KEY: {
            "scoreDefinition": "100 * (killed + timeout + runtime_error) / "
                               "(mutants - equivalent - duplicate - compile_error)",
            "score": _score(every),
            "valueScoreDefinition": "the score with every mutant an oracle beyond the value suites killed counted "
                                    "as survived: what the value suites alone decided",
            "valueScore": _score(_by_values(every)),
            "counts": {s.value: n for s, n in _counts(every).items()},
            "substrates": own,
            **(tests.own if tests else {}),
        },
    }


def script_json(value) -> str:
    """`value` as JSON that can stand inside an HTML <script>: `<`, `>` and `&` escaped as \\u003c ...

    Those characters occur only inside JSON strings, where the escapes mean the same characters, so the text
    is still JSON and no `</script>` or `<!--` in a source can end or confuse the script element.
    """
    text = json.dumps(value, ensure_ascii=True, sort_keys=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{title}</title>
  {elements_script}
</head>
<body>
  <p style="font-family: sans-serif; margin: 1em 2em">{note}</p>
  <mutation-test-report-app title-postfix="{title}">
    This page needs the mutation-testing-elements web component ({elements_from}), which did not load.
    Open it where that address can be reached, or write it again with a local copy of
    mutation-test-elements.js inlined (harness.engine.report.report_html's elements_js).
  </mutation-test-report-app>
  <script>
    const app = document.querySelector("mutation-test-report-app");
    app.report = {report};
    function updateTheme() {{
      document.body.style.backgroundColor = app.themeBackgroundColor;
    }}
    app.addEventListener("theme-changed", updateTheme);
    updateTheme();
  </script>
</body>
</html>
"""


def report_html(report: dict, title_postfix: str = "substrate harness",
                elements_js: str | Path | None = None) -> str:
    """One page that renders `report` with mutation-testing-elements' `<mutation-test-report-app>`.

    The component is loaded from `ELEMENTS_CDN`, or, given `elements_js` (a local copy of the npm package's
    `dist/mutation-test-elements.js`), inlined as a base64 data: URL, so the page needs no network and no
    text of the script can end the <script> element early.
    """
    if elements_js is None:
        script = f'<script src="{html.escape(ELEMENTS_CDN)}"></script>'
        where = ELEMENTS_CDN
    else:
        code = Path(elements_js).read_bytes()
        script = f'<script src="data:text/javascript;base64,{base64.b64encode(code).decode("ascii")}"></script>'
        where = f"inlined from {Path(elements_js).name}"
    return _PAGE.format(title=html.escape(title_postfix, quote=True), elements_script=script,
                        elements_from=html.escape(where), note=html.escape(score_note(report)),
                        report=script_json(report))


def score_note(report: dict) -> str:
    """What the elements page says above the component, whose own score is not ours (see the module docstring)."""
    own = report.get(OWN_KEY, {})
    runtime = own.get("counts", {}).get(MutantStatus.RUNTIME_ERROR.value, 0)
    return (f"Mutation score: {percent(own.get('score'))} (value score {percent(own.get('valueScore'))}), "
            f"{own.get('scoreDefinition', '')}. The component below computes a score of its own that leaves "
            f"runtime-error mutants out ({runtime} in this report), so where there are any its figure is not ours.")


def outcomes(plan, store: ResultStore, backend: str, chosen: tuple[str, ...] = ("values",)) -> list[MutantOutcome]:
    """Each stored mutant's outcome: the value suites' verdict, or a chosen later oracle's kill of a survivor."""
    from harness.engine import survivors as oracles

    found = []
    for mutant in plan.mutants:
        record = store.get(ResultKey(plan.source_sha256, backend, mutant.id))
        if record is None:
            continue
        later = [store.get(oracles.oracle_key(plan.source_sha256, backend, mutant.id, o)) for o in chosen[1:]]
        status, detail, oracle = oracles.decided(record, [r for r in later if r])
        found.append(MutantOutcome(mutant_id=mutant.id, operator=mutant.operator.value, line=mutant.line,
                                   column=mutant.column, original=mutant.original, replacement=mutant.replacement,
                                   description=mutant.description, status=MutantStatus(status),
                                   detail=detail, seconds=record.get("seconds", 0.0), oracle=oracle))
    return found


TABLE_STATUSES = (MutantStatus.KILLED, MutantStatus.SURVIVED, MutantStatus.EQUIVALENT, MutantStatus.DUPLICATE,
                  MutantStatus.TIMEOUT, MutantStatus.RUNTIME_ERROR, MutantStatus.COMPILE_ERROR)


TABLE_HEADS = ("substrate", "mutants", "killed", "survived", "equivalent", "duplicate", "timeout", "runtime",
               "compile", "by oracles", "value score", "score")


def percent(score: float | None) -> str:
    """A score as the table and the pages show it."""
    return "-" if score is None else f"{score:.1f}%"


def checker_cell(counts: dict) -> str:
    """A checker's cell in a substrate's row (`tests_view`'s counts): the detected mutants it accepted of those it
    judged, or "unsound" where it rejected the unmutated kernel."""
    return f"{counts['accepted']}/{counts['judged']}" if counts["sound"] else "unsound"


def table_row(name: str, mutants: int, counts: dict[str, int], by_oracles: int, value_score: float | None,
              score: float | None) -> list[str]:
    """A substrate's cells under TABLE_HEADS. `counts` is keyed by status value, as the JSON keeps it, so that
    harness.engine.page, which reads only the JSON, shows the terminal's figures."""
    return ([name, str(mutants)] + [str(counts.get(s.value, 0)) for s in TABLE_STATUSES]
            + [str(by_oracles), percent(value_score), percent(score)])


def format_table(campaigns: list[SubstrateCampaign], columns: dict[str, dict[str, str]] | None = None) -> str:
    """A row per substrate; `columns` adds one per name (a checker's: what it accepts of the detected mutants)."""
    columns = columns or {}
    heads = [*TABLE_HEADS, *columns]
    rows = []
    for c in campaigns:
        counts = {s.value: n for s, n in c.counts().items()}
        rows.append(table_row(c.name, len(c.outcomes), counts, sum(1 for o in c.outcomes if o.oracle),
                              c.value_score(), c.score())
                    + [column.get(c.name, "-") for column in columns.values()])
    widths = [max(len(r[i]) for r in rows + [heads]) for i in range(len(heads))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(heads)] + [line(r) for r in rows])


def format_survivors(plans: list, campaigns: list[SubstrateCampaign]) -> str:
    lines = []
    for plan, campaign in zip(plans, campaigns):
        by_id = {m.id: m for m in plan.mutants}
        for outcome in campaign.outcomes:
            if outcome.status is MutantStatus.SURVIVED:
                lines.append(f"{outcome.mutant_id}  {by_id[outcome.mutant_id].diff_line(plan.source)}")
    return "\n".join(lines)


def describe_schemata(plans: list, store: ResultStore, backend: str) -> str:
    """How many of the mutants this run ran came from their substrate's schema (harness.engine.schema)."""
    ran = [store.get(ResultKey(plan.source_sha256, backend, mutant_id)) for plan in plans for mutant_id in plan.to_run]
    ran = [record for record in ran if record is not None]
    from_schema = sum(1 for record in ran if record.get("schema"))
    return (f"schemata: {from_schema} of {len(ran)} mutants run came from their substrate's schema, one compile a "
            f"substrate; the others from their batches")
