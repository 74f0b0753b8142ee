"""A campaign on the GPU, where mutants fault for real: a CUDA fault ends its worker, and the worker after it
is a fresh process (or, under --spare-workers warm, the slot's spare, which built the trials while the other ran)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.campaign import main
from harness.gate.command import main as gate_main
from harness.report_diff import compare, differences_beyond_memory, matrix_rows, status_differences

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def admitted_on_cuda(tmp_path_factory):
    root = tmp_path_factory.mktemp("campaign-gpu")
    (root / "substrates").mkdir()
    shutil.copy(REPO / "substrates" / "candidate_pad_const.py", root / "substrates")
    assert gate_main([str(root / "substrates" / "candidate_pad_const.py"), "--backend", "cuda", "--no-progress",
                      "--no-sanitize"]) == 0
    return root


def test_warm_spares_take_over_after_cuda_faults_with_every_status_a_fresh_worker_gives(admitted_on_cuda, capsys):
    reports = {}
    for mode in ("never", "warm"):
        reports[mode] = admitted_on_cuda / f"report-{mode}.json"
        assert main(["pad_const_b4", "--backend", "cuda", "--substrates-dir", str(admitted_on_cuda / "substrates"),
                     "--store", str(admitted_on_cuda / f"results-{mode}.jsonl"), "--no-progress", "--oracles", "values",
                     "--workers", "2", "--spare-workers", mode, "--json", str(reports[mode]),
                     "--address-check", "off"]) == 0
        out = capsys.readouterr().out
        (line,) = [line for line in out.splitlines() if line.startswith("worker time ")]
        warmed = re.search(r"over (\d+) worker\(s\)(?: \((\d+) warmed ahead\))?", line)
        if mode == "never":
            assert warmed.group(2) is None, line
            restarts = int(warmed.group(1)) - 1
            assert restarts >= 1, line  # the substrate's mutants do fault on the GPU (call 6: 4 runtime errors)
        else:
            assert int(warmed.group(2) or 0) >= 1, line  # a worker after a fault was a warmed spare
    first, second = (json.loads(reports[mode].read_text()) for mode in ("never", "warm"))
    assert status_differences(first, second) == []
    assert any(m["status"] == "RuntimeError" for f in first["files"].values() for m in f["mutants"])


def test_the_address_check_foresees_every_fault_with_the_statuses_real_faults_give_and_no_worker_ends(
        admitted_on_cuda, capsys):
    reports, lines = {}, {}
    for check in ("off", "on"):
        reports[check] = admitted_on_cuda / f"report-check-{check}.json"
        assert main(["pad_const_b4", "--backend", "cuda", "--substrates-dir", str(admitted_on_cuda / "substrates"),
                     "--store", str(admitted_on_cuda / f"results-check-{check}.jsonl"), "--no-progress",
                     "--oracles", "values", "--workers", "1", "--spare-workers", "never", "--json",
                     str(reports[check]), "--address-check", check]) == 0
        (lines[check],) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("worker time ")]
    real, foreseen = (json.loads(reports[check].read_text()) for check in ("off", "on"))
    assert status_differences(real, foreseen) == []
    assert int(re.search(r"over (\d+) worker", lines["off"]).group(1)) > 1, lines["off"]
    assert re.search(r"over 1 worker\(s\)", lines["on"]), lines["on"]
    errors = [m for f in foreseen["files"].values() for m in f["mutants"] if m["status"] == "RuntimeError"]
    assert errors and all("foreseen by the address check" in m["statusReason"] for m in errors), errors


def test_mutants_whose_faults_end_their_workers_are_judged_by_the_checkers_alone_in_a_fresh_one(admitted_on_cuda):
    # Unchecked, a CUDA fault ends its worker before the checkers run: a fresh worker judges the mutant with them
    # alone (on the H200, 46 of 1538 mutants were "not judged" before it did), and its suites' verdict stands.
    store = admitted_on_cuda / "results-apart.jsonl"
    assert main(["pad_const_b4", "--backend", "cuda", "--substrates-dir", str(admitted_on_cuda / "substrates"),
                 "--store", str(store), "--no-progress", "--oracles", "values", "--workers", "1",
                 "--spare-workers", "never", "--address-check", "off", "--checker", "t0"]) == 0
    # The store is a log: a mutant's later line (the checkers' verdicts judged apart) supersedes its first.
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    latest = {line["mutant_id"]: line for line in lines}
    sent_apart = {line["mutant_id"] for line in lines
                  if any(verdict.get("apart") for verdict in line.get("checkers", {}).values())}
    faulted = [r for r in latest.values()
               if r.get("status") == "runtime_error" and "loading the mutant" not in r["detail"]]
    assert faulted and sent_apart and sent_apart <= {r["mutant_id"] for r in faulted}
    for record in faulted:
        verdict = record["checkers"]["t0"]
        assert verdict["accepted"] in (True, False) and "apart" not in verdict, record


def test_a_fault_in_kernelbenchs_run_that_ends_the_worker_leaves_kernelbench_v0_its_verdict_from_that_run(
        admitted_on_cuda):
    # The two share one run of the five trials: where that run faults and the context is gone, kernelbench-v0 reads
    # its verdict from it (a fault rejects at every tolerance) rather than going unjudged (288 such mutants in the
    # corpus matrix on the H100, MEASUREMENTS.md, fifty-fourth session).
    store = admitted_on_cuda / "results-shared-run.jsonl"
    assert main(["pad_const_b4", "--backend", "cuda", "--substrates-dir", str(admitted_on_cuda / "substrates"),
                 "--store", str(store), "--no-progress", "--oracles", "values", "--workers", "1",
                 "--spare-workers", "never", "--address-check", "off", "--checker", "kernelbench",
                 "--checker", "kernelbench-v0"]) == 0
    latest = {line["mutant_id"]: line for line in map(json.loads, store.read_text().splitlines())}
    raised = [r for r in latest.values() if r.get("checkers", {}).get("kernelbench", {}).get("why", "").startswith(
        "the kernel raised KernelFault: kernel run: CUDA error")]
    assert raised
    for record in raised:
        assert record["checkers"]["kernelbench-v0"] == record["checkers"]["kernelbench"], record


def _pad_const_b4_report(root, capsys, tag: str, prefix: str, *options) -> tuple[dict, list[str]]:
    """pad_const_b4's values campaign on one worker with `options`, its own store: its report, and the lines it
    printed that start with `prefix`."""
    report = root / f"report-{tag}.json"
    assert main(["pad_const_b4", "--backend", "cuda", "--substrates-dir", str(root / "substrates"), "--store",
                 str(root / f"results-{tag}.jsonl"), "--no-progress", "--oracles", "values", "--workers", "1",
                 "--json", str(report), *options]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(prefix)]
    return json.loads(report.read_text()), lines


def test_mutants_run_from_their_schema_get_every_status_they_get_compiled_alone(admitted_on_cuda, capsys):
    (alone, lines_off), (switched, lines_on) = (
        _pad_const_b4_report(admitted_on_cuda, capsys, f"schemata-{schemata}", "schemata: ", "--schemata", schemata)
        for schemata in ("off", "on"))
    assert status_differences(alone, switched) == []
    assert lines_off == []
    (line,) = lines_on
    ran = re.match(r"schemata: (\d+) of (\d+) mutants run came from their substrate's schema", line)
    assert ran and 20 <= int(ran.group(1)) < int(ran.group(2)), line  # pad_const_b4: 28 switched of 52


@pytest.mark.parametrize("matrix", [False, True], ids=["suites", "matrix"])
def test_trials_parked_in_host_memory_give_every_status_and_cell_that_trials_kept_on_the_device_give(
        admitted_on_cuda, capsys, matrix):
    # --worker-memory 0 parks every trial (kb_avgpool2d's 16 GiB T0 trials on an H100): each is copied in, fresh, when a
    # kernel runs on it, faults and stray writes included. Parked, the device's memory lies otherwise: a mutant's
    # access outside every allocation may fault kept and read a neighbour parked, or the reverse (on the H100,
    # pad_const_b4's in_stride = 2 faulted kept and failed T0 trial 0 parked): a detection either way.
    (kept, lines_kept), (parked, lines_parked) = (
        _pad_const_b4_report(admitted_on_cuda, capsys, f"parked-{memory}-{matrix}", "mutants' time: ",
                             *(["--worker-memory", memory] if memory != "default" else []),
                             *(["--matrix"] if matrix else []))
        for memory in ("default", "0"))
    found = compare(kept, parked)
    assert differences_beyond_memory(found.every_difference()) == []
    assert kept["files"].keys() == parked["files"].keys()
    if matrix:  # each row compared (the trials that killed it, of those that ran it) but where the statuses differ
        rows_kept, rows_parked = matrix_rows(kept), matrix_rows(parked)
        assert rows_kept.keys() == rows_parked.keys()
        assert found.rows_compared == len(rows_kept) - len(found.differences) > 0
    else:
        by_memory = {d.mutant_id for d in found.differences}
        for name, file in kept["files"].items():
            assert ([(m["id"], sorted(m.get("killedBy", []))) for m in file["mutants"] if m["id"] not in by_memory]
                    == [(m["id"], sorted(m.get("killedBy", []))) for m in parked["files"][name]["mutants"]
                        if m["id"] not in by_memory])
    assert "a parked trial brought to the device" not in lines_kept[0]
    assert "a parked trial brought to the device" in lines_parked[0]


@pytest.mark.parametrize("blocking", [True, False])
def test_a_campaign_workers_waits_for_its_gpu_sleep(blocking):
    """A campaign worker's backend (CAMPAIGN_BACKEND_SETTINGS) makes its context with blocking sync; another keeps the
    driver's default. A fresh process each: a context's flags are set before it is made."""
    import subprocess
    import sys

    program = ("from harness.backends.cuda import CudaBackend; from cuda.bindings import driver; "
               f"b = CudaBackend(blocking_sync={blocking}); "
               "print(b.blocking_sync, int(driver.cuCtxGetFlags()[1]) & int(driver.CUctx_flags.CU_CTX_SCHED_MASK))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=REPO)
    from harness.engine.worker import CAMPAIGN_BACKEND_SETTINGS

    assert CAMPAIGN_BACKEND_SETTINGS["cuda"] == {"blocking_sync": True}
    assert done.stdout.split() == (["True", "4"] if blocking else ["False", "0"])  # CU_CTX_SCHED_BLOCKING_SYNC = 4
