"""Races decided on the CPU backend: contention made to happen where a GPU would, in one schedule on every run.

A source whose threads may read-modify-write one word together (an atomic, a compound update of an element, or a
store to an element it also loads: `cpu.contends`) runs under contention (cuda_cpu.h, "contention"): each atomic
and each plain read-modify-write first yields to the block's next thread, and the blocks run one after another on
one OS thread. The four hand-seeded races of tests/candidates/candidate_race_*.py are rejected for their wrong
output, the kernels here lose (or keep) updates the same way on every launch, and a correct kernel's atomics still
add up.
"""

import ctypes
import json

import pytest
import torch

from harness.backends import cpu
from harness.backends.cpu import CpuBackend
from harness.compiler import signature
from harness.gate.command import main
from tests.conftest import TEST_CANDIDATES


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    return CpuBackend(cache_dir=tmp_path_factory.mktemp("cpu-cache"))


# ---------------------------------------------------------------------------- which sources contend


@pytest.mark.parametrize("body, mode", [
    ("out[i] = x[i] * 2.0f;", cpu.LOOP),
    ("float* p = out + i; *p = x[i];", cpu.LOOP),
    ("for (int d = 3; d >= 0; --d) out[i] = x[i] * d;", cpu.LOOP),
    ("atomicAdd(out, x[i]);", cpu.CONTEND),
    ("atomicCAS((unsigned int*)out, 0u, 1u);", cpu.CONTEND),
    ("out[0] += x[i];", cpu.CONTEND),
    ("(*out)++;", cpu.CONTEND),
    ("*out -= x[i];", cpu.CONTEND),
    ("float old = *out; *out = old + x[i];", cpu.CONTEND),
    ("([&]() { auto mutant_old = *(out); *(out) = mutant_old + x[i]; return mutant_old; }());", cpu.CONTEND),
    ("__syncthreads(); out[i] = x[i];", cpu.FIBERS),
])
def test_a_source_whose_threads_may_update_one_word_together_runs_under_contention(body, mode):
    source = ("extern \"C\" __global__ void k(const float* x, float* out) {\n"
              f"    int i = threadIdx.x;\n    {body}\n}}\n")
    assert cpu.launch_mode(source) == mode


# ---------------------------------------------------------------------------- kernels under contention

PLAIN_ADD = r"""
extern "C" __global__ void plain_add(int* out)
{
    out[blockIdx.x % 2] += 1;  // a read-modify-write without an atomic
}
"""

ATOMIC_ADD = r"""
extern "C" __global__ void atomic_add(int* out)
{
    atomicAdd(&out[blockIdx.x % 2], 1);
    atomicAdd(&out[2], (int)threadIdx.x);
}
"""

# A CAS loop that reuses its first sum on a retry (stale), and the same loop written right.
CAS_LOOP = r"""
extern "C" __global__ void cas_loop(unsigned int* out)
{
    unsigned int old = *out;
#ifdef STALE
    unsigned int sum = old + 1u;
#endif
    for (int tries = 0; tries < 1000; ++tries) {
#ifndef STALE
        unsigned int sum = old + 1u;
#endif
        unsigned int seen = atomicCAS(out, old, sum);
        if (seen == old) return;
        old = seen;
    }
}
"""


def _run(backend, source, name, out, grid, block):
    kernel = backend.load(source, name, f"{name}.cu")
    args = [(ctypes.c_void_p, out.data_ptr())]
    assert signature.check_arguments(kernel.params, args) == []
    backend.launch(kernel, grid, block, signature.to_ctypes(args))
    return kernel


def test_a_plain_read_modify_write_loses_the_block_s_updates_on_every_launch(backend):
    results = []
    for _ in range(3):
        out = torch.zeros(2, dtype=torch.int32)
        kernel = _run(backend, PLAIN_ADD, "plain_add", out, (8, 1, 1), (128, 1, 1))
        results.append(out.tolist())
    # Every thread of a block loads before any stores: each block adds 1, not 128 (blocks run one after another).
    assert results == [[4, 4]] * 3
    assert "threads=fibers,contended" in kernel.options
    assert "under contention" in kernel.target and "not decided on the CPU backend: races between blocks" in \
        kernel.target


def test_atomics_under_contention_lose_nothing(backend):
    out = torch.zeros(3, dtype=torch.int32)
    _run(backend, ATOMIC_ADD, "atomic_add", out, (8, 1, 1), (128, 1, 1))
    assert out.tolist() == [4 * 128, 4 * 128, 8 * sum(range(128))]


@pytest.mark.parametrize("stale", [False, True])
def test_a_cas_loop_that_reuses_a_stale_value_loses_updates_on_every_launch(backend, stale):
    source = ("#define STALE\n" if stale else "") + CAS_LOOP
    results = []
    for _ in range(3):
        out = torch.zeros(1, dtype=torch.int32)
        _run(backend, source, "cas_loop", out, (2, 1, 1), (256, 1, 1))
        results.append(out.item())
    # Every thread reads the word, then each exchanges in turn after the others have read: the right loop
    # retries with the value that won; the stale one swaps its first sum (1, then 2 for the second block) back in.
    assert results == ([2] if stale else [512]) * 3


# ---------------------------------------------------------------------------- the seeded races, gated

RACES = {
    "race_stale_cas_f64": "candidate_race_stale_cas.py",
    "race_lane_clobber_f16": "candidate_race_lane_clobber.py",
    "race_plain_store_f32": "candidate_race_plain_store.py",
    "race_dropped_sync_softmax": "candidate_race_dropped_sync.py",
}


@pytest.fixture(scope="module")
def race_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate-races") / "report.json"
    code = main([*[str(TEST_CANDIDATES / f) for f in RACES.values()], "--backend", "cpu", "--json", str(out),
                 "--no-record", "--no-progress", "--jobs", "2", "--timeout", "120"])
    assert code == 1
    return {s["name"]: s for s in json.loads(out.read_text())["substrates"]}


def test_every_seeded_race_is_gated(race_report):
    assert sorted(race_report) == sorted(RACES)


@pytest.mark.parametrize("name", sorted(RACES))
def test_a_seeded_race_is_rejected_for_its_wrong_output(race_report, name):
    substrate = race_report[name]
    failed = {c["check"]: c["detail"] for c in substrate["checks"] if c["ok"] is False}
    assert not substrate["admitted"]
    assert list(failed) == ["output_matches"], failed
    assert "elements differ" in failed["output_matches"]
    # each ran under contention: the three atomic kernels for their CAS, softmax for its `red[i] += ...`
    assert "threads=fibers,contended" in substrate["compile_options"]


def test_a_contended_substrate_is_never_shown_as_a_plain_admission(tmp_path, capsys):
    """Races between blocks are not made to happen on the CPU: the summary says so under the verdict."""
    from harness.problems import REPO_ROOT

    code = main([str(REPO_ROOT / "substrates" / "candidate_pad_backward_replicate.py"), "--backend", "cpu",
                 "--no-record", "--no-progress", "--jobs", "2", "--json", str(tmp_path / "r.json")])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    for dtype in ("f32", "f64", "f16", "bf16"):
        row = next(i for i, line in enumerate(lines) if line.startswith(f"pad_backward_replicate_{dtype} "))
        assert " admitted " in lines[row]
        assert lines[row + 1].strip() == "- not decided on the CPU backend: races between blocks", lines[row + 1]
