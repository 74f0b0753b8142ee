"""harness.engine.matrix and harness.engine.tests_view on hand-made cells and records: a row's verdict, the analyses
pooled by suite name, the report's tests view and each checker's verdicts and soundness."""

from harness.checkers.under_test import CheckerVerdict
from harness.engine.kill_matrix import MutantRow
from harness.engine.matrix import Cell, CellStatus, analyses, by_suite_name, failed_cell, format_matrix, \
    matrix_json, mutant_row, row_verdict, stored_cells
from harness.engine.report import MutantStatus
from harness.engine.tests_view import SubstrateRecords, judged

PASS = CellStatus.PASSED


def test_the_first_cell_that_is_no_pass_decides_a_rows_status_as_the_first_failing_trial_does():
    failed = failed_cell("misaligned", 0, "writes_in_bounds: 4 bytes changed", (None, None))
    assert (failed.check, failed.detail) == ("writes_in_bounds", "4 bytes changed")
    fault = Cell("T0_original", 2, CellStatus.FAULT, "", "an illegal address")
    assert row_verdict([Cell("T0_original", 0, PASS), failed, fault]) == (
        "killed", "misaligned trial 0: writes_in_bounds: 4 bytes changed")
    assert row_verdict([Cell("T0_original", 0, PASS), fault]) == ("runtime_error", "T0_original trial 2: an illegal "
                                                                                   "address")
    assert row_verdict([Cell("a", 0, CellStatus.SKIPPED), Cell("a", 1, CellStatus.TIMEOUT, "", "silent 3 s")]) == (
        "timeout", "a trial 1: silent 3 s")
    assert row_verdict([Cell("a", 0, PASS), Cell("a", 1, CellStatus.SKIPPED)]) == ("survived", "passed all 2 trials")


def test_a_cell_is_stored_without_its_empty_fields_and_read_back_whole():
    cells = [Cell("T0_original", 0, PASS, max_abs_error=0.0, max_rel_error=0.0),
             failed_cell("T0_original", 1, "output_matches: 3 of 8 elements differ", (2.5, 0.5))]
    assert cells[0].to_json() == {"suite": "T0_original", "trial": 0, "status": "passed", "maxAbsError": 0.0,
                                  "maxRelError": 0.0}
    assert stored_cells({"cells": [c.to_json() for c in cells]}) == cells
    assert stored_cells({"status": "killed"}) is None and stored_cells(None) is None


def test_a_row_covers_every_trial_it_ran_and_is_killed_by_the_failures_faults_and_timeouts_not_the_skips():
    row = mutant_row("relu", "relu:m1", [Cell("T0_original", 0, PASS), Cell("T0_original", 1, CellStatus.SKIPPED),
                                         failed_cell("edge", 0, "output_matches: x"),
                                         Cell("edge", 1, CellStatus.FAULT, "", "fault")])
    assert row.covered == {"relu/T0_original/0", "relu/T0_original/1", "relu/edge/0", "relu/edge/1"}
    assert row.killed_by == {"relu/edge/0", "relu/edge/1"}


def _rows():
    # Two substrates, each with a T0_original: pooled by name, T0_original is one suite over both.
    return [MutantRow("a:1", frozenset({"a/T0_original/0", "a/edge/0"}), frozenset({"a/T0_original/0", "a/edge/0"})),
            MutantRow("a:2", frozenset({"a/T0_original/0", "a/edge/0"}), frozenset({"a/edge/0"})),
            MutantRow("a:3", frozenset({"a/T0_original/0", "a/edge/0"})),
            MutantRow("b:1", frozenset({"b/T0_original/0", "b/T0_original/1"}), frozenset({"b/T0_original/1"}))]


def test_suites_are_pooled_by_name_over_substrates_and_the_analyses_say_what_kill_matrix_says():
    assert {t for row in by_suite_name(_rows()) for t in row.covered} == {
        "T0_original/a:0", "edge/a:0", "T0_original/b:0", "T0_original/b:1"}
    found = analyses(_rows())
    assert found == {
        "mutants": 4, "killed": 3, "score": 75.0, "t0Score": 50.0,
        "perSuite": [{"suite": "T0_original", "killed": 2, "alone": 1}, {"suite": "edge", "killed": 2, "alone": 1}],
        "suites": 2, "minimalSuites": ["T0_original", "edge"], "trials": 4,
        "minimalTrials": ["a/edge/0", "b/T0_original/1"], "idleTrials": ["b/T0_original/0"],
        # a:1's killers contain a:2's: a:2 subsumes it
        "subsuming": ["a:2", "b:1"], "subsumingScore": 100.0}


def test_where_nothing_is_killed_no_mutant_subsumes_and_the_subsuming_score_is_none():
    found = analyses([MutantRow("a:1", frozenset({"a/T0_original/0"}))])
    assert (found["subsuming"], found["subsumingScore"], found["idleTrials"]) == ([], None, ["a/T0_original/0"])
    assert format_matrix(matrix_json({"a": [MutantRow("a:1", frozenset({"a/T0_original/0"}))]})).splitlines()[-1] == (
        "  a: score 0.0%, T0_original alone 0.0%; minimal suites 0 of 1 (); minimal trials 0 of 1; idle trials 1; "
        "subsuming 0 of 0 killed (score -)")


def test_the_matrix_report_has_each_substrates_analyses_and_the_total_and_prints_them():
    report = matrix_json({"a": _rows()[:3], "b": _rows()[3:]})
    assert report["total"] == analyses(_rows()) and report["substrates"]["b"]["minimalSuites"] == ["T0_original"]
    assert format_matrix(report).splitlines() == [
        "kill matrix: 4 mutants over 4 trials; score 75.0% with every suite, 50.0% with T0_original alone; 2 "
        "subsuming mutants of 3 killed, score over them 100.0%",
        "suite        killed  alone",
        "T0_original       2      1",
        "edge              2      1",
        "minimal suites: 2 of 2 kill all the suites kill: T0_original, edge",
        "minimal trials: 2 of 4; idle trials: 1",
        "  a: score 66.7%, T0_original alone 33.3%; minimal suites 1 of 2 (edge); minimal trials 1 of 2; "
        "idle trials 0; subsuming 1 of 2 killed (score 100.0%)",
        "  b: score 100.0%, T0_original alone 100.0%; minimal suites 1 of 1 (T0_original); minimal trials 1 of 2; "
        "idle trials 1; subsuming 1 of 1 killed (score 100.0%)"]


def _records(accepts: dict, unmutated: bool | None, error: bool = False) -> SubstrateRecords:
    statuses = {"s:killed": MutantStatus.KILLED, "s:fault": MutantStatus.RUNTIME_ERROR,
                "s:survived": MutantStatus.SURVIVED, "s:same": MutantStatus.EQUIVALENT}
    cells = {"s:killed": [failed_cell("T0_original", 0, "output_matches: x").to_json()],
             "s:fault": [Cell("T0_original", 0, CellStatus.FAULT, "", "f").to_json()],
             "s:survived": [Cell("T0_original", 0, PASS).to_json()]}
    records = {m: {"status": s.value, "cells": cells.get(m, []),
                   "checkers": {"mine": {"accepted": accepts.get(m), "why": ""}}} for m, s in statuses.items()}
    return SubstrateRecords("s", statuses, records,
                            {"mine": CheckerVerdict(unmutated, "it raised" if error else "", error)})


def test_a_sound_checker_counts_what_it_accepts_of_the_detected_mutants_and_kills_the_rest_in_the_tests_view():
    view = judged([_records({"s:killed": True, "s:fault": False, "s:survived": True}, True)], True, ("mine",))
    (verdicts,) = view.checkers
    assert (verdicts.sound, verdicts.accepted, verdicts.rejected) == (True, ("s:killed",), ("s:fault",))
    assert verdicts.headline() == "mine: accepts 1 of the 2 mutants the suites detect"
    assert view.columns == {"mine": {"s": "1/2"}}
    assert view.view.test_files == {"s/T0_original": {"tests": [{"id": "s/T0_original/0", "name": "T0_original trial 0"}]},
                                    "checkers": {"tests": [{"id": "checker:mine", "name": "checker mine"}]}}
    assert view.view.covered["s"]["s:fault"] == ["s/T0_original/0", "checker:mine"]
    assert view.view.killed["s"] == {"s:killed": ["s/T0_original/0"], "s:fault": ["s/T0_original/0", "checker:mine"],
                                     "s:survived": []}
    assert view.view.own["checkers"]["mine"]["headline"] == verdicts.headline()
    assert view.view.own["checkers"]["mine"]["substrates"] == {"s": {"sound": True, "detected": 2, "judged": 2,
                                                                     "accepted": 1}}
    assert view.view.own["matrix"]["total"]["mutants"] == 3  # the equivalent mutant has no row
    # A row that ended at a fault says where and why; one that ran to its end, passing or failing, says nothing.
    assert view.view.own["matrix"]["rowEnds"] == {"s": {"s:fault": "T0_original trial 0: fault: f"}}


def test_a_checker_that_rejects_an_unmutated_kernel_is_unsound_and_kills_nothing_in_the_tests_view():
    view = judged([_records({"s:killed": False, "s:fault": False}, False)], False, ("mine",))
    (verdicts,) = view.checkers
    assert not verdicts.sound and verdicts.unsound_on == ("s (it returned False)",)
    assert verdicts.headline() == ("mine: unsound (it does not accept a correct substrate: s (it returned False)); its "
                                   "verdicts are not counted")
    assert view.columns == {"mine": {"s": "unsound"}} and view.view.killed["s"] == {}
    assert view.view.own["checkers"]["mine"]["sound"] is False and "matrix" not in view.view.own


def _named(records: SubstrateRecords, name: str) -> SubstrateRecords:
    """`records` as another substrate's: its name and its mutants' ids."""
    rename = {m: m.replace("s:", f"{name}:", 1) for m in records.statuses}
    return SubstrateRecords(name, {rename[m]: s for m, s in records.statuses.items()},
                            {rename[m]: r for m, r in records.records.items()}, records.unmutated)


def test_a_checker_unsound_on_one_substrate_is_counted_on_the_others_and_kills_only_there():
    # It rejects b's unmutated kernel: its verdicts on b's mutants say nothing and are not counted; a's stand.
    view = judged([_named(_records({"s:killed": True, "s:fault": False}, True), "a"),
                   _named(_records({"s:killed": False, "s:fault": False}, False), "b")], False, ("mine",))
    (verdicts,) = view.checkers
    assert not verdicts.sound and verdicts.unsound_on == ("b (it returned False)",)
    assert (verdicts.accepted, verdicts.rejected, verdicts.uncounted) == (("a:killed",), ("a:fault",),
                                                                          ("b:fault", "b:killed"))
    assert verdicts.headline() == (
        "mine: unsound (it does not accept a correct substrate: b (it returned False)); its verdicts on their 2 "
        "detected mutants are not counted; elsewhere it accepts 1 of the 2 mutants the suites detect")
    assert view.columns == {"mine": {"a": "1/2", "b": "unsound"}}
    assert view.view.killed["a"] == {"a:fault": ["checker:mine"]} and view.view.killed["b"] == {}
    own = view.view.own["checkers"]["mine"]
    assert (own["sound"], own["uncounted"], own["accepted"]) == (False, ["b:fault", "b:killed"], ["a:killed"])


def test_a_checkers_own_error_is_a_line_naming_what_it_was_judging_and_its_mutant_is_not_judged():
    records = _records({"s:killed": True}, True)
    records.records["s:fault"]["checkers"]["mine"] = {"accepted": None, "why": "checker mine raised KeyError: 'x'",
                                                      "error": True}
    view = judged([records], False, ("mine",))
    assert view.errors == ["checker mine raised KeyError: 'x', judging s:fault"]
    assert view.checkers[0].unjudged == ("s:fault",)
    # Raising on the unmutated kernel, it is unsound there: a line says so, and none of its verdicts there counts.
    view = judged([_records({"s:killed": True}, None, error=True)], False, ("mine",))
    assert view.errors == ["it raised, judging s's unmutated kernel"]
    assert (view.checkers[0].uncounted, view.checkers[0].unjudged) == (("s:fault", "s:killed"), ())


def test_a_row_that_ended_at_a_fault_or_a_timeout_says_where_and_why_even_on_the_last_trial():
    cells = {"s:short": [Cell("T0_original", 0, CellStatus.FAULT, "", "an illegal address")],
             "s:hung": [Cell("T0_original", 0, PASS), Cell("T0_original", 1, CellStatus.TIMEOUT, "", "silent 5 s"),
                        ],
             "s:last": [Cell("T0_original", 0, PASS), Cell("T0_original", 1, PASS),
                        Cell("edge", 0, CellStatus.FAULT, "", "on the last trial")],
             "s:whole": [Cell("T0_original", 0, PASS), Cell("T0_original", 1, PASS), Cell("edge", 0, PASS)]}
    statuses = {m: MutantStatus.RUNTIME_ERROR for m in cells} | {"s:whole": MutantStatus.SURVIVED}
    records = SubstrateRecords("s", statuses, {m: {"cells": [c.to_json() for c in row]} for m, row in cells.items()})
    assert judged([records], True, ()).matrix["rowEnds"] == {"s": {
        "s:short": "T0_original trial 0: fault: an illegal address", "s:hung": "T0_original trial 1: timeout: silent 5 s",
        "s:last": "edge trial 0: fault: on the last trial"}}
