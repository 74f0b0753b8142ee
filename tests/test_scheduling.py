"""harness.gate.scheduling, and gate.py --jobs: jobs that do not fit the device's memory at once wait their turn,
and one that runs out of memory beside others is judged again alone."""

import json
import threading
import time

import pytest

from harness.gate import command as cli
from harness.gate.records import CheckName, CheckResult, CheckStatus, SubstrateReport
from harness.gate.scheduling import MemoryBudget, estimate_bytes


def _overlaps(budget: MemoryBudget, needs: list[int], seconds: float = 0.2) -> int:
    """Run one job per need at once; return the most that ran together."""
    running, most, lock = [0], [0], threading.Lock()

    def job(need):
        with budget.reserve(need):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(seconds)
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=job, args=(n,)) for n in needs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return most[0]


def test_jobs_that_fit_together_run_together():
    assert _overlaps(MemoryBudget(100), [30, 30, 30]) == 3


def test_jobs_that_do_not_fit_at_once_run_one_after_another():
    assert _overlaps(MemoryBudget(100), [60, 60, 60]) == 1


def test_a_job_larger_than_the_device_still_runs_alone():
    assert _overlaps(MemoryBudget(100), [500, 10]) == 1


def test_without_a_known_capacity_nothing_waits():
    assert _overlaps(MemoryBudget(None), [10**15, 10**15]) == 2


def test_reserve_says_whether_another_job_shared_the_device():
    budget = MemoryBudget(100)
    with budget.reserve(10) as shared:
        assert not shared()
        with budget.reserve(10) as other:
            assert shared() and other()
    with budget.reserve(10) as shared:
        assert not shared()


def test_the_estimate_grows_with_the_trial():
    assert estimate_bytes(2**30) > estimate_bytes(0) > 0


def _report(name, oom: bool, memory: CheckName = CheckName.FITS_DEVICE_MEMORY) -> SubstrateReport:
    status = CheckStatus.FAILED if oom else CheckStatus.PASSED
    detail = "T0_original trial 0: CUDA out of memory" if oom else "every trial fit the device's memory"
    checks = [CheckResult(c, CheckStatus.PASSED, "") for c in CheckName if c is not memory]
    checks.append(CheckResult(memory, status, detail))
    return SubstrateReport(name=name, file="f.py", checks=checks, source_sha256="x")


def test_gate_jobs_whose_memory_does_not_fit_at_once_are_all_admitted(monkeypatch, capsys):
    """Three substrates, each needing most of the device: run one at a time, all admitted.

    The fake job runs out of memory whenever another job is running, as a real one would; the
    scheduler must never let that happen, and a job that met it anyway would be run again alone.
    """
    running, calls, lock = [0], [], threading.Lock()

    def fake_job(job, timeout, on_message, keeper=None, stop=lambda: False):
        with lock:
            running[0] += 1
            crowded = running[0] > 1
        time.sleep(0.2)
        with lock:
            running[0] -= 1
            calls.append((job.name, crowded))
        return _report(job.name, oom=crowded)

    names = ["pad_const_b1", "pad_const_b2", "pad_const_b4"]
    monkeypatch.setattr(cli, "run_gate_job", fake_job)
    monkeypatch.setattr(cli, "device_memory_bytes", lambda backend: 10 * 2**30)
    monkeypatch.setattr(cli, "estimate_bytes", lambda t0_bytes: 8 * 2**30)
    code = cli.main(["--backend", "cpu", "--jobs", "3", "--no-record", "--no-progress", *names])
    out = capsys.readouterr().out
    assert code == 0, out
    assert sorted(name for name, _crowded in calls) == names
    assert not any(crowded for _name, crowded in calls)
    assert "3 admitted, 0 rejected" in out


@pytest.mark.parametrize("memory, which", [(CheckName.FITS_DEVICE_MEMORY, "device"),
                                            (CheckName.FITS_HOST_MEMORY, "host")])
def test_an_out_of_memory_beside_other_jobs_is_judged_again_alone(monkeypatch, capsys, tmp_path, memory, which):
    calls = []

    def fake_job(job, timeout, on_message, keeper=None, stop=lambda: False):
        calls.append(job.name)
        first_try = calls.count(job.name) == 1
        if job.name == "pad_const_b1":
            time.sleep(0.3)  # so the other job runs beside it
        return _report(job.name, oom=first_try and job.name == "pad_const_b1", memory=memory)

    monkeypatch.setattr(cli, "run_gate_job", fake_job)
    monkeypatch.setattr(cli, "device_memory_bytes", lambda backend: 100 * 2**30)
    code = cli.main(["--backend", "cpu", "--jobs", "2", "--no-record", "--no-progress", "pad_const_b1",
                     "pad_const_b2", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert calls.count("pad_const_b1") == 2 and calls.count("pad_const_b2") == 1
    rerun = next(s for s in json.loads((tmp_path / "r.json").read_text())["substrates"] if s["name"] == "pad_const_b1")
    detail = next(c["detail"] for c in rerun["checks"] if c["check"] == memory.value)
    assert detail == f"every trial fit the device's memory (run again alone: beside other jobs it ran out of {which} memory)"


def test_an_out_of_memory_alone_stays_a_limit_of_the_machine(monkeypatch, capsys):
    calls = []

    def fake_job(job, timeout, on_message, keeper=None, stop=lambda: False):
        calls.append(job.name)
        return _report(job.name, oom=True)

    monkeypatch.setattr(cli, "run_gate_job", fake_job)
    code = cli.main(["--backend", "cpu", "--jobs", "1", "--no-record", "--no-progress", "pad_const_b1"])
    out = capsys.readouterr().out
    assert code == 1
    assert calls == ["pad_const_b1"]  # alone from the start: nothing to run again
    assert "fits_device_memory: T0_original trial 0: CUDA out of memory" in out


# ------------------------------------------------------------------ which job a free slot takes


def test_a_slot_keeps_to_its_file_while_the_file_has_jobs():
    from collections import Counter

    from harness.gate.scheduling import next_job

    pending = ["a.py", "b.py", "b.py", "c.py"]
    assert next_job(pending, "b.py", Counter({"a.py": 1, "b.py": 1})) == 1
    assert next_job(pending, None, Counter()) == 1  # the file with the most jobs waiting
    # Its file done: the file with the most jobs waiting for each slot that would be on it.
    assert next_job(pending, "z.py", Counter({"a.py": 1, "b.py": 1})) == 3  # c.py: 1 for 1 slot, as b.py's 2 for 2, and no slot on it
    assert next_job(["a.py", "b.py", "b.py", "b.py"], "z.py", Counter({"b.py": 1})) == 1  # b.py: 3 for 2
    assert next_job(["a.py", "b.py"], None, Counter()) == 0  # a tie: the earlier


def test_a_free_slot_joins_a_busy_file_only_for_two_jobs_or_more():
    from collections import Counter

    from harness.gate.scheduling import next_job

    # Each file has a slot on it and one job left, which that slot gates next: no new worker for it.
    assert next_job(["a.py", "b.py"], "z.py", Counter({"a.py": 1, "b.py": 1})) is None
    assert next_job(["a.py", "b.py", "b.py"], "z.py", Counter({"a.py": 1, "b.py": 1})) == 1


def test_slots_spread_over_the_files_and_each_worker_serves_its_file_to_the_end():
    from harness.gate.scheduling import JobQueue

    jobs = [(f, n) for f in ("a.py", "b.py", "c.py") for n in ("1", "2", "3", "4")]
    queue = JobQueue(jobs)
    first = [queue.take(None) for _ in range(4)]  # four slots start
    assert [job for _, job in first] == [("a.py", "1"), ("b.py", "1"), ("c.py", "1"), ("a.py", "2")]
    queue.done(("b.py", "1"))
    assert queue.take("b.py") == (5, ("b.py", "2"))  # the slot that gated b.py/1 goes on with b.py
    taken = [job for _, job in first] + [("b.py", "2")]
    for _, job in first:  # the four slots, each done, go on with their files until none is left
        queue.done(job)
    while True:
        progressed = False
        for slot_file in ("a.py", "b.py", "c.py", "a.py"):
            if (next_taken := queue.take(slot_file)) is not None:
                taken.append(next_taken[1])
                queue.done(next_taken[1])
                progressed = True
        if not progressed:
            break
    assert sorted(taken) == sorted(jobs)  # every job once
    assert queue.take(None) is None


def test_a_job_that_needs_a_fresh_worker_is_a_key_of_its_own():
    from harness.gate.scheduling import JobQueue

    jobs = [("a.py", "small"), ("a.py", "large"), ("a.py", "small2")]
    queue = JobQueue(jobs, key=lambda job: job if job[1] == "large" else job[0])
    assert queue.take(None) == (0, ("a.py", "small"))
    assert queue.take(None) == (1, ("a.py", "large"))  # a worker of its own in any case: a free slot takes it
    assert queue.take(None) is None  # a.py's one job left is its slot's


def test_a_substrate_whose_t0_needs_helpers_gets_a_fresh_worker():
    from harness.gate.scheduling import FORKED_HELPERS_FROM_BYTES, may_reuse_worker

    assert may_reuse_worker(0) and may_reuse_worker(FORKED_HELPERS_FROM_BYTES - 1)
    assert not may_reuse_worker(FORKED_HELPERS_FROM_BYTES)


def test_only_files_with_a_job_a_kept_worker_may_gate_keep_the_worker_started_ahead_for_them(tmp_path):
    from pathlib import Path

    from harness.gate.command import files_taking_workers
    from harness.gate.scheduling import FORKED_HELPERS_FROM_BYTES
    from harness.gate.worker import EntrySummary

    small, large, both = (str(tmp_path / f"candidate_{n}.py") for n in ("small", "large", "both"))
    entries = {small: [EntrySummary("s", small, t0_bytes=1 << 20)],
               large: [EntrySummary("l", large, t0_bytes=FORKED_HELPERS_FROM_BYTES)],
               both: [EntrySummary("b1", both, t0_bytes=FORKED_HELPERS_FROM_BYTES), EntrySummary("b2", both)]}
    jobs = [(small, "s"), (large, "l"), (both, "b1"), (both, "b2")]
    assert files_taking_workers(jobs, entries) == {str(Path(small).resolve()), str(Path(both).resolve())}
    # A file whose only small substrate is not gated this run keeps none.
    assert files_taking_workers([(both, "b1")], entries) == set()
