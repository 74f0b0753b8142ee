"""Our own page of a campaign's report (harness.engine.page): one file that loads nothing, its figures the JSON's.

The pure tests read the page with html.parser. The browser tests need a headless Chromium on PATH (they skip,
saying so, without one) and run it with the network off. The command's tests run a real campaign of four mutants
on the CPU backend, and `python -m harness.engine.page` on saved reports.
"""

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.checkers.under_test import CheckerVerdict
from harness.gate.command import main as gate_main
from harness.engine import tests_view
from harness.engine.page import CSP, NotAReport, report_page, status_word
from harness.engine.report import (OWN_KEY, MutantStatus, SubstrateCampaign, format_table, percent, report_html,
                                   report_json)
from tests import rule_candidates
from tests.test_campaign_usage import _usage
from tests.test_engine_report import _chromium, campaigns, outcome

ROOT = Path(__file__).resolve().parent.parent
URL_ATTRIBUTES = {"src", "href", "action", "formaction", "srcset", "poster", "data", "background", "ping"}
VOID = {"meta", "input", "br", "img", "link", "hr", "wbr", "source", "area", "base", "col", "embed", "track"}


class _Page(HTMLParser):
    """What a test needs of a page: every URL-bearing attribute, the CSP, the styles, the text of elements with an
    id, each mutant's attributes and text and the source line above it, every source line's code."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.urls, self.csp, self.styles, self.text = [], [], [], []
        self.by_id, self.mutants, self.lines = {}, [], {}
        self.hidden = set()  # the ids of elements with the hidden attribute
        self._open, self._line, self._in_style = [], None, False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.urls += [(tag, name, value or "") for name, value in attrs.items() if name in URL_ATTRIBUTES]
        if tag == "meta" and (attrs.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp.append(attrs.get("content"))
        self._in_style = tag == "style"
        if "style" in attrs:
            self.styles.append(attrs["style"])
        if "hidden" in attrs and "id" in attrs:
            self.hidden.add(attrs["id"])
        if tag in VOID:
            return
        for capture in self._open:
            capture[1] += 1
        if "ln" in (attrs.get("class") or "").split():
            self._line = attrs["id"]
        if attrs.get("data-mutant-id"):
            record = {**attrs, "line_above": self._line, "text": ""}
            self.mutants.append(record)
            self._open.append([record, 1])
        elif tag == "code" and self._line and self._line not in self.lines:
            self.lines[self._line] = record = {"text": ""}
            self._open.append([record, 1])
        if attrs.get("id") and not attrs.get("class", "").startswith("ln"):
            self.by_id[attrs["id"]] = record = {"text": ""}
            self._open.append([record, 1])

    def handle_endtag(self, tag):
        self._in_style = False
        for capture in self._open:
            capture[1] -= 1
        self._open = [capture for capture in self._open if capture[1] > 0]

    def handle_data(self, data):
        (self.styles if self._in_style else self.text).append(data)
        for record, _depth in self._open:
            record["text"] += data


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def table_rows(table: str) -> list[list[str]]:
    """format_table's lines, a list of cells each (cells are split by two spaces or more)."""
    return [re.split(r"\s{2,}", line.strip()) for line in table.splitlines()]


def page_table(page: str) -> list[list[str]]:
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", page).group(1)
    body = re.search(r"<tbody>(.*?)</tbody>", page, re.S).group(1)
    cells = lambda row: [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
    return [cells(head)] + [cells(row) for row in body.strip().splitlines()]


def assert_every_mutant_on_its_line(parsed: _Page, report: dict) -> None:
    own = report[OWN_KEY]["substrates"]
    by_id = {m["data-mutant-id"]: m for m in parsed.mutants}
    assert len(by_id) == len(parsed.mutants) == sum(len(f["mutants"]) for f in report["files"].values())
    for index, (name, mine) in enumerate(own.items()):
        for entry in report["files"][mine["file"]]["mutants"]:
            shown, status = by_id[entry["id"]], mine["outcomes"][entry["id"]]["status"]
            line = entry["location"]["start"]["line"]
            assert shown["line_above"] == f"s{index}-L{line}" == f"s{index}-L{shown['data-line']}", entry["id"]
            assert shown["data-status"] == status and f"st-{status}" in shown["class"].split()
            assert shown["text"].startswith(f"{status_word(status)} {entry['mutatorName']} "), shown["text"]
            assert shown["text"].count(entry["id"]) == 1
            assert entry.get("statusReason", "") in shown["text"]
    # Once in the page's text, but where a duplicate's reason names its original.
    text = "".join(parsed.text)
    reasons = [m.get("statusReason", "") for f in report["files"].values() for m in f["mutants"]]
    for mutant_id in by_id:
        assert text.count(mutant_id) == 1 + sum(reason.count(mutant_id) for reason in reasons), mutant_id


# ---- the page, read without a browser ------------------------------------------------------------------

def test_the_page_loads_nothing_and_its_policy_forbids_every_load():
    page = report_page(report_json(campaigns()))
    parsed = parse(page)
    assert parsed.urls, "the line anchors at least"
    assert [u for u in parsed.urls if not (u[2].startswith("#") or u[2].startswith("data:"))] == []
    styles = "\n".join(parsed.styles)
    assert "@import" not in styles and "url(" not in styles and "@font-face" not in styles
    assert "http:" not in page and "https:" not in page and "//" not in styles
    assert parsed.csp == [CSP]
    assert CSP.startswith("default-src 'none';") and "connect-src" not in CSP and "http" not in CSP
    assert page.index("Content-Security-Policy") < page.index("<style>")  # in force before anything else


def test_the_summary_and_table_show_the_jsons_scores_as_the_terminal_formats_them():
    report = report_json(campaigns())
    page = report_page(report)
    parsed = parse(page)
    own = report[OWN_KEY]
    assert parsed.by_id["score"]["text"] == percent(own["score"]) == "75.0%"
    assert parsed.by_id["value-score"]["text"] == percent(own["valueScore"]) == "62.5%"
    counts = parsed.by_id["counts"]["text"]
    assert all(f"{status_word(s)} {n}" in counts for s, n in own["counts"].items())
    assert "100 * (killed + timeout + runtime_error) / (mutants - equivalent - duplicate - compile_error)" in (
        "".join(parsed.text))
    assert page_table(page) == table_rows(format_table(campaigns()))


def test_an_interrupted_campaigns_page_says_it_is_incomplete_and_what_is_missing():
    report = report_json(campaigns())
    assert "incomplete" not in parse(report_page(report)).by_id
    report[OWN_KEY]["incomplete"] = {"interrupted_by": "SIGTERM", "not_judged": 17}
    assert parse(report_page(report)).by_id["incomplete"]["text"] == (
        "Incomplete: the campaign was interrupted by SIGTERM with 17 mutant(s) not judged yet; the figures are those "
        "of the judged ones. The same command goes on from its store.")


def _checked_substrates() -> list:
    """The sample campaigns' records with two checkers: kernelbench accepting every other mutant, t0 rejecting every
    one and every unmutated substrate but pad_const (so it is unsound, and counted on pad_const alone)."""
    return [tests_view.SubstrateRecords(
        c.name, {o.mutant_id: o.status for o in c.outcomes},
        {o.mutant_id: {"checkers": {"kernelbench": {"accepted": i % 2 == 0}, "t0": {"accepted": False}}}
         for i, o in enumerate(c.outcomes)},
        {"kernelbench": CheckerVerdict(True), "t0": CheckerVerdict(c.name == "pad_const", "rejects it")})
        for c in campaigns()]


def test_a_checkers_column_is_the_terminals():
    substrates = _checked_substrates()
    judged = tests_view.judged(substrates, False, ("kernelbench", "t0"))
    page = report_page(report_json(campaigns(), tests=judged.view))
    assert page_table(page) == table_rows(format_table(campaigns(), judged.columns))
    assert page_table(page)[2][-2:] == ["2/3", "unsound"]
    text = "".join(parse(page).text)
    assert all(f"checker {v.headline()}" in text for v in judged.checkers)


def test_the_test_view_lists_each_test_with_the_mutants_it_ran_and_killed():
    substrates = _checked_substrates()
    view = tests_view.judged(substrates, False, ("kernelbench", "t0")).view
    page = report_page(report_json(campaigns(), tests=view))
    rows = re.findall(r"<tr class='test( idle)?' data-test-id='([^']*)'><td>([^<]*?) ?(?:<span[^>]*>\(idle\)</span>)?</td>"
                      r"<td>([^<]*)</td><td>(\d+)</td><td>(?:0|<details><summary>(\d+)</summary><code>(.*?)</code>)", page)
    # The killed in the report's order of its mutants: compared as sets.
    shown = {test: (name, group, int(ran), sorted(killed.split("<br>") if killed else []), bool(idle))
             for idle, test, name, group, ran, _n, killed in rows}
    expected = {}
    for test in ("checker:kernelbench", "checker:t0"):
        ran = sum(test in tests for by_mutant in view.covered.values() for tests in by_mutant.values())
        killed = sorted(m for by_mutant in view.killed.values() for m, tests in by_mutant.items() if test in tests)
        expected[test] = (f"checker {test.split(':')[1]}", "checkers", ran, killed, ran > 0 and not killed)
    # The oracle that killed a value survivor is a test too (it ran only the survivors it is named on).
    by_racecheck = [o.mutant_id for c in campaigns() for o in c.outcomes if o.oracle == "racecheck"]
    expected["racecheck"] = ("oracle racecheck", "oracles", len(by_racecheck), sorted(by_racecheck), False)
    assert shown == expected
    assert shown["checker:kernelbench"][3]  # kernelbench rejects some detected mutants: its kills are listed
    # t0 rejects every mutant and every unmutated substrate but pad_const's: its kills are pad_const's alone.
    assert shown["checker:t0"][3] and all(m.startswith("pad_const:") for m in shown["checker:t0"][3])
    # Without --matrix or --checker there are no tests, and no test view.
    assert "id='tests'" not in report_page(report_json(campaigns()))


def test_a_matrix_campaigns_page_shows_its_analyses_as_the_terminal_prints_them():
    import html as html_module

    from harness.engine.kill_matrix import MutantRow
    from harness.engine.matrix import format_matrix, matrix_json

    matrix = matrix_json({"a": [MutantRow("a:1", frozenset({"a/T0_original/0", "a/edge/0"}), frozenset({"a/edge/0"})),
                                MutantRow("a:2", frozenset({"a/T0_original/0", "a/edge/0"}))]})
    report = report_json(campaigns())
    report[OWN_KEY]["matrix"] = matrix
    page = report_page(report)
    shown = re.search(r"<section id='matrix'><h2>Kill matrix</h2>\n<pre>(.*?)</pre>", page, re.S).group(1)
    assert html_module.unescape(shown) == format_matrix(matrix)
    assert "Idle trials: a/T0_original/0." in page  # it ran both mutants and killed neither
    # A row a fault cut short says so under its mutant.
    mutant = "scatter_add:L5C20:index_off_by_one:0"
    report[OWN_KEY]["matrix"] = matrix_json({}, {"scatter_add": {mutant: "wide trial 2: fault: an illegal address"}})
    by_id = {m["data-mutant-id"]: m["text"] for m in parse(report_page(report)).mutants}
    assert "its matrix row ended at wide trial 2: fault: an illegal address" in by_id[mutant]
    assert sum("its matrix row ended" in text for text in by_id.values()) == 1
    assert all(html_module.escape(meaning, quote=True) in page for meaning in matrix["definitions"].values())


def test_every_mutant_is_shown_once_on_its_line_with_its_status_change_and_killer():
    report = report_json(campaigns())
    parsed = parse(report_page(report))
    assert_every_mutant_on_its_line(parsed, report)
    by_id = {m["data-mutant-id"]: m["text"] for m in parsed.mutants}
    assert "< \u2192 <=" in by_id["pad_const:L3C9:relational_boundary:0"]
    assert "(lines 3\u20135)" in by_id["pad_const:L3C3:guard_deletion:0"]  # a deleted statement of three lines
    assert "killed by: racecheck" in by_id["scatter_add:L6C3:sync_deletion:0"]
    assert "compiled code identical to pad_const:L4C12:ternary_swap:0's" in by_id["pad_const:L4C33:arithmetic_swap:0"]


def test_sources_titles_and_reasons_are_escaped():
    source = ('// </script><script>alert(1)</script> <b>&amp; "quoted" \'single\'\n'
              'extern "C" __global__ void k(int* y, int a, int b) { y[0] = a & b; }\n')
    mutant = outcome("esc:L2C63:bitwise_swap:0", "bitwise_swap", 2, 63, "&", "|", MutantStatus.COMPILE_ERROR,
                     'kernel.cu(2): error: "<b>&" </script>\n  a & b\n  ^')
    report = report_json([SubstrateCampaign("esc", source, "c" * 64, "cpu", "<cpu & co>", [mutant])])
    page = report_page(report, title='</title><b>"&"</b>')
    assert page.count("</script>") == 1 and page.count("<script>") == 1  # the page's own, at its end
    assert "<b>" not in page and "&amp;amp;" in page  # a source's "&amp;" shows as written
    parsed = parse(page)
    assert parsed.lines["s0-L1"]["text"] == source.split("\n")[0]
    assert parsed.lines["s0-L2"]["text"] == source.split("\n")[1]
    [shown] = parsed.mutants
    assert "& \u2192 |" in shown["text"] and 'kernel.cu(2): error: "<b>&" </script>\n  a & b' in shown["text"]
    assert '</title><b>"&"</b>' in "".join(parsed.text) and "<cpu & co>" in "".join(parsed.text)


def test_runtime_errors_count_in_the_score_as_the_json_counts_them():
    report = report_json(campaigns())
    own = report[OWN_KEY]
    # 4 killed, 1 timeout, 1 runtime error of 8 valid (11 less an equivalent, a duplicate, a compile error): 6/8.
    # The web component's own score, (killed + timeout) / (killed + timeout + survived), is 5/7: 71.4%.
    assert (own["counts"]["runtime_error"], own["score"]) == (1, 75.0)
    page = report_page(report)
    assert parse(page).by_id["score"]["text"] == "75.0%"
    assert "71.4%" not in page
    scatter = page_table(page)[2]
    assert scatter[0] == "scatter_add" and scatter[7] == "1" and scatter[-1] == "75.0%"  # 3 of 4 valid


def test_the_elements_page_says_its_component_scores_otherwise_and_gives_ours():
    report = report_json(campaigns())
    page = report_html(report)
    note = re.search(r"<body>\s*<p[^>]*>(.*?)</p>", page, re.S).group(1)
    assert note.startswith("Mutation score: 75.0% (value score 62.5%), 100 * (killed + timeout + runtime_error) / ")
    assert "leaves runtime-error mutants out (1 in this report)" in note


def test_a_saved_report_gives_the_same_page():
    report = report_json(campaigns())
    assert report_page(json.loads(json.dumps(report))) == report_page(report)


@pytest.mark.parametrize("report", [{}, [], {"files": {}}, {"files": {}, OWN_KEY: {"substrates": {"x": {}}}}])
def test_what_is_no_report_is_refused(report):
    with pytest.raises(NotAReport, match="^not a campaign report"):
        report_page(report)


# ---- python -m harness.engine.page ---------------------------------------------------------------------

def _page_command(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.engine.page", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_the_command_writes_the_page_of_a_saved_report(tmp_path):
    report = report_json(campaigns())
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(report, indent=2) + "\n")
    run = _page_command(saved, "-o", tmp_path / "report.html", "--title", "pads")
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == report_page(report, "pads")
    help_run = _page_command("--help")
    assert help_run.returncode == 0 and "REPORT" in help_run.stdout and "-o PATH" in help_run.stdout


def test_the_command_names_a_missing_unreadable_or_foreign_file_in_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("not json\n")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe{}")
    (tmp_path / "other.json").write_text('{"schemaVersion": "2", "files": {}}\n')
    page = tmp_path / "page.html"
    for given, why in [(tmp_path / "absent.json", "no such file"),
                       (tmp_path, "is a folder; give a report.json"),
                       (tmp_path / "notes.txt", "not JSON (Expecting value at line 1 column 1)"),
                       (tmp_path / "binary.json", "not JSON (not UTF-8 text)"),
                       (tmp_path / "other.json", "not a campaign report (no substrateHarness or no files)")]:
        run = _page_command(given, "-o", page)
        assert (run.returncode, run.stdout, run.stderr) == (2, "", f"page: error: {given}: {why}\n")
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(report_json(campaigns())))
    run = _page_command(saved, "-o", tmp_path / "nowhere" / "page.html")
    nowhere = tmp_path / "nowhere"
    why = f"-o {nowhere / 'page.html'}: its folder {nowhere} does not exist"
    assert (run.returncode, run.stderr) == (2, f"page: error: {why}\n")
    assert not page.exists()


# ---- the campaign's --html and --elements-js -----------------------------------------------------------

def test_elements_js_without_html_or_without_its_file_is_a_usage_error(tmp_path, capsys):
    js = tmp_path / "mutation-test-elements.js"
    js.write_text("// a stand-in\n")
    argv = ["--backend", "cpu", "--store", str(tmp_path / "store.jsonl"), "pad_const_b4"]
    assert _usage(capsys, [*argv, "--elements-js", str(js)]) == (
        "campaign: error: --elements-js chooses the page --html writes: give --html PATH too\n")
    missing = tmp_path / "absent.js"
    html_args = ["--html", str(tmp_path / "r.html")]
    assert _usage(capsys, [*argv, *html_args, "--elements-js", str(missing)]) == (
        f"campaign: error: --elements-js {missing}: no such file\n")
    assert _usage(capsys, [*argv, *html_args, "--elements-js", str(tmp_path)]) == (
        f"campaign: error: --elements-js {tmp_path}: is a folder; give the file\n")


CAMPAIGN_OPERATORS = ["--operator", "relational_boundary", "--operator", "guard_deletion", "--operator",
                      "narrow_long_long"]  # 2 killed, 2 survivors (an int index goes wrong past 2^31 elements only)


@pytest.fixture(scope="module")
def campaign_run(tmp_path_factory):
    """A real campaign on the CPU backend, by its command: its terminal output, JSON and page."""
    root = tmp_path_factory.mktemp("page_campaign")
    rule_candidates.write_candidates(root, [])
    (root / "substrates" / "candidate_RuleSeveral.py").unlink()
    assert gate_main([str(root / "substrates" / "candidate_rule_compliant.py"), "--backend", "cpu", "--no-progress",
                      "--timeout", "60"]) == 0
    command = [sys.executable, "-m", "harness.campaign", "rule_compliant", "--backend", "cpu", "--no-progress",
               "--substrates-dir", str(root / "substrates"), "--store", str(root / "results.jsonl"),
               *CAMPAIGN_OPERATORS, "--json", str(root / "report.json"), "--html", str(root / "report.html")]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return root, command, run.stdout


def test_the_campaigns_page_shows_the_score_of_its_json_and_its_terminal(campaign_run):
    root, _command, out = campaign_run
    report = json.loads((root / "report.json").read_text())
    page = (root / "report.html").read_text(encoding="utf-8")
    [head, row] = [cells for cells in table_rows(out) if cells[0] in ("substrate", "rule_compliant")]
    terminal = dict(zip(head, row))
    assert terminal["score"] == percent(report[OWN_KEY]["score"]) == parse(page).by_id["score"]["text"] == "50.0%"
    assert page_table(page) == [head, row]
    assert page == report_page(report)
    assert_every_mutant_on_its_line(parse(page), report)


def test_elements_js_makes_the_campaign_write_the_components_page(campaign_run, tmp_path):
    root, command, _out = campaign_run
    js = tmp_path / "mutation-test-elements.js"
    js.write_text("// a stand-in for the npm package's file\n")
    page_path = tmp_path / "elements.html"
    command = [*command[:command.index("--json")], "--html", str(page_path), "--elements-js", str(js)]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "4 mutants, 0 to run (4 stored)" in run.stdout
    report = json.loads((root / "report.json").read_text())
    assert page_path.read_text(encoding="utf-8") == report_html(report, elements_js=js)


# ---- the page in a browser, the network off ------------------------------------------------------------

def _dump_dom(page: Path, profile: Path) -> str:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("needs a headless Chromium: none of chromium, chromium-browser, google-chrome, "
                    "google-chrome-stable on PATH (Debian: apt-get install chromium)")
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9",
                          "--host-resolver-rules=MAP * ~NOTFOUND", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "<body" in run.stdout, f"chromium exited {run.returncode}: {run.stderr[-2000:]}"
    return run.stdout


# Appended to a page under test: writes into <pre id="probe"> the lines and mutants the browser lays out nowhere
# (display: none, or inside a closed element), which `--dump-dom` then prints. It only reads the page.
PROBE = """<script>
(function () {
  var unseen = Array.prototype.filter.call(document.querySelectorAll(".ln, li.mutant"), function (e) {
    return e.getClientRects().length === 0;
  }).map(function (e) { return e.id || e.dataset.mutantId; });
  var probe = document.createElement("pre");
  probe.id = "probe";
  probe.textContent = JSON.stringify(unseen);
  document.body.appendChild(probe);
})();
</script>
"""


@pytest.mark.parametrize("script", ["on", "off"])
def test_the_page_shows_every_mutant_in_a_browser_offline(tmp_path, script):
    report = report_json(campaigns())
    page = report_page(report)
    if script == "off":
        # What a browser with JavaScript off renders: the markup alone (Chromium's --dump-dom needs scripts on).
        page = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = parse(_dump_dom(path, tmp_path / "profile"))
    assert json.loads(dom.by_id["probe"]["text"]) == []  # every line and mutant laid out
    assert dom.by_id["score"]["text"] == percent(report[OWN_KEY]["score"]) == "75.0%"
    assert dom.by_id["value-score"]["text"] == "62.5%"
    assert_every_mutant_on_its_line(dom, report)
    assert len("".join(dom.text).split()) > 300
    # The page's script ran under its own policy (it shows the filters); without it they stay hidden.
    assert ("filters" in dom.hidden) == (script == "off")


def test_the_filters_hide_a_status_and_the_lines_without_mutants_in_a_browser(tmp_path):
    report = report_json(campaigns())
    click = """<script>
document.querySelector('#filters input[data-toggles="hide-survived"]').click();
document.querySelector('#filters input[data-toggles="only-mutated"]').click();
</script>
"""
    path = tmp_path / "report.html"
    path.write_text(report_page(report).replace("</body>", click + PROBE + "</body>"), encoding="utf-8")
    dom = parse(_dump_dom(path, tmp_path / "profile"))
    unseen = set(json.loads(dom.by_id["probe"]["text"]))
    survivors = {o.mutant_id for c in campaigns() for o in c.outcomes if o.status is MutantStatus.SURVIVED}
    mutated = {f"s{i}-L{o.line}" for i, c in enumerate(campaigns()) for o in c.outcomes}
    lines = {f"s{i}-L{n}" for i, c in enumerate(campaigns()) for n in range(1, c.source.count("\n") + 1)}
    assert unseen == survivors | (lines - mutated)


def test_the_campaigns_page_in_a_browser_shows_its_jsons_score(campaign_run, tmp_path):
    root, _command, _out = campaign_run
    report = json.loads((root / "report.json").read_text())
    dom = parse(_dump_dom(root / "report.html", tmp_path / "profile"))
    assert dom.by_id["score"]["text"] == percent(report[OWN_KEY]["score"]) == "50.0%"
    assert_every_mutant_on_its_line(dom, report)
