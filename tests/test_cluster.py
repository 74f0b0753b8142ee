"""Campaigns on a Dask cluster (`--scheduler`): a LocalCluster of two workers on the CPU backend decides every
mutant as a local run does, also when a Dask worker is killed mid-item or the client is killed and the
campaign resumed; each mutant is stored once. Skipped where dask and distributed are not installed
(`pip install -e '.[cluster]'`; .ci/run installs them)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.campaign import main as campaign_main
from harness.report_diff import status_differences

distributed = pytest.importorskip("distributed", reason="pip install -e '.[cluster]'")

REPO = Path(__file__).resolve().parent.parent
SUBSTRATES = ["masked_fill_b4", "pad_const_b4"]  # 19 and 52 mutants on the CPU backend


@pytest.fixture(autouse=True)
def _thread_caps_kept(monkeypatch):
    """A cluster started in this process sets OMP_NUM_THREADS (and kin) here for its workers: each test puts
    back what was there, so the tests after it start their workers as they would have."""
    from harness.cluster.item import THREAD_CAPS

    for name in THREAD_CAPS:
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)


def _campaign_args(tmp: Path, *extra: str) -> list[str]:
    return [*SUBSTRATES, "--backend", "cpu", "--workers", "2", "--no-progress", "--store", str(tmp / "results.jsonl"),
            "--cache-dir", str(tmp / "cache"), "--json", str(tmp / "report.json"), *extra]


def _stored_keys(store: Path) -> list[str]:
    keys = []
    for line in store.read_text().splitlines() if store.exists() else []:
        try:
            keys.append(json.loads(line)["mutant_id"])
        except (json.JSONDecodeError, KeyError):
            pass  # a line torn by a kill
    return keys


@pytest.fixture(scope="module")
def local_report(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("local")
    assert campaign_main(_campaign_args(tmp)) == 0
    return json.loads((tmp / "report.json").read_text())


def _wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {seconds:g} s"
        time.sleep(0.1)


def test_a_dask_worker_killed_mid_item_loses_nothing_and_changes_no_status(tmp_path, local_report, capsys):
    from distributed import Client, Scheduler, SpecCluster

    from harness.cluster.connect import local_worker_specs

    cluster = SpecCluster(workers=local_worker_specs(0, 2, 1, None),
                          scheduler={"cls": Scheduler, "options": {"dashboard_address": None}}, silence_logs=40)
    client = Client(cluster)
    try:
        outcome = []
        run = threading.Thread(target=lambda: outcome.append(
            campaign_main(_campaign_args(tmp_path, "--scheduler", cluster.scheduler_address))))
        run.start()
        store = tmp_path / "results.jsonl"
        _wait_for(lambda: sum(k.startswith("pad_const_b4:") for k in _stored_keys(store)) >= 3, 300,
                  "pad_const_b4 results")
        # The Dask worker running pad_const_b4's item, killed as a lost host is: its item runs again.
        running = {worker: keys for worker, keys in client.processing().items()
                   if any("pad_const_b4" in str(key) for key in keys)}
        assert running, f"pad_const_b4's item is not running: {client.processing()}"
        pids = client.run(os.getpid, workers=list(running))
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        run.join(600)
        assert outcome == [0]
    finally:
        client.close()
        cluster.close()
    output = capsys.readouterr().out
    assert "71 to run (0 stored) on backend cpu, one item per substrate on the Dask cluster tcp://" in output
    keys = _stored_keys(tmp_path / "results.jsonl")
    assert len(keys) == len(set(keys)) == 71  # every mutant stored, and once
    report = json.loads((tmp_path / "report.json").read_text())
    assert status_differences(local_report, report) == []


def test_a_client_killed_mid_run_resumes_with_nothing_redone(tmp_path, local_report):
    command = [sys.executable, "-m", "harness.campaign", *_campaign_args(tmp_path, "--scheduler", "local")]
    # Its own session, as a terminal's job is: the kill takes the local cluster's processes with it.
    first = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
    store = tmp_path / "results.jsonl"
    try:
        _wait_for(lambda: len(_stored_keys(store)) >= 10, 300, "10 stored results")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    time.sleep(1)  # an item's process notices its Dask worker gone within 0.5 s, its workers theirs
    stored = _stored_keys(store)
    assert len(stored) < 71, "the campaign finished before the kill: nothing to resume"
    second = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"71 mutants, {71 - len(set(stored))} to run ({len(set(stored))} stored)" in second.stdout
    keys = _stored_keys(store)
    assert len(keys) == len(set(keys)) == 71
    assert keys[:len(stored)] == stored  # the results stored before the kill, kept as they were
    assert status_differences(local_report, json.loads((tmp_path / "report.json").read_text())) == []


def test_without_dask_the_scheduler_option_is_a_usage_error_naming_the_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    assert campaign_main(["masked_fill_b4", "--backend", "cpu", "--scheduler", "local"]) == 2
    error = capsys.readouterr().err
    assert "campaign: error: --scheduler needs dask and distributed (" in error
    assert "pip install -e '.[cluster]'" in error


def test_the_gate_on_a_cluster_gives_every_candidate_the_checks_it_gets_here(tmp_path):
    """The row-sum forms: one admitted, the others rejected for their own reasons, one crashing at a late trial."""
    from harness.gate.command import main as gate_main

    forms = str(REPO / "tests" / "candidates" / "candidate_row_sum_forms.py")
    verdicts = {}
    for how, extra in (("here", []), ("cluster", ["--scheduler", "local"])):
        assert gate_main([forms, "--backend", "cpu", "--no-record", "--no-progress", "--jobs", "2",
                          "--json", str(tmp_path / f"{how}.json"), *extra]) == 1
        report = json.loads((tmp_path / f"{how}.json").read_text())
        verdicts[how] = {s["name"]: (s["admitted"], [(c["check"], c["status"]) for c in s["checks"]],
                                     [(x["name"], x["passed"], x["trials"]) for x in s["suites"]])
                         for s in report["substrates"]}
    assert verdicts["cluster"] == verdicts["here"]
    assert verdicts["here"]["forms_row_sum"][0] is True
    assert verdicts["here"]["forms_crash_late"][0] is False


def test_an_item_s_processes_get_the_client_s_thread_caps_not_the_nanny_s(monkeypatch):
    from harness.cluster.connect import cluster_client
    from harness.cluster.item import client_thread_caps, item_environment

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    with cluster_client("local", 0, 1, 1, None):
        # Starting the nannies sets OMP_NUM_THREADS=1 in this process for their workers; it is put back.
        caps = client_thread_caps()
    assert caps == {"OMP_NUM_THREADS": None, "MKL_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": None}
    nanny_set = {"PATH": "/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    assert item_environment(caps, nanny_set) == {"PATH": "/bin", "MKL_NUM_THREADS": "3"}


def test_a_cuda_campaign_on_a_cluster_without_gpu_workers_is_refused_not_left_waiting(capsys):
    from distributed import Scheduler, SpecCluster

    from harness.cluster.connect import local_worker_specs

    cluster = SpecCluster(workers=local_worker_specs(0, 1, 1, None),
                          scheduler={"cls": Scheduler, "options": {"dashboard_address": None}}, silence_logs=40)
    try:
        address = cluster.scheduler_address
        # This host has no GPU: with a scheduler elsewhere that is allowed, the cluster's GPUs are what count.
        assert campaign_main(["masked_fill_b4", "--backend", "cuda", "--no-progress", "--scheduler", address]) == 2
    finally:
        cluster.close()
    assert (f"campaign: error: --scheduler {address}: none of its 1 worker(s) has the resource GPU that a cuda item "
            f"needs (start each with: dask worker {address} --resources GPU=1)") in capsys.readouterr().err


def test_a_remote_cuda_campaign_from_a_host_without_a_gpu_leaves_the_oracles_for_later(tmp_path, capsys):
    from distributed import Nanny, Scheduler, SpecCluster

    # Workers that claim a GPU they lack: each item's own run says so, and the client names what it skipped.
    cluster = SpecCluster(workers={"fake-gpu": {"cls": Nanny, "options": {"nthreads": 1, "resources": {"GPU": 1}}}},
                          scheduler={"cls": Scheduler, "options": {"dashboard_address": None}}, silence_logs=40)
    try:
        assert campaign_main(["masked_fill_b4", "--backend", "cuda", "--no-progress", "--operator", "guard_deletion",
                              "--store", str(tmp_path / "results.jsonl"),
                              "--scheduler", cluster.scheduler_address]) == 1
    finally:
        cluster.close()
    out = capsys.readouterr().out
    assert ("oracle sanitizers: skipped (the oracles run on the client's host, which has no GPU: run the campaign "
            "again on a GPU host to judge the survivors; the value results are stored)") in out
    assert "not run: masked_fill_b4: " in out


def test_a_killed_client_s_items_stop_on_a_cluster_that_outlives_it(tmp_path):
    import psutil
    from distributed import Client, Scheduler, SpecCluster

    from harness.cluster.connect import local_worker_specs

    cluster = SpecCluster(workers=local_worker_specs(0, 2, 1, None),
                          scheduler={"cls": Scheduler, "options": {"dashboard_address": None}}, silence_logs=40)
    client = Client(cluster)
    try:
        command = [sys.executable, "-m", "harness.campaign",
                   *_campaign_args(tmp_path, "--scheduler", cluster.scheduler_address)]
        workers = [psutil.Process(pid) for pid in client.run(os.getpid).values()]

        def items_left() -> list:
            left = []
            for process in [p for w in workers for p in w.children(recursive=True)]:
                try:
                    if process.status() != psutil.STATUS_ZOMBIE and "harness.cluster.item" in " ".join(
                            process.cmdline()):
                        left.append(process)
                except psutil.Error:  # gone while looked at
                    pass
            return left

        run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_for(lambda: len(_stored_keys(tmp_path / "results.jsonl")) >= 3, 300, "3 stored results")
            # Found before the kill: once the client is gone they may end before a loaded machine looks again.
            running = items_left()
        finally:
            run.kill()
            run.wait()
        assert running, "no item was running when the client was killed"

        def alive(process) -> bool:
            try:
                return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
            except psutil.Error:  # gone while looked at
                return False

        _wait_for(lambda: not any(alive(p) for p in running), 8, "end of the killed client's items")
    finally:
        client.close()
        cluster.close()


def test_an_item_s_host_cores_beside_its_worker_compile_its_batches_ahead():
    from harness.cluster.item import compilers_per_item

    # The H200 host: 16 cores, one Dask worker of 4 threads: 3 compiling per item, 12 in all, as a local run has.
    assert compilers_per_item(16, 4) == 3
    assert compilers_per_item(2, 2) == 0  # this machine's local cluster: every core runs a worker
    assert compilers_per_item(8, 0) == 7


def test_an_item_with_compilers_hands_its_plan_s_batches_to_a_pool_and_judges_as_a_local_run(tmp_path, monkeypatch,
                                                                                              local_report, capsys):
    import pickle

    from harness.campaign import build_parser
    from harness.cluster import item
    from harness.cluster.campaign import item_spec
    from harness.engine import compile as engine_compile
    from harness.engine.plan import plans
    from harness.engine.report import SCHEMA_STATUS, MutantStatus
    from harness.engine.store import ResultStore

    pools = []

    class RecordingPool(engine_compile.CompilePool):
        def __init__(self, processes, lowered=0):
            super().__init__(processes, lowered)
            pools.append({"processes": processes, "tasks": []})

        def submit(self, work):
            pools[-1]["tasks"] += [task.args for task in work]
            super().submit(work)

    monkeypatch.setattr(engine_compile, "CompilePool", RecordingPool)
    args = build_parser().parse_args(_campaign_args(tmp_path)[:1] + _campaign_args(tmp_path)[2:])
    (plan,), _refused = plans(args, "cpu")
    plan.to_run = [m.id for m in plan.mutants]
    spec = {"kind": "campaign", "compilers": 1, **pickle.loads(item_spec(plan, args, "cpu", ResultStore(args.store)))}
    summary = item._campaign(spec)
    assert not summary["failure"]
    assert [p["processes"] for p in pools] == [1]
    # The unmutated source, its schema (the CPU backend's mutants run from schemata too), then the 19 mutants in one
    # batch (whose code every mutant's is compared with).
    assert [len(sources) for sources, *_ in pools[0]["tasks"]] == [1, 1, len(plan.mutants)]
    printed = [json.loads(line[len(item.MARK):]) for line in capsys.readouterr().out.splitlines()
               if line.startswith(item.MARK)]
    statuses = {m["record"]["mutant_id"]: SCHEMA_STATUS[MutantStatus(m["record"]["status"])]
                for m in printed if m["event"] == "result"}
    local = {m["id"]: m["status"] for f in local_report["files"].values() for m in f["mutants"]}
    assert sorted(statuses) == sorted(m.id for m in plan.mutants)
    assert statuses == {mutant_id: local[mutant_id] for mutant_id in statuses}


def test_an_items_workers_get_the_worker_memory_the_campaign_was_given(tmp_path):
    import pickle

    from harness.campaign import build_parser, worker_share_bytes
    from harness.cluster.campaign import item_spec
    from harness.engine.plan import plans
    from harness.engine.run import _plan_job
    from harness.engine.store import ResultStore

    args = build_parser().parse_args(_campaign_args(tmp_path)[:1] + _campaign_args(tmp_path)[2:]
                                     + ["--worker-memory", "2"])
    (plan,), _refused = plans(args, "cpu")
    for given, share in ((2.0, 2 * 2**30), (None, None)):  # a cluster's GPUs are not known here: no default share
        args.device_share_bytes = worker_share_bytes(given, 80 * 2**30, 4, 1, remote=True)
        item_args = pickle.loads(item_spec(plan, args, "cpu", ResultStore(args.store)))["args"]
        assert item_args.device_share_bytes == share
        job = _plan_job(plan, item_args, "cpu", ["m"], [], 1, True, {}, False, set())
        assert job.device_share_bytes == share


def test_an_item_runs_in_the_process_the_item_before_it_started_ahead_if_their_environments_match(tmp_path):
    from harness.candidates import candidate_files
    from harness.cluster.item import SpareItems, _run_item
    from harness.gate.worker import GateJob

    file = next(str(f) for f in candidate_files() if f.name == "candidate_masked_fill.py")
    spares = SpareItems()
    try:
        summaries = []
        # The third asks for other thread caps: the spare waiting was started with the first two's environment.
        for name, caps in (("masked_fill_b1", {}), ("masked_fill_b2", {}), ("masked_fill_b4", {"OMP_NUM_THREADS": "1"})):
            spec = {"kind": "gate", "job": GateJob(file=file, name=name, backend="cpu", cache_dir=str(tmp_path)),
                    "timeout": 300.0, "thread_caps": caps}
            summaries.append(_run_item(spec, lambda message: None, ahead=True, spares=spares))
        assert spares.taken_ahead == 1  # the second item found the first item's spare waiting; the third did not
        assert [s["report"]["name"] for s in summaries] == ["masked_fill_b1", "masked_fill_b2", "masked_fill_b4"]
        assert all(all(c["status"] == "passed" for c in s["report"]["checks"]) for s in summaries)
    finally:
        spares.close()
