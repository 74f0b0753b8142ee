"""The official references in problems/ and the substrates' own refs, checked on the CPU.

The official pad reference is checked against torch's F.pad wherever F.pad covers the case;
every substrate's `ref` must agree bit for bit with the official Model on every trial.
"""

import pytest
import torch
import torch.nn.functional as F

from harness.gate.checks.compare import compare
from harness.problems import PROBLEMS_DIR, ProblemError, load_problem
from tests.conftest import registered_entries

ENTRIES = registered_entries()
PAD_CONST = sorted(PROBLEMS_DIR.glob("pad_const_b*.py"))


def _trials(entry):
    for label, inputs in entry.probe(torch):
        yield f"probe:{label}", inputs
    for suite, n_trials, builder in entry.suites():
        for t in range(n_trials):
            yield f"{suite}:{t}", builder(t, torch.device("cpu"))


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_ref_agrees_with_the_official_model_on_every_trial(entry):
    model = load_problem(entry.kb_file).build_model("cpu")
    for where, inputs in _trials(entry):
        expected = model(*[x.clone() for x in inputs])
        got = entry.ref(*[x.clone() for x in inputs])
        result = compare(got, expected, entry.tolerance)
        assert result.ok, f"{entry.name} {where}: {result.describe()}"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_t0_original_is_exactly_get_inputs(entry):
    problem = load_problem(entry.kb_file)
    official = problem.get_inputs()
    t0 = dict((name, builder) for name, _n, builder in entry.suites())["T0_original"]
    ours = t0(0, torch.device("cpu"))
    assert [(tuple(x.shape), x.dtype) for x in ours] == [(tuple(x.shape), x.dtype) for x in official]
    assert [n for name, n, _b in entry.suites() if name == "T0_original"] == [5]


@pytest.mark.parametrize("path", PAD_CONST, ids=lambda p: p.stem)
@pytest.mark.parametrize("rank", range(1, 9))
def test_official_constant_pad_matches_f_pad_at_every_rank(path, rank):
    model = load_problem(path.name).build_model("cpu")
    generator = torch.Generator().manual_seed(rank)
    dtype = load_problem(path.name).get_inputs()[0].dtype
    shape = [int(v) for v in torch.randint(1, 5, (rank,), generator=generator)]
    rows = [[int(v) for v in torch.randint(0, 3, (2,), generator=generator)] for _ in range(rank)]
    x = (torch.rand(shape, generator=generator) * 100).to(dtype)
    value = torch.tensor(7, dtype=dtype)
    flat = [p for left, right in reversed(rows) for p in (left, right)]
    expected = F.pad(x, flat, mode="constant", value=7)
    got = model(x, torch.tensor(rows, dtype=torch.int64).reshape(rank, 2), value)
    assert torch.equal(got, expected)


def test_official_constant_pad_keeps_the_fill_bits():
    model = load_problem("pad_const_b4.py").build_model("cpu")
    nan_with_payload = torch.tensor(0x7FC00123, dtype=torch.int32).view(torch.float32)
    out = model(torch.ones(2), torch.tensor([[1, 1]]), nan_with_payload)
    assert out.view(torch.int32).tolist() == [0x7FC00123, 0x3F800000, 0x3F800000, 0x7FC00123]


def test_a_missing_problem_names_the_file():
    with pytest.raises(ProblemError, match=r"kb_file 'nope.py': no such problem file .*problems/nope.py"):
        load_problem("nope.py")


def test_a_file_without_model_is_not_a_kernelbench_problem(tmp_path):
    (tmp_path / "half.py").write_text("def get_inputs():\n    return []\n")
    with pytest.raises(ProblemError, match=r"half.py: not a KernelBench problem, it lacks Model, get_init_inputs"):
        load_problem("half.py", tmp_path)
