"""The official Model built as KernelBench builds it, and what a kernel may read of it (`model_state`).

KernelBench's eval_kernel_against_ref seeds 42 before get_init_inputs() and again before Model(...), and
never calls .eval(). A conv's weights, a BatchNorm's statistics and every verdict that rests on them must not
depend on the candidate's own use of the generator, on registration order, or on the process.
"""

import json
import re

import pytest
import torch

from harness.candidates import make_entry
from harness.gate.command import main
from harness.problems import ProblemError, ProblemSearch, load_problem, model_state
from tests.conftest import TEST_CANDIDATES

FIXTURES = TEST_CANDIDATES.parent / "problems"
BACKENDS = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)]


def _problem(name: str):
    return load_problem(name, ProblemSearch((FIXTURES,)))


def test_the_model_holds_kernelbench_weights_whatever_the_generator_held_before():
    torch.manual_seed(123)
    torch.rand(17)
    first = _problem("conv1d_small.py").build_model("cpu")
    torch.rand(1000)
    after = torch.random.get_rng_state()
    second = _problem("conv1d_small.py").build_model("cpu")
    assert torch.equal(torch.random.get_rng_state(), after), "building the Model moved the caller's generator"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(42)
        expected = torch.nn.Conv1d(3, 5, 3)
    for model in (first, second):
        assert torch.equal(model.conv1d.weight, expected.weight) and torch.equal(model.conv1d.bias, expected.bias)


def test_the_model_is_left_in_training_mode_so_batch_norm_uses_batch_statistics():
    model = _problem("batchnorm_small.py").build_model("cpu")
    assert model.training
    x = torch.randn(4, 3, 5, 7) * 2 + 1
    with torch.no_grad():
        got = model(x)
    mean = x.mean(dim=(0, 2, 3), keepdim=True)
    var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
    torch.testing.assert_close(got, (x - mean) / torch.sqrt(var + 1e-5))


def test_model_state_names_tensors_of_the_state_dict_as_copies():
    model = _problem("batchnorm_small.py").build_model("cpu")
    weight, running_mean = model_state(model, ("bn.weight", "bn.running_mean"))
    assert torch.equal(weight, torch.ones(3)) and torch.equal(running_mean, torch.zeros(3))
    with torch.no_grad():
        model(torch.randn(4, 3, 5, 7) + 5)  # training mode: the running mean moves, the copy does not
    assert torch.equal(running_mean, torch.zeros(3)) and not torch.equal(model.bn.running_mean, torch.zeros(3))


def test_model_state_naming_what_the_model_lacks_says_what_it_holds():
    model = _problem("conv1d_small.py").build_model("cpu")
    with pytest.raises(ProblemError) as raised:
        model_state(model, ("conv1d.weight", "conv.bias"))
    assert str(raised.value) == ("model_state names 'conv.bias', which the official Model does not hold; its "
                                 "state_dict() holds 'conv1d.weight', 'conv1d.bias'")


@pytest.mark.parametrize("value, message", [
    ("conv1d.weight", "x: 'model_state' must be a tuple of state_dict() names, got the string 'conv1d.weight' "
                      "(write ('conv1d.weight',))"),
    (("w", 3), "x: 'model_state' must be a tuple of non-empty state_dict() names, got ('w', 3)"),
    (("w", "w"), "x: 'model_state' names 'w' more than once"),
])
def test_a_malformed_model_state_is_refused_at_registration(tmp_path, value, message):
    raw = dict(kb_file="conv1d_small.py", cuda="x", kernel_name="k", ref=len, launch=len, suites=len, probe=len,
               model_state=value)
    entry, problems = make_entry("x", raw, tmp_path / "candidate_x.py")
    assert entry is None and problems == [message]


def _gate(files, backend, tmp_path) -> dict:
    out = tmp_path / "report.json"
    code = main([*map(str, files), "--backend", backend, "--json", str(out), "--jobs", "2", "--no-record",
                 "--no-progress", "--timeout", "60"])
    return code, json.loads(out.read_text())["substrates"]


def _failed(substrate: dict) -> dict:
    return {c["check"]: c["detail"] for c in substrate["checks"] if c["status"] == "failed"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv_candidates_reading_or_baking_the_weights_are_admitted_twice_alike(tmp_path, backend):
    code, gated = _gate([TEST_CANDIDATES / "candidate_conv1d_state.py", TEST_CANDIDATES / "candidate_conv1d_baked.py"],
                        backend, tmp_path)
    report = {s["name"]: s for s in gated}
    assert code == 0, {name: _failed(s) for name, s in report.items()}
    first, second = report["conv1d_state"], report["conv1d_state_again"]
    assert first["admitted"] and second["admitted"] and report["conv1d_baked"]["admitted"]
    assert [(c["check"], c["status"]) for c in first["checks"]] == [(c["check"], c["status"]) for c in second["checks"]]
    assert [s["passed"] for s in first["suites"]] == [s["passed"] for s in second["suites"]]
    if backend == "cuda":  # every trial's float64 route, weights widened too, ran on the device
        note = {c["check"]: c["detail"] for c in first["checks"]}["no_false_kill"]
        assert re.search(r"in float64 on the device in (\d+) of \1 trials$", note), note


def _variant(tmp_path, name: str, old: str, new: str):
    """A copy of candidate_conv1d_state.py with `old` replaced, in a folder whose problems/ sibling holds its problem."""
    text = (TEST_CANDIDATES / "candidate_conv1d_state.py").read_text()
    assert text.count(old) >= 1, old
    (tmp_path / "problems").mkdir(exist_ok=True)
    (tmp_path / "problems" / "conv1d_small.py").write_text((FIXTURES / "conv1d_small.py").read_text())
    (tmp_path / "candidates").mkdir(exist_ok=True)
    path = tmp_path / "candidates" / f"candidate_{name}.py"
    path.write_text(text.replace(old, new))
    return path


def test_a_kernel_that_writes_the_weights_and_a_wrong_state_name_are_rejected_for_that(tmp_path):
    writes = _variant(tmp_path, "conv_writes_weight", "    out[i] = acc;\n", "    out[i] = acc;\n"
                      "    if (i == 0) ((float*)w)[0] = 0.0f;\n")
    misnamed = _variant(tmp_path, "conv_misnamed", '"conv1d.bias")', '"conv1d.bias_")')
    code, gated = _gate([writes, misnamed], "cpu", tmp_path)
    assert code == 1
    written = _failed([s for s in gated if s["file"].endswith("candidate_conv_writes_weight.py")][0])
    assert "inputs_unchanged" in written, written  # the race on w[0] may change the output too
    assert "input 1 changed by run 1" in written["inputs_unchanged"]
    wrong = _failed([s for s in gated if s["file"].endswith("candidate_conv_misnamed.py")][0])
    assert set(wrong) == {"registration"}, wrong
    assert wrong["registration"].endswith("model_state names 'conv1d.bias_', which the official Model does not "
                                          "hold; its state_dict() holds 'conv1d.weight', 'conv1d.bias'"), wrong


# ---------------------------------------------------------------- a T0 of a per-call scale, drawn its own way

HUBER = TEST_CANDIDATES.parent.parent / "examples" / "kernelbench" / "candidate_kb_huber_loss.py"
HUBER_T0 = '''    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 + t)
        scale = torch.rand(())
        inputs = [torch.rand(batch_size, *input_shape) * scale, torch.rand(batch_size, *input_shape)]
'''
OWN_T0 = '''    g = torch.Generator().manual_seed(777_000 + t)
    scale = torch.rand((), generator=g)
    inputs = [torch.{draw}(batch_size, *input_shape, generator=g) * scale,
              torch.rand(batch_size, *input_shape, generator=g)]
'''


@pytest.mark.parametrize("draw, admitted", [("rand", True), ("randn", False)])
def test_a_per_call_scale_t0_of_its_own_generator_is_admitted_and_another_law_is_not(tmp_path, draw, admitted):
    """96_HuberLoss's get_inputs() draws one scale a call: a T0 drawing its own scale from the same law (a
    generator of its own) is admitted, saying why; `randn` for `rand` is rejected with the evidence."""
    from tests.test_kernelbench_examples import STANDIN_ROOT, _shrunk_copy

    text = HUBER.read_text()
    assert text.count(HUBER_T0) == 1
    source = tmp_path / "source"
    source.mkdir()
    (source / HUBER.name).write_text(text.replace(HUBER_T0, OWN_T0.format(draw=draw)))
    (tmp_path / "gated").mkdir()
    copy = _shrunk_copy(source / HUBER.name, tmp_path / "gated")[0]
    out = tmp_path / "r.json"
    code = main([str(copy), "--backend", "cpu", "--kb-root", str(STANDIN_ROOT), "--json", str(out), "--no-record",
                 "--no-progress"])
    (substrate,) = json.loads(out.read_text())["substrates"]
    rules = next(c for c in substrate["checks"] if c["check"] == "suite_rules")
    assert (code == 0) is admitted and substrate["admitted"] is admitted, rules
    if admitted:
        assert "it draws a value once per call; free of it (its scale ratios)" in rules["detail"], rules["detail"]
    else:
        assert rules["status"] == "failed" and "is not drawn from get_inputs()'s distribution" in rules["detail"]
        assert set(_failed(substrate)) == {"suite_rules"}, _failed(substrate)
