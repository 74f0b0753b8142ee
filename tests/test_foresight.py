"""The official output's shape known ahead (harness.gate.foresight): from discovery, from earlier meta runs, and
never by importing the meta device's shape rules for a small trial."""

import json
import textwrap

import pytest
import torch

from harness.gate.foresight import FORESIGHT_FROM_BYTES, OutputForesight, official_output_signature
from harness.gate.phases import PhaseClock

META_PHASE = "the official output's shape, on the meta device"


class _Outer(torch.nn.Module):
    def forward(self, a, b):
        return a.unsqueeze(1) * b.unsqueeze(0)  # an output far larger than its inputs


class _ReadsValues(torch.nn.Module):
    def forward(self, x):
        return x[: int(x.sum().item()) % 3 + 1]  # its size is a value's: no meta run can say it


def test_discovery_foresight_answers_for_get_inputs_signature_without_a_meta_run():
    known_inputs = (("tensor", "float32", (8,)), ("tensor", "float32", (5,)))
    foresight = OutputForesight.from_discovery(_ReadsValues(), known_inputs, (("tensor", "float32", (8, 5)),),
                                               rules_ready=lambda: False)
    clock = PhaseClock()
    like = foresight.output_like([torch.rand(8), torch.rand(5)], clock)
    assert (like.device.type, like.dtype, tuple(like.shape)) == ("meta", torch.float32, (8, 5))
    assert META_PHASE not in clock.seconds() and not foresight.meta_error
    # Another signature is not discovery's: a large trial is run on the meta device, which cannot say this Model's.
    assert foresight.output_like([torch.rand(FORESIGHT_FROM_BYTES // 4)], clock) is None
    assert foresight.meta_error.startswith(("RuntimeError", "NotImplementedError", "ValueError", "TypeError"))
    assert foresight.last_unforeseen.startswith("the meta device could not foresee its size: ")


def test_a_small_trial_does_not_import_the_shape_rules_and_a_large_one_does(monkeypatch):
    import harness.gate.foresight

    monkeypatch.setattr(harness.gate.foresight, "FORESIGHT_FROM_BYTES", 1024)
    foresight, clock = OutputForesight(_Outer(), rules_ready=lambda: False), PhaseClock()
    small = [torch.rand(16), torch.rand(16)]  # 128 bytes
    assert foresight.output_like(small, clock) is None
    assert foresight.unforeseen_small == 1 and META_PHASE not in clock.seconds()
    assert foresight.last_unforeseen == ("its size was not foreseen (under 0 MiB of inputs, and the meta "
                                         "device's shape rules not imported in this worker)")
    large = [torch.rand(256), torch.rand(300)]  # 2224 bytes
    assert tuple(foresight.output_like(large, clock).shape) == (256, 300) and META_PHASE in clock.seconds()
    assert foresight.last_unforeseen == ""
    ready = OutputForesight(_Outer(), rules_ready=lambda: True)
    assert tuple(ready.output_like(small, PhaseClock()).shape) == (16, 16)  # once imported, a small trial is foreseen


def test_a_signature_the_meta_device_answered_once_is_not_run_again():
    calls = []

    class Counted(_Outer):
        def forward(self, a, b):
            calls.append(a.device.type)
            return super().forward(a, b)

    foresight, clock = OutputForesight(Counted()), PhaseClock()
    for _trial in range(3):
        assert tuple(foresight.output_like([torch.rand(4), torch.rand(6)], clock).shape) == (4, 6)
    assert tuple(foresight.output_like([torch.rand(5), torch.rand(6)], clock).shape) == (5, 6)
    assert calls == ["meta", "meta"]  # one run per signature
    assert foresight.known[(("tensor", "float32", (4,)), ("tensor", "float32", (6,)))] == (
        ("tensor", "float32", (4, 6)),)


def _problem(tmp_path, body: str):
    from harness.problems import load_problem_file

    path = tmp_path / "1_Problem.py"
    path.write_text(textwrap.dedent(body))
    return load_problem_file(path.name, path)


def test_discovery_runs_the_official_model_on_the_meta_device_for_get_inputs_output(tmp_path):
    from harness.gate.checks.suite_rules import official_signature

    conv = _problem(tmp_path, """
        import torch
        class Model(torch.nn.Module):
            def __init__(self, channels, out_channels, kernel):
                super().__init__()
                self.conv = torch.nn.Conv1d(channels, out_channels, kernel, stride=2)
            def forward(self, x):
                return self.conv(x)
        def get_inputs():
            return [torch.rand(16, 3, 1001)]
        def get_init_inputs():
            return [3, 64, 5]
    """)
    inputs = official_signature(conv)
    assert official_output_signature(conv, inputs) == (("tensor", "float32", (16, 64, 499)),)
    reads = _problem(tmp_path, """
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                return x[: int(x.sum().item())]
        def get_inputs():
            return [torch.rand(8)]
        def get_init_inputs():
            return []
    """)
    assert official_output_signature(reads, official_signature(reads)) == ()
    pair = _problem(tmp_path, """
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                return x, x
        def get_inputs():
            return [torch.rand(8)]
        def get_init_inputs():
            return []
    """)
    assert official_output_signature(pair, official_signature(pair)) == ()  # not one tensor


def test_discovery_foresees_outputs_only_when_asked_and_keeps_them_in_the_cache(tmp_path):
    from harness.candidates import SUBSTRATES_DIR
    from harness.gate.worker import discover

    file = SUBSTRATES_DIR / "candidate_masked_fill.py"
    plain, _ = discover([file], step_timeout=60.0, cache_dir=tmp_path)
    assert {s.official_output for s in plain[str(file)]} == {None}
    assert not [r for r in tmp_path.glob("*.json") if "output" in r.read_text()]
    stored_before = set(tmp_path.glob("*.json"))
    foreseen, _ = discover([file], step_timeout=60.0, cache_dir=tmp_path, foresee_outputs=True)
    summary = {s.name: s for s in foreseen[str(file)]}["masked_fill_b1"]
    assert summary.official_output == (("tensor", "uint8", (4, 8, 256, 256)),)
    added = set(tmp_path.glob("*.json")) - stored_before
    assert len(added) == len({s.kb_file for s in foreseen[str(file)]})  # one a problem file
    assert [["tensor", "uint8", [4, 8, 256, 256]]] in [json.loads(r.read_text()) for r in added]
    # Read back next time, not built again: an altered record shows through.
    for record in added:
        record.write_text(json.dumps([["tensor", "uint8", [2, 3]]]))
    again, _ = discover([file], step_timeout=60.0, cache_dir=tmp_path, foresee_outputs=True)
    assert {s.name: s for s in again[str(file)]}["masked_fill_b1"].official_output == (("tensor", "uint8", (2, 3)),)


def test_an_unforeseen_small_trials_large_route_goes_to_the_thread_saying_why(monkeypatch):
    from harness.gate.checks import suite_safety
    from harness.gate.checks.compare import Tolerance
    from harness.gate.checks.suite_safety import SecondReferences

    monkeypatch.setattr(suite_safety, "DEVICE_FLOAT64_MAX_BYTES", 0)
    references = SecondReferences(_Outer(), "cpu", Tolerance(1e-2, 1e-2),
                                  foresight=OutputForesight(_Outer(), rules_ready=lambda: False))
    references.on_gpu = True  # the device route's choices, without a GPU
    a, b = torch.rand(16), torch.rand(8)
    assert references.ahead_of_official([a, b]) is None
    references.submit("T0_original trial 0", [a, b], _Outer()(a, b), device_inputs=[a, b])
    assert [(r.label, r.agreement.ok) for r in references.collect()] == [("in float64", True)]
    assert references.off_device == {"over 0 MiB, and its size was not foreseen (under 64 MiB of inputs, and the meta "
                                     "device's shape rules not imported in this worker)": 1}


@pytest.mark.parametrize("ready", [True, False])
def test_a_foreseen_trial_runs_its_float64_route_ahead_whether_or_not_the_rules_are_imported(ready):
    from harness.gate.checks.compare import Tolerance
    from harness.gate.checks.suite_safety import SecondReferences

    signature = (("tensor", "float32", (16,)), ("tensor", "float32", (8,)))
    foresight = OutputForesight.from_discovery(_Outer(), signature, (("tensor", "float32", (16, 8)),),
                                               rules_ready=lambda: ready)
    references = SecondReferences(_Outer(), "cpu", Tolerance(1e-2, 1e-2), foresight=foresight)
    references.on_gpu = True
    a, b = torch.rand(16), torch.rand(8)
    ahead = references.ahead_of_official([a, b])
    assert ahead is not None and tuple(ahead.output.shape) == (16, 8)
    assert META_PHASE not in references.clock.seconds()


@pytest.mark.gpu
def test_on_a_gpu_a_gate_handed_discoverys_output_signature_gives_the_verdict_it_gives_without(tmp_path):
    from harness.candidates import SUBSTRATES_DIR
    from harness.gate.worker import GateJob, discover, run_gate_job

    file = SUBSTRATES_DIR / "candidate_masked_fill.py"
    entries, _ = discover([file], 60.0, cache_dir=tmp_path, foresee_outputs=True)
    summary = {s.name: s for s in entries[str(file)]}["masked_fill_b1"]
    assert summary.official_output == (("tensor", "uint8", (4, 8, 256, 256)),)
    outcomes = []
    for output in (summary.official_output, None, (("tensor", "uint8", (2, 3)),)):  # the last one wrong
        report = run_gate_job(GateJob(str(file), "masked_fill_b1", "cuda", cache_dir=str(tmp_path),
                                      official_inputs=summary.official_inputs, official_output=output), 300.0)
        no_false_kill = [c for c in report.checks if c.check.value == "no_false_kill"][0]
        outcomes.append((report.verdict.value, no_false_kill.status.value, "on the device in" in no_false_kill.detail))
    assert outcomes == [("admitted", "passed", True)] * 3



def test_a_worker_foresees_a_small_trial_without_importing_the_shape_rules_and_a_large_one_by_importing_them():
    # In a fresh interpreter: this one has imported them already. A gate worker imported them in a thread beside its
    # first trials until the thirty-third session, which stalled single calls of its main thread by up to 1.6 s.
    import subprocess
    import sys

    script = (
        "import sys, torch\n"
        "from harness.gate.foresight import FORESIGHT_FROM_BYTES, META_SHAPES_MODULE, OutputForesight\n"
        "from harness.gate.phases import PhaseClock\n"
        "model = torch.nn.Linear(8, 4)\n"
        "foresight = OutputForesight(model)\n"
        "small = foresight.output_like([torch.rand(16, 8)], PhaseClock())\n"
        "print(small is None, META_SHAPES_MODULE in sys.modules)\n"
        "large = foresight.output_like([torch.rand(FORESIGHT_FROM_BYTES // 32, 8)], PhaseClock())\n"
        "print(tuple(large.shape), META_SHAPES_MODULE in sys.modules)\n"
        "print(tuple(foresight.output_like([torch.rand(16, 8)], PhaseClock()).shape))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True False", f"({FORESIGHT_FROM_BYTES // 32}, 4) True", "(16, 4)"]
