"""Ctrl-C and SIGTERM: the gate stops within seconds, says so once, keeps what finished and leaves no process."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.gate.scheduling import JobQueue
from harness.interrupt import EXIT_INTERRUPTED, Interruption, caught, descendants
from harness.report_diff import status_differences

ROOT = Path(__file__).resolve().parent.parent


def _fake_proc(tmp_path: Path, table: list[tuple[int, str, str, int]]) -> Path:
    """A /proc holding `stat` files for (pid, comm, state, ppid)."""
    for pid, comm, state, ppid in table:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({comm}) {state} {ppid} {pid} {pid} 0 -1 4194560 0\n")
    (tmp_path / "self").mkdir()  # not a process: skipped
    return tmp_path


def test_descendants_are_read_from_proc_through_every_generation_skipping_zombies(tmp_path):
    proc = _fake_proc(tmp_path, [
        (10, "python gate.py", "S", 1),
        (11, "fork server", "S", 10),
        (12, "worker (a) b)", "R", 11),  # a command name holding a space and parentheses
        (13, "T0 helper", "S", 12),
        (14, "sanitizer", "Z", 10),  # ended, not yet reaped
        (20, "unrelated", "S", 1),
    ])
    assert sorted(descendants(10, proc)) == [11, 12, 13]
    assert descendants(13, proc) == []
    assert descendants(10, tmp_path / "missing") == []


def test_a_stopped_queue_gives_no_further_job():
    stop = threading.Event()
    queue = JobQueue([("a.py", "x"), ("a.py", "y")], stopped=stop.is_set)
    assert queue.take(None) == (0, ("a.py", "x"))
    stop.set()
    assert queue.take("a.py") is None


def test_a_caught_signal_sets_the_interruption_and_the_handlers_are_restored_after():
    before = signal.getsignal(signal.SIGTERM)
    interruption = Interruption()
    with caught(interruption):
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not interruption.stopped() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert interruption.stopped() and interruption.signal_name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is before
    assert interruption.line(3, 28, "substrates") == ("interrupted by SIGTERM: 3 of 28 substrates finished before it "
                                                      "(above); the other 25 did not run")


def _processes_in_group(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if fields[0] != "Z" and int(fields[3]) == pgid:
                found.append(int(entry.name))
    return found


def _gate_until_one_substrate_is_done(tmp_path: Path, backend: str) -> tuple[subprocess.Popen, Path, Path]:
    report, record = tmp_path / "gate.json", tmp_path / "admissions.json"
    gate = subprocess.Popen([sys.executable, "gate.py", "--backend", backend, "--jobs", "2", "--no-progress",
                             "--json", str(report), "--record", str(record)], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and gate.poll() is None:
        # The JSON is written after each substrate: the first one is done once it holds one.
        if report.is_file() and report.stat().st_size and (data := json.loads(report.read_text() or "{}")).get(
                "substrates"):
            # Written as the gate runs, it says so and names what has not finished.
            done = [s["name"] for s in data["substrates"]]
            assert data["incomplete"]["still_running"] is True
            assert len(done) + len(data["incomplete"]["not_gated"]) == 28 and not set(done) & set(
                data["incomplete"]["not_gated"])
            return gate, report, record
        time.sleep(0.2)
    gate.kill()
    pytest.fail(f"the gate finished no substrate in time: {gate.communicate()}")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
@pytest.mark.parametrize("sent_to", ["group", "gate", "gate and group"],
                         ids=["SIGINT to the process group", "SIGTERM to the gate alone",
                              "SIGINT to the gate, then its group (timeout -s INT)"])
@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_an_interrupted_gate_stops_within_seconds_reports_what_finished_and_leaves_no_process(tmp_path, sent_to,
                                                                                              backend):
    # On cuda, the workers started beside discovery, the fork server's and the sanitizers' processes are there too.
    gate, report, record = _gate_until_one_substrate_is_done(tmp_path, backend)
    sent = time.monotonic()
    if sent_to != "group":  # a batch system's stop, or timeout(1)'s first signal, sent to the gate's own process
        os.kill(gate.pid, signal.SIGTERM if sent_to == "gate" else signal.SIGINT)
    if sent_to == "gate and group":
        time.sleep(0.1)  # the first handled by now: the second is no second Ctrl-C, only the same stop again
    if sent_to != "gate":  # Ctrl-C at a terminal (every process of the foreground group), or timeout(1)'s second
        os.killpg(gate.pid, signal.SIGINT)
    out, err = gate.communicate(timeout=30)
    took = time.monotonic() - sent
    name = "SIGTERM" if sent_to == "gate" else "SIGINT"

    assert gate.returncode == EXIT_INTERRUPTED, out + err
    assert took < 10
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    last = out.strip().splitlines()[-1]
    assert last.startswith(f"interrupted by {name}: ") and "of 28 substrates finished before it (above)" in last
    assert last.endswith(f"nothing was written to the admission records; {report} holds what finished, "
                         f"marked incomplete")
    data = json.loads(report.read_text())
    finished = [s["name"] for s in data["substrates"]]
    assert data["incomplete"]["interrupted_by"] == name
    assert finished and len(finished) + len(data["incomplete"]["not_gated"]) == 28
    assert not set(finished) & set(data["incomplete"]["not_gated"])
    for name_ in finished:  # each finished verdict is in the table above the line
        assert any(line.startswith(name_ + " ") for line in out.splitlines())
    assert not record.exists()  # a record claims a whole gate, sanitizers included
    deadline = time.monotonic() + 5  # a worker forked as the signal came ends once it sees the gate gone
    while _processes_in_group(gate.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_in_group(gate.pid) == []


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_an_interrupted_campaign_says_so_once_and_the_same_command_goes_on_without_running_anything_twice(tmp_path):
    store, report = tmp_path / "store" / "results.jsonl", tmp_path / "report.json"
    command = [sys.executable, "-m", "harness.campaign", "--backend", "cpu", "--no-progress", "--store", str(store),
               "--json", str(report), "pad_const_b4"]
    campaign = subprocess.Popen(command, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (store.is_file() and len(store.read_text().splitlines()) >= 3) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(campaign.pid, signal.SIGINT)
    sent = time.monotonic()
    out, err = campaign.communicate(timeout=60)
    assert time.monotonic() - sent < 15, "the campaign took more than 15 s to stop"
    assert campaign.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == (f"campaign: interrupted by SIGINT: every mutant judged before it is in "
                                            f"{store}; run the same command to go on from there")
    stored = [json.loads(line) for line in store.read_text().splitlines()]
    # What was judged is printed and written, the report marked incomplete with what is missing.
    partial = json.loads(report.read_text())
    judged = partial["files"]["pad_const_b4.cu"]["mutants"]
    assert {m["id"] for m in judged} == {row["mutant_id"] for row in stored}
    total = int(re.search(r"^campaign: 1 substrate\(s\), (\d+) mutants, ", out, re.M).group(1))
    assert partial["substrateHarness"]["incomplete"] == {"interrupted_by": "SIGINT", "not_judged": total - len(stored)}
    assert re.search(rf"^pad_const_b4 +{len(stored)} ", out, re.M), out  # the table of the judged ones
    assert f"campaign: interrupted: {len(stored)} mutant(s) judged, {total - len(stored)} not;" in err
    assert re.search(r"^campaign: pad_const_b4: cut short judging its mutants, [\d.]+ s into it", err, re.M), err
    assert re.search(r"^worker time [\d.]+ s over \d+ worker\(s\)", out, re.M), out  # where the time went so far
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    resumed = [json.loads(line) for line in store.read_text().splitlines()]
    assert resumed[:len(stored)] == stored  # kept as stored
    ids = [row["mutant_id"] for row in resumed]
    assert len(ids) == len(set(ids))  # nothing run twice
    assert "incomplete" not in json.loads(report.read_text())["substrateHarness"]
    # ... and every status and killer as a campaign never interrupted gives them.
    whole = tmp_path / "whole.json"
    assert subprocess.run([*command[:-5], "--store", str(tmp_path / "whole.jsonl"), "--json", str(whole),
                           "pad_const_b4"], cwd=ROOT, capture_output=True, timeout=600).returncode == 0
    assert status_differences(json.loads(whole.read_text()), json.loads(report.read_text())) == []
    deadline = time.monotonic() + 5
    while _processes_in_group(campaign.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_in_group(campaign.pid) == []


# A --checker that judges the unmutated kernel and the first mutant at once, then sleeps far longer than anyone waits
# for Ctrl-C: the worker is busy as it was under KernelBench's checkers at real size (~40 s a mutant on the H100).
SLOW_CHECKER = """
import os, pathlib, time
calls = 0
def check(problem, kernel, device):
    global calls
    calls += 1
    if calls >= 3:
        pathlib.Path(os.environ["SLOW_CHECKER_BUSY"]).touch()
        time.sleep(300)
    return True
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
@pytest.mark.parametrize("sent_to", ["campaign", "campaign and group", "campaign, SIGTERM"],
                         ids=["SIGINT to the campaign alone (kill -INT)",
                              "SIGINT to the campaign, then its group (timeout -s INT)", "SIGTERM to the campaign alone"])
def test_a_campaign_whose_worker_is_busy_in_a_checker_stops_within_seconds_keeping_only_whole_mutants(tmp_path,
                                                                                                     sent_to):
    """The parent waited for the worker's mutant (its checkers) before the report, and then for its slot's thread at
    exit: a campaign under KernelBench's checkers at real size took 40 s to report and never exited."""
    checker, busy = tmp_path / "slow.py", tmp_path / "busy"
    checker.write_text(SLOW_CHECKER)
    store, report = tmp_path / "store" / "results.jsonl", tmp_path / "report.json"
    spec = f"{checker}:check"
    campaign = subprocess.Popen([sys.executable, "-m", "harness.campaign", "--backend", "cpu", "--no-progress",
                                 "--matrix", "--checker", spec, "--store", str(store), "--cache-dir",
                                 str(tmp_path / "cache"), "--json", str(report), "pad_const_b1"],
                                cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "SLOW_CHECKER_BUSY": str(busy)})
    try:
        deadline = time.monotonic() + 240
        while not (busy.is_file() and store.is_file() and '"cells"' in store.read_text()):
            if time.monotonic() > deadline or campaign.poll() is not None:
                pytest.fail(f"no mutant was judged, or the checker never slept: {campaign.returncode}")
            time.sleep(0.1)
        sent = time.monotonic()
        os.kill(campaign.pid, signal.SIGTERM if sent_to.endswith("SIGTERM") else signal.SIGINT)
        if sent_to == "campaign and group":
            os.killpg(campaign.pid, signal.SIGINT)  # the same stop again, at once (timeout's second signal)
        try:
            out, err = campaign.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the campaign had not exited 60 s after the signal (its worker sleeps 300 s in the checker)")
        took = time.monotonic() - sent
    finally:
        if campaign.poll() is None:
            os.killpg(campaign.pid, signal.SIGKILL)
            campaign.communicate()

    name = "SIGTERM" if sent_to.endswith("SIGTERM") else "SIGINT"
    assert campaign.returncode == EXIT_INTERRUPTED, err
    assert took < 20, f"the campaign took {took:.1f} s to stop"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == (f"campaign: interrupted by {name}: every mutant judged before it is in "
                                            f"{store}; run the same command to go on from there")
    rows = [json.loads(line) for line in store.read_text().splitlines()]
    judged = [row for row in rows if not row["mutant_id"].startswith("|")]
    # Only whole mutants: each with its row and the checker's verdict; the one under the checker as the signal came is
    # not stored (lost, it would read "not judged: its worker was lost" and never be run again).
    assert judged and all(row["cells"] and row["checkers"][spec] == {"accepted": True, "why": ""} for row in judged)
    assert f"campaign: interrupted: {len(judged)} mutant(s) judged, " in err
    partial = json.loads(report.read_text())
    assert {m["id"] for m in partial["files"]["pad_const_b1.cu"]["mutants"]} == {row["mutant_id"] for row in judged}
    assert partial["substrateHarness"]["incomplete"]["interrupted_by"] == name
    # The matrix and the checker over what was judged, as a whole campaign reports them: in the JSON, the table's
    # checker column, the matrix's analyses and the checker's line.
    checker = partial["substrateHarness"]["checkers"][spec]
    assert checker["sound"] is True and set(checker["accepted"]) <= {row["mutant_id"] for row in judged}
    assert any(test["id"].startswith("pad_const_b1/T0_original/") for file in partial["testFiles"].values()
               for test in file["tests"])
    assert re.search(r"^substrate .* " + re.escape(spec) + "$", out, re.M), out
    assert re.search(r"^kill matrix: \d+ mutants over \d+ trials", out, re.M), out
    assert re.search(rf"^checker {re.escape(spec)}", out, re.M), out
    deadline = time.monotonic() + 5
    while _processes_in_group(campaign.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_in_group(campaign.pid) == []


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_an_interrupted_bench_gate_prints_and_keeps_the_rows_that_finished_and_leaves_no_process(tmp_path):
    report = tmp_path / "bench.json"
    names = ["pad_const_b1", "pad_const_b2", "pad_const_b4"]
    bench = subprocess.Popen([sys.executable, "-m", "harness.benchmarks.gate", "--backend", "cpu", "--json", str(report),
                              *[arg for name in names for arg in ("--name", name)], "substrates/candidate_pad_const.py"],
                             cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (report.is_file() and json.loads(report.read_text() or "{}").get("rows")):
        if time.monotonic() > deadline or bench.poll() is not None:
            bench.kill()
            pytest.fail(f"bench_gate measured no substrate in time: {bench.communicate()}")
        time.sleep(0.1)
    os.killpg(bench.pid, signal.SIGINT)  # Ctrl-C: the baseline's or the gate's process gets it too
    sent = time.monotonic()
    out, err = bench.communicate(timeout=30)

    assert bench.returncode == EXIT_INTERRUPTED, out + err
    assert time.monotonic() - sent < 10
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    data = json.loads(report.read_text())
    measured = [row["substrate"] for row in data["rows"]]
    assert measured == names[:len(measured)] and 1 <= len(measured) < len(names)
    assert data["incomplete"] == {"interrupted_by": "SIGINT", "not_measured": names[len(measured):]}
    assert all(row["gate_verdict"] == "admitted" and row["baseline"]["passed"] for row in data["rows"])
    assert out.strip().splitlines()[-1] == (
        f"interrupted by SIGINT: {len(measured)} of 3 substrates finished before it (above); the other "
        f"{3 - len(measured)} did not run; {report} holds what finished, marked incomplete")
    table = [line.split()[0] for line in out.splitlines() if line.startswith("pad_const_")]
    assert table == measured  # the cut substrate has no row
    deadline = time.monotonic() + 5
    while _processes_in_group(bench.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_in_group(bench.pid) == []


def _fork_server_gone(monkeypatch, interruption=None):
    """start_worker's process start failing as it does when Ctrl-C (delivered to `interruption` meanwhile, where
    given) has just killed the fork server."""
    import multiprocessing.process

    def start(self):
        if interruption is not None:
            interruption.handle(signal.SIGINT)
        raise EOFError("unexpected EOF")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)


def test_a_worker_that_cannot_start_is_a_lost_worker_not_an_eof_traceback(monkeypatch):
    from harness.processes import WorkerLost, start_worker

    _fork_server_gone(monkeypatch)
    with pytest.raises(WorkerLost, match=r"^the worker could not be started: EOFError: unexpected EOF$"):
        start_worker()


def test_a_bench_gate_baseline_whose_worker_cannot_start_is_no_traceback_and_ctrl_c_ends_it_as_interrupted(
        monkeypatch, tmp_path):
    """Ctrl-C reaching the fork server while bench_gate started the next baseline's worker gave `EOFError:
    unexpected EOF` and exit 1 (the CPU suite, once); it is an interrupted run, exit 130, the rows kept."""
    from harness.benchmarks import gate as bench_gate

    real_run = bench_gate._Bench.substrate
    calls = []

    def substrate(self, index, job, total):
        calls.append(job.name)
        if len(calls) == 2:  # Ctrl-C as the second substrate's baseline worker starts
            _fork_server_gone(monkeypatch, self.interruption)
        return real_run(self, index, job, total)

    monkeypatch.setattr(bench_gate._Bench, "substrate", substrate)
    report = tmp_path / "bench.json"
    code = bench_gate.main(["--backend", "cpu", "--no-gate", "--json", str(report), "--name", "pad_const_b1",
                            "--name", "pad_const_b2", "substrates/candidate_pad_const.py"])

    assert code == EXIT_INTERRUPTED
    run = json.loads(report.read_text())
    assert [row["substrate"] for row in run["rows"]] == ["pad_const_b1"]
    assert run["incomplete"] == {"interrupted_by": "SIGINT", "not_measured": ["pad_const_b2"]}


def test_a_gate_job_whose_worker_cannot_start_is_no_verdict_after_ctrl_c_and_an_error_before_it(monkeypatch):
    import argparse

    from harness.gate import command
    from harness.gate.scheduling import MemoryBudget
    from harness.gate.worker import FileWorker
    from harness.processes import WorkerLost

    def cannot_start(*args, **kwargs):
        raise WorkerLost("the worker could not be started: EOFError: unexpected EOF")

    interruption = Interruption()
    run = command._GateRun(args=argparse.Namespace(cache_dir=None, kb_root=None, timeout=5.0, interruption=interruption),
                           backend="cpu", entries={}, errors={}, cluster=None, ahead=None, at_once=2, sanitizing=None,
                           report=None, progress=None, budget=MemoryBudget(None))
    job = ("substrates/candidate_pad_const.py", "pad_const_b1")
    monkeypatch.setattr(command, "run_gate_job", cannot_start)
    with pytest.raises(WorkerLost):  # no interrupt: the machine's failure, said, not a rejection
        run.gate_one(job, FileWorker(None))
    interruption.event.set()
    assert run.gate_one(job, FileWorker(None)) is None  # after Ctrl-C: nothing decided, nothing recorded


def _helper_then_wait(start, args, ready) -> None:
    start(*args)
    ready.set()
    time.sleep(60)


@pytest.mark.parametrize("start", ["t0", "problem"])
def test_a_draws_helper_ends_quietly_on_ctrl_c(tmp_path, start):
    # A Ctrl-C at the terminal reaches the whole process group: the helpers drawing trials printed a KeyboardInterrupt
    # traceback each into the workers' log (five in the forty-sixth session's corpus matrix), beside the campaign's one
    # line. The default action ends a helper at once (exit by the signal, not by a traceback's exit 1).
    import multiprocessing

    import rule_candidates
    from harness.engine.draws_ahead import _problem_helper_start
    from harness.gate.trial_inputs import _helper_start

    rule_candidates.write_candidates(tmp_path, [])
    problem = tmp_path / "problems" / "abs_plus_half.py"
    candidate = tmp_path / "substrates" / "candidate_rule_compliant.py"
    target, args = ((_helper_start, (os.getpid(), str(candidate), "rule_compliant", problem.name, str(problem)))
                    if start == "t0" else (_problem_helper_start, (os.getpid(), problem.name, str(problem))))
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    helper = context.Process(target=_helper_then_wait, args=(target, args, ready))
    helper.start()
    try:
        assert ready.wait(60)
        os.kill(helper.pid, signal.SIGINT)
        helper.join(30)
        assert helper.exitcode == -signal.SIGINT
    finally:
        helper.kill()
