"""harness.gate.trial_inputs: T0 built ahead in helper processes gives exactly what the worker would build itself."""

from pathlib import Path

import pytest
import torch

from harness.candidates import import_candidate, make_entry, register_candidate
from harness.gate.pipeline import _inputs_phase
from harness.gate.trial_inputs import TrialInputs, build_here
from harness.problems import ProblemSearch, load_problem

REPO = Path(__file__).resolve().parent.parent
STANDIN = REPO / "tests" / "kernelbench_standin"


def _t0(file: Path):
    registered = register_candidate(import_candidate(file), file)
    name = next(iter(registered))
    entry, problems = make_entry(name, registered[name], file)
    assert not problems
    problem = load_problem(entry.kb_file, ProblemSearch.for_candidate(file, STANDIN))
    return name, problem, dict((n, b) for n, _count, b in entry.suites())["T0_original"]


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b))


@pytest.mark.parametrize("fork, trials_ahead, shared_from", [(True, None, None), (False, None, None), (True, 0, None),
                                                             (True, None, 0)],
                         ids=["forked", "spawned", "forked, none ahead", "forked, every draw in shared memory"])
def test_helpers_build_what_the_worker_would_build(fork, trials_ahead, shared_from, monkeypatch):
    # A T0 drawn from get_inputs()'s distribution (not identical), so the second build runs too. None ahead: the
    # helpers draw only the trial the worker waits for (a T0 too large for host memory to hold two trials). Every draw
    # in shared memory: as a KernelBench-sized T0's are (the stand-in's are under SHARED_DRAWS_FROM_BYTES).
    from harness.gate import trial_inputs

    if shared_from is not None:
        monkeypatch.setattr(trial_inputs, "SHARED_DRAWS_FROM_BYTES", shared_from)  # forked helpers inherit it
    file = REPO / "examples" / "kernelbench" / "candidate_kb_standard_matmul.py"
    name, problem, builder = _t0(file)
    ahead = TrialInputs(str(file), name, torch.device("cpu"), processes=2, ahead=trials_ahead, from_bytes=0)
    ahead.start(problem, builder, 5, fork=fork)
    assert ahead.helping and ahead.forked is fork
    try:
        for t in range(5):
            got, want = ahead.t0(t), build_here(builder, t, torch.device("cpu"), problem)
            assert got.error is None and got.difference == want.difference == ""
            if t == 0:  # not identical: every trial already handed to the helpers gets its second build now
                assert {u for kind, u in ahead._pending if kind == "again"} == set(range(1, 1 + ahead.ahead))
            assert _same(got.inputs, want.inputs) and _same(got.official, want.official)
    finally:
        ahead.close()
    assert ahead.fallback == ""


def _stand_in_t0(t):
    # get_inputs() of the stand-in itself: the candidate's own T0 is KernelBench-sized.
    from harness.gate.checks.suite_rules import official_inputs

    return official_inputs(load_problem("25_Swish.py", ProblemSearch.for_candidate(None, STANDIN)), t)


def test_small_t0s_are_built_in_the_worker():
    file = REPO / "examples" / "kernelbench" / "candidate_kb_swish.py"
    name, problem, _builder = _t0(file)
    builder = _stand_in_t0
    ahead = TrialInputs(str(file), name, torch.device("cpu"))
    ahead.start(problem, builder, 5)
    assert ahead._pool is None  # the stand-in's T0 is far under HELPERS_FROM_BYTES
    assert _same(ahead.t0(0).inputs, build_here(builder, 0, torch.device("cpu"), problem).inputs)


def test_a_helper_that_cannot_start_leaves_the_worker_to_build(tmp_path):
    file = REPO / "examples" / "kernelbench" / "candidate_kb_swish.py"
    name, problem, _builder = _t0(file)
    builder = _stand_in_t0
    ahead = TrialInputs(str(tmp_path / "candidate_gone.py"), name, torch.device("cpu"), processes=1, from_bytes=0)
    ahead.start(problem, builder, 5)
    built = ahead.t0(0)
    assert built.error is None and _same(built.inputs, build_here(builder, 0, torch.device("cpu"), problem).inputs)
    assert "built in the worker from then on" in ahead.fallback


def test_a_builder_that_is_not_deterministic_is_caught_by_its_byte_sums():
    calls = []

    def drifting(t):
        calls.append(t)
        return [torch.full((4,), float(len(calls)))]

    built = build_here(drifting, 0, torch.device("cpu"))
    assert built.difference.startswith("input 0 is float32[4], then float32[4] with different contents")


def test_a_gate_worker_draws_t0_in_helpers_and_reports_the_same():
    """Through the real worker (a daemonic process, to which multiprocessing refuses children by default)."""
    from harness.gate.worker import GateJob, run_gate_job

    file = str(REPO / "tests" / "candidates" / "candidate_row_sum_forms.py")
    reports = [run_gate_job(GateJob(file=file, name="forms_row_sum", backend="cpu", helpers_from_bytes=threshold))
               for threshold in (0, None)]
    ahead, here = ({c.check: (c.status, c.detail) for c in r.checks} for r in reports)
    assert all(r.admitted for r in reports), [r.reasons() for r in reports]
    assert ahead == here


def test_helper_plan_draws_as_many_trials_ahead_as_host_memory_allows():
    from harness.gate.trial_inputs import MAX_TRIALS_AHEAD, helper_plan

    gib = 2**30
    # The H200 host: 16 cores, 123 GiB available. A 6.4 GB softmax T0: the trial waited for and 3 ahead (2 draws
    # each: 48 GiB, within half of 123), with 8 helpers (half the cores); an 8.6 GB argmax T0 two ahead, 6 helpers.
    assert helper_plan(int(6.4e9), 16, 123 * gib) == (8, 3)
    assert helper_plan(int(8.6e9), 16, 123 * gib) == (6, 2)
    # A 17.2 GB avgpool2d T0 (two draws: 32 GiB a trial): the helpers draw the trial waited for, none ahead (the H100
    # host, 120 GiB available, lost a helper to the system with one ahead).
    assert helper_plan(int(17.2e9), 16, 120 * gib) == (3, 0)
    # However little the host has, one helper draws the trial waited for.
    assert helper_plan(int(8.6e9), 2, 4 * gib) == (1, 0)
    assert helper_plan(int(8.6e9), None, None) == (1, MAX_TRIALS_AHEAD)
    assert helper_plan(256 * 2**20, 64, 512 * gib) == (9, MAX_TRIALS_AHEAD)


def _entry(file: Path):
    registered = register_candidate(import_candidate(file), file)
    name = next(iter(registered))
    return name, make_entry(name, registered[name], file)[0]


def test_a_worker_forks_its_helpers_before_its_backend_and_starts_them_once():
    file = REPO / "examples" / "kernelbench" / "candidate_kb_standard_matmul.py"
    name, entry = _entry(file)
    search = ProblemSearch.for_candidate(file, STANDIN)
    ahead = TrialInputs(str(file), name, torch.device("cpu"), processes=1, from_bytes=0)
    ahead.start_early(entry, search)
    try:
        assert ahead.helping and ahead.forked
        pool = ahead._pool
        _name, problem, builder = _t0(file)
        ahead.start(problem, builder, 5)  # the pipeline's call, once T0 is reached: nothing changes
        assert ahead._pool is pool and ahead.forked
        assert _same(ahead.t0(0).inputs, build_here(builder, 0, torch.device("cpu"), problem).inputs)
    finally:
        ahead.close()


def test_a_small_t0_gets_no_forked_helpers():
    # The stand-in's T0 (a 16 x 64 matmul) is far under FORKED_HELPERS_FROM_BYTES: a draw costs less than a hand-over.
    file = REPO / "examples" / "kernelbench" / "candidate_kb_standard_matmul.py"
    name, entry = _entry(file)
    ahead = TrialInputs(str(file), name, torch.device("cpu"))
    ahead.start_early(entry, ProblemSearch.for_candidate(file, STANDIN))
    assert ahead.started and not ahead.helping


def test_no_helper_is_forked_from_a_process_with_cuda_state(monkeypatch):
    file = REPO / "examples" / "kernelbench" / "candidate_kb_standard_matmul.py"
    name, entry = _entry(file)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    ahead = TrialInputs(str(file), name, torch.device("cpu"), from_bytes=0)
    ahead.start_early(entry, ProblemSearch.for_candidate(file, STANDIN))
    assert not ahead.started and not ahead.helping  # left to the pipeline, which spawns them


def _inode(fd: int):
    import os

    try:
        return os.fstat(fd).st_ino
    except OSError:
        return None


def test_a_forked_helper_closes_its_copy_of_the_workers_pipe():
    # Else a worker that dies would not close its pipe to the gate until its helpers had noticed.
    import os

    read_end, write_end = os.pipe()
    file = REPO / "examples" / "kernelbench" / "candidate_kb_standard_matmul.py"
    name, problem, builder = _t0(file)
    ahead = TrialInputs(str(file), name, torch.device("cpu"), processes=1, from_bytes=0, worker_fds=(write_end,))
    ahead.start(problem, builder, 5, fork=True)
    try:
        pipe = os.fstat(write_end).st_ino
        # The number may name another file in the helper by now: what matters is that it is not the pipe.
        assert ahead._pool.submit(_inode, write_end).result(timeout=60) != pipe
        assert ahead._pool.submit(_inode, read_end).result(timeout=60) == pipe  # what it was not told of stays
    finally:
        ahead.close()
        os.close(read_end)
        os.close(write_end)


def test_jobs_at_once_share_the_hosts_memory_for_trials_drawn_ahead(monkeypatch):
    # Three gate jobs that start together each see all of the host's available memory: each plans in a third.
    import harness.gate.trial_inputs as trial_inputs

    file = REPO / "examples" / "kernelbench" / "candidate_kb_standard_matmul.py"
    name, problem, builder = _t0(file)
    monkeypatch.setattr(trial_inputs, "host_memory_available", lambda: 123 * 2**30)
    monkeypatch.setattr(trial_inputs, "t0_bytes", lambda problem, known=None: int(6.4e9))  # a softmax-sized T0
    planned = {}
    for share in (1.0, 1 / 3):
        ahead = TrialInputs(str(file), name, torch.device("cpu"), from_bytes=0, memory_share=share)
        ahead.start(problem, builder, 5, fork=True)
        planned[share] = ahead.ahead
        ahead.close()
    # Half of 123 GiB holds the trial waited for and three ahead, of two 6.4 GB draws each; half of 41 GiB, the
    # trial waited for alone.
    assert planned == {1.0: 3, 1 / 3: 0}


def _small_swish(tmp_path: Path, t0_body: str | None = None) -> Path:
    """candidate_kb_swish.py at the stand-in's sizes, so that its T0 is get_inputs() under its seed (or `t0_body`)."""
    source = (REPO / "examples" / "kernelbench" / "candidate_kb_swish.py").read_text()
    source = source.replace("batch_size = 4096", "batch_size = 16").replace("dim = 393216", "dim = 4096")
    if t0_body is not None:
        start = source.index("def t0_original")
        end = source.index("\ndef ", start + 1)
        source = source[:start] + t0_body + source[end:]
    file = tmp_path / "candidate_kb_swish.py"
    file.write_text(source)
    return file


def _drawn_ahead(file: Path, monkeypatch, trials: int = 5, processes: int = 3):
    """Every T0 trial from forked helpers whose draws are all made in shared memory, none ahead (each trial goes to
    the helpers as the worker asks for it), beside the worker's own build."""
    from harness.gate import trial_inputs

    monkeypatch.setattr(trial_inputs, "SHARED_DRAWS_FROM_BYTES", 0)
    name, problem, builder = _t0(file)
    ahead = TrialInputs(str(file), name, torch.device("cpu"), processes=processes, ahead=0, from_bytes=0)
    ahead.start(problem, builder, trials, fork=True)
    got, combined, phases = [], [], []
    try:
        for t in range(trials):
            got.append((ahead.t0(t), build_here(builder, t, torch.device("cpu"), problem)))
            combined.append(ahead._combined)
            phases.append(_inputs_phase(ahead))
    finally:
        ahead.close()
    assert ahead.fallback == ""
    return ahead, got, combined, phases


def test_after_a_trial_identical_to_get_inputs_each_is_drawn_once_for_both(tmp_path, monkeypatch):
    ahead, got, combined, phases = _drawn_ahead(_small_swish(tmp_path), monkeypatch)
    assert combined == [True] * 5 and ahead.draws_given == 4  # trial 0 by two helpers, then one draw a trial
    # The gate's phases say which trials were drawn once
    assert phases == ["inputs from helpers (waiting)"] + ["inputs from helpers (waiting, drawn once)"] * 4
    for t, (mine, want) in enumerate(got):
        assert mine.identical and want.identical and mine.error is None and mine.difference == ""
        assert _same(mine.inputs, want.inputs) and _same(mine.official, want.official)
        assert (mine.inputs[0] is mine.official[0]) is (t > 0)  # held once


def test_with_one_helper_process_every_trial_is_drawn_once_from_the_first(tmp_path, monkeypatch):
    # Two helpers at once need two processes: one process draws trial 0's two builds in turn anyway.
    ahead, got, combined, phases = _drawn_ahead(_small_swish(tmp_path), monkeypatch, processes=1)
    assert ahead.draws_given == 5 and phases == ["inputs from helpers (waiting, drawn once)"] * 5
    assert all(mine.identical and mine.inputs[0] is mine.official[0] for mine, _want in got)
    assert all(_same(mine.inputs, want.inputs) for mine, want in got)


def test_a_trial_drawn_once_that_is_not_identical_sends_the_next_to_two_helpers(tmp_path, monkeypatch):
    # Identical to get_inputs() on trial 0 only; trials 1 on are drawn from its distribution with a generator of their
    # own: trial 1 goes to a combined task (nothing given, not identical), and the rest to two helpers again.
    body = '''def t0_original(t, device):
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        g = None if t == 0 else torch.Generator().manual_seed(7000 + t)
        x = torch.rand(batch_size, dim, generator=g)
    return [x.to(device)]

'''
    ahead, got, combined, phases = _drawn_ahead(_small_swish(tmp_path, body), monkeypatch)
    assert combined == [True, False, False, False, False] and ahead.draws_given == 0
    assert phases == ["inputs from helpers (waiting)", "inputs from helpers (waiting, drawn once)"] + [
        "inputs from helpers (waiting)"] * 3
    for t, (mine, want) in enumerate(got):
        assert mine.identical is want.identical is (t == 0) and mine.difference == want.difference == ""
        assert _same(mine.inputs, want.inputs) and _same(mine.official, want.official)
        assert mine.inputs[0] is not mine.official[0] or t == 0


def test_trials_drawn_once_are_drawn_as_far_ahead_as_one_draw_a_trial_allows(tmp_path, monkeypatch):
    # A T0 whose two draws a trial leave room for none ahead, and one draw a trial for one (kb_avgpool2d's on the H200's
    # host, below): once a trial is identical, the next is drawn while the worker runs it.
    from harness.gate import trial_inputs

    monkeypatch.setattr(trial_inputs, "helper_plan", lambda size, cores, budget, draws=2: (3, 0))
    monkeypatch.setattr(trial_inputs, "ahead_by_draws", lambda size, cores, budget, processes: {2: 0, 1: 1})
    file = _small_swish(tmp_path)
    name, problem, builder = _t0(file)
    ahead = TrialInputs(str(file), name, torch.device("cpu"), from_bytes=0)
    ahead.start(problem, builder, 5, fork=True)
    try:
        assert ahead.ahead == 0 and ahead.processes == 3 and not ahead._pending
        assert ahead.t0(0).identical and ahead.ahead == 1
        assert set(ahead._pending) == {("combined", 1)}  # drawn while the worker runs trial 0
        assert ahead.t0(1).identical
        assert set(ahead._pending) == {("combined", 2)}
    finally:
        ahead.close()


def test_drawn_once_a_trial_twice_as_many_are_held_in_the_two_draw_plans_bytes():
    from harness.gate.trial_inputs import MAX_TRIALS_AHEAD, ahead_by_draws

    gib = 2**30
    # kb_avgpool2d's 16 GiB draws on the H200's host: one trial of two draws, or two of one; the plan at one draw alone
    # (three) would leave too little beside its float64 route on the CPU
    assert ahead_by_draws(int(17.2e9), 16, 120 * gib, 3) == {2: 0, 1: 1}
    assert ahead_by_draws(int(8.6e9), 16, 123 * gib, 6) == {2: 2, 1: MAX_TRIALS_AHEAD}  # capped as before
    assert ahead_by_draws(int(17.2e9), 16, 120 * gib, 1) == {2: 0, 1: 0}  # one process: one trial in flight
    assert ahead_by_draws(256 * 2**20, 64, 512 * gib, 9) == {2: MAX_TRIALS_AHEAD, 1: MAX_TRIALS_AHEAD}
