"""harness.candidates: importing candidate files and checking what register() adds."""

import textwrap

import pytest

from harness.candidates import CandidateError, candidate_files, import_candidate, make_entry, register_candidate
from harness.gate.checks.compare import Tolerance

GOOD = dict(kb_file="pad_const_b4.py", cuda="__global__ void k() {}", kernel_name="k", ref=len, launch=len,
            suites=len, probe=len)


def _write(tmp_path, body, name="candidate_x.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_the_repository_registers_the_four_constant_pads():
    names = []
    for path in candidate_files():
        names += list(register_candidate(import_candidate(path), path))
    assert {"pad_const_b1", "pad_const_b2", "pad_const_b4", "pad_const_b8"} <= set(names)


def test_a_good_entry_gets_the_default_tolerance(tmp_path):
    entry, problems = make_entry("x", GOOD, tmp_path / "candidate_x.py")
    assert problems == []
    assert entry.tolerance == Tolerance(exact=False, atol=1e-2, rtol=1e-2)


def test_every_problem_of_an_entry_is_reported_at_once(tmp_path):
    raw = dict(GOOD, cuda="", ref="not callable", colour="red")
    del raw["probe"]
    raw["atol"] = 0.5
    entry, problems = make_entry("x", raw, tmp_path / "candidate_x.py")
    assert entry is None
    assert problems == [
        "x: missing key(s) probe",
        "x: unknown key(s) colour; the spec allows kb_file, cuda, kernel_name, ref, launch, suites, probe "
        "(and optionally exact, atol, rtol, accumulates, model_state)",
        "x: 'cuda' must be a non-empty string, got str",
        "x: 'ref' must be callable, got str",
        "x: 'atol' must be a number in [0, 0.01], got 0.5",
    ]


def test_accumulates_must_be_a_bool_and_defaults_to_false(tmp_path):
    assert make_entry("x", GOOD, tmp_path / "c.py")[0].accumulates is False
    assert make_entry("x", dict(GOOD, accumulates=True), tmp_path / "c.py")[0].accumulates is True
    assert make_entry("x", dict(GOOD, accumulates=1), tmp_path / "c.py")[1] == [
        "x: 'accumulates' must be True or False, got 1"]


def test_exact_must_be_a_bool(tmp_path):
    _entry, problems = make_entry("x", dict(GOOD, exact="yes"), tmp_path / "candidate_x.py")
    assert problems == ["x: 'exact' must be True or False, got 'yes'"]


def test_an_entry_that_is_not_a_dict(tmp_path):
    assert make_entry("x", [1], tmp_path / "c.py") == (None, ["x: K.PROBLEMS['x'] is a list, not a dict"])


def test_import_failure_names_the_file_and_the_error(tmp_path):
    path = _write(tmp_path, "raise KeyError('boom')\n")
    with pytest.raises(CandidateError, match=r"candidate_x.py: import failed: KeyError: 'boom'"):
        import_candidate(path)


def test_a_file_without_register(tmp_path):
    path = _write(tmp_path, "X = 1\n")
    with pytest.raises(CandidateError, match=r"candidate_x.py: defines no register\(K, torch, ctypes\)"):
        register_candidate(import_candidate(path), path)


def test_register_that_raises(tmp_path):
    path = _write(tmp_path, "def register(K, torch, ctypes):\n    raise ValueError('no widths')\n")
    with pytest.raises(CandidateError, match=r"register\(\) failed: ValueError: no widths"):
        register_candidate(import_candidate(path), path)


def test_register_that_adds_nothing(tmp_path):
    path = _write(tmp_path, "def register(K, torch, ctypes):\n    pass\n")
    with pytest.raises(CandidateError, match=r"register\(\) added nothing to K.PROBLEMS"):
        register_candidate(import_candidate(path), path)


def test_each_load_gets_a_fresh_module_and_registry(tmp_path):
    path = _write(tmp_path, """
        COUNT = []
        def register(K, torch, ctypes):
            COUNT.append(1)
            K.PROBLEMS[f"n{len(COUNT)}"] = {}
    """)
    first = register_candidate(import_candidate(path), path)
    second = register_candidate(import_candidate(path), path)
    assert list(first) == list(second) == ["n1"]


def test_a_cuda_line_is_located_in_the_candidate_file(tmp_path):
    path = _write(tmp_path, 'CUDA = """\n__global__ void k(int* o) {\n    o[0] = 1;\n}\n"""\n')
    entry, _ = make_entry("x", GOOD, path)
    assert entry.locate_cuda_line("    o[0] = 1;") == "candidate_x.py:3"
    assert entry.locate_cuda_line("}") == "candidate_x.py:4"
    assert entry.locate_cuda_line("not there") is None


def test_the_source_hash_changes_with_the_file(tmp_path):
    path = _write(tmp_path, "A = 1\n")
    entry, _ = make_entry("x", GOOD, path)
    before = entry.source_sha256()
    path.write_text("A = 2\n")
    assert entry.source_sha256() != before


# ------------------------------------------------------------------ builder forms

from harness.candidates import BuilderForm, builder_form, call_builder  # noqa: E402


def _one(t):
    return [t]


def _two(t, device):
    return [t, device]


def _defaulted(t, device=None):
    return [t, device]


def _star(*args):
    return list(args)


@pytest.mark.parametrize("builder, form", [
    (_one, BuilderForm.TRIAL),
    (_two, BuilderForm.TRIAL_DEVICE),
    (_defaulted, BuilderForm.TRIAL_DEVICE),
    (_star, BuilderForm.TRIAL_DEVICE),
    (lambda t: [t], BuilderForm.TRIAL),
    (lambda t, *, seed=0: [t], BuilderForm.TRIAL),  # a keyword-only parameter is never given the device
])
def test_builder_form_is_read_from_the_signature(builder, form):
    assert builder_form(builder) is form


def test_call_builder_moves_tensors_and_keeps_other_values():
    import torch

    inputs = call_builder(lambda t: [torch.ones(2, dtype=torch.float64), 3.5, t], 4, torch.device("meta"))
    assert inputs[0].device.type == "meta" and inputs[0].dtype == torch.float64
    assert inputs[1:] == [3.5, 4]


def test_a_builder_raising_type_error_is_not_called_a_second_way():
    calls = []

    def builder(t):
        calls.append(t)
        raise TypeError("my own bug")

    with pytest.raises(TypeError, match="my own bug"):
        call_builder(builder, 0, "cpu")
    assert calls == [0]
