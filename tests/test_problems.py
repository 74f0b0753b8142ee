"""harness.problems: where a kb_file is found, and what a user is told when it is not."""

import pytest

from harness.gate.command import main
from harness.problems import PROBLEMS_DIR, ProblemError, ProblemSearch, kernelbench_dir, load_problem
from tests import rule_candidates


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A fake KernelBench checkout holding the tests' own problems (never KernelBench's files)."""
    root = tmp_path_factory.mktemp("kernelbench_checkout")
    for level, name in (("level1", "9001_HalfAbs.py"), ("level2", "9002_HalfAbsAgain.py")):
        (root / "KernelBench" / level).mkdir(parents=True)
        (root / "KernelBench" / level / name).write_text(rule_candidates.PROBLEM)
    return root


def test_a_checkout_is_found_at_its_root_or_at_its_kernelbench_folder(checkout):
    assert kernelbench_dir(checkout) == checkout / "KernelBench"
    assert kernelbench_dir(checkout / "KernelBench") == checkout / "KernelBench"


def test_a_folder_without_level1_is_not_a_checkout(tmp_path):
    with pytest.raises(ProblemError) as raised:
        kernelbench_dir(tmp_path)
    assert str(raised.value) == (f"KernelBench root {tmp_path}: no problems there (looked for "
                                 f"{tmp_path / 'KernelBench' / 'level1'} and {tmp_path / 'level1'})")


def test_a_kernelbench_name_resolves_in_level1_and_another_level_when_named(checkout):
    level1 = checkout / "KernelBench" / "level1"
    search = ProblemSearch.for_candidate(None, checkout)
    assert search.resolve("9001_HalfAbs.py") == level1 / "9001_HalfAbs.py"
    assert search.resolve("level2/9002_HalfAbsAgain.py") == checkout / "KernelBench" / "level2" / "9002_HalfAbsAgain.py"
    problem = load_problem("9001_HalfAbs.py", search)
    assert problem.path == level1 / "9001_HalfAbs.py"
    assert [tuple(x.shape) for x in problem.get_inputs()] == [(64, 256)]


def test_the_problems_folder_beside_the_candidates_comes_first_then_the_project_then_kernelbench(tmp_path, checkout):
    level1 = checkout / "KernelBench" / "level1"
    (tmp_path / "substrates").mkdir()
    (tmp_path / "problems").mkdir()
    (tmp_path / "problems" / "pad_const_b4.py").write_text("# shadows the project's\n")
    search = ProblemSearch.for_candidate(tmp_path / "substrates" / "candidate_x.py", checkout)
    assert search.places("pad_const_b4.py") == [tmp_path / "problems" / "pad_const_b4.py",
                                                 PROBLEMS_DIR / "pad_const_b4.py", level1 / "pad_const_b4.py"]
    assert search.resolve("pad_const_b4.py") == tmp_path / "problems" / "pad_const_b4.py"
    assert search.resolve("pad_const_b8.py") == PROBLEMS_DIR / "pad_const_b8.py"


def test_a_missing_problem_says_where_it_looked_and_how_to_reach_kernelbench(checkout):
    with pytest.raises(ProblemError) as raised:
        ProblemSearch().resolve("19_ReLU.py")
    assert str(raised.value) == (f"kb_file '19_ReLU.py': no such problem file (looked in {PROBLEMS_DIR / '19_ReLU.py'}); "
                                 f"for a KernelBench problem, point the gate at a checkout with --kb-root DIR or "
                                 f"$KERNELBENCH_ROOT")
    with pytest.raises(ProblemError) as raised:
        ProblemSearch.for_candidate(None, checkout).resolve("19_ReLU.py")
    level1 = checkout / "KernelBench" / "level1"
    assert str(raised.value) == (f"kb_file '19_ReLU.py': no such problem file (looked in {PROBLEMS_DIR / '19_ReLU.py'}, "
                                 f"{level1 / '19_ReLU.py'})")


@pytest.mark.parametrize("kb_file", ["../problems/pad_const_b4.py", "/etc/passwd.py", "level1/a/b.py", "ReLU"])
def test_a_kb_file_that_is_not_a_problem_file_name_is_refused(kb_file, checkout):
    with pytest.raises(ProblemError, match=r"must be a problem file name such as '19_ReLU.py'"):
        ProblemSearch.for_candidate(None, checkout).resolve(kb_file)


@pytest.fixture(scope="module")
def kb_candidate(tmp_path_factory):
    """The compliant template, pointed at the fake checkout's level-1 problem."""
    root = tmp_path_factory.mktemp("kb")
    (root / "substrates").mkdir()
    path = root / "substrates" / "candidate_kb_half_abs.py"
    path.write_text(rule_candidates.variant_text(
        "kb_half_abs", [('kb_file="abs_plus_half.py"', 'kb_file="9001_HalfAbs.py"')]))
    return path


def _gate(candidate, *options):
    return main([str(candidate), "--backend", "cpu", "--no-record", "--no-progress", "--timeout", "60", *options])


def test_the_gate_admits_a_kernelbench_problem_with_kb_root(kb_candidate, checkout, capsys, monkeypatch):
    monkeypatch.delenv("KERNELBENCH_ROOT", raising=False)
    assert _gate(kb_candidate, "--kb-root", str(checkout)) == 0
    assert "1 admitted, 0 rejected" in capsys.readouterr().out


def test_the_gate_reads_kernelbench_root_from_the_environment(kb_candidate, checkout, capsys, monkeypatch):
    monkeypatch.setenv("KERNELBENCH_ROOT", str(checkout / "KernelBench"))
    assert _gate(kb_candidate) == 0
    assert "1 admitted, 0 rejected" in capsys.readouterr().out


def test_without_a_checkout_the_kernelbench_problem_is_rejected_with_the_hint(kb_candidate, capsys, monkeypatch):
    monkeypatch.delenv("KERNELBENCH_ROOT", raising=False)
    assert _gate(kb_candidate) == 1
    assert "point the gate at a checkout with --kb-root DIR or $KERNELBENCH_ROOT" in capsys.readouterr().out


def test_a_kb_root_that_is_no_checkout_is_a_usage_error(kb_candidate, tmp_path, capsys):
    assert _gate(kb_candidate, "--kb-root", str(tmp_path)) == 2
    assert capsys.readouterr().err == (f"gate.py: error: --kb-root (or $KERNELBENCH_ROOT): KernelBench root {tmp_path}: "
                                       f"no problems there (looked for {tmp_path / 'KernelBench' / 'level1'} and "
                                       f"{tmp_path / 'level1'})\n")
