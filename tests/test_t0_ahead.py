"""harness.t0_ahead: a T0 drawn ahead by the gate's drawers is the T0 the worker would build, and the gate's
report does not depend on who drew it."""

import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from harness import t0_ahead
from harness.candidates import import_candidate, make_entry, register_candidate
from harness.cli import T0Drawing, build_parser
from harness.problems import ProblemSearch, load_problem
from harness.t0_ahead import DrawJob, DrawnT0, auto_drawers
from harness.trial_inputs import BuiltTrial, build_here
from harness.worker import GateJob, run_gate_job, start_worker

REPO = Path(__file__).resolve().parent.parent
FORMS = REPO / "tests" / "candidates" / "candidate_row_sum_forms.py"  # T0 from get_inputs()'s distribution
MASKED_FILL = REPO / "substrates" / "candidate_masked_fill.py"  # T0 bit-identical to get_inputs()


def _t0(file: Path, name: str):
    registered = register_candidate(import_candidate(file), file)
    entry, problems = make_entry(name, registered[name], file)
    assert not problems
    problem = load_problem(entry.kb_file, ProblemSearch.for_candidate(file, None))
    count, builder = next((n, b) for suite, n, b in entry.suites() if suite == "T0_original")
    return problem, count, builder


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b))


def _draw_in_a_worker(jobs: list[DrawJob], timeout: float = 60.0) -> None:
    """A drawer as the gate starts one (forked from the fork server), waited for until every folder says stopped
    or was never claimed by it."""
    worker = start_worker()
    try:
        worker.connection.send((t0_ahead.draw_ahead, (jobs,)))
        deadline = time.monotonic() + timeout
        while worker.process.is_alive() and time.monotonic() < deadline:
            if all((Path(job.folder) / t0_ahead.STOPPED).exists() for job in jobs):
                break
            time.sleep(0.02)
        else:
            assert worker.process.is_alive() is False, "the drawer did not stop in time"
    finally:
        worker.stop()


@pytest.mark.parametrize("cores, jobs, substrates, expected", [
    (16, 8, 28, 4),   # the H200's host: the cores beyond 8 jobs and 4 reserved
    (32, 8, 28, 4),   # at most MAX_DRAWERS
    (16, 8, 2, 2),    # no more than there are T0s to draw
    (2, 2, 5, 0),     # a machine the jobs fill draws nothing ahead
    (12, 8, 28, 0),
])
def test_drawers_take_the_cores_the_jobs_leave(cores, jobs, substrates, expected):
    assert auto_drawers(cores, jobs, substrates) == expected


@pytest.mark.parametrize("file, name", [(FORMS, "forms_row_sum"), (MASKED_FILL, "masked_fill_b4")],
                         ids=["distribution", "identical"])
def test_a_drawn_t0_is_what_the_worker_would_build(tmp_path, file, name):
    problem, count, builder = _t0(file, name)
    folder = tmp_path / "0"
    _draw_in_a_worker([DrawJob(str(folder), str(file), name)])
    assert (folder / t0_ahead.OWNER).exists()  # the drawer owned it
    drawn = DrawnT0(str(folder))
    assert not drawn.mine
    for t in range(count):
        got, want = drawn.take(t), build_here(builder, t, torch.device("cpu"), problem)
        assert got is not None and got.error is None and got.official_error is None
        assert (got.identical, got.difference) == (want.identical, want.difference)
        assert _same(got.inputs, want.inputs) and _same(got.official, want.official)
        assert not (folder / f"t{t}.pt").exists()  # taken: the memory is given back
    assert drawn.take(count) is None  # no such trial: the drawer stopped without it
    assert want.identical is (name == "masked_fill_b4")


def test_a_worker_that_arrives_first_builds_its_own_t0(tmp_path):
    folder = tmp_path / "0"
    drawn = DrawnT0(str(folder))
    assert drawn.mine and drawn.take(0) is None
    _draw_in_a_worker([DrawJob(str(folder), str(MASKED_FILL), "masked_fill_b4")])
    assert sorted(p.name for p in folder.iterdir()) == [t0_ahead.STOPPED]  # the drawer left it alone


def test_errors_are_handed_over_with_their_type_name_and_words(tmp_path):
    class BuilderTrouble(Exception):  # a candidate's own class, which the worker may not have
        pass

    built = BuiltTrial(error=BuilderTrouble("trial 2 has no shape"), official_error=ValueError("bad seed"))
    t0_ahead._write_trial(tmp_path, 2, built)
    read = t0_ahead._read_trial(tmp_path / "t2.pt")
    assert (type(read.error).__name__, str(read.error)) == ("BuilderTrouble", "trial 2 has no shape")
    assert (type(read.official_error).__name__, str(read.official_error)) == ("ValueError", "bad seed")
    assert read.inputs is None and read.official is None


def test_a_trial_whose_drawer_died_is_built_by_the_worker(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    folder = tmp_path / "0"
    folder.mkdir()
    (folder / t0_ahead.OWNER).write_text(str(gone.pid))  # claimed, then the drawer died before its first trial
    began = time.monotonic()
    assert DrawnT0(str(folder)).take(0) is None
    assert time.monotonic() - began < 5


def test_a_gate_worker_reports_the_same_with_its_t0_drawn_ahead(tmp_path):
    folder = tmp_path / "0"
    _draw_in_a_worker([DrawJob(str(folder), str(FORMS), "forms_row_sum")])
    reports = [run_gate_job(GateJob(file=str(FORMS), name="forms_row_sum", backend="cpu", t0_drawn_folder=drawn))
               for drawn in (str(folder), None)]
    ahead, here = ({c.check: (c.status, c.detail) for c in r.checks} for r in reports)
    assert all(r.admitted for r in reports), [r.reasons() for r in reports]
    assert ahead == here
    assert "T0 drawn ahead (waiting, loading)" in reports[0].phase_seconds
    assert "T0 drawn ahead (waiting, loading)" not in reports[1].phase_seconds


def test_the_drawers_go_file_by_file_in_the_order_the_slots_reach_them():
    jobs = [("a.py", "a1"), ("a.py", "a2"), ("b.py", "b1"), ("b.py", "b2"), ("c.py", "big"), ("d.py", "d1")]
    sizes = {job: 1024 for job in jobs} | {("c.py", "big"): 2**30}
    drawing = T0Drawing(SimpleNamespace(draw_ahead=2, kb_root=None), jobs, {"d.py": "no such module"}, sizes,
                        at_once=2, reuses_worker=lambda job: sizes[job] < 16 * 2**20)
    try:
        assert [(job.file, job.name) for job in drawing._order] == [("a.py", "a1"), ("b.py", "b1"),
                                                                     ("a.py", "a2"), ("b.py", "b2")]
        # A T0 with helpers of its own, and a file that did not import, are left to their workers.
        assert drawing.folder_of(("c.py", "big")) is None and drawing.folder_of(("d.py", "d1")) is None
        assert drawing.folder_of(("b.py", "b2")) == str(drawing.root / "3")
        assert (drawing.count, drawing.drawable) == (2, 4)
    finally:
        assert drawing.close() == (2, 4, 0)
    assert not drawing.root.exists()


def test_draw_ahead_takes_a_count_or_auto(capsys):
    parser = build_parser()
    assert parser.parse_args([]).draw_ahead == "auto"
    assert parser.parse_args(["--draw-ahead", "0"]).draw_ahead == 0
    with pytest.raises(SystemExit) as raised:
        parser.parse_args(["--draw-ahead", "-1"])
    assert raised.value.code == 2
    assert "argument --draw-ahead: a whole number of at least 0, or auto; not '-1'" in capsys.readouterr().err
