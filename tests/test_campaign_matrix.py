"""`--matrix` and `--checker` campaigns end to end on the CPU backend, over the compliant template substrate.

Its guard `if (i >= n) return;` and index make the mutants: those past the guard write into out's guard band on
the misaligned suite's shapes only, and the two `long long` narrowings survive every suite.
"""

import json
import re

import pytest

from harness.campaign import main
from harness.gate.command import main as gate_main
from tests import rule_candidates

NAME = "rule_compliant"


@pytest.fixture(scope="module")
def admitted(tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix")
    rule_candidates.write_candidates(root, [])
    assert gate_main([str(root / "substrates" / f"candidate_{NAME}.py"), "--backend", "cpu", "--no-progress",
                      "--timeout", "60"]) == 0
    return root


@pytest.fixture(scope="module")
def matrix_run(admitted, tmp_path_factory):
    """One --matrix campaign with every built-in checker: (its report, its store's records by mutant id, its output)."""
    out = tmp_path_factory.mktemp("matrix_run")
    capture = pytest.MonkeyPatch()
    lines = []
    capture.setattr("builtins.print", lambda *a, **k: lines.append(" ".join(map(str, a))))
    try:
        assert _campaign(admitted, out, "--matrix", "--checker", "kernelbench", "--checker", "kernelbench-v0",
                         "--checker", "t0") == 0
    finally:
        capture.undo()
    records = {}
    for line in (out / "r.jsonl").read_text().splitlines():
        record = json.loads(line)
        records[record["mutant_id"]] = record
    return json.loads((out / "report.json").read_text()), records, "\n".join(lines)


def _campaign(root, out, *extra):
    return main([NAME, "--backend", "cpu", "--substrates-dir", str(root / "substrates"), "--store",
                 str(out / "r.jsonl"), "--no-progress", "--json", str(out / "report.json"), *extra])


def _alone(admitted):
    """Each trial's checks of each mutant, run here, alone, on trials built here: {mutant id: [(suite, trial,
    status, first check failed, (max abs error, max rel error))]}, a row ending at a fault."""
    import torch

    from harness.backends import KernelFault, create_backend
    from harness.engine.mutants import generate
    from harness.engine.worker import CampaignJob, _load_entry, backend_settings, first_failure, prepare_trials
    from harness.gate.phases import PhaseClock
    from harness.gate.pipeline import run_kernel
    from harness.problems import ProblemSearch, load_problem

    file = admitted / "substrates" / f"candidate_{NAME}.py"
    entry = _load_entry(CampaignJob(file=str(file), name=NAME, backend="cpu", mutant_ids=()))
    backend = create_backend("cpu", **dict(backend_settings("cpu", None, False)))
    official = load_problem(entry.kb_file, ProblemSearch.for_candidate(file)).build_model(torch.device("cpu"))
    trials = prepare_trials(entry, official, backend.device, PhaseClock())
    rows = {}
    for mutant in generate(entry.cuda, entry.name):
        kernel = backend.load(mutant.apply(entry.cuda), entry.kernel_name, f"{NAME}.cu")
        rows[mutant.id] = []
        for trial in trials:
            try:
                run = run_kernel(entry, kernel, backend, trial.inputs, trial.expected)
            except KernelFault:
                rows[mutant.id].append((trial.suite, trial.t, "fault", "", (None, None)))
                break
            failure = first_failure(run, trial.expected, entry)
            errors = next(((c.max_abs_error, c.max_rel_error) for c in run.comparisons), (None, None))
            rows[mutant.id].append((trial.suite, trial.t, "failed" if failure else "passed",
                                    failure.partition(": ")[0], errors))
    return rows


def test_every_cell_of_the_matrix_is_what_its_mutant_run_alone_on_that_trial_gives(admitted, matrix_run):
    report, records, _out = matrix_run
    alone = _alone(admitted)
    assert set(alone) == {m for m in records if not m.startswith("|")}
    for mutant_id, expected in alone.items():
        cells = [(c["suite"], c["trial"], c["status"], c.get("check", ""),
                  (c.get("maxAbsError"), c.get("maxRelError"))) for c in records[mutant_id]["cells"]]
        assert [cell[:4] for cell in cells] == [cell[:4] for cell in expected], mutant_id
        for cell, alone_cell in zip(cells, expected):
            assert cell[4] == pytest.approx(alone_cell[4], rel=1e-6), (mutant_id, cell)
    # The report: each trial a test, each mutant covered by every trial it ran and killed by each that failed.
    trials = [test["id"] for file, tests in report["testFiles"].items() if file != "checkers" for test in tests["tests"]]
    assert trials == [f"{NAME}/T0_original/{t}" for t in range(5)] + [f"{NAME}/misaligned/{t}" for t in range(3)] \
        + [f"{NAME}/signed_large/{t}" for t in range(3)]
    for mutant in report["files"][f"{NAME}.cu"]["mutants"]:
        expected = alone[mutant["id"]]
        assert [t for t in mutant["coveredBy"] if not t.startswith("checker:")] == sorted(
            f"{NAME}/{suite}/{t}" for suite, t, *_ in expected)
        assert [t for t in mutant["killedBy"] if not t.startswith("checker:")] == sorted(
            f"{NAME}/{suite}/{t}" for suite, t, status, *_ in expected if status != "passed")


def test_a_matrix_prints_and_stores_its_analyses_and_each_checkers_line_last(matrix_run):
    report, _records, out = matrix_run
    own = report["substrateHarness"]
    assert own["matrix"]["total"]["perSuite"] == [{"suite": "T0_original", "killed": 11, "alone": 0},
                                                  {"suite": "misaligned", "killed": 13, "alone": 2},
                                                  {"suite": "signed_large", "killed": 11, "alone": 0}]
    assert own["matrix"]["total"]["minimalSuites"] == ["misaligned"]
    assert out.splitlines()[-11:] == [
        "kill matrix: 15 mutants over 11 trials; score 86.7% with every suite, 73.3% with T0_original alone; 2 "
        "subsuming mutants of 13 killed, score over them 100.0%",
        "suite         killed  alone",
        "T0_original       11      0",
        "misaligned        13      2",
        "signed_large      11      0",
        "minimal suites: 1 of 3 kill all the suites kill: misaligned",
        "minimal trials: 1 of 11; idle trials: 0",
        f"  {NAME}: score 86.7%, T0_original alone 73.3%; minimal suites 1 of 3 (misaligned); minimal trials 1 of 11; "
        "idle trials 0; subsuming 2 of 13 killed (score 100.0%)",
        # The boundary mutant and the deleted guard write past out only where a block is part full: never on
        # KernelBench's own inputs, nor on T0's.
        "checker kernelbench: accepts 2 of the 13 mutants the suites detect",
        "checker kernelbench-v0: accepts 2 of the 13 mutants the suites detect",
        "checker t0: accepts 2 of the 13 mutants the suites detect"]
    checkers = own["checkers"]
    assert checkers["kernelbench"]["accepted"] == [f"{NAME}:L5C11:relational_boundary:0", f"{NAME}:L5C5:guard_deletion:0"]
    assert checkers["kernelbench"]["sound"] and len(checkers["kernelbench"]["rejected"]) == 11
    table = next(line for line in out.splitlines() if line.startswith("substrate "))
    assert table.split()[-3:] == ["kernelbench", "kernelbench-v0", "t0"]


def _time_parts(out: str, phase: str) -> dict:
    line = next(line for line in out.splitlines() if line.startswith(f"{phase} time: "))
    return dict(part.rsplit(" ", 1) for part in line.removeprefix(f"{phase} time: ").split(", "))


def test_the_checkers_time_says_apart_the_kernels_runs_its_guarded_output_and_the_draws(matrix_run):
    # At real sizes the checkers took 303 of 458 s on an H100 with nothing said of where: the parts a worker can time.
    # The checkers' draws are made as they judge the unmutated kernel, whose run is a phase of its own (on the H200
    # its 131.7 s of draws were `process start, imports and unreported`, yet listed among the mutants' parts).
    _report, _records, out = matrix_run
    mutants, unmutated = _time_parts(out, "mutants'"), _time_parts(out, "unmutated runs'")
    for part in ("checkers", "checkers: the kernel's runs", "checkers: the kernel's output guarded"):
        assert part in mutants and part in unmutated, (mutants, unmutated)
    assert "checkers: inputs drawn" in unmutated and "checkers: inputs drawn" not in mutants
    assert float(mutants["checkers: the kernel's runs"]) <= float(mutants["checkers"])


def test_a_matrix_resumes_from_its_store_and_a_campaign_without_it_runs_as_before(admitted, tmp_path, capsys):
    assert _campaign(admitted, tmp_path, "--operator", "guard_deletion") == 0
    plain = json.loads((tmp_path / "report.json").read_text())
    assert "testFiles" not in plain and "coveredBy" not in plain["files"][f"{NAME}.cu"]["mutants"][0]
    assert "kill matrix" not in capsys.readouterr().out
    # Stored without cells: run again under --matrix, then stored with them.
    assert _campaign(admitted, tmp_path, "--operator", "guard_deletion", "--matrix") == 0
    assert "1 mutants, 1 to run" in capsys.readouterr().out
    assert _campaign(admitted, tmp_path, "--operator", "guard_deletion", "--matrix") == 0
    out = capsys.readouterr().out
    assert "1 mutants, 0 to run (1 stored)" in out and "kill matrix: 1 mutants over 11 trials" in out


def test_a_user_checker_gets_the_problem_and_a_kernel_and_one_that_accepts_all_accepts_every_detected_mutant(
        admitted, tmp_path, capsys, matrix_run):
    checks = tmp_path / "my_checks.py"
    checks.write_text(
        "import itertools\n\nimport torch\n\n_calls = itertools.count()\n\n"
        "def accepts_all(problem, kernel, device):\n"
        "    return True\n\n"
        "def rejects_all(problem, kernel, device):\n"
        "    return False\n\n"
        "def same_as_model(problem, kernel, device):\n"
        # Inputs of its own at each call: the two mutants that leave part of out as torch.empty found it passed at
        # times (4 runs in 25) on the same inputs at every call, finding there the output an earlier call computed.
        "    torch.manual_seed(next(_calls))\n"
        "    inputs = [x.to(device) for x in problem.get_inputs()]\n"
        "    expected = problem.Model(*problem.get_init_inputs())(*inputs)\n"
        "    return bool(torch.allclose(kernel(*inputs), expected, atol=1e-4, rtol=1e-4))\n")
    assert _campaign(admitted, tmp_path, "--checker", f"{checks}:accepts_all", "--checker", f"{checks}:rejects_all",
                     "--checker", f"{checks}:same_as_model") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3:] == [
        f"checker {checks}:accepts_all: accepts 13 of the 13 mutants the suites detect",
        f"checker {checks}:rejects_all: unsound (it does not accept a correct substrate: {NAME} (it returned False)); "
        "its verdicts are not counted",
        f"checker {checks}:same_as_model: accepts 2 of the 13 mutants the suites detect"]
    checkers = json.loads((tmp_path / "report.json").read_text())["substrateHarness"]["checkers"]
    assert checkers[f"{checks}:same_as_model"]["accepted"] == matrix_run[0]["substrateHarness"]["checkers"][
        "kernelbench"]["accepted"]
    assert checkers[f"{checks}:rejects_all"]["sound"] is False
    assert checkers[f"{checks}:accepts_all"]["rejected"] == [] and checkers[f"{checks}:accepts_all"]["sound"]
    table = next(line for line in lines if line.startswith(f"{NAME} "))
    assert table.split()[-3:] == ["13/13", "unsound", "2/13"]


def test_a_checker_that_raises_is_a_line_naming_it_and_a_bad_one_is_a_usage_error(admitted, tmp_path, capsys):
    checks = tmp_path / "broken_checks.py"
    checks.write_text("def divides(problem, kernel, device):\n    return 1 / 0 > 0\n")
    assert _campaign(admitted, tmp_path, "--operator", "guard_deletion", "--checker", f"{checks}:divides") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3:] == [
        f"checker {checks}:divides: unsound (it does not accept a correct substrate: {NAME} (checker {checks}:divides "
        "raised ZeroDivisionError: division by zero)); its verdicts are not counted",
        f"checker error: checker {checks}:divides raised ZeroDivisionError: division by zero, judging {NAME}'s "
        "unmutated kernel",
        f"checker error: checker {checks}:divides raised ZeroDivisionError: division by zero, judging "
        f"{NAME}:L5C5:guard_deletion:0"]
    assert _campaign(admitted, tmp_path, "--checker", f"{checks}:missing") == 2
    assert capsys.readouterr().err == (f"campaign: error: --checker '{checks}:missing': {checks} has no function "
                                       f"'missing' (it defines: divides)\n")
    assert _campaign(admitted, tmp_path, "--matrix", "--naive") == 2
    assert capsys.readouterr().err == "campaign: error: --matrix and --checker run on this host's workers: leave out " \
                                      "--naive\n"


def test_a_lost_workers_row_ends_with_a_cell_of_the_loss_and_a_loss_in_a_checker_keeps_the_suites_verdict():
    from harness.engine.run import lost_row
    from harness.engine.worker import CampaignJob

    job = CampaignJob(file="f.py", name=NAME, backend="cpu", mutant_ids=("m",), matrix=True, checkers=("t0",))
    lost = {"mutant_id": "m", "status": "timeout", "detail": "silent for 3 s", "seconds": 0.0, "ptx_sha256": ""}
    passed = {"suite": "T0_original", "trial": 0, "status": "passed"}
    failed = {"suite": "T0_original", "trial": 1, "status": "failed", "check": "output_matches", "detail": "x"}
    state = {"cells": [passed], "trial": ("misaligned", 2), "verdict": None}
    assert lost_row(lost, state, job) == {
        **lost, "detail": "misaligned trial 2: silent for 3 s",
        "cells": [passed, {"suite": "misaligned", "trial": 2, "status": "timeout", "detail": "silent for 3 s"}],
        "checkers": {"t0": {"accepted": None, "why": "not judged: its worker was lost on the suites (silent for 3 s)"}}}
    # A failure before the loss decides, as the first failing trial does.
    state = {"cells": [passed, failed], "trial": ("misaligned", 0), "verdict": None}
    assert lost_row(lost, state, job)["status"] == "killed"
    # Lost while a checker ran: every trial's cell, and the suites' verdict the worker sent before the checkers.
    state = {"cells": [passed, failed], "trial": None, "verdict": ("killed", "T0_original trial 1: output_matches: x")}
    row = lost_row(lost, state, job)
    assert (row["status"], row["detail"], row["cells"]) == ("killed", "T0_original trial 1: output_matches: x",
                                                            [passed, failed])
    assert row["checkers"]["t0"]["why"] == "not judged: its worker was lost while a checker ran it (silent for 3 s)"


def _damaging_during_runs(monkeypatch, campaign_worker, when):
    """A matrix cell's runs that, when() it holds, change every trial of the worker as a stray write would (before
    the trial's checksum, which a cell reads with its last run's signals), and first_failure failing that cell."""
    from harness.gate import pipeline

    built, damaged = [], []
    real_prepare, real_run = campaign_worker.prepare_trials, pipeline.run_kernel

    def prepare(*args, **named):
        trials = real_prepare(*args, **named)
        built.extend(trials.built)
        return trials

    monkeypatch.setattr(campaign_worker, "prepare_trials", prepare)

    def run_kernel(*args, **kwargs):
        read_beside = kwargs.get("read_beside")
        damaged.append(read_beside is not None and when())
        if damaged[-1]:
            def after_a_stray_write():
                for trial in built:
                    trial.inputs[0].add_(1.0)
                return read_beside()
            kwargs["read_beside"] = after_a_stray_write
        return real_run(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_kernel", run_kernel)
    monkeypatch.setattr(campaign_worker, "first_failure",
                        lambda run, expected, entry: "output_matches: damaged" if damaged[-1] else "")


def test_a_rows_kill_on_a_trial_its_run_damaged_ends_the_row_and_the_worker(admitted, monkeypatch):
    import dataclasses

    from harness.engine import worker as campaign_worker
    from tests.test_campaign import _Messages, _template_job

    job = dataclasses.replace(_template_job(admitted, "arithmetic_swap", 2), matrix=True)
    runs = []
    _damaging_during_runs(monkeypatch, campaign_worker, lambda: runs.append(1) or len(runs) == 2)  # its second trial
    conn = _Messages()
    campaign_worker.run_campaign_job(job, conn)
    (result,) = [m[1] for m in conn.sent if m[0] == "result"]  # the worker ended: the second mutant is not run
    assert (result["mutant_id"], result["status"]) == (job.mutant_ids[0], "killed")
    assert result["detail"] == ("T0_original trial 1: output_matches: damaged (and its stray writes changed the "
                                "worker's copy of the trial)")
    # (first_failure is the test's: the errors are those of the mutant's real output)
    assert [{k: v for k, v in cell.items() if not k.startswith("max")} for cell in result["cells"]] == [
        {"suite": "T0_original", "trial": 0, "status": "passed"},
        {"suite": "T0_original", "trial": 1, "status": "failed", "check": "output_matches", "detail": "damaged"}]
    assert [m for m in conn.sent if m[0] in ("row", "trial", "cell")][:3] == [
        ("row", job.mutant_ids[0]), ("trial", "T0_original", 0), ("cell", result["cells"][0])]


def test_a_mutant_whose_suites_ended_its_worker_is_judged_by_the_checkers_alone_in_a_fresh_worker(
        admitted, monkeypatch):
    # On the H200 the checkers judged none of 46 mutants whose stray writes on the suites ended their worker ("not
    # judged"): the worker now marks them to be judged apart, and a fresh worker runs the checkers alone on them.
    import dataclasses

    from harness.engine import worker as campaign_worker
    from tests.test_campaign import _Messages, _template_job

    job = dataclasses.replace(_template_job(admitted, "arithmetic_swap", 2), matrix=True, checkers=("t0",),
                              run_baseline=True)
    runs = []
    _damaging_during_runs(monkeypatch, campaign_worker, lambda: runs.append(1) or len(runs) == 2)
    conn = _Messages()
    campaign_worker.run_campaign_job(job, conn)
    (suites,) = [m[1] for m in conn.sent if m[0] == "result"]
    assert suites["status"] == "killed" and suites["checkers"] == {"t0": {
        "accepted": None, "why": "not judged yet: its fault on the suites ended its worker; a fresh worker judges it "
                                 "with the checkers alone", "apart": True}}

    monkeypatch.undo()
    first = job.mutant_ids[0]
    conn = _Messages()
    campaign_worker.run_campaign_job(dataclasses.replace(job, run_baseline=False, checkers_apart=(first,)), conn)
    results = [m[1] for m in conn.sent if m[0] == "result"]
    assert [sorted(r) for r in results] == [["checkers", "checkers_apart", "mutant_id"], sorted(suites)]
    apart, second = results
    assert apart["mutant_id"] == first and apart["checkers"]["t0"]["accepted"] in (True, False)
    assert "apart" not in apart["checkers"]["t0"] and second["mutant_id"] == job.mutant_ids[1]
    assert not [m for m in conn.sent if m[0] in ("row", "cell") and m[1] == first]  # no suite ran it again


def test_the_parent_keeps_the_suites_verdict_and_takes_the_checkers_verdicts_judged_apart(tmp_path):
    import argparse

    from harness.campaign import needs_run
    from harness.engine.plan import Plan
    from harness.engine.run import Progress, _PlanMessages, _plan_job
    from harness.engine.store import ResultKey, ResultStore

    plan = Plan(NAME, "f.py", "", "sha", [], to_run=["a", "b"])
    store, remaining, progress = ResultStore(tmp_path / "r.jsonl"), ["a", "b"], Progress(2, disabled=True)
    handle = _PlanMessages(plan, "cpu", store, progress, remaining, {}, True, None, set())
    pending = {"accepted": None, "why": "not judged yet", "apart": True}
    cells = [{"suite": "T0_original", "trial": 0, "status": "failed", "check": "output_matches"}]
    handle(("result", {"mutant_id": "a", "status": "killed", "detail": "x", "seconds": 1.0, "ptx_sha256": "d",
                       "cells": cells, "checkers": {"t0": pending}}))
    assert remaining == ["a", "b"] and handle.apart == {"a": False}
    args = argparse.Namespace(cache_dir=None, kb_root=None, matrix=True, checker=["t0"], store=tmp_path / "r.jsonl")
    job = _plan_job(plan, args, "cpu", remaining, [], 1, False, {}, False, set(), set(handle.apart))
    assert job.checkers_apart == ("a",) and needs_run(store.get(ResultKey("sha", "cpu", "a")), args)
    handle(("result", {"mutant_id": "a", "checkers_apart": True, "checkers": {"t0": {"accepted": True, "why": ""}}}))
    stored = store.get(ResultKey("sha", "cpu", "a"))
    assert (stored["status"], stored["cells"], stored["checkers"]) == ("killed", cells, {"t0": {"accepted": True,
                                                                                               "why": ""}})
    assert remaining == ["b"] and handle.apart == {} and progress.counts["killed"] == 1  # counted once
    assert not needs_run(stored, args)
    # A worker lost while the checkers judged a mutant apart: not judged, for good (a resume does not loop on it).
    from harness.engine.run import _lost_apart
    from harness.engine.worker import CampaignJob
    from harness.processes import WorkerLost

    store.put(ResultKey("sha", "cpu", "b"), {"mutant_id": "b", "status": "runtime_error", "cells": [],
                                             "checkers": {"t0": pending}})
    _lost_apart(store, ResultKey("sha", "cpu", "b"), CampaignJob("f.py", NAME, "cpu", ("b",), checkers=("t0",)),
                WorkerLost("silent for 3 s"))
    stored = store.get(ResultKey("sha", "cpu", "b"))
    assert stored["status"] == "runtime_error" and stored["checkers"] == {"t0": {
        "accepted": None, "why": "not judged: its worker was lost while a checker ran it apart (silent for 3 s)"}}
    assert not needs_run(stored, args)


def test_a_fault_foreseen_in_a_checkers_run_makes_the_worker_forget_its_trial_order_as_a_fresh_one(
        admitted, monkeypatch):
    import dataclasses

    from harness.backends import KernelFault
    from harness.checkers import under_test
    from harness.engine import worker as campaign_worker
    from tests.test_campaign import FORESEEN, _Messages, _template_job

    job = dataclasses.replace(_template_job(admitted, "arithmetic_swap", 3), checkers=("kernelbench",))
    killed, faulting, _last = job.mutant_ids
    conn = _Messages()
    current = lambda: [m[1] for m in conn.sent if m[0] == "mutant"][-1]  # noqa: E731
    orders = []
    real_order, real_call = campaign_worker.trial_order, under_test.KernelCall.__call__
    monkeypatch.setattr(campaign_worker, "trial_order",
                        lambda kills, costs: orders.append(dict(kills)) or real_order(kills, costs))
    monkeypatch.setattr(campaign_worker, "first_failure",
                        lambda run, expected, entry: "output_matches: wrong" if current() == killed else "")

    def call(self, *inputs):
        if current() == faulting:
            self.raised.append(KernelFault(FORESEEN, poisons_context=False, foreseen=True))
            raise self.raised[-1]
        return real_call(self, *inputs)

    monkeypatch.setattr(under_test.KernelCall, "__call__", call)
    campaign_worker.run_campaign_job(job, conn)
    results = {m[1]["mutant_id"]: m[1] for m in conn.sent if m[0] == "result"}
    assert results[faulting]["checkers"]["kernelbench"] == {
        "accepted": False, "why": f"the kernel raised KernelFault: {FORESEEN}"}
    # The kill taught the worker a trial order; the fault a checker's run met made it forget it, as a fresh worker.
    assert orders[1] and orders[2] == {}


def test_a_fault_in_kernelbenchs_run_that_takes_the_device_leaves_kernelbench_v0_the_verdict_of_that_run(
        admitted, monkeypatch):
    # kernelbench and kernelbench-v0 read one run of the trials: where that run's fault ends the worker, kernelbench-v0's
    # verdict is read from it; t0, which would run the kernel again, is not judged, and the worker ends.
    import dataclasses

    from harness.backends import KernelFault
    from harness.checkers import under_test
    from harness.engine import worker as campaign_worker
    from tests.test_campaign import _Messages, _template_job

    fault = "kernel run: CUDA error 715 CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction was encountered"
    job = dataclasses.replace(_template_job(admitted, "arithmetic_swap", 2),
                              checkers=("kernelbench", "kernelbench-v0", "t0"))
    faulting, never_reached = job.mutant_ids
    conn = _Messages()
    current = lambda: [m[1] for m in conn.sent if m[0] == "mutant"][-1]  # noqa: E731
    monkeypatch.setattr(campaign_worker, "first_failure", lambda run, expected, entry: "")  # every trial passes
    real_call = under_test.KernelCall.__call__

    def call(self, *inputs):
        if current() == faulting:
            self.raised.append(KernelFault(fault, poisons_context=True))
            self.poisoned = True
            raise self.raised[-1]
        return real_call(self, *inputs)

    monkeypatch.setattr(under_test.KernelCall, "__call__", call)
    campaign_worker.run_campaign_job(job, conn)
    results = {m[1]["mutant_id"]: m[1] for m in conn.sent if m[0] == "result"}
    rejected = {"accepted": False, "why": f"the kernel raised KernelFault: {fault}"}
    assert results[faulting]["checkers"] == {
        "kernelbench": rejected, "kernelbench-v0": rejected,
        "t0": {"accepted": None, "why": "not judged: the kernel's fault under checker kernelbench ended the worker"}}
    assert never_reached not in results  # the worker ended with the device


def test_a_matrix_over_several_workers_judges_a_substrate_in_shards_and_finds_duplicates_across_them(tmp_path, capsys):
    # masked_fill_b1's ternary swap at L9C29 compiles to the code of the negation at L9C22. In batches of two the
    # first batch holds L8C11 and L9C22, the second L9C29 alone: with three workers the batches run at once, in
    # shards, and the second shard's worker learns the first batch's code before it judges its own.
    from harness.engine.compile import batches
    from harness.engine.plan import Plan, shards

    def matrix(store, workers):
        assert main(["masked_fill_b1", "--backend", "cpu", "--store", str(store), "--no-progress", "--matrix",
                     "--operator", "relational_negation", "--operator", "ternary_swap", "--batch-size", "2",
                     "--workers", workers]) == 0
        return {record["mutant_id"]: record for record in map(json.loads, store.read_text().splitlines())}

    alone = matrix(tmp_path / "one.jsonl", "1")
    capsys.readouterr()
    sharded = matrix(tmp_path / "three.jsonl", "3")
    # One substrate, two workers: one a shard.
    assert re.search(r"^worker time [0-9.]+ s over 2 worker\(s\),", capsys.readouterr().out, re.M)
    for mutant_id, record in alone.items():
        assert [sharded[mutant_id].get(key) for key in ("status", "detail", "cells")] == \
            [record.get(key) for key in ("status", "detail", "cells")], mutant_id
    assert (alone["masked_fill_b1:L9C29:ternary_swap:0"]["status"],
            alone["masked_fill_b1:L9C29:ternary_swap:0"]["detail"]) == (
        "duplicate", "compiled code identical to masked_fill_b1:L9C22:relational_negation:0's")
    # The shards themselves: a batch with a mutant to run each, learning the batches before it.
    ids = list(alone)
    plan = Plan("masked_fill_b1", "f", "", "", [type("M", (), {"id": i})() for i in ids], to_run=ids[1:])
    assert [(shard.to_run, shard.learn_batches) for shard in shards(plan, 2)] == [
        (ids[1:2], ()), (ids[2:], tuple(batches(ids, 2)[:1]))]


def test_the_worker_slots_get_a_substrates_shards_together_the_substrate_with_most_mutants_first():
    # Given every substrate's first shard before any second one, the biggest substrates' last shards started last
    # and ran alone at the end of a matrix.
    from harness.campaign import work_order
    from harness.engine.plan import Plan, shards

    def plan(name, count):
        ids = [f"{name}:{k}" for k in range(count)]
        return Plan(name, "f", "", "", [type("M", (), {"id": i})() for i in ids], to_run=ids)

    small, big = plan("small", 4), plan("big", 6)
    items = [(p, shard) for p in (small, big) for shard in shards(p, 2)]
    assert [(p.name, shard.to_run[0]) for p, shard in work_order(items)] == [
        ("big", "big:0"), ("big", "big:2"), ("big", "big:4"), ("small", "small:0"), ("small", "small:2")]
    whole = [(small, small), (big, big)]
    assert [p.name for p, _ in work_order(whole)] == ["big", "small"]


def test_a_rows_trials_queued_at_once_give_the_cells_each_trial_run_alone_gives(admitted, monkeypatch):
    # On a GPU a row's trials after the first are queued and read in one transfer (harness.engine.row), the address
    # check's state among the signals; here the CPU backend takes that path, its faults raised as a launch is made.
    import dataclasses

    import torch

    from harness.backends.base import PendingFault
    from harness.backends.cpu import CpuBackend
    from harness.engine import row
    from harness.engine import worker as campaign_worker
    from tests.test_campaign import _Messages, _template_job

    monkeypatch.setattr(row, "queues_rows", lambda backend: True)
    monkeypatch.setattr(CpuBackend, "pending_fault",
                        lambda self: PendingFault(torch.zeros(0, dtype=torch.int64), lambda values: None))
    alone = _alone(admitted)
    job = dataclasses.replace(_template_job(admitted, "arithmetic_swap", 0), mutant_ids=tuple(alone), matrix=True,
                              run_baseline=True)
    conn, results = _Messages(), {}
    while len(results) < len(alone):  # a fault that ends the worker: a fresh one for the rest
        campaign_worker.run_campaign_job(dataclasses.replace(
            job, mutant_ids=tuple(m for m in alone if m not in results)), conn)
        results.update((m[1]["mutant_id"], m[1]) for m in conn.sent if m[0] == "result")
    queued = [m[1] for m in conn.sent if m[0] == "queued"]
    assert len(queued) >= len(alone) // 2
    for mutant_id, expected in alone.items():
        cells = [(c["suite"], c["trial"], c["status"], c.get("check", "")) for c in results[mutant_id]["cells"]]
        assert cells == [cell[:4] for cell in expected], mutant_id


def test_a_row_whose_first_trial_is_slow_runs_the_others_alone_and_stops_each_failed_cell_at_its_first_run(
        admitted, monkeypatch):
    # A row whose trial 0 took longer than SLOW_ROW_SECONDS runs the rest a trial at a time instead of queued, where a
    # failed cell that one run decides makes no second run, as queued. The cells are the same. (Queued, a trial its
    # signals cannot describe runs alone after its queued run: more launches.)
    import dataclasses

    import torch

    from harness.backends.base import PendingFault
    from harness.backends.cpu import CpuBackend
    from harness.engine import row
    from harness.engine import worker as campaign_worker
    from tests.test_campaign import _Messages, _template_job

    monkeypatch.setattr(row, "queues_rows", lambda backend: True)
    monkeypatch.setattr(CpuBackend, "pending_fault",
                        lambda self: PendingFault(torch.zeros(0, dtype=torch.int64), lambda values: None))
    launches = []
    real_launch = CpuBackend.launch
    monkeypatch.setattr(CpuBackend, "launch", lambda self, *args: (launches.append(1), real_launch(self, *args))[1])
    job = dataclasses.replace(_template_job(admitted, "arithmetic_swap", 3), matrix=True, run_baseline=True)
    judged = {}
    for slow_after in (float("inf"), -1.0):
        monkeypatch.setattr(campaign_worker, "SLOW_ROW_SECONDS", slow_after)
        conn = _Messages()
        launches.clear()
        campaign_worker.run_campaign_job(job, conn)
        judged[slow_after] = ({m[1]["mutant_id"]: m[1]["cells"] for m in conn.sent if m[0] == "result"},
                              sum(m[0] == "queued" for m in conn.sent), len(launches))
    (queued_cells, queued_rows, queued_launches), (alone_cells, alone_rows, alone_launches) = judged.values()
    assert alone_cells == queued_cells and len(alone_cells) == 3
    assert any(cell["status"] == "failed" for cells in alone_cells.values() for cell in cells[1:])
    assert (queued_rows, alone_rows) == (3, 0)
    assert alone_launches < queued_launches


def _alone_and_queued(admitted, monkeypatch) -> dict[bool, list]:
    """The template's three arithmetic_swap mutants judged as --matrix rows a trial at a time (False) and queued (True)
    on the CPU backend, its faults raised as a launch is made: each way's messages."""
    import dataclasses

    import torch

    from harness.backends.base import PendingFault
    from harness.backends.cpu import CpuBackend
    from harness.engine import row
    from harness.engine import worker as campaign_worker
    from tests.test_campaign import _Messages, _template_job

    monkeypatch.setattr(CpuBackend, "pending_fault",
                        lambda self: PendingFault(torch.zeros(0, dtype=torch.int64), lambda values: None))
    job = dataclasses.replace(_template_job(admitted, "arithmetic_swap", 3), matrix=True, run_baseline=True)
    sent = {}
    for queued in (False, True):
        monkeypatch.setattr(row, "queues_rows", lambda backend, queued=queued: queued)
        conn = _Messages()
        campaign_worker.run_campaign_job(job, conn)
        sent[queued] = conn.sent
    return sent


def _cells(sent: list) -> dict:
    return {m[1]["mutant_id"]: m[1]["cells"] for m in sent if m[0] == "result"}


def test_a_queued_row_makes_run_two_only_of_the_trials_run_one_left_undecided(admitted, monkeypatch):
    # Queued, run one of every trial is read first; run two (its poison pattern, the unwritten-output check) is queued
    # only where run one does not decide the cell (a pass, say), as a trial run alone does. The cells are a trial at a
    # time's.
    from harness.engine import row

    queued_runs, real_queue = [], row.queue_trial

    def queue(entry, kernel, backend, inputs, expected, *rest, **named):
        made = real_queue(entry, kernel, backend, inputs, expected, *rest, **named)
        queued_runs.append(made.runs if made is not None else None)
        return made

    monkeypatch.setattr(row, "queue_trial", queue)
    sent = _alone_and_queued(admitted, monkeypatch)
    judged = {way: _cells(messages) for way, messages in sent.items()}
    assert judged[True] == judged[False] and len(judged[True]) == 3
    cells = [cell for row_cells in judged[True].values() for cell in row_cells[1:]]  # trial 0 runs alone
    passed = sum(cell["status"] == "passed" for cell in cells)
    decided = sum(cell.get("check") == "output_matches" for cell in cells)
    twos = queued_runs.count(row.RUN_TWO)
    assert queued_runs.count(row.RUN_ONE) == len(cells) and passed <= twos <= len(cells) - decided and decided > 0
    assert row.BOTH_RUNS not in queued_runs  # no trial queues both runs at once


def test_an_accumulations_queued_row_reads_the_unmutated_kernels_runs_after_each_trial_with_its_own(
        admitted, monkeypatch):
    # An accumulating entry's failed cell is skipped where the unmutated kernel, run again, fails the trial too. A
    # queued row queues that run after each of the mutant's trials and reads it with them: the same cells, and none
    # of the trials run again one at a time. (The template is made an accumulation here; its kernel only writes.)
    import dataclasses

    from harness.engine import worker as campaign_worker

    real_load = campaign_worker._load_entry
    monkeypatch.setattr(campaign_worker, "_load_entry",
                        lambda job: dataclasses.replace(real_load(job), accumulates=True))
    sent = _alone_and_queued(admitted, monkeypatch)
    (alone, alone_trials), (queued, queued_trials) = [(_cells(sent[way]), [m for m in sent[way] if m[0] == "trial"])
                                                      for way in (False, True)]
    assert queued == alone and len(queued) == 3
    failed = sum(cell["status"] == "failed" for cells in alone.values() for cell in cells)
    assert failed and len(alone_trials) == sum(map(len, alone.values())) + failed  # each failed cell ran it again
    # Queued, a trial runs alone only where it must be described (a guard band or an input changed), and the
    # unmutated kernel's run after it is the queued one; trial 0 runs alone, the unmutated kernel again after a failure.
    alone_again = sum(1 + (cells[0]["status"] == "failed") + sum(cell.get("check") in ("writes_in_bounds",
                                                                                      "inputs_unchanged")
                                                                 for cell in cells[1:]) for cells in alone.values())
    assert len(queued_trials) == alone_again < len(alone_trials)


def test_an_interrupted_campaign_reports_its_matrix_and_checkers_over_mutants_judged_whole_in_this_mode():
    # A store filled by a plain run holds mutants without cells or checker verdicts, and a substrate not reached
    # has no verdict of the checker on its unmutated kernel (which would read as the checker rejecting it): both are
    # left out of the matrix's and the checkers' view of an interrupted run.
    from dataclasses import dataclass
    from types import SimpleNamespace

    from harness.campaign import _judged_whole
    from harness.engine.run import checker_key
    from harness.engine.store import ResultKey

    @dataclass
    class Campaign:
        outcomes: list

    whole = {"status": "killed", "cells": [], "checkers": {"t0": {"accepted": False, "why": ""}}}
    plain = {"status": "killed"}
    store = {ResultKey("a", "cpu", "a:1"): whole, ResultKey("a", "cpu", "a:2"): plain,
             ResultKey("a", "cpu", "a:3"): {"status": "compile_error"},
             checker_key("a", "cpu"): {"checkers": {"t0": {"accepted": True, "why": ""}}},
             ResultKey("b", "cpu", "b:1"): whole,  # b's worker never stored its unmutated verdicts
             ResultKey("c", "cpu", "c:1"): plain, checker_key("c", "cpu"): {"checkers": {"t0": {"accepted": True}}}}
    plans = [SimpleNamespace(source_sha256=sha) for sha in "abc"]
    campaigns = [Campaign([SimpleNamespace(mutant_id=f"{sha}:{n}") for n in (1, 2, 3)
                           if ResultKey(sha, "cpu", f"{sha}:{n}") in store]) for sha in "abc"]
    kept = _judged_whole(plans, campaigns, store, "cpu", SimpleNamespace(matrix=True, checker=["t0"]))
    assert [(plan.source_sha256, [o.mutant_id for o in c.outcomes]) for plan, c in kept] == [("a", ["a:1", "a:3"])]
    # --matrix alone asks no unmutated verdict: b's whole mutant counts.
    kept = _judged_whole(plans, campaigns, store, "cpu", SimpleNamespace(matrix=True, checker=None))
    assert [(plan.source_sha256, [o.mutant_id for o in c.outcomes]) for plan, c in kept] == [
        ("a", ["a:1", "a:3"]), ("b", ["b:1"])]
