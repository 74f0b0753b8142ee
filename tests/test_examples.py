"""The example substrates under examples/: their refs, suites and probes, checked on the CPU.

Like test_references.py for the family: every example's `ref` must agree with its official
Model (examples/problems/) on every trial of every suite and on the probe, and T0_original trial
t must be exactly get_inputs() under torch.manual_seed(1000 + t). Also checked here, as the gate
does: the official Model in float32 and in float64 agree on every trial (no suite can reject a
correct kernel), and kernels writing zeros, a copy of input 0, or a constant each fail some trial.
"""

from pathlib import Path

import pytest
import torch

from harness.candidates import import_candidate, make_entry, register_candidate
from harness.gate.checks.compare import Tolerance, compare
from harness.problems import load_problem

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROBLEMS = EXAMPLES / "problems"
NAMES = ["example_silu", "example_softmax_rows", "example_matmul", "example_argmax_dim1", "example_mse_loss"]
CPU = torch.device("cpu")
TOLERANCE = Tolerance(exact=False, atol=1e-2, rtol=1e-2)


def _entry(name):
    path = EXAMPLES / "substrates" / f"candidate_{name}.py"
    registered = register_candidate(import_candidate(path), path)
    assert list(registered) == [name]
    entry, problems = make_entry(name, registered[name], path)
    assert not problems, problems
    return entry


def _trials(entry, model):
    """(where, inputs, the official output) for the probe and every trial of every suite."""
    cases = [(f"probe:{label}", inputs) for label, inputs in entry.probe(torch)]
    cases += [(f"{suite}:{t}", builder(t, CPU)) for suite, n_trials, builder in entry.suites() for t in range(n_trials)]
    with torch.no_grad():
        return [(where, inputs, model(*[x.clone() for x in inputs])) for where, inputs in cases]


@pytest.fixture(scope="module", params=NAMES)
def example(request):
    """(entry, problem, every trial with its official output), built once per example."""
    entry = _entry(request.param)
    problem = load_problem(entry.kb_file, PROBLEMS)
    return entry, problem, _trials(entry, problem.build_model("cpu"))


def test_the_examples_and_their_problems_are_in_place():
    assert sorted(p.stem for p in PROBLEMS.glob("*.py")) == sorted(NAMES)
    assert sorted(p.stem for p in (EXAMPLES / "substrates").glob("candidate_*.py")) == sorted(f"candidate_{n}" for n in NAMES)


def test_ref_agrees_with_the_official_model_on_every_trial(example):
    entry, _problem, trials = example
    for where, inputs, expected in trials:
        result = compare(entry.ref(*[x.clone() for x in inputs]), expected, entry.tolerance)
        assert result.ok, f"{entry.name} {where}: {result.describe()}"


def test_t0_original_is_exactly_get_inputs_seeded_1000_plus_t(example):
    entry, problem, _all_trials = example
    suites = entry.suites()
    assert suites[0][0] == "T0_original" and suites[0][1] == 5
    assert 2 <= len(suites) - 1 <= 3
    for t in range(5):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1000 + t)
            official = problem.get_inputs()
        ours = suites[0][2](t, CPU)
        assert len(ours) == len(official)
        for mine, theirs in zip(ours, official):
            assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
            assert torch.equal(mine, theirs), f"{entry.name} T0_original trial {t} differs from get_inputs()"


def test_targeted_builders_are_deterministic_and_leave_the_global_rng_alone(example):
    entry, _problem, _all_trials = example
    for suite, n_trials, builder in entry.suites()[1:]:
        for t in range(n_trials):
            state = torch.get_rng_state()
            first = builder(t, CPU)
            assert torch.equal(torch.get_rng_state(), state), f"{suite} trial {t} drew from the global RNG"
            second = builder(t, CPU)
            assert all(torch.equal(a, b) for a, b in zip(first, second)), f"{suite} trial {t} is not deterministic"


def test_no_suite_can_reject_a_correct_kernel(example):
    # The official Model in float32 and in float64 (rounded back) must agree within the tolerance.
    entry, problem, trials = example
    model64 = problem.build_model("cpu").double()
    for where, inputs, expected in trials:
        with torch.no_grad():
            wide = model64(*[x.double() if x.is_floating_point() else x.clone() for x in inputs]).to(expected.dtype)
        result = compare(wide, expected, TOLERANCE)
        assert result.ok, f"{entry.name} {where}: float32 and float64 disagree: {result.describe()}"


def test_kernels_that_compute_nothing_fail_some_trial(example):
    entry, _problem, trials = example
    suite_trials = [(inputs, expected) for where, inputs, expected in trials if not where.startswith("probe:")]
    constant = float(suite_trials[0][1].reshape(-1).double().median())  # T0_original trial 0 comes first
    missed = {"zeros", "copy of input 0", "constant"}
    for inputs, expected in suite_trials:
        if not missed:
            break
        copied = torch.zeros(expected.numel(), dtype=expected.dtype)
        flat = inputs[0].reshape(-1)[: expected.numel()].to(expected.dtype)
        copied[: flat.numel()] = flat
        lazy = {"zeros": torch.zeros_like(expected), "copy of input 0": copied.reshape(expected.shape),
                "constant": torch.full_like(expected, constant)}
        missed -= {name for name, out in lazy.items() if not compare(out, expected, entry.tolerance).ok}
    assert not missed, f"{entry.name}: a kernel writing {', '.join(sorted(missed))} passes every suite"


def test_probe_has_an_aligned_and_a_misaligned_entry_of_small_cpu_tensors(example):
    entry, _problem, _all_trials = example
    (aligned_label, aligned), (misaligned_label, misaligned) = entry.probe(torch)
    assert (aligned_label, misaligned_label) == ("aligned", "misaligned")
    t0 = entry.suites()[0][2](0, CPU)
    assert [(x.dtype, x.dim()) for x in aligned] == [(x.dtype, x.dim()) for x in t0]
    assert max(aligned, key=torch.Tensor.numel).shape[-1] % 32 == 0
    assert any(d > 1 and d % 32 for d in max(misaligned, key=torch.Tensor.numel).shape)
    for tensors in (aligned, misaligned):
        assert all(x.device.type == "cpu" for x in tensors)
        assert sum(x.numel() * x.element_size() for x in tensors) < 1_000_000


@pytest.mark.parametrize("name", NAMES)
def test_importing_an_example_does_no_torch_work(name):
    source = (EXAMPLES / "substrates" / f"candidate_{name}.py").read_text()
    top_level = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert top_level == [], f"candidate_{name}.py imports at top level: {top_level}"
