"""harness.oracles.survivors: a campaign's survivors judged by compute-sanitizer's tools, on the CPU through
tests/fake_sanitizer.py (the tools' own runs are tested on the GPU)."""

from pathlib import Path

import pytest

from harness.campaign import main as campaign_main
from harness.campaign_store import ResultStore
from harness.candidates import import_candidate, register_candidate
from harness.oracles.survivors import (SANITIZERS, Survivor, Unmutated, decided, judge_with_sanitizers, oracle_key,
                                       program_label)

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "fake_sanitizer.py"
FORMS = REPO / "tests" / "candidates" / "candidate_row_sum_forms.py"
MUTANT_ID = "forms_row_sum:L7C5:atomic_to_plain:0"


def _substrate():
    raw = register_candidate(import_candidate(FORMS), FORMS)["forms_row_sum"]
    unmutated = Unmutated("forms_row_sum", str(FORMS), raw["kernel_name"], 0, raw["cuda"])
    mutated = raw["cuda"].replace("atomicAdd(&out[i / cols], x[i]);", "out[i / cols] += x[i];")
    assert mutated != raw["cuda"]
    return unmutated, Survivor("forms_row_sum", str(FORMS), raw["kernel_name"], 0, "f" * 64, MUTANT_ID, mutated)


def _race_at(program: str) -> str:
    return (f"Error: Race reported between Write access at row_sum_atomic(const float *, float *, long long, long "
            f"long)+0x90 in {program}.cu:7|    and Write access at row_sum_atomic(...)+0x90 in {program}.cu:7 "
            f"[4 hazards]")


def test_a_survivor_a_tool_reports_is_killed_by_that_tool(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_RACECHECK", _race_at(program_label(MUTANT_ID)))
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, survivor = _substrate()
    assert judge_with_sanitizers([unmutated], [survivor], store, "cpu", ("memcheck", "racecheck"), FAKE) == {}
    record = store.get(oracle_key("f" * 64, "cpu", MUTANT_ID, SANITIZERS))
    assert record["killed_by"] == "racecheck" and record["judged_by"] == ["memcheck", "racecheck"]
    assert record["tools"] == {"memcheck": "passed", "racecheck": "failed"}
    assert record["detail"].startswith(f"1 report(s): racecheck: {program_label(MUTANT_ID)}.cu:7: Race reported")
    status, detail, oracle = decided({"status": "survived", "detail": ""}, [record])
    assert (status, oracle) == ("killed", "racecheck")
    assert detail.startswith("killed by racecheck (compute-sanitizer): 1 report(s)")
    # Stored beside the value result, which stays as the value suites left it.
    assert ResultStore(tmp_path / "results.jsonl").get(oracle_key("f" * 64, "cpu", MUTANT_ID, SANITIZERS)) == record


def test_a_tool_the_unmutated_substrate_fails_judges_none_of_its_mutants(tmp_path, monkeypatch):
    both = _race_at("forms_row_sum") + "|" + _race_at(program_label(MUTANT_ID))
    monkeypatch.setenv("FAKE_SANITIZER_RACECHECK", both)
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, survivor = _substrate()
    unusable = judge_with_sanitizers([unmutated], [survivor], store, "cpu", ("memcheck", "racecheck"), FAKE)
    assert unusable["forms_row_sum"].startswith("the unmutated substrate does not pass racecheck (1 report(s): "
                                                "racecheck: forms_row_sum.cu:7")
    record = store.get(oracle_key("f" * 64, "cpu", MUTANT_ID, SANITIZERS))
    assert record["killed_by"] == "" and record["judged_by"] == ["memcheck"]
    assert decided({"status": "survived", "detail": ""}, [record]) == ("survived", "", "")


def test_only_survivors_are_decided_again():
    killed_by_values = {"status": "killed", "detail": "killed by probe trial 0: output_matches"}
    racecheck_kill = {"killed_by": "racecheck", "detail": "1 report(s)"}
    assert decided(killed_by_values, [racecheck_kill]) == ("killed", "killed by probe trial 0: output_matches", "")
    assert decided({"status": "equivalent"}, [racecheck_kill]) == ("equivalent", "", "")


def test_on_the_cpu_backend_the_sanitizers_oracle_is_skipped_and_a_bad_oracle_list_is_a_usage_error(capsys):
    assert campaign_main(["--backend", "cpu", "--oracles", "sanitizers"]) == 2
    assert "--oracles: 'sanitizers': values first, then any of sanitizers" in capsys.readouterr().err
    assert campaign_main(["--backend", "cpu", "--sanitize-tools", "leakcheck"]) == 2
    assert "--sanitize-tools: 'leakcheck': choose from memcheck, racecheck, synccheck, initcheck" in (
        capsys.readouterr().err)
