"""harness.oracles.sanitizer: finding compute-sanitizer, reading its reports, and the checks they give.

The tools themselves need a GPU (the tests marked gpu run them); on the CPU, tests/fake_sanitizer.py
stands in for compute-sanitizer: it runs the real sanitized program (harness.oracles.sanitized_run)
on the CPU backend and writes the report a test asks for, so every step but the tool is real.
"""

import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.candidates import import_candidate, register_candidate
from harness.gate.records import CheckName, CheckStatus
from harness.oracles.sanitizer import (Finding, SanitizerTarget, discard, find_sanitizer, parse_log, prestart,
                                       process_tree, run_watched, sanitize, shares)

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "fake_sanitizer.py"
FORMS = REPO / "tests" / "candidates" / "candidate_row_sum_forms.py"

MEMCHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at row_sum_atomic(const float *, float *, long long, long long)+0x1b0 in forms_row_sum.cu:7
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f4a2e000200 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f4a2e000000 of size 512 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f1e3] in libcuda.so.1
=========
========= Invalid __global__ write of size 4 bytes
=========     at row_sum_atomic(const float *, float *, long long, long long)+0x1b0 in forms_row_sum.cu:7
=========     by thread (4,0,0) in block (0,0,0)
=========     Address 0x7f4a2e000204 is out of bounds
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaMemcpy.
=========     Saved host backtrace up to driver entry point at error
=========
========= ERROR SUMMARY: 3 errors
"""

RACECHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at softmax_rows(const float *, float *, int, int)+0x2c0 in example_softmax_rows.cu:23
=========     and Read access at softmax_rows(const float *, float *, int, int)+0x310 in example_softmax_rows.cu:31 [81 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""

OLD_STYLE_LOG = """\
========= Barrier error detected. Divergent thread(s) in warp
=========     at 0x00000130 in divergence.cu:61:threadDivergence(int*)
=========     by thread (37,0,0) in block (0,0,0)
========= Uninitialized __global__ memory read of size 4 bytes
=========     at 0x00000070 in vectorAdd(int*)
=========     by thread (0,0,0) in block (0,0,0)
"""


def test_reports_are_read_with_their_program_line_kernel_and_count():
    findings, host_notes = parse_log(MEMCHECK_LOG, "memcheck")
    # Two threads' writes at one line are one finding counted twice; the host API error is a note.
    assert findings == [Finding("memcheck", "Invalid __global__ write of size 4 bytes at row_sum_atomic(const float *, "
                                            "float *, long long, long long)+0x1b0 in forms_row_sum.cu:7",
                                "forms_row_sum.cu", 7, "row_sum_atomic", 2)]
    assert host_notes == 1
    (race,), _ = parse_log(RACECHECK_LOG, "racecheck")
    assert (race.program, race.line, race.kernel, race.count) == ("example_softmax_rows.cu", 23, "softmax_rows", 81)
    assert race.hazard.startswith("Race reported between Write access")
    sync, init = parse_log(OLD_STYLE_LOG, "synccheck")[0]
    assert (sync.program, sync.line, sync.kernel) == ("divergence.cu", 61, "threadDivergence")
    assert (init.program, init.line, init.kernel) == ("", None, "vectorAdd")


def test_a_clean_log_has_no_findings():
    clean = ("========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
             "========= ERROR SUMMARY: 0 errors\n")
    assert parse_log(clean, "racecheck") == ([], 0)


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_compute_sanitizer_is_found_on_path_then_in_the_cuda_toolkit(tmp_path):
    on_path = tmp_path / "path"
    on_path.mkdir()
    toolkit = tmp_path / "cuda" / "bin"
    toolkit.mkdir(parents=True)
    assert find_sanitizer(path_env=str(on_path), cuda_home=str(tmp_path / "nowhere")) in (
        None, Path("/usr/local/cuda/bin/compute-sanitizer"))
    found_in_toolkit = _executable(toolkit / "compute-sanitizer")
    assert find_sanitizer(path_env=str(on_path), cuda_home=str(tmp_path / "cuda")) == found_in_toolkit
    found_on_path = _executable(on_path / "compute-sanitizer")
    assert find_sanitizer(path_env=str(on_path), cuda_home=str(tmp_path / "cuda")) == found_on_path


def _target(name: str) -> SanitizerTarget:
    raw = register_candidate(import_candidate(FORMS), FORMS)[name]
    return SanitizerTarget(str(FORMS), name, raw["kernel_name"], 0, raw["cuda"])


def _cuda_line(name: str, text: str) -> int:
    return next(i for i, line in enumerate(_target(name).cuda.splitlines(), 1) if text in line)


@pytest.fixture
def fake_sanitizer(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the sanitized program must find harness from any working folder
    return FAKE


def test_a_report_on_the_kernels_line_fails_that_tool_and_names_the_candidates_line(fake_sanitizer, monkeypatch):
    line = _cuda_line("forms_row_sum", "atomicAdd")
    monkeypatch.setenv("FAKE_SANITIZER_SYNCCHECK", f"Error: Race reported between Write access at row_sum_atomic("
                                                   f"const float *, float *, long long, long long)+0x90 in "
                                                   f"forms_row_sum.cu:{line}|    and Write access at row_sum_atomic"
                                                   f"(...)+0x90 in forms_row_sum.cu:{line} [12 hazards]")
    checks = sanitize([_target("forms_row_sum")], ("memcheck", "synccheck"), fake_sanitizer, backend="cpu")
    memcheck, synccheck = checks["forms_row_sum"]
    assert memcheck.check is CheckName.MEMCHECK and memcheck.status is CheckStatus.PASSED
    assert memcheck.detail == ("no reports over 5 launches (probe trial 0, probe trial 1, T0_original trial 0, "
                               "positive_rows trial 0, misaligned trial 0)")
    assert synccheck.check is CheckName.SYNCCHECK and synccheck.status is CheckStatus.FAILED
    candidate_line = next(i for i, text in enumerate(FORMS.read_text().splitlines(), 1) if "atomicAdd(&out" in text)
    assert synccheck.detail == (f"1 report(s): synccheck: forms_row_sum.cu:{line} (candidate_row_sum_forms.py:"
                                f"{candidate_line}): Race reported between Write access at row_sum_atomic(const float "
                                f"*, float *, long long, long long)+0x90 in forms_row_sum.cu:{line} and Write access "
                                f"at row_sum_atomic(...)+0x90 in forms_row_sum.cu:{line} [12 times]")


def test_a_kernel_that_kills_the_sanitized_process_is_not_run_and_the_next_substrate_still_runs(fake_sanitizer,
                                                                                                tmp_path):
    # forms_crash_late made to read 4 TB past x on every case, and on the CPU backend to abort there.
    crashing = tmp_path / FORMS.name
    crashing.write_text(FORMS.read_text().replace("if (cols == 57) total +=", "if (cols > 0) total +=")
                        .replace("if (cols == 57) std::abort();", "if (cols > 0) std::abort();"))
    raw = register_candidate(import_candidate(crashing), crashing)["forms_crash_late"]
    crash_target = SanitizerTarget(str(crashing), "forms_crash_late", raw["kernel_name"], 0, raw["cuda"])
    checks = sanitize([crash_target, _target("forms_row_sum")], ("memcheck",), fake_sanitizer, backend="cpu")
    (crash,), (clean,) = checks["forms_crash_late"], checks["forms_row_sum"]
    assert crash.status is CheckStatus.NOT_RUN
    assert crash.detail.startswith("not run: the sanitized process died (killed by signal SIGABRT)")
    assert clean.status is CheckStatus.PASSED


def test_a_kernel_that_hangs_under_the_tool_is_ended_when_no_case_is_done_for_the_stall_time(fake_sanitizer,
                                                                                            tmp_path):
    # forms_crash_late made to spin forever on every case (on the CPU backend, where the fake tool runs it).
    hanging = tmp_path / FORMS.name
    hanging.write_text(FORMS.read_text().replace("if (cols == 57) std::abort();",
                                                 "if (cols > 0) for (volatile int spin = 1; spin;) {}"))
    raw = register_candidate(import_candidate(hanging), hanging)["forms_crash_late"]
    hang_target = SanitizerTarget(str(hanging), "forms_crash_late", raw["kernel_name"], 0, raw["cuda"])
    started = time.monotonic()
    checks = sanitize([hang_target, _target("forms_row_sum")], ("memcheck",), fake_sanitizer, backend="cpu",
                      stall=10)
    (hung,), (clean,) = checks["forms_crash_late"], checks["forms_row_sum"]
    assert hung.status is CheckStatus.NOT_RUN
    assert hung.detail == "not run: timed out under memcheck with no case done for 10 s"
    assert clean.status is CheckStatus.PASSED  # the substrate after it ran in a process of its own
    assert time.monotonic() - started < 120  # not the process's 300 s


def _gone_or_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_stalled_tool_is_ended_with_the_program_it_started(tmp_path):
    # The tool's program (here a grandchild sleeping) would hold the GPU with its hung kernel if only the tool died.
    script = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; "
              "time.sleep(600)']); print(p.pid, flush=True); time.sleep(600)")
    output = tmp_path / "output.txt"
    started = time.monotonic()
    status, why = run_watched([sys.executable, "-c", script], dict(os.environ), output, tmp_path / "events.jsonl",
                              timeout=300, stall=2)
    assert (status, why) == (None, "with no case done for 2 s")
    assert time.monotonic() - started < 30
    program = int(output.read_text().split()[0])
    deadline = time.monotonic() + 5
    while not _gone_or_zombie(program) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone_or_zombie(program)


def test_the_process_tree_holds_a_process_and_those_below_it():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert process_tree(os.getpid())[0] == os.getpid()
        assert child.pid in process_tree(os.getpid())
        assert process_tree(child.pid) == [child.pid]
    finally:
        child.kill()
        child.wait()


def test_targets_are_shared_out_in_turn_and_no_process_gets_none():
    assert shares(list("abcde"), 2) == [["a", "c", "e"], ["b", "d"]]
    assert shares(list("ab"), 4) == [["a"], ["b"]]
    assert shares([], 3) == [[]]


def test_a_substrates_targets_in_a_row_stay_together_in_blocks_of_at_most_an_even_share():
    # A campaign's: each unmutated kernel, then its survivors. Dealt one at a time, every process built every
    # substrate's cases; in blocks, a process builds them once a block.
    targets = ["a", "a1", "a2", "a3", "b", "b1", "c"]
    dealt = shares(targets, 2, key=lambda target: target[0])
    assert dealt == [["a", "a1", "a2", "a3"], ["b", "b1", "c"]]
    assert shares(targets, 3, key=lambda target: target[0]) == [["a", "a1", "a2"], ["a3", "c"], ["b", "b1"]]
    assert sorted(sum(shares(targets, 5, key=lambda target: target[0]), [])) == sorted(targets)


# forms_row_sum's kernel with its values staged through shared memory: the same sums, and something for racecheck.
STAGED_SOURCE = r"""
extern "C" __global__ void row_sum_atomic(const float* __restrict__ x, float* __restrict__ out, long long rows,
                                          long long cols)
{
    __shared__ float staged[128];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    staged[threadIdx.x] = i < rows * cols ? x[i] : 0.0f;
    __syncthreads();
    if (i >= rows * cols) return;
    atomicAdd(&out[i / cols], staged[threadIdx.x]);
}
"""


def test_racecheck_runs_a_kernel_with_shared_memory_and_skips_one_without_saying_why(fake_sanitizer):
    plain = _target("forms_row_sum")
    staged = SanitizerTarget(plain.file, plain.name, plain.kernel_name, 0, STAGED_SOURCE, label="forms_row_sum_staged",
                             replaces_cuda=True)
    checks = sanitize([plain, staged], ("racecheck", "memcheck"), fake_sanitizer, backend="cpu")
    (race_plain, memcheck_plain), (race_staged, _) = checks["forms_row_sum"], checks["forms_row_sum_staged"]
    assert (race_plain.status, race_plain.detail) == (
        CheckStatus.SKIPPED, "skipped: the kernel's PTX declares and addresses no shared memory (no .shared state "
                             "space), the only memory racecheck watches")
    assert memcheck_plain.status is CheckStatus.PASSED  # the other tools run it as before
    assert race_staged.status is CheckStatus.PASSED
    assert race_staged.detail.startswith("no reports over 5 launches (probe trial 0, ")


def test_a_tool_over_two_processes_judges_every_substrate_as_one_process_does(fake_sanitizer, monkeypatch):
    line = _cuda_line("forms_row_sum", "atomicAdd")
    monkeypatch.setenv("FAKE_SANITIZER_SYNCCHECK", f"Error: Race reported between Write access at row_sum_atomic("
                                                   f"const float *, float *, long long, long long)+0x90 in "
                                                   f"forms_row_sum.cu:{line}")
    monkeypatch.setenv("FAKE_SANITIZER_WHEN", '"forms_row_sum"')  # from the process that ran it alone
    targets = [_target("forms_row_sum"), _target("forms_wrong_distribution")]
    one = sanitize(targets, ("synccheck",), fake_sanitizer, backend="cpu")
    two = sanitize(targets, ("synccheck",), fake_sanitizer, backend="cpu", processes=2)
    assert two == one
    assert one["forms_row_sum"][0].status is CheckStatus.FAILED
    assert one["forms_wrong_distribution"][0].status is CheckStatus.PASSED


def test_reports_about_other_kernels_are_set_aside(fake_sanitizer, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_INITCHECK", "Uninitialized __global__ memory read of size 4 bytes|"
                                                   "    at void at::native::vectorized_elementwise_kernel(...)+0x10")
    ((initcheck,),) = sanitize([_target("forms_row_sum")], ("initcheck",), fake_sanitizer, backend="cpu").values()
    assert initcheck.status is CheckStatus.PASSED
    assert "1 report(s) of this run about code that is no substrate's kernel set aside" in initcheck.detail


def test_a_sanitizer_that_cannot_run_the_program_leaves_every_check_not_run(tmp_path):
    broken = tmp_path / "compute-sanitizer"
    broken.write_text("#!/bin/sh\necho 'Error: unsupported device' >&2\nexit 1\n")
    broken.chmod(0o755)
    ((check,),) = sanitize([_target("forms_row_sum")], ("synccheck",), broken, backend="cpu").values()
    assert check.status is CheckStatus.NOT_RUN
    assert check.detail == ("not run: compute-sanitizer --tool synccheck did not run the program (exit code 1): "
                            "Error: unsupported device")


def test_each_tools_time_and_its_slowest_substrate_are_given(fake_sanitizer):
    timings = []
    sanitize([_target("forms_row_sum"), _target("forms_wrong_distribution")], ("memcheck", "racecheck"),
             fake_sanitizer, backend="cpu", timings=timings)
    assert [t.split()[0] for t in timings] == ["memcheck", "racecheck"]
    for timing in timings:
        assert re.fullmatch(r"\w+ \d+\.\d s \(start \d+\.\d s, loading \d+\.\d s, cases \d+\.\d s; "
                            r"slowest forms_(row_sum|wrong_distribution) \d+\.\d s\)", timing), timing
        whole, start, loading, cases = (float(x) for x in re.findall(r"(?:^\w+|start|loading|cases) (\d+\.\d)", timing))
        assert start > 0.0  # Python's start and imports, before the first substrate
        assert start + loading + cases <= whole + 0.2  # parts of the tool's time (each rounded)


def _wait_until_ready(early, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all('"ready"' in ((e.work / "events-1.jsonl").read_text() if (e.work / "events-1.jsonl").exists() else "")
               for waiting in early.values() for e in waiting):
            return
        time.sleep(0.05)
    raise AssertionError("the processes started ahead never said they were ready")


def test_a_process_started_before_its_plan_waits_for_it_and_judges_as_one_started_after(fake_sanitizer,
                                                                                        monkeypatch):
    line = _cuda_line("forms_row_sum", "atomicAdd")
    monkeypatch.setenv("FAKE_SANITIZER_SYNCCHECK", f"Error: Race reported between Write access at row_sum_atomic("
                                                   f"const float *, float *, long long, long long)+0x90 in "
                                                   f"forms_row_sum.cu:{line}")
    monkeypatch.setenv("FAKE_SANITIZER_WHEN", '"forms_row_sum"')  # only from a process whose plan names it
    targets = [_target("forms_row_sum"), _target("forms_wrong_distribution")]
    tools = ("memcheck", "synccheck")
    early = prestart(tools, fake_sanitizer, backend="cpu")
    _wait_until_ready(early)  # started: Python, its imports and the backend made, before any substrate is known
    assert all(e.process.poll() is None and not (e.work / "plan-1.json").exists()
               for waiting in early.values() for e in waiting)
    timings_ahead, timings = [], []
    ahead = sanitize(targets, tools, fake_sanitizer, backend="cpu", timings=timings_ahead, prestarted=early)
    assert ahead == sanitize(targets, tools, fake_sanitizer, backend="cpu", timings=timings)
    assert ahead["forms_row_sum"][1].status is CheckStatus.FAILED
    assert ahead["forms_wrong_distribution"][1].status is CheckStatus.PASSED
    assert all(", ahead, loading" in t for t in timings_ahead) and not any("ahead" in t for t in timings)


def test_processes_started_ahead_that_no_share_takes_are_ended_with_their_program(fake_sanitizer):
    early = prestart(("memcheck",), fake_sanitizer, backend="cpu", processes=2)
    _wait_until_ready(early)
    spare = early["memcheck"][1]
    below = process_tree(spare.process.pid)
    assert len(below) >= 2  # the tool and the program it runs
    ((check,),) = sanitize([_target("forms_row_sum")], ("memcheck",), fake_sanitizer, backend="cpu", processes=2,
                           prestarted=early).values()
    assert check.status is CheckStatus.PASSED
    assert spare.process.poll() is not None  # one target, one share: the second process was not needed
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in below) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in below if Path(f"/proc/{pid}").exists()]
    lone = prestart(("synccheck",), fake_sanitizer, backend="cpu")
    discard(lone)  # a gate that had nothing to sanitize
    assert lone["synccheck"][0].process.poll() is not None


def test_the_sanitized_program_builds_only_t0s_first_trial():
    """Every T0 trial has get_inputs()'s shapes, so trial 0 is as small as any: the others are not built."""
    import torch

    from harness.oracles.sanitized_run import cases

    built = []

    def t0(t):
        built.append(("T0_original", t))
        return [torch.zeros(8)]

    def targeted(t):
        built.append(("targeted", t))
        return [torch.zeros(8 - t)]

    class Entry:
        @staticmethod
        def probe(torch):
            return [("aligned", [torch.zeros(4)])]

        @staticmethod
        def suites():
            return [("T0_original", 5, t0), ("targeted", 3, targeted)]

    found, notes = cases(Entry, t0_bytes=32, max_bytes=2**20, torch=torch)
    assert built == [("T0_original", 0), ("targeted", 0), ("targeted", 1), ("targeted", 2)]
    assert [where for where, _inputs in found] == ["probe trial 0", "T0_original trial 0", "targeted trial 2"]
    assert notes == []


def test_an_oracles_program_gets_sleeping_openmp_threads_unless_the_user_chose(monkeypatch):
    """The gate's workers get it from quiet_openmp; a sanitizer started before the first worker must too (its
    spinning OpenMP threads made a gate on the H200 take 36 s instead of 18)."""
    from harness.oracles import program_env

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert program_env()["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert program_env()["OMP_WAIT_POLICY"] == "ACTIVE"


def _awaiting(name: str) -> SanitizerTarget:
    target = _target(name)
    target.awaits_verdict = True
    return target


def test_a_target_awaiting_the_gates_verdict_runs_once_admitted_however_long_the_gate_takes(fake_sanitizer,
                                                                                           tmp_path):
    # The gate's own work on a new candidate may take minutes at real size: waiting for it is neither a stall nor
    # the process's time, and the substrate then runs as one that never waited.
    import threading

    from harness.oracles.sanitizer import write_verdict

    verdicts = tmp_path / "verdicts"
    verdicts.mkdir()
    admitted_late = threading.Timer(12.0, write_verdict, (verdicts, "forms_row_sum"))  # past both limits below
    admitted_late.start()
    started = time.monotonic()
    checks = sanitize([_awaiting("forms_row_sum")], ("memcheck",), fake_sanitizer, backend="cpu", stall=8,
                      timeout=10, verdicts=verdicts)
    admitted_late.join()
    assert time.monotonic() - started >= 12
    assert checks == sanitize([_target("forms_row_sum")], ("memcheck",), fake_sanitizer, backend="cpu")
    ((check,),) = checks.values()
    assert check.status is CheckStatus.PASSED


def test_a_target_the_gate_rejected_is_not_run_and_says_why_while_the_others_run(fake_sanitizer, tmp_path,
                                                                               monkeypatch):
    from harness.oracles.sanitizer import write_verdict

    # Were it run, memcheck would report on it (and a faulting kernel would cost the tool a new process).
    monkeypatch.setenv("FAKE_SANITIZER_MEMCHECK", "Invalid __global__ write of size 4 bytes|    at x in "
                                                  "forms_wrong_distribution.cu:3")
    monkeypatch.setenv("FAKE_SANITIZER_WHEN", "never in a plan")
    verdicts = tmp_path / "verdicts"
    verdicts.mkdir()
    write_verdict(verdicts, "forms_wrong_distribution", "the gate rejected it (suite_rules); no finding of a "
                                                        "sanitizer could change that verdict")
    checks = sanitize([_awaiting("forms_wrong_distribution"), _target("forms_row_sum")], ("memcheck", "racecheck"),
                      fake_sanitizer, backend="cpu", verdicts=verdicts)
    for check in checks["forms_wrong_distribution"]:
        assert check.status is CheckStatus.SKIPPED
        assert check.detail == ("skipped: the gate rejected it (suite_rules); no finding of a sanitizer could "
                                "change that verdict")
    assert [c.status for c in checks["forms_row_sum"]][0] is CheckStatus.PASSED


def test_a_substrates_targets_in_a_row_build_its_cases_once_and_each_runs_on_fresh_copies(tmp_path, monkeypatch):
    """A campaign's survivors of one substrate follow one another in a tool's process: its candidate imported and its
    cases built once for all of them (the suites' trials, the Model), and each kernel launched on copies, so what a
    mutant writes into its inputs never reaches the next target's."""
    import ctypes
    import io
    import json

    import torch

    from harness.backends.cpu import CpuBackend
    from harness.oracles import sanitized_run
    from harness.oracles.sanitizer import MAX_CASE_BYTES

    built, launched, imported = [], [], []
    real_cases = sanitized_run.cases
    import harness.candidates

    real_import = harness.candidates.import_candidate
    monkeypatch.setattr(harness.candidates, "import_candidate", lambda path: imported.append(path) or real_import(path))
    monkeypatch.setattr(sanitized_run, "cases", lambda entry, *args: built.append(entry) or real_cases(entry, *args))
    target = {"file": str(FORMS), "name": "forms_row_sum", "max_bytes": MAX_CASE_BYTES}
    source = register_candidate(import_candidate(FORMS), FORMS)["forms_row_sum"]["cuda"]
    mutant = {**target, "label": "forms_row_sum:L1C1:op:0", "cuda": source + "\n"}
    backend, events, prepared = CpuBackend(cache_dir=tmp_path / "cache"), io.StringIO(), sanitized_run.Prepared()
    real_launch = backend.launch
    monkeypatch.setattr(backend, "launch", lambda kernel, grid, block, args: launched.extend(
        a.value for a in args if isinstance(a, ctypes.c_void_p)) or real_launch(kernel, grid, block, args))
    for each in (target, mutant, mutant):
        assert sanitized_run.run_substrate(each, backend, events, torch, "memcheck", prepared)
    other = {"file": str(FORMS), "name": "forms_wrong_distribution", "max_bytes": MAX_CASE_BYTES}
    launched.clear()  # the pointers of this target's launches, its kept inputs alive all the while
    assert sanitized_run.run_substrate(other, backend, events, torch, "memcheck", prepared)

    assert [e.name for e in built] == ["forms_row_sum", "forms_wrong_distribution"]  # once a substrate in a row
    assert len(imported) == 4  # the candidate afresh for each: what its module keeps is no target's but its own
    done = [json.loads(line) for line in events.getvalue().splitlines() if '"done"' in line]
    assert [d["substrate"] for d in done] == ["forms_row_sum", "forms_row_sum:L1C1:op:0", "forms_row_sum:L1C1:op:0",
                                              "forms_wrong_distribution"]
    assert len({tuple(d["cases"]) for d in done[:3]}) == 1 and done[0]["cases"]  # the same cases, each run
    found, _notes, _state = prepared.cases(prepared.entry(other), other, backend, torch)
    host = {x.data_ptr() for _where, inputs in found for x in inputs if isinstance(x, torch.Tensor)}
    assert launched and host and not host & set(launched)  # never the kept inputs themselves
