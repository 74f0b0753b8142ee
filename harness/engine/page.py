"""Our own page of a campaign's report: one HTML file that needs no network, no font and no script from anywhere.

`report_page` builds it from the report dict `harness.engine.report.report_json` returns, so a saved report.json
gives the same page: `python -m harness.engine.page report.json -o report.html`. Every figure is the JSON's own
(`substrateHarness`), formatted as the terminal's table formats it, so the three never disagree; the
mutation-testing-elements page (`report.report_html`) needs that web component and shows a score of its own.

The page reads with JavaScript off: every mutant is in the markup, under its source line, with its status as a word
beside its colour. A short inline script only adds filters by status. Its Content-Security-Policy forbids loading
anything, so a browser proves the page complete as written.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import preflight
from harness.engine.matrix import format_matrix
from harness.engine.report import OWN_KEY, TABLE_HEADS, MutantStatus, checker_cell, percent, table_row

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
DEFAULT_TITLE = "mutation campaign"
EXIT_USAGE = 2
# Ours is under substrateHarness for every mutant of our reports; the schema's status stands in where it is not.
_FROM_SCHEMA = {"Killed": "killed", "Survived": "survived", "NoCoverage": "survived", "Timeout": "timeout",
                "RuntimeError": "runtime_error", "CompileError": "compile_error", "Ignored": "equivalent"}
_LONG_REASON = 160  # characters: a longer reason (a compiler's error) folds under its first line


class NotAReport(ValueError):
    """The dict, or the file, is not a campaign report this page can show."""


@dataclass(frozen=True)
class MutantView:
    mutant_id: str
    operator: str
    status: str  # a MutantStatus value
    line: int  # where the mutant starts, and where the page lists it
    end_line: int
    original: str
    replacement: str
    killers: tuple[str, ...]  # the schema's killedBy: trials, checkers, the oracle
    reason: str  # the schema's statusReason
    row_end: str = ""  # under --matrix, the fault or timeout its row ended at (substrateHarness.matrix.rowEnds), if any


@dataclass(frozen=True)
class SubstrateView:
    index: int  # ids in the page are built from it: a name may hold characters an id should not
    name: str
    source: str
    backend: str
    device: str
    sha256: str
    cells: tuple[str, ...]  # its row of the table, as the terminal prints it, a cell per checker after
    mutants: tuple[MutantView, ...]


def status_word(status: str) -> str:
    return status.replace("_", " ")


def _original(lines: list[str], location: dict) -> str:
    """The text a mutant replaced, from its schema location (1-based, the end exclusive)."""
    (line, column), (end_line, end_column) = ((location[k]["line"], location[k]["column"]) for k in ("start", "end"))
    if line == end_line:
        return lines[line - 1][column - 1:end_column - 1]
    middle = lines[line:end_line - 1]
    return "\n".join([lines[line - 1][column - 1:], *middle, lines[end_line - 1][:end_column - 1]])


def _mutant(entry: dict, lines: list[str], outcome: dict, row_end: str = "") -> MutantView:
    location = entry["location"]
    # A location past the source (not one of ours: report_json refuses those) is listed on its last line.
    line = min(max(1, int(location["start"]["line"])), len(lines))
    end_line = min(max(line, int(location["end"]["line"])), len(lines))
    try:
        original = _original(lines, location)
    except (IndexError, KeyError, TypeError):
        original = ""
    return MutantView(str(entry["id"]), str(entry.get("mutatorName", "")),
                      outcome.get("status") or _FROM_SCHEMA.get(entry.get("status"), str(entry.get("status"))),
                      line, end_line, original, str(entry.get("replacement", "")),
                      tuple(map(str, entry.get("killedBy", ()))), str(entry.get("statusReason", "")), str(row_end))


def _checker_cell_of(checker: dict, name: str) -> str:
    counts = checker.get("substrates", {}).get(name) if isinstance(checker, dict) else None
    return checker_cell(counts) if counts else "-"


def substrate_views(report: dict) -> list[SubstrateView]:
    """Each substrate of `report`, in the report's order; raises NotAReport for what is not a campaign report."""
    if not isinstance(report, dict) or not all(isinstance(report.get(k), dict) for k in (OWN_KEY, "files")):
        raise NotAReport(f"not a campaign report (no {OWN_KEY} or no files)")
    own = report[OWN_KEY]
    checkers = own.get("checkers") or {}
    row_ends = (own.get("matrix") or {}).get("rowEnds") or {}
    views = []
    try:
        for index, (name, mine) in enumerate(own.get("substrates", {}).items()):
            entry = report["files"][mine["file"]]
            source = entry["source"]
            lines = source.split("\n")
            if len(lines) > 1 and lines[-1] == "":
                lines.pop()  # the newline that ends the last line starts none
            outcomes = mine.get("outcomes", {})
            ends = row_ends.get(name) or {}
            mutants = tuple(_mutant(m, lines, outcomes.get(m["id"], {}), ends.get(m["id"], ""))
                            for m in entry["mutants"])
            by_oracles = sum(1 for o in outcomes.values() if o.get("oracle"))
            cells = table_row(name, mine["mutants"], mine["counts"], by_oracles, mine["valueScore"], mine["score"])
            cells += [_checker_cell_of(checker, name) for checker in checkers.values()]
            views.append(SubstrateView(index, name, "\n".join(lines), str(mine.get("backend", "")),
                                       str(mine.get("device", "")), str(mine.get("sourceSha256", "")),
                                       tuple(cells), mutants))
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        raise _malformed(error) from None
    return views


@dataclass(frozen=True)
class TestRow:
    """A test of the report's testFiles (a suite trial, a checker, an oracle) and what it did."""

    test_id: str
    name: str
    group: str                 # its testFiles key: `<substrate>/<suite>`, `checkers`, `oracles`
    killed: tuple[str, ...]    # the mutants whose killedBy names it
    ran: int                   # the mutants whose coveredBy names it


def rows_of_tests(report: dict) -> list[TestRow]:
    """Each test of `report`'s testFiles, in their order, with the mutants it killed and how many it ran (read from
    the mutants' killedBy and coveredBy); none where the report has no testFiles (a campaign without --matrix or
    --checker)."""
    killed: dict[str, list[str]] = {}
    ran: dict[str, int] = {}
    for entry in report["files"].values():
        for mutant in entry["mutants"]:
            for test in mutant.get("killedBy", ()):
                killed.setdefault(test, []).append(str(mutant["id"]))
            for test in mutant.get("coveredBy", ()):
                ran[test] = ran.get(test, 0) + 1
    return [TestRow(str(test["id"]), str(test.get("name", test["id"])), str(group),
                     tuple(killed.get(test["id"], ())), ran.get(test["id"], 0))
            for group, tests in (report.get("testFiles") or {}).items() for test in tests.get("tests", ())]


def _malformed(error: Exception) -> NotAReport:
    """A report that is no campaign's (hand-edited, or another tool's), refused saying what was missing."""
    return NotAReport(f"not a campaign report ({type(error).__name__}: {error})")


def _e(text) -> str:
    return html.escape(str(text), quote=True)


_STYLE = """
:root { color-scheme: light; --killed: #1a7f37; --survived: #cf222e; --timeout: #9a6700; --runtime_error: #8250df;
  --compile_error: #57606a; --equivalent: #6e7781; --duplicate: #6e7781; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 84em;
  padding: 0 1.5em; color: #1f2328; background: #fff; }
code, pre, .src { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 13px; }
h1 { font-size: 1.5em; margin: 0 0 .3em; } h2 { display: inline; font-size: 1.2em; }
.scores { font-size: 1.25em; margin: .2em 0; } .scores strong { font-size: 1.3em; }
.definition, .meta, .note { color: #57606a; }
.counts { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .4em; }
table.substrates { border-collapse: collapse; margin: 1em 0; }
table.substrates th, table.substrates td { padding: .25em .7em; border-bottom: 1px solid #d0d7de; text-align: right; }
table.substrates th:first-child, table.substrates td:first-child { text-align: left; }
.badge { display: inline-block; padding: 0 .5em; border-radius: 1em; border: 1px solid var(--c); color: var(--c);
  font-weight: 600; font-size: .85em; white-space: nowrap; }
.st-killed { --c: var(--killed); } .st-survived { --c: var(--survived); } .st-timeout { --c: var(--timeout); }
.st-runtime_error { --c: var(--runtime_error); } .st-compile_error { --c: var(--compile_error); }
.st-equivalent { --c: var(--equivalent); } .st-duplicate { --c: var(--duplicate); }
section.substrate { margin: 1.5em 0; border: 1px solid #d0d7de; border-radius: 6px; padding: .5em 1em; }
section.substrate > details > summary { cursor: pointer; }
.src { margin-top: .6em; overflow-x: auto; }
.ln { display: flex; white-space: pre; }
.ln .no { flex: none; width: 3.5em; padding-right: .8em; text-align: right; color: #8c959f; text-decoration: none;
  user-select: none; border-right: 3px solid transparent; }
.ln.spanned .no { border-right-color: #d0d7de; }
.ln.has-mutants .no { border-right-color: var(--killed); color: #1f2328; }
.ln.has-survivor { background: #ffebe9; } .ln.has-survivor .no { border-right-color: var(--survived); }
ul.mutants { list-style: none; margin: .15em 0 .5em 4.3em; padding: .2em .6em; border-left: 3px solid #d0d7de;
  background: #f6f8fa; font-size: 14px; }
li.mutant { margin: .2em 0; }
li.mutant .mid { color: #57606a; } li.mutant .op { font-weight: 600; }
li.mutant del { background: #ffebe9; text-decoration: none; }
li.mutant ins { background: #dafbe1; text-decoration: none; }
.why, .killers { margin: .1em 0 0 1em; color: #424a53; white-space: pre-wrap; }
.why pre { white-space: pre-wrap; margin: .2em 0; }
table.tests { border-collapse: collapse; margin: .6em 0 1em; font-size: 14px; }
table.tests th, table.tests td { padding: .15em .7em; border-bottom: 1px solid #d0d7de; text-align: left;
  vertical-align: top; }
.idle-mark { color: var(--survived); }
#matrix pre { overflow-x: auto; }
#filters { margin: .6em 0; } #filters label { margin-right: 1em; white-space: nowrap; }
body.only-mutated .ln:not(.has-mutants) { display: none; }
"""
_STYLE += "".join(f"body.hide-{s.value} li.mutant.st-{s.value} {{ display: none; }}\n" for s in MutantStatus)

# Filters only: the page is whole without it. Each box names the body class it sets, and when.
_SCRIPT = """
(function () {
  var bar = document.getElementById("filters");
  bar.hidden = false;
  bar.addEventListener("change", function (event) {
    var box = event.target;
    document.body.classList.toggle(box.dataset.toggles, box.checked === (box.dataset.on === "checked"));
  });
})();
"""


def report_page(report: dict, title: str = DEFAULT_TITLE) -> str:
    """The page of `report` (report_json's dict, or a saved report.json read back); NotAReport if it is none."""
    views = substrate_views(report)
    own = report[OWN_KEY]
    try:
        body = [_summary(own, title, views), _table(views, own), _tests(rows_of_tests(report)), _filters(views),
                *map(_section, views)]
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        raise _malformed(error) from None
    return ("<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
            f"<meta http-equiv='Content-Security-Policy' content='{_e(CSP)}'>\n"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
            f"<title>{_e(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + f"\n<script>{_SCRIPT}</script>\n</body>\n</html>\n")


def _summary(own: dict, title: str, views: list[SubstrateView]) -> str:
    counts = own.get("counts", {})
    badges = "".join(f"<li class='st-{s.value}'><span class='badge'>{_e(status_word(s.value))} "
                     f"{int(counts.get(s.value, 0))}</span></li>" for s in MutantStatus)
    checkers = [checker.get("headline") for checker in (own.get("checkers") or {}).values()
                if isinstance(checker, dict) and checker.get("headline")]
    notes = [f"<p class='note'>checker {_e(line)}</p>" for line in checkers]
    if isinstance(own.get("incomplete"), dict):
        stop = own["incomplete"]
        notes.insert(0, f"<p class='note incomplete' id='incomplete'>Incomplete: the campaign was interrupted by "
                        f"{_e(str(stop.get('interrupted_by', '?')))} with {_e(str(stop.get('not_judged', '?')))} "
                        f"mutant(s) not judged yet; the figures are those of the judged ones. The same command goes "
                        f"on from its store.</p>")
    if isinstance(own.get("matrix"), dict):
        # As the terminal prints them (harness.engine.matrix.format_matrix), and the idle trials named.
        matrix = own["matrix"]
        idle = ", ".join(map(str, matrix.get("total", {}).get("idleTrials", []))) or "none"
        terms = "".join(f"<dt>{_e(term)}</dt><dd>{_e(meaning)}</dd>"
                        for term, meaning in matrix.get("definitions", {}).items())
        notes.append(f"<section id='matrix'><h2>Kill matrix</h2>\n<pre>{_e(format_matrix(matrix))}</pre>\n"
                     f"<p class='note'>Idle trials: {_e(idle)}.</p>\n<details><summary>what each figure means"
                     f"</summary><dl class='note'>{terms}</dl></details></section>")
    return (f"<header id='summary'>\n<h1>{_e(title)}</h1>\n"
            f"<p class='meta'>{len(views)} substrate(s), {sum(int(n) for n in counts.values())} mutants</p>\n"
            f"<p class='scores'>score <strong id='score'>{_e(percent(own.get('score')))}</strong> &middot; "
            f"value score <strong id='value-score'>{_e(percent(own.get('valueScore')))}</strong></p>\n"
            f"<ul class='counts' id='counts'>{badges}</ul>\n"
            f"<p class='definition'>Score = {_e(own.get('scoreDefinition', ''))}: of the mutants that can be "
            f"caught, the share a failed check, a timeout or a fault caught. Value score: "
            f"{_e(own.get('valueScoreDefinition', ''))}.</p>\n" + "".join(notes) + "</header>")


def _table(views: list[SubstrateView], own: dict) -> str:
    heads = [*TABLE_HEADS, *(own.get("checkers") or {})]
    head = "".join(f"<th scope='col'>{_e(h)}</th>" for h in heads)
    rows = "".join(f"<tr><td><a href='#s{v.index}'>{_e(v.cells[0])}</a></td>"
                   + "".join(f"<td>{_e(cell)}</td>" for cell in v.cells[1:]) + "</tr>\n" for v in views)
    return (f"<table class='substrates' id='substrates'>\n<thead><tr>{head}</tr></thead>\n"
            f"<tbody>\n{rows}</tbody>\n</table>")


def _tests(tests: list[TestRow]) -> str:
    """The test view: each suite trial, checker and oracle, the mutants it ran and those it killed (listed on
    demand); a test that killed nothing it ran is marked, as the matrix's analyses name it."""
    if not tests:
        return ""
    rows = []
    for t in tests:
        kills = (f"<details><summary>{len(t.killed)}</summary><code>{'<br>'.join(map(_e, t.killed))}</code>"
                 f"</details>" if t.killed else "0")
        idle = t.ran and not t.killed
        mark = " <span class='idle-mark'>(idle)</span>" if idle else ""
        rows.append(f"<tr class='test{' idle' if idle else ''}' data-test-id='{_e(t.test_id)}'><td>{_e(t.name)}{mark}"
                    f"</td><td>{_e(t.group)}</td><td>{t.ran}</td><td>{kills}</td></tr>\n")
    return ("<section id='tests'>\n<h2>Tests</h2>\n<p class='note'>Each suite trial, checker and oracle as a test: the "
            "mutants it ran, and those it killed. A test that killed none of those it ran is marked idle.</p>\n"
            "<table class='tests'>\n<thead><tr><th scope='col'>test</th><th scope='col'>of</th>"
            "<th scope='col'>ran</th><th scope='col'>killed</th></tr></thead>\n<tbody>\n" + "".join(rows)
            + "</tbody>\n</table>\n</section>")


def _filters(views: list[SubstrateView]) -> str:
    """Hidden until the script shows it: without the script a box would do nothing."""
    present = [s.value for s in MutantStatus if any(m.status == s.value for v in views for m in v.mutants)]
    boxes = "".join(f"<label><input type='checkbox' checked data-toggles='hide-{s}' data-on='unchecked'> "
                    f"<span class='badge st-{s}'>{_e(status_word(s))}</span></label>" for s in present)
    boxes += ("<label><input type='checkbox' data-toggles='only-mutated' data-on='checked'> "
              "only the lines with mutants</label>")
    return f"<div id='filters' hidden>show: {boxes}</div>"


def _section(view: SubstrateView) -> str:
    by_line: dict[int, list[MutantView]] = {}
    for mutant in view.mutants:
        by_line.setdefault(mutant.line, []).append(mutant)
    spanned = {n for m in view.mutants for n in range(m.line + 1, m.end_line + 1)}
    rows = []
    for number, text in enumerate(view.source.split("\n"), 1):
        here = by_line.get(number, [])
        classes = ["ln"] + ["spanned"] * (number in spanned) + ["has-mutants"] * bool(here)
        classes += ["has-survivor"] * any(m.status == MutantStatus.SURVIVED.value for m in here)
        anchor = f"s{view.index}-L{number}"
        rows.append(f"<div class='{' '.join(classes)}' id='{anchor}'><a class='no' href='#{anchor}'>{number}"
                    f"</a><code>{_e(text)}</code></div>")
        if here:
            rows.append("<ul class='mutants'>" + "".join(map(_mutant_item, here)) + "</ul>")
    score = view.cells[TABLE_HEADS.index("score")]
    return (f"<section class='substrate' id='s{view.index}'>\n<details open>\n<summary><h2>{_e(view.name)}</h2> "
            f"score {_e(score)} &middot; {_e(view.cells[1])} mutants &middot; {_e(view.backend)} &middot; "
            f"{_e(view.device)}</summary>\n<p class='meta'>source sha256 {_e(view.sha256)}</p>\n"
            f"<div class='src'>\n" + "\n".join(rows) + "\n</div>\n</details>\n</section>")


def _shown(text: str, limit: int = 120) -> str:
    """A replaced span on one line: a deleted statement's lines stand above it already."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "\u2026"


def _mutant_item(m: MutantView) -> str:
    replacement = (f"<ins>{_e(_shown(m.replacement))}</ins>" if m.replacement.strip()
                   else "<ins><em>(nothing)</em></ins>")
    change = f"<del>{_e(_shown(m.original))}</del> &rarr; {replacement}"
    lines = f" <span class='lines'>(lines {m.line}&ndash;{m.end_line})</span>" if m.end_line > m.line else ""
    killers = (f"<div class='killers'>killed by: {_e(', '.join(m.killers))}</div>" if m.killers else "")
    row_end = f"its matrix row ended at {m.row_end}" if m.row_end else ""
    return (f"<li class='mutant st-{_e(m.status)}' data-mutant-id='{_e(m.mutant_id)}' "
            f"data-status='{_e(m.status)}' data-line='{m.line}'><span class='badge'>{_e(status_word(m.status))}</span> "
            f"<span class='op'>{_e(m.operator)}</span> {change}{lines} <code class='mid'>{_e(m.mutant_id)}</code>"
            f"{killers}{_reason(m.reason)}{_reason(row_end)}</li>")


def _reason(reason: str) -> str:
    if not reason:
        return ""
    if len(reason) <= _LONG_REASON and "\n" not in reason:
        return f"<div class='why'>{_e(reason)}</div>"
    first = reason.split("\n", 1)[0][:_LONG_REASON]
    return f"<details class='why'><summary>{_e(first)} &hellip;</summary><pre>{_e(reason)}</pre></details>"


# ---- the command ----------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness.engine.page",
        description="Write the page of a saved campaign report (the JSON of python -m harness.campaign --json): one "
                    "HTML file, opened without a network, its scores the JSON's.")
    parser.add_argument("report", type=Path, metavar="REPORT", help="the campaign's report.json")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="PATH", help="the page to write")
    parser.add_argument("--title", default=DEFAULT_TITLE, help=f"the page's title (default: {DEFAULT_TITLE!r})")
    return parser


def read_report(path: Path) -> dict:
    """The JSON at `path`; NotAReport, saying why, where it cannot be read or is not JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotAReport("no such file") from None
    except IsADirectoryError:
        raise NotAReport("is a folder; give a report.json") from None
    except PermissionError:
        raise NotAReport("not readable (permission denied)") from None
    except UnicodeDecodeError:
        raise NotAReport("not JSON (not UTF-8 text)") from None
    except OSError as error:
        raise NotAReport(f"cannot be read ({error.strerror})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise NotAReport(f"not JSON ({error.msg} at line {error.lineno} column {error.colno})") from None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        page = report_page(read_report(args.report), args.title)
    except NotAReport as error:
        print(f"page: error: {args.report}: {error}", file=sys.stderr)
        return EXIT_USAGE
    if problem := preflight.unwritable(args.output, "-o"):
        print(f"page: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    args.output.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
