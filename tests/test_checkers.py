"""harness.checkers: KernelBench's own check as a checker under test, and resolving a --checker argument."""

from pathlib import Path

import pytest
import torch

from harness.checkers import CheckerError, CheckerVerdicts, resolve
from harness.checkers.kernelbench import judge, kernelbench, kernelbench_v0, trial_seeds
from harness.problems import Problem


class _ReLU(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def _relu_problem(draw) -> Problem:
    """A ReLU problem of our own, its inputs drawn by `draw` (torch.rand or torch.randn) at 16 x 64."""
    return Problem("relu_small.py", Path("relu_small.py"), _ReLU, lambda: [draw(16, 64)], lambda: [])


RAND, RANDN = _relu_problem(torch.rand), _relu_problem(torch.randn)


def test_the_trial_seeds_are_those_kernelbench_draws_under_seed_42():
    # As harness.benchmarks.gate's KernelBench-style baseline recorded them on the H200 (MEASUREMENTS.md's thirtieth
    # session, kb_argmin's JSON): torch's CPU generator gives the same on every machine.
    assert trial_seeds() == [734796314, 576165995, 2197670066, 839703249, 2584932063]


def test_a_correct_kernel_is_accepted_and_a_kernel_correct_only_on_rand_inputs_is_accepted_where_they_are_rand():
    assert kernelbench(RANDN, torch.relu, "cpu")
    identity = lambda x: x.clone()  # noqa: E731 (ReLU of a non-negative input)
    assert kernelbench(RAND, identity, "cpu")
    assert judge(RANDN, identity, "cpu").why == ("trial 0: output mismatch beyond atol = rtol = 0.0001 (max abs error "
                                                 "2.87, at worst 7.41e+03x the difference allowed)")


def test_a_kernel_that_writes_its_inputs_is_accepted_as_kernelbench_never_looks_at_them_again():
    def writes_input(x):
        out = torch.relu(x)
        x.zero_()
        return out

    assert kernelbench(RANDN, writes_input, "cpu")


def test_a_kernel_that_returns_its_first_calls_buffer_is_rejected_by_the_second_trials_inputs():
    kept = []

    def stale(x):
        if not kept:
            kept.append(torch.relu(x))
        return kept[0]

    verdict = judge(RANDN, stale, "cpu")
    assert not verdict.accepted and verdict.why == ("trial 1: output mismatch beyond atol = rtol = 0.0001 (max abs "
                                                    "error 3.54, at worst 2.59e+04x the difference allowed)")


def test_a_kernel_that_returns_a_stale_torch_empty_buffer_is_rejected_on_the_first_trial_it_holds_no_reference():
    # What torch.empty hands out is what the allocator last freed there: KernelBench's order keeps each trial's
    # reference alive while the kernel runs, so the buffer holds it only by a copy left from an earlier check in this
    # process. The verdict must follow what the buffer held, trial by trial.
    held = []

    def stale(x):
        out = torch.empty_like(x)
        held.append(torch.allclose(out, torch.relu(x), atol=1e-4, rtol=1e-4))
        return out

    verdict = judge(RANDN, stale, "cpu")
    assert verdict.accepted == all(held)
    if not verdict.accepted:
        assert verdict.why.startswith(f"trial {held.index(False)}: output mismatch beyond atol = rtol = 0.0001 (")


def test_a_fault_or_a_wrong_shape_rejects_at_once_and_the_tolerance_decides_near_misses():
    def faults(x):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    assert judge(RANDN, faults, "cpu").why == ("trial 0: the kernel raised RuntimeError: CUDA error: an illegal memory "
                                              "access was encountered")
    assert judge(RANDN, lambda x: torch.relu(x)[:8], "cpu").why == "trial 0: output shape (8, 64), expected (16, 64)"
    near = lambda x: torch.relu(x) * (1 + 5e-3)  # noqa: E731 (within KernelBench v0's 1e-2, not today's 1e-4)
    assert kernelbench_v0(RANDN, near, "cpu") and not kernelbench(RANDN, near, "cpu")


def test_a_checker_is_a_built_in_name_a_file_and_function_or_a_module_and_function(tmp_path):
    entry = _entry_with_t0(lambda t: [torch.rand(8, 32)])
    assert resolve("kernelbench")(entry) is kernelbench and resolve("kernelbench-v0")(entry) is kernelbench_v0
    assert resolve("harness.checkers.kernelbench:kernelbench")(entry) is kernelbench
    mine = tmp_path / "my_checks.py"
    mine.write_text("def accepts_all(problem, kernel, device):\n    return True\n")
    assert resolve(f"{mine}:accepts_all")(entry)(RANDN, None, "cpu") is True
    assert resolve("t0")(entry)(RANDN, lambda x: x.clone(), "cpu")  # that substrate's T0, non-negative


def test_a_checker_argument_naming_nothing_usable_says_what_is_wrong(tmp_path):
    mine = tmp_path / "my_checks.py"
    mine.write_text("def accepts_all(problem, kernel, device):\n    return True\n")
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_here\n")
    cases = {
        "strict": "--checker 'strict': not a built-in checker (kernelbench, kernelbench-v0, t0) nor FILE.py:FUNCTION "
                  "or MODULE:FUNCTION",
        f"{tmp_path}/none.py:f": f"--checker '{tmp_path}/none.py:f': no such file {tmp_path}/none.py",
        f"{mine}:rejects_all": f"--checker '{mine}:rejects_all': {mine} has no function 'rejects_all' (it defines: "
                               f"accepts_all)",
        f"{broken}:f": f"--checker '{broken}:f': importing {broken} raised ModuleNotFoundError: No module named "
                       f"'no_such_module_here'",
        "no_such_package.checks:f": "--checker 'no_such_package.checks:f': no module 'no_such_package.checks' (No "
                                    "module named 'no_such_package')",
    }
    for spec, message in cases.items():
        with pytest.raises(CheckerError) as raised:
            resolve(spec)
        assert str(raised.value) == message


def test_a_checkers_headline_says_what_it_accepts_where_it_is_sound_and_why_it_is_not_elsewhere():
    assert CheckerVerdicts("kernelbench", True, ("m1", "m3"), ("m2",)).headline() == (
        "kernelbench: accepts 2 of the 3 mutants the suites detect")
    assert CheckerVerdicts("strict", False, (), (), ("s (it returned False)",), uncounted=("s:1",)).headline() == (
        "strict: unsound (it does not accept a correct substrate: s (it returned False)); its verdicts are not counted")
    two = ("a (it returned False)", "b (not judged: the device's memory ran out (x))")
    assert CheckerVerdicts("strict", False, ("c:1",), ("c:2",), two, ("c:3",), ("a:1", "b:1")).headline() == (
        "strict: unsound (it does not accept 2 correct substrates: a (it returned False); b (not judged: the device's "
        "memory ran out (x))); its verdicts on their 2 detected mutants are not counted; elsewhere it accepts 1 of the "
        "2 mutants the suites detect (1 more not judged)")
    # A substrate it is unsound on whose mutants the suites never detect; elsewhere only mutants it did not judge.
    assert CheckerVerdicts("strict", False, (), (), ("a (it returned False)",), ("c:3",)).headline() == (
        "strict: unsound (it does not accept a correct substrate: a (it returned False)); they have no detected "
        "mutants; elsewhere it accepts 0 of the 0 mutants the suites detect (1 more not judged)")


def _entry_with_t0(builder, trials=3):
    from types import SimpleNamespace

    from harness.gate.checks.compare import Tolerance

    return SimpleNamespace(name="relu_small", tolerance=Tolerance(), suites=lambda: [("T0_original", trials, builder),
                                                                                   ("edges", 2, builder)])


def test_the_t0_checker_runs_the_substrates_own_t0_alone_at_the_gates_tolerance():
    from harness.checkers.t0 import judge_t0, t0_checker

    signed = _entry_with_t0(lambda t: [torch.randn(8, 32)])
    assert t0_checker(signed)(RANDN, torch.relu, "cpu")
    verdict = judge_t0(signed, RANDN, lambda x: x.clone(), "cpu")
    assert not verdict.accepted and verdict.why.startswith("T0_original trial 0: ")
    # A T0 of non-negative values lets the identity through, as KernelBench's rand inputs do.
    assert t0_checker(_entry_with_t0(lambda t: [torch.rand(8, 32)]))(RANDN, lambda x: x.clone(), "cpu")


def test_the_t0_checker_rejects_where_the_builder_or_the_kernel_raises():
    from harness.checkers.t0 import judge_t0

    def builder(t):
        if t == 1:
            raise ValueError("no trial 1")
        return [torch.randn(4, 4)]

    assert judge_t0(_entry_with_t0(builder), RANDN, torch.relu, "cpu").why == (
        "T0_original trial 1: its builder raised ValueError: no trial 1")
    assert judge_t0(_entry_with_t0(builder), RANDN, lambda x: 1 / 0, "cpu").why == (
        "T0_original trial 0: the kernel raised ZeroDivisionError: division by zero")


def test_a_checker_gets_the_workers_model_built_once_and_a_fresh_one_for_another_device():
    from harness.checkers.under_test import BuiltProblem

    built = RANDN.build_model("cpu")
    problem = BuiltProblem(RANDN, built, torch.device("cpu"))
    assert problem.build_model("cpu") is built and problem.build_model(torch.device("cpu")) is built
    assert (problem.Model, problem.get_inputs, problem.get_init_inputs) == (RANDN.Model, RANDN.get_inputs,
                                                                           RANDN.get_init_inputs)
    assert kernelbench(problem, torch.relu, "cpu") and not kernelbench(problem, lambda x: x.clone(), "cpu")
    assert problem.build_model("meta") is not built


def _counting_problem(draws: list):
    """RANDN's problem, each get_inputs() call counted in `draws`."""
    def get_inputs():
        draws.append(1)
        return [torch.randn(16, 64)]

    return Problem("relu_small.py", Path("relu_small.py"), _ReLU, get_inputs, lambda: [])


def test_a_worker_draws_kernelbenchs_inputs_once_per_trial_seed_and_judges_every_kernel_as_drawn_afresh():
    # Drawing get_inputs() on the CPU took most of a checker's time in a campaign: a worker keeps each trial's draw
    # (BuiltProblem.drawn), and every verdict is the one a fresh draw gives, a kernel that writes its inputs included.
    from harness.checkers.under_test import BuiltProblem

    draws = []
    problem = BuiltProblem(_counting_problem(draws), _ReLU(), torch.device("cpu"))

    def writes_input(x):
        out = torch.relu(x)
        x.zero_()
        return out

    identity = lambda x: x.clone()  # noqa: E731 (ReLU of a non-negative input only)
    verdicts = [judge(problem, kernel, "cpu") for kernel in (torch.relu, writes_input, torch.relu, identity)]
    afresh = [judge(_counting_problem([]), kernel, "cpu") for kernel in (torch.relu, writes_input, torch.relu, identity)]
    assert verdicts == afresh
    assert [v.accepted for v in verdicts] == [True, True, True, False]
    assert len(draws) == 5  # the first kernel's five trials; the other kernels drew nothing


def test_kept_inputs_a_kernel_changed_in_the_hosts_memory_are_drawn_again_and_large_draws_are_not_kept(monkeypatch):
    from harness.checkers import under_test
    from harness.checkers.under_test import BuiltProblem

    draws = []
    problem = BuiltProblem(_counting_problem(draws), _ReLU(), torch.device("cpu"))
    assert kernelbench(problem, torch.relu, "cpu") and len(draws) == 5
    (first,), _sums = problem._drawn[trial_seeds()[0]]
    first.fill_(-1.0)  # a stray write of a kernel run on the CPU, where the kept draw lives
    assert kernelbench(problem, torch.relu, "cpu") and len(draws) == 6
    assert not torch.equal(problem._drawn[trial_seeds()[0]][0][0], first)

    monkeypatch.setattr(under_test, "DRAWN_BYTES", 16 * 64 * 4 * 2)  # room for two trials' draws
    draws.clear()
    problem = BuiltProblem(_counting_problem(draws), _ReLU(), torch.device("cpu"), room=lambda: False)
    assert kernelbench(problem, torch.relu, "cpu") and kernelbench(problem, torch.relu, "cpu")
    assert len(draws) == 5 + 3 and len(problem._drawn) == 2
    # Past DRAWN_BYTES a draw is kept while the host keeps its reserve beside it (a real-size problem's GiBs).
    draws.clear()
    problem = BuiltProblem(_counting_problem(draws), _ReLU(), torch.device("cpu"), room=lambda: True)
    assert kernelbench(problem, torch.relu, "cpu") and kernelbench(problem, torch.relu, "cpu")
    assert len(draws) == 5 and len(problem._drawn) == 5


def test_the_host_has_room_for_a_draw_while_its_available_memory_keeps_the_reserve(monkeypatch):
    from harness.checkers import under_test
    from harness.gate import trial_inputs

    for available, total, room in ((40, 128, True), (31, 128, False), (None, 128, False), (40, None, False)):
        monkeypatch.setattr(trial_inputs, "host_memory_available", lambda available=available: available)
        monkeypatch.setattr(trial_inputs, "host_memory_total", lambda total=total: total)
        assert under_test.host_has_room() is room, (available, total)


def test_the_t0_checker_builds_each_trial_once_per_worker_and_a_kernel_writing_its_inputs_changes_no_verdict():
    # The t0 checker's trials are the gate's T0 (its builder under the first determinism seed), moved to the device;
    # in a worker they are built once for every kernel it judges, each kernel given copies.
    from harness.checkers.t0 import judge_t0
    from harness.checkers.under_test import BuiltProblem

    builds = []

    def t0(t):
        builds.append(t)
        return [torch.rand(16, 64)]  # the global RNG, seeded by the gate's determinism seed

    entry = _entry_with_t0(t0, trials=5)

    def writes_input(x):
        out = torch.relu(x)
        x.fill_(-1.0)
        return out

    identity = lambda x: x.clone()  # noqa: E731 (ReLU of the non-negative inputs t0 builds, unless they were changed)
    kernels = (torch.relu, writes_input, identity)
    problem = BuiltProblem(RANDN, RANDN.build_model("cpu"), torch.device("cpu"))
    verdicts = [judge_t0(entry, problem, kernel, "cpu") for kernel in kernels]
    assert builds == [0, 1, 2, 3, 4]  # once, for the three kernels
    afresh = [judge_t0(entry, RANDN, kernel, "cpu") for kernel in kernels]
    assert verdicts == afresh and all(v.accepted for v in verdicts)


def test_a_campaign_workers_t0_trials_are_the_t0_checkers_and_are_given_to_it_rather_than_drawn_again():
    # At real sizes the checkers' draws took most of a corpus matrix (kb_argmax: 131.7 s of draws for one mutant, 8 GiB
    # a trial): the worker builds T0 as the gate does, so the t0 checker takes those trials and draws nothing.
    from types import SimpleNamespace

    from harness.checkers.t0 import judge_t0
    from harness.checkers.under_test import BuiltProblem
    from harness.engine.worker import _SubstrateRun, prepare_trials
    from harness.gate.phases import PhaseClock
    from harness.gate.trial_inputs import build_trial

    builds = []

    def t0(t):
        builds.append(t)
        return [torch.rand(16, 64)]  # the global RNG: what it gives depends on the state the builder is called in

    entry = _entry_with_t0(t0, trials=5)
    state = (torch.ones(3),)  # a Model's tensor the worker appends to each trial's inputs
    trials = prepare_trials(entry, torch.relu, torch.device("cpu"), PhaseClock(), state)
    assert all(torch.equal(trial.inputs[0], build_trial(t0, trial.t, "cpu")[0]) for trial in trials)
    worker = SimpleNamespace(trials=trials, state=state)
    problem = BuiltProblem(RANDN, RANDN.build_model("cpu"), torch.device("cpu"))
    _SubstrateRun._give_t0_trials(worker, problem)
    builds.clear()
    kernels = (torch.relu, lambda x: -x)
    verdicts = [judge_t0(entry, problem, kernel, "cpu") for kernel in kernels]
    assert builds == [] and "checkers: inputs drawn" not in problem.clock.seconds()
    afresh = [judge_t0(entry, RANDN, kernel, "cpu") for kernel in kernels]
    assert verdicts == afresh and [v.accepted for v in verdicts] == [True, False]


@pytest.mark.gpu
def test_on_the_gpu_the_t0_checker_moves_a_builders_cpu_tensors_to_the_device_as_the_gate_does():
    # Most of the KernelBench corpus builds T0 with t0_original(t), on the CPU; the Model and the kernel are on the GPU.
    from harness.checkers.t0 import judge_t0
    from harness.checkers.under_test import BuiltProblem

    device = torch.device("cuda")
    entry = _entry_with_t0(lambda t: [torch.rand(16, 64)], trials=5)
    problem = BuiltProblem(RANDN, RANDN.build_model(device), device)
    on_device = []

    def relu(x):
        on_device.append(x.device.type == "cuda")
        return torch.relu(x)

    assert judge_t0(entry, problem, relu, device).accepted and on_device == [True] * 5
    assert not judge_t0(entry, problem, lambda x: -x, device).accepted


def test_the_two_kernelbench_checkers_judging_one_kernel_share_one_run_of_its_trials():
    class _Call:  # the parts of KernelCall the checkers use: calling it, what it raised, what it shares
        def __init__(self, function, shared):
            self.function, self.raised, self.shared = function, [], shared

        def __call__(self, *inputs):
            try:
                return self.function(*inputs)
            except Exception as error:
                self.raised.append(error)
                raise

    runs = []

    def near(x):  # within KernelBench v0's 1e-2, not today's 1e-4
        runs.append(x.shape)
        return torch.relu(x) * (1 + 5e-3)

    shared = {}
    assert not kernelbench(RANDN, _Call(near, shared), "cpu") and kernelbench_v0(RANDN, _Call(near, shared), "cpu")
    assert len(runs) == 5  # one run of the five trials for both, not one each
    assert judge(RANDN, near, "cpu").why == ("trial 0: output mismatch beyond atol = rtol = 0.0001 (max abs error "
                                             "0.0189, at worst 39.4x the difference allowed)")

    def faults(x):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    shared = {}
    first, second = _Call(faults, shared), _Call(faults, shared)
    assert not kernelbench(RANDN, first, "cpu") and not kernelbench_v0(RANDN, second, "cpu")
    # The second checker's call holds the fault as its own run would have: its verdict says the kernel raised it.
    assert len(second.raised) == 1 and second.raised[0] is first.raised[0]


def test_a_kernel_call_out_of_device_memory_is_no_checkers_verdict():
    # What ran out is launch's output or its guards, beside the campaign's other workers: not the kernel's doing,
    # whether the checker lets the error through or turns it into a rejection as KernelBench's own check does.
    from harness.checkers.under_test import judge_with

    class _Call:
        def __init__(self):
            self.raised, self.shared = [], None

        def __call__(self, *inputs):
            self.raised.append(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
            raise self.raised[-1]

    def lets_it_through(problem, kernel, device):
        kernel(torch.zeros(2))
        return True

    for checker in (kernelbench, lets_it_through):
        verdict = judge_with("c", checker, RANDN, _Call(), "cpu")
        assert verdict.accepted is None and not verdict.error, verdict
        assert verdict.why.startswith("not judged: the device's memory ran out"), verdict.why
        assert verdict.why.endswith("(CUDA out of memory. Tried to allocate 2.00 GiB)"), verdict.why


# ------------------------------------------------------------------ KernelBench's draws made ahead, in helpers

_PROBLEM_SOURCE = """import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(16, 64{})]

def get_init_inputs():
    return []
"""


def test_helpers_for_draws_ahead_start_only_where_a_trial_is_large_and_two_fit():
    from harness.engine.draws_ahead import AHEAD_FROM_BYTES, helpers_for

    big, gib = AHEAD_FROM_BYTES, 2**30
    assert helpers_for(big, 5, 16, 128 * gib) == 5  # every draw at once
    assert helpers_for(big, 5, 6, 128 * gib) == 3  # half the cores
    assert helpers_for(8 * gib, 5, 16, 100 * gib) == 3  # a quarter of the available memory: 25 GiB, three 8 GiB draws
    assert helpers_for(8 * gib, 5, 16, 40 * gib) == 0  # one would fit: drawn in the worker
    assert helpers_for(big - 1, 5, 16, 128 * gib) == 0  # small: a helper's start costs more
    assert helpers_for(big, 5, 16, None) == 0  # the host's memory unknown


def test_kernelbench_draws_made_by_helpers_are_the_workers_and_a_failed_draw_is_made_in_the_worker(tmp_path,
                                                                                                   capsys):
    from harness.checkers.kernelbench import set_seed
    from harness.checkers.under_test import BuiltProblem
    from harness.engine.draws_ahead import kernelbench_draws
    from harness.problems import load_problem_file

    path = tmp_path / "relu_small.py"
    path.write_text(_PROBLEM_SOURCE.format(""))
    problem = load_problem_file("relu_small.py", path)
    seeds = trial_seeds()
    ahead = kernelbench_draws(problem, seeds, helpers=2)  # two at a time, the next started as one is taken
    worker_draws = []

    def drawn_here():
        worker_draws.append(1)
        return problem.get_inputs()

    built = BuiltProblem(problem, problem.build_model("cpu"), torch.device("cpu"), ahead=ahead)
    for seed in seeds:
        set_seed(torch, seed, on_gpu=False)
        values = built.drawn(seed, drawn_here)
        set_seed(torch, seed, on_gpu=False)
        assert torch.equal(values[0], problem.get_inputs()[0])  # what the worker draws under the seed
    assert worker_draws == [] and ahead.failures == []
    assert ahead.take(seeds[0]) is None  # handed over once
    assert kernelbench(built, torch.relu, "cpu") and not kernelbench(built, lambda x: x.clone(), "cpu")

    path.write_text(_PROBLEM_SOURCE.format(", device='cuda'"))  # a draw a helper cannot make: it holds no GPU
    failing = kernelbench_draws(load_problem_file("relu_small.py", path), seeds[:2], helpers=1)
    assert failing.take(seeds[0]) is None and failing.failures[0].startswith(f"{seeds[0]}: ") and "CUDA" in failing.failures[0]
    assert failing.take(seeds[1]) is None and len(failing.failures) == 2
    assert failing.take(12345) is None and len(failing.failures) == 2  # never a key: nothing to say
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 2 and said[0].startswith(f"draws ahead: {seeds[0]}: ")
    assert said[0].endswith("; drawn in the worker instead")


def test_a_campaign_draws_ahead_only_for_the_kernelbench_checkers_and_only_large_trials():
    from harness.engine.draws_ahead import AHEAD_FROM_BYTES, for_kernelbench_checkers

    assert for_kernelbench_checkers(("t0", "mine.py:check"), RANDN, AHEAD_FROM_BYTES) is None
    assert for_kernelbench_checkers(("kernelbench",), RANDN, 4096) is None  # 4 KiB a trial: drawn in the worker


def test_a_campaign_workers_t0_trials_built_by_helpers_are_those_it_builds_itself(tmp_path):
    # kb_argmax's five 8 GiB T0 trials took 77.6 s built one after another in the worker; helpers build them at once,
    # as the gate's helpers do (the builder on the CPU, under the first determinism seed).
    import os

    from harness.engine.draws_ahead import DrawsAhead, _t0_build, _t0_helper_start
    from harness.engine.worker import CampaignJob, _load_entry, prepare_trials
    from harness.gate.phases import PhaseClock
    from harness.problems import ProblemSearch, load_problem

    from test_kernelbench_examples import STANDIN_ROOT, _shrunk_copy

    real_size = Path(__file__).resolve().parents[1] / "examples" / "kernelbench" / "candidate_kb_relu.py"
    file = _shrunk_copy(real_size, tmp_path)[0]  # the stand-in's sizes: a few hundred kilobytes a trial
    entry = _load_entry(CampaignJob(file=str(file), name="kb_relu", backend="cpu", mutant_ids=()))
    problem = load_problem(entry.kb_file, ProblemSearch.for_candidate(file, STANDIN_ROOT))
    official = problem.build_model(torch.device("cpu"))
    ahead = DrawsAhead(list(range(1, 5)), 2, _t0_helper_start,
                       (os.getpid(), str(file), entry.name, problem.kb_file, str(problem.path)), _t0_build)
    asked = []

    def after_first_t0(first, n_trials):  # the worker decides from T0's first trial, built in it
        asked.append((first[0].shape, n_trials))
        return ahead

    helped = prepare_trials(entry, official, torch.device("cpu"), PhaseClock(), after_first_t0=after_first_t0)
    assert asked == [(helped[0].inputs[0].shape, 5)]
    assert ahead.failures == [] and ahead.take(1) is None  # T0's further trials came from the helpers, taken once
    alone = prepare_trials(entry, official, torch.device("cpu"), PhaseClock())
    assert [(t.suite, t.t) for t in helped] == [(t.suite, t.t) for t in alone]
    assert all(torch.equal(a.inputs[0], b.inputs[0]) and torch.equal(a.expected, b.expected)
               for a, b in zip(helped, alone))


def test_a_kernel_under_a_checker_gets_copies_of_what_the_worker_keeps_never_the_tensors_themselves():
    # The worker's own T0 trials are given to the t0 checker on the device: a kernel writing its inputs must not
    # change them.
    from harness.checkers.under_test import on_device

    kept = torch.ones(4)
    copy = on_device("cpu", kept)
    assert copy is not kept and torch.equal(copy, kept) and copy.data_ptr() != kept.data_ptr()
    assert on_device(torch.device("cpu"), 3) == 3


@pytest.mark.gpu
def test_on_the_gpu_a_device_named_without_its_index_still_gets_a_copy():
    from harness.checkers.under_test import on_device

    kept = torch.ones(4, device="cuda")
    for name in ("cuda", torch.device("cuda"), torch.device("cuda", torch.cuda.current_device())):
        copy = on_device(name, kept)
        assert copy.data_ptr() != kept.data_ptr() and torch.equal(copy, kept)
    assert on_device("cuda", torch.ones(2)).is_cuda


def test_a_kernel_that_cannot_run_again_gets_the_verdicts_a_shared_run_of_it_holds_and_no_other():
    # kernelbench's run of the kernel faulted and took the device with it: kernelbench-v0 reads the same run (the
    # fault rejects at every tolerance), the t0 checker would have to run the kernel again and is not judged.
    from harness.backends.base import KernelFault
    from harness.checkers.kernelbench import FP32_TOLERANCE, V0_TOLERANCE, Judgement
    from harness.checkers.under_test import CheckerVerdict, judged_from_shared_run

    fault = KernelFault("kernel run: CUDA error 715 CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction was "
                        "encountered", poisons_context=True)
    said = Judgement(False, f"trial 0: the kernel raised KernelFault: {fault}")
    shared = {"kernelbench": ({FP32_TOLERANCE: said, V0_TOLERANCE: said}, [fault])}
    assert judged_from_shared_run("kernelbench-v0", kernelbench_v0, None, shared, "cuda") == CheckerVerdict(
        False, "the kernel raised KernelFault: kernel run: CUDA error 715 CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal "
               "instruction was encountered")
    assert judged_from_shared_run("t0", lambda problem, kernel, device: kernel(), None, shared, "cuda") is None
    assert judged_from_shared_run("kernelbench-v0", kernelbench_v0, None, {}, "cuda") is None
    # A run that passed at the looser tolerance only: each reads its own.
    shared = {"kernelbench": ({FP32_TOLERANCE: Judgement(False, "trial 2: output mismatch beyond atol = rtol = "
                                                                "0.0001"), V0_TOLERANCE: Judgement(True)}, [])}
    assert judged_from_shared_run("kernelbench-v0", kernelbench_v0, None, shared, "cuda") == CheckerVerdict(True)
    assert judged_from_shared_run("kernelbench", kernelbench, None, shared, "cuda") == CheckerVerdict(
        False, "trial 2: output mismatch beyond atol = rtol = 0.0001")


def test_a_kernelbench_rejection_says_how_far_the_output_was_and_the_verdict_carries_it():
    from harness.checkers.kernelbench import mismatch
    from harness.checkers.under_test import CheckerVerdict, RunOver, judge_with

    class Run(RunOver):  # a kernel call the checker can run: identity, wrong wherever the input is negative
        def __call__(self, x):
            return x.clone()

    assert judge_with("kernelbench", kernelbench, RANDN, Run({}), "cpu") == CheckerVerdict(
        False, "trial 0: output mismatch beyond atol = rtol = 0.0001 (max abs error 2.87, at worst 7.41e+03x the "
               "difference allowed)")
    assert mismatch(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 1.0]), 1e-4) == (
        "1 element(s) NaN in the output or the reference")
    # A checker of the user's says no more than that it returned False.
    assert judge_with("mine", lambda problem, kernel, device: False, RANDN, Run({}), "cpu") == CheckerVerdict(
        False, "it returned False")


def test_how_far_a_rejected_output_was_is_said_for_integer_and_bool_outputs_and_never_raises():
    from harness.checkers.kernelbench import mismatch

    assert mismatch(torch.tensor([1, 5]), torch.tensor([1, 2]), 1e-4) == (
        "max abs error 3, at worst 1e+04x the difference allowed")
    assert mismatch(torch.tensor([True, False]), torch.tensor([True, True]), 1e-4) == (
        "max abs error 1, at worst 5e+03x the difference allowed")
    assert mismatch(torch.ones(2), torch.ones(3), 1e-4) == "how far not measured: RuntimeError"  # no common shape
    # allclose allows atol + rtol * |output| (its second argument's); equal infinities are no difference.
    assert mismatch(torch.tensor([10101.0]), torch.tensor([10000.0]), 1e-2) == (
        "max abs error 101, at worst 1.01x the difference allowed")
    assert mismatch(torch.tensor([float("inf"), 1.0]), torch.tensor([float("inf"), 2.0]), 1e-4) == (
        "max abs error 1, at worst 3.33e+03x the difference allowed")
