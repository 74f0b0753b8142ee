"""The campaign's reports: mutation-testing-report-schema JSON, and the page that renders it.

Two tests need third-party files, never committed: .ci/run installs them with npm into the gitignored
.ci/npm/ (by hand: NPM_INSTALL below, run in the repository root). The schema test reads the published schema
from the file named by MUTATION_TESTING_REPORT_SCHEMA, else tests/fixtures/mutation-testing-report-schema.json,
else the npm package mutation-testing-report-schema's dist/src/mutation-testing-report-schema.json under
.ci/npm/, and skips without one. The browser test needs a headless Chromium on PATH and the npm package
mutation-testing-elements' dist/mutation-test-elements.js (the CDN cannot be reached from CI): the file named
by MUTATION_TESTING_ELEMENTS_JS, else the one under .ci/npm/; it skips without either.
"""

import base64
import html
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.engine.report import (
    DETECTED, ELEMENTS_CDN, ELEMENTS_VERSION, EQUIVALENT_REASON, NOT_VALID, OWN_KEY, SCHEMA_STATUS, MutantOutcome,
    MutantStatus, SubstrateCampaign, file_key, report_html, report_json)

ROOT = Path(__file__).resolve().parent.parent
NPM_MODULES = ROOT / ".ci" / "npm" / "node_modules"  # where .ci/run installs the two npm packages
NPM_INSTALL = ("npm install --prefix .ci/npm --no-save mutation-testing-elements@3.9.0 "
               "mutation-testing-report-schema@3.8.4")
SCHEMA_VAR = "MUTATION_TESTING_REPORT_SCHEMA"
SCHEMA_FIXTURE = ROOT / "tests" / "fixtures" / "mutation-testing-report-schema.json"
SCHEMA_NPM = NPM_MODULES / "mutation-testing-report-schema/dist/src/mutation-testing-report-schema.json"
ELEMENTS_JS_VAR = "MUTATION_TESTING_ELEMENTS_JS"
ELEMENTS_JS_NPM = NPM_MODULES / "mutation-testing-elements/dist/mutation-test-elements.js"
S = MutantStatus

PAD_SOURCE = """\
extern "C" __global__ void pad_const(const float* x, float* y, int n, int pad) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n + pad) {
    y[i] = i < pad ? 0.0f : x[i - pad];
  }
}
"""

SCATTER_SOURCE = """\
// a comment that says </script> and <!-- <script> to the page
extern "C" __global__ void scatter_add(const float* x, const int* idx, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&y[idx[i]], x[i]);
  __syncthreads();
}
"""


def outcome(mutant_id, operator, line, column, original, replacement, status, detail="", seconds=0.5):
    return MutantOutcome(mutant_id=mutant_id, operator=operator, line=line, column=column, original=original,
                         replacement=replacement, description=f"{original!r} -> {replacement!r}", status=status,
                         detail=detail, seconds=seconds)


def campaigns() -> list[SubstrateCampaign]:
    """Two substrates, every status at least once, a deleted statement spanning three lines."""
    pad = [
        outcome("pad_const:L3C9:relational_boundary:0", "relational_boundary", 3, 9, "<", "<=", S.KILLED,
                "killed by misaligned trial 3: output_matches"),
        outcome("pad_const:L3C3:guard_deletion:0", "guard_deletion", 3, 3,
                "if (i < n + pad) {\n    y[i] = i < pad ? 0.0f : x[i - pad];\n  }", ";", S.SURVIVED),
        outcome("pad_const:L4C12:ternary_swap:0", "ternary_swap", 4, 12, "i < pad ? 0.0f : x[i - pad]",
                "i < pad ? x[i - pad] : 0.0f", S.KILLED, "killed by probe: output_matches"),
        outcome("pad_const:L2C11:thread_block_swap:0", "thread_block_swap", 2, 11, "blockIdx", "threadIdx",
                S.TIMEOUT, "timed out after 30 s in trial 2"),
        outcome("pad_const:L3C13:arithmetic_swap:0", "arithmetic_swap", 3, 13, "+", "-", S.EQUIVALENT,
                "compiled code identical to the unmutated source's"),
        outcome("pad_const:L4C33:arithmetic_swap:0", "arithmetic_swap", 4, 33, "-", "+", S.DUPLICATE,
                "compiled code identical to pad_const:L4C12:ternary_swap:0's"),
    ]
    scatter = [
        outcome("scatter_add:L5C3:atomic_to_plain:0", "atomic_to_plain", 5, 3, "atomicAdd(&y[idx[i]], x[i])",
                "(*(&y[idx[i]]) += (x[i]))", S.SURVIVED),
        # A survivor of the value suites that racecheck (the sanitizers oracle) killed.
        MutantOutcome("scatter_add:L6C3:sync_deletion:0", "sync_deletion", 6, 3, "__syncthreads();", "",
                      "'__syncthreads();' -> ''", S.KILLED, "killed by racecheck (compute-sanitizer): 1 report(s): "
                      "racecheck: scatter_add.cu:6: Race reported between Write access and Read access", 0.5,
                      oracle="racecheck"),
        outcome("scatter_add:L5C20:index_off_by_one:0", "index_off_by_one", 5, 20, "i", "i + 1", S.RUNTIME_ERROR,
                "CUDA error 700: an illegal memory access was encountered"),
        outcome("scatter_add:L3C7:narrow_long_long:0", "narrow_long_long", 3, 7, "i", "j", S.COMPILE_ERROR,
                "kernel.cu(3): error: identifier \"j\" is undefined"),
        outcome("scatter_add:L4C9:relational_negation:0", "relational_negation", 4, 9, ">=", "<", S.KILLED,
                "killed by heavy_overlap trial 0: output_matches"),
    ]
    return [SubstrateCampaign("pad_const", PAD_SOURCE, "a" * 64, "cuda", "NVIDIA H200", pad),
            SubstrateCampaign("scatter_add", SCATTER_SOURCE, "b" * 64, "cuda", "NVIDIA H200", scatter)]


def test_the_fixture_covers_every_status():
    assert {o.status for c in campaigns() for o in c.outcomes} == set(MutantStatus)


# ---- the schema -----------------------------------------------------------------------------------------

def _local_file(var: str, *candidates: Path) -> Path:
    """The file named by the environment variable `var` if set (skipping if it is not a file), else the
    first of `candidates` that exists, else skip."""
    named = os.environ.get(var)
    if named:
        if not Path(named).is_file():
            pytest.skip(f"{var}={named} names no file")
        return Path(named)
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        pytest.skip(f"needs {' or '.join(str(c.relative_to(ROOT)) for c in candidates)}: run `{NPM_INSTALL}` "
                    f"in the repository root (as .ci/run does), or set {var} to a copy of the file")
    return found


def test_report_validates_against_the_published_schema():
    schema_file = _local_file(SCHEMA_VAR, SCHEMA_FIXTURE, SCHEMA_NPM)
    jsonschema = pytest.importorskip("jsonschema", reason="needs jsonschema (the test extra)")
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    assert schema["$id"] == "http://stryker-mutator.io/report.schema.json"
    validator = jsonschema.Draft7Validator(schema)
    report = json.loads(json.dumps(report_json(campaigns())))  # as a reader of the file would see it
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(report)]
    assert errors == []
    # and the schema is strict enough to catch what matters: a status it does not know, a 0 column
    report["files"]["pad_const.cu"]["mutants"][0]["status"] = "Equivalent"
    report["files"]["pad_const.cu"]["mutants"][1]["location"]["start"]["column"] = 0
    assert len(list(validator.iter_errors(report))) == 2


def _with_tests() -> dict:
    """report_json of campaigns() with a tests view: each mutant covered by two trial tests and a checker, the
    killed ones killed by the first trial."""
    from harness.engine.report import TestView

    files = {"pad_const/T0_original": {"tests": [{"id": "pad_const/T0_original/0", "name": "T0_original trial 0"},
                                                 {"id": "pad_const/T0_original/1", "name": "T0_original trial 1"}]},
             "checkers": {"tests": [{"id": "checker:kernelbench", "name": "checker kernelbench"}]}}
    covered = {c.name: {o.mutant_id: ["pad_const/T0_original/0", "pad_const/T0_original/1", "checker:kernelbench"]
                        for o in c.outcomes} for c in campaigns()}
    killed = {c.name: {o.mutant_id: ["pad_const/T0_original/0"] for o in c.outcomes
                       if o.status is MutantStatus.KILLED and not o.oracle} for c in campaigns()}
    return report_json(campaigns(), tests=TestView(files, covered, killed, {"checkers": {"kernelbench": {}}}))


def test_a_report_with_tests_validates_against_the_published_schema():
    schema_file = _local_file(SCHEMA_VAR, SCHEMA_FIXTURE, SCHEMA_NPM)
    jsonschema = pytest.importorskip("jsonschema", reason="needs jsonschema (the test extra)")
    validator = jsonschema.Draft7Validator(json.loads(schema_file.read_text(encoding="utf-8")))
    report = json.loads(json.dumps(_with_tests()))
    assert [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(report)] == []


def test_a_report_with_tests_lists_them_and_each_mutants_killers_the_oracles_among_them_and_the_page_holds_it():
    report = _with_tests()
    oracles = sorted({o.oracle for c in campaigns() for o in c.outcomes if o.oracle})
    assert report["testFiles"]["oracles"] == {"tests": [{"id": o, "name": f"oracle {o}"} for o in oracles]}
    assert report["testFiles"]["checkers"]["tests"] == [{"id": "checker:kernelbench", "name": "checker kernelbench"}]
    for campaign in campaigns():
        for outcome, mutant in zip(campaign.outcomes, report["files"][f"{campaign.name}.cu"]["mutants"]):
            oracle = [outcome.oracle] if outcome.oracle else []
            assert mutant["coveredBy"] == ["pad_const/T0_original/0", "pad_const/T0_original/1",
                                           "checker:kernelbench", *oracle]
            assert mutant["killedBy"] == (["pad_const/T0_original/0"] if outcome.status is MutantStatus.KILLED
                                          and not oracle else oracle)
    assert report["substrateHarness"]["checkers"] == {"kernelbench": {}}
    embedded = re.search(r"app\.report = (.*);\n", report_html(report)).group(1)
    assert json.loads(embedded) == json.loads(json.dumps(report))  # the page's test view is the report's
    assert "testFiles" not in report_json(campaigns())  # without tests, as before


def test_report_shape():
    report = report_json(campaigns())
    assert report["schemaVersion"] == "2"
    assert report["thresholds"] == {"high": 80, "low": 60}
    assert report["framework"] == {"name": "substrate-harness"}
    assert list(report["files"]) == ["pad_const.cu", "scatter_add.cu"]
    entry = report["files"]["scatter_add.cu"]
    assert entry["language"] == "cpp" and entry["source"] == SCATTER_SOURCE
    assert [m["id"] for m in entry["mutants"]] == [o.mutant_id for o in campaigns()[1].outcomes]
    assert entry["mutants"][0] == {
        "id": "scatter_add:L5C3:atomic_to_plain:0",
        "mutatorName": "atomic_to_plain",
        "replacement": "(*(&y[idx[i]]) += (x[i]))",
        "location": {"start": {"line": 5, "column": 3}, "end": {"line": 5, "column": 30}},
        "status": "Survived",
        "description": "'atomicAdd(&y[idx[i]], x[i])' -> '(*(&y[idx[i]]) += (x[i]))'",
        "duration": 500.0,  # milliseconds
    }


# ---- statuses -------------------------------------------------------------------------------------------

STATUS_TABLE = [  # ours, the schema's, its statusReason given the detail "why"
    (S.KILLED, "Killed", "why"),
    (S.SURVIVED, "Survived", "why"),
    (S.TIMEOUT, "Timeout", "why"),
    (S.RUNTIME_ERROR, "RuntimeError", "why"),
    (S.COMPILE_ERROR, "CompileError", "why"),
    (S.EQUIVALENT, "Ignored", "equivalent: compiled code identical to the original's"),
    (S.DUPLICATE, "Ignored", "duplicate: why"),
]


def test_the_status_table_covers_every_status():
    assert {row[0] for row in STATUS_TABLE} == set(MutantStatus) == set(SCHEMA_STATUS)
    assert DETECTED == {S.KILLED, S.TIMEOUT, S.RUNTIME_ERROR}
    assert NOT_VALID == {S.EQUIVALENT, S.DUPLICATE, S.COMPILE_ERROR}


@pytest.mark.parametrize("ours, theirs, reason", STATUS_TABLE)
def test_status_mapping(ours, theirs, reason):
    m = outcome("k:L1C1:x:0", "x", 1, 1, "a", "b", ours, detail="why")
    report = report_json([SubstrateCampaign("k", "a\n", "", "cpu", "cpu", [m])])
    mutant = report["files"]["k.cu"]["mutants"][0]
    assert (mutant["status"], mutant["statusReason"]) == (theirs, reason)
    assert report[OWN_KEY]["substrates"]["k"]["outcomes"]["k:L1C1:x:0"] == {
        "status": ours.value, "detail": "why", "seconds": 0.5}


def test_reasons_in_the_campaign():
    mutants = {m["id"]: m for f in report_json(campaigns())["files"].values() for m in f["mutants"]}
    assert mutants["pad_const:L3C13:arithmetic_swap:0"]["statusReason"] == EQUIVALENT_REASON
    assert mutants["pad_const:L4C33:arithmetic_swap:0"]["statusReason"] == (
        "duplicate: compiled code identical to pad_const:L4C12:ternary_swap:0's")
    assert "statusReason" not in mutants["pad_const:L3C3:guard_deletion:0"]  # a survivor with no detail
    assert mutants["scatter_add:L5C20:index_off_by_one:0"]["statusReason"] == (
        "CUDA error 700: an illegal memory access was encountered")


def test_a_duplicate_must_name_its_twin():
    with pytest.raises(ValueError, match="must name the mutant it duplicates"):
        outcome("k:L1C1:x:0", "x", 1, 1, "a", "b", S.DUPLICATE, detail="")


def test_a_status_given_as_its_value_is_stored_as_the_enum():
    assert outcome("k:L1C1:x:0", "x", 1, 1, "a", "b", "killed").status is S.KILLED


# ---- locations ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, column, original, end", [
    (3, 9, "<", (3, 10)),                                  # end column exclusive
    (5, 3, "atomicAdd(&y[idx[i]], x[i])", (5, 30)),
    (6, 3, "__syncthreads();", (6, 19)),
    (3, 3, "if (i < n) {\n    y[i] = x[i];\n  }", (5, 4)),    # three lines: the end is on the last
    (3, 3, "if (i < n) y[i] = 0;\n", (4, 1)),               # through the line break: the next line's start
    (2, 7, "", (2, 7)),                                    # nothing replaced: an empty span
])
def test_end_of_a_mutant(line, column, original, end):
    assert outcome("k", "x", line, column, original, "", S.KILLED).end() == end


def test_the_multi_line_mutant_in_the_report():
    mutant = report_json(campaigns())["files"]["pad_const.cu"]["mutants"][1]
    assert mutant["location"] == {"start": {"line": 3, "column": 3}, "end": {"line": 5, "column": 4}}


def test_every_location_marks_the_original_text():
    for campaign, entry in zip(campaigns(), report_json(campaigns())["files"].values()):
        lines = campaign.source.split("\n")
        for o, m in zip(campaign.outcomes, entry["mutants"]):
            start, end = m["location"]["start"], m["location"]["end"]
            offset = lambda p: sum(len(x) + 1 for x in lines[:p["line"] - 1]) + p["column"] - 1
            assert campaign.source[offset(start):offset(end)] == o.original, o.mutant_id


def test_the_mutants_that_generate_makes_are_located_as_the_report_reads_them():
    from harness.engine.mutants import generate

    for name, source in (("pad_const", PAD_SOURCE), ("scatter_add", SCATTER_SOURCE)):
        made = [outcome(m.id, m.operator.value, m.line, m.column, m.original, m.replacement, S.SURVIVED)
                for m in generate(source, name)]
        entry = report_json([SubstrateCampaign(name, source, "", "cpu", "cpu", made)])["files"][f"{name}.cu"]
        assert [m["location"]["start"] for m in entry["mutants"]] == [
            {"line": o.line, "column": o.column} for o in made]


@pytest.mark.parametrize("line, column, why", [
    (3, 10, r"the source at L3C10 reads ' ', not '<'"),
    (99, 1, "line 99, but the source has 7 lines"),
    (3, 40, "column 40, but line 3 has 20 characters"),
])
def test_a_location_that_does_not_hold_the_original_is_refused(line, column, why):
    bad = outcome("pad_const:bad", "x", line, column, "<", "<=", S.KILLED)
    with pytest.raises(ValueError, match=re.escape(why)):
        report_json([SubstrateCampaign("pad_const", PAD_SOURCE, "", "cpu", "cpu", [bad])])


def test_line_and_column_start_at_one():
    with pytest.raises(ValueError, match="both start at 1"):
        outcome("k", "x", 0, 1, "a", "b", S.KILLED)


def test_two_substrates_of_one_name_are_refused():
    c = campaigns()[0]
    with pytest.raises(ValueError, match="two substrates named 'pad_const'"):
        report_json([c, c])


def test_repeated_mutant_ids_are_refused():
    c = campaigns()[0]
    c.outcomes.append(c.outcomes[0])
    with pytest.raises(ValueError, match="mutant ids repeat"):
        report_json([c])


# ---- scores ---------------------------------------------------------------------------------------------

def test_score_worked_example():
    # 11 mutants: 4 killed, 1 timeout, 1 runtime error (6 detected), 2 survived, and 3 not valid
    # (1 equivalent, 1 duplicate, 1 compile error): 100 * 6 / (11 - 3) = 75.0
    statuses = [S.KILLED] * 4 + [S.TIMEOUT, S.RUNTIME_ERROR] + [S.SURVIVED] * 2 + [
        S.EQUIVALENT, S.DUPLICATE, S.COMPILE_ERROR]
    c = SubstrateCampaign("k", "a\n", "", "cpu", "cpu",
                          [outcome(f"k:{n}", "x", 1, 1, "a", "b", s, detail="d") for n, s in enumerate(statuses)])
    assert c.counts() == {S.KILLED: 4, S.SURVIVED: 2, S.EQUIVALENT: 1, S.DUPLICATE: 1, S.COMPILE_ERROR: 1,
                          S.TIMEOUT: 1, S.RUNTIME_ERROR: 1}
    assert c.score() == 75.0


def test_score_of_nothing_valid_is_none():
    assert SubstrateCampaign("k", "a\n", "", "cpu", "cpu", []).score() is None
    only_invalid = [outcome("k:0", "x", 1, 1, "a", "b", S.EQUIVALENT), outcome("k:1", "x", 1, 1, "a", "c", S.COMPILE_ERROR)]
    assert SubstrateCampaign("k", "a\n", "", "cpu", "cpu", only_invalid).score() is None


def test_counts_list_every_status():
    assert SubstrateCampaign("k", "a\n", "", "cpu", "cpu", []).counts() == dict.fromkeys(MutantStatus, 0)


def test_own_key_holds_scores_and_statuses():
    own = report_json(campaigns())[OWN_KEY]
    pad, scatter = own["substrates"]["pad_const"], own["substrates"]["scatter_add"]
    # pad_const: killed 2, timeout 1 detected; survived 1; equivalent and duplicate not valid: 3 / 4
    assert pad["score"] == 75.0
    # scatter_add: killed 2 (one by racecheck), runtime error 1 detected; survived 1; compile error not valid: 3 / 4
    assert scatter["score"] == 75.0
    # by the value suites alone the racecheck kill is a survivor: 2 / 4
    assert scatter["valueScore"] == 50.0 and pad["valueScore"] == 75.0
    assert own["score"] == 75.0 and own["valueScore"] == 62.5  # 6, and 5, detected of 8 valid over both
    assert own["counts"] == {"killed": 4, "survived": 2, "equivalent": 1, "duplicate": 1, "compile_error": 1,
                             "timeout": 1, "runtime_error": 1}
    assert scatter["outcomes"]["scatter_add:L6C3:sync_deletion:0"]["oracle"] == "racecheck"
    assert "oracle" not in scatter["outcomes"]["scatter_add:L4C9:relational_negation:0"]
    mutants = {m["id"]: m for m in report_json(campaigns())["files"]["scatter_add.cu"]["mutants"]}
    assert mutants["scatter_add:L6C3:sync_deletion:0"]["killedBy"] == ["racecheck"]
    assert "killedBy" not in mutants["scatter_add:L4C9:relational_negation:0"]
    assert {k: pad[k] for k in ("file", "sourceSha256", "backend", "device", "mutants")} == {
        "file": "pad_const.cu", "sourceSha256": "a" * 64, "backend": "cuda", "device": "NVIDIA H200", "mutants": 6}
    assert pad["counts"]["equivalent"] == 1 and pad["counts"]["compile_error"] == 0
    assert pad["outcomes"]["pad_const:L3C13:arithmetic_swap:0"]["status"] == "equivalent"
    assert scatter["outcomes"]["scatter_add:L3C7:narrow_long_long:0"]["status"] == "compile_error"


def test_the_npm_packages_are_pinned_alike_here_in_ci_and_in_the_page():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    pins = re.findall(r"mutation-testing-[a-z-]+@[0-9.]+", NPM_INSTALL)
    assert len(pins) == 2 and all(pin in ci for pin in pins)
    assert f"mutation-testing-elements@{ELEMENTS_VERSION}" in pins


def test_file_key():
    assert file_key("pad_const") == "pad_const.cu"


# ---- the page -------------------------------------------------------------------------------------------

class _Scripts(HTMLParser):
    """The page's <script> elements, as a browser's parser splits them, and its custom elements."""

    def __init__(self):
        super().__init__()
        self.scripts, self.apps, self._in = [], [], None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._in = {"attrs": dict(attrs), "text": ""}
        elif tag == "mutation-test-report-app":
            self.apps.append(dict(attrs))

    def handle_data(self, data):
        if self._in is not None:
            self._in["text"] += data

    def handle_endtag(self, tag):
        if tag == "script" and self._in is not None:
            self.scripts.append(self._in)
            self._in = None


def parse(page: str) -> _Scripts:
    parser = _Scripts()
    parser.feed(page)
    parser.close()
    return parser


def embedded_report(page: str) -> dict:
    [script] = [s for s in parse(page).scripts if "app.report = " in s["text"]]
    match = re.search(r"^\s*app\.report = (.*);$", script["text"], re.M)
    return json.loads(match.group(1))


def test_a_script_end_tag_in_a_source_survives_into_the_page():
    report = report_json(campaigns())
    page = report_html(report)
    assert embedded_report(page) == report
    assert "</script> and <!-- <script>" in embedded_report(page)["files"]["scatter_add.cu"]["source"]
    assert page.count("</script>") == 2  # the two script elements' own end tags, nothing else
    assert "<!--" not in page


def test_the_page_holds_the_element_and_loads_the_component():
    page = report_html(report_json(campaigns()), title_postfix='pads & "scatters"')
    parsed = parse(page)
    assert parsed.apps == [{"title-postfix": 'pads & "scatters"'}]
    assert parsed.scripts[0]["attrs"]["src"] == ELEMENTS_CDN
    assert "mutation-testing-elements@3.9.0" in ELEMENTS_CDN
    assert 'const app = document.querySelector("mutation-test-report-app");' in parsed.scripts[1]["text"]
    assert "app.report = {" in page


def test_the_component_can_be_inlined_from_a_local_file(tmp_path):
    js = tmp_path / "mutation-test-elements.js"
    js.write_text('var s = "</script><!-- é";\n', encoding="utf-8")
    page = report_html(report_json(campaigns()), elements_js=js)
    src = parse(page).scripts[0]["attrs"]["src"]
    assert src.startswith("data:text/javascript;base64,")
    assert base64.b64decode(src.split(",", 1)[1]) == js.read_bytes()
    assert ELEMENTS_CDN not in page
    assert embedded_report(page) == report_json(campaigns())


def test_a_missing_local_component_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        report_html(report_json(campaigns()), elements_js=tmp_path / "absent.js")


# ---- the page in a browser ------------------------------------------------------------------------------

def _chromium() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome",
                                                "google-chrome-stable"))), None)


# Appended to the page under test: opens each file's mutant view in turn, waits (10 s at most) until the
# mutants drawn are the file's, and writes what the component shows (inside its shadow roots) into <pre id="probe">, which
# `chromium --dump-dom` prints.
PROBE = """<script>
(function () {
  const files = %s;
  const seen = {title: "", files: {}};
  function spans(root, found) {
    for (const el of root.querySelectorAll("*")) {
      if (el.matches("span.mutant[data-mutant-id]")) found.push(el);
      if (el.shadowRoot) spans(el.shadowRoot, found);
    }
    return found;
  }
  function look(k, tries) {
    if (k === files.length) {
      seen.title = document.title;
      const pre = document.createElement("pre");
      pre.id = "probe";
      pre.textContent = JSON.stringify(seen);
      document.body.appendChild(pre);
      return;
    }
    if (tries === 0) location.hash = "#mutant/" + files[k][0];
    const found = spans(document, []);
    const ids = [...new Set(found.map(s => s.dataset.mutantId))].sort();
    if (JSON.stringify(ids) !== JSON.stringify(files[k][1]) && tries < 100) {
      setTimeout(() => look(k, tries + 1), 100);
      return;
    }
    seen.files[files[k][0]] = found.map(s => [s.dataset.mutantId, [...s.classList], s.textContent]);
    look(k + 1, 0);
  }
  setTimeout(() => look(0, 0), 0);
})();
</script>
"""


def test_the_page_shows_the_mutants_in_a_browser(tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("needs a headless Chromium: none of chromium, chromium-browser, google-chrome, "
                    "google-chrome-stable on PATH (Debian: apt-get install chromium)")
    elements_js = _local_file(ELEMENTS_JS_VAR, ELEMENTS_JS_NPM)  # the CDN cannot be reached offline
    report = report_json(campaigns())
    files = [[key, sorted(m["id"] for m in entry["mutants"])] for key, entry in report["files"].items()]
    page = report_html(report, title_postfix="substrate harness", elements_js=elements_js)
    page = page.replace("</body>", PROBE % json.dumps(files) + "</body>")
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=60000", "--dump-dom",
                          path.as_uri()], capture_output=True, text=True, timeout=180)
    match = re.search(r'<pre id="probe">(.*?)</pre>', run.stdout, re.S)
    assert match, f"the probe wrote nothing; chromium exited {run.returncode}: {run.stderr[-2000:]}"
    seen = json.loads(html.unescape(match.group(1)))
    assert seen["title"].endswith("substrate harness")
    by_id = {o.mutant_id: o for c in campaigns() for o in c.outcomes}
    for key, entry in report["files"].items():
        shown: dict[str, list] = {}
        for mutant_id, classes, text in seen["files"][key]:
            shown.setdefault(mutant_id, []).append((classes, text))
        assert set(shown) == {m["id"] for m in entry["mutants"]}, key
        for m in entry["mutants"]:
            pieces = shown[m["id"]]
            assert all(m["status"] in classes for classes, _ in pieces), (m["id"], pieces)
            # the component marks a mutant line by line, leaving out each line's indentation
            marked = " ".join(text for _, text in pieces)
            assert marked.split() == by_id[m["id"]].original.split(), (m["id"], pieces)
