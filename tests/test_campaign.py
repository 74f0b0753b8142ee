"""harness.campaign end to end on the CPU backend, on the compliant template substrate.

The template's guard `if (i >= n) return;` is the site: its boundary mutant (`>`) and its
deletion let threads past the end write into the guard band, so both are killed; the store
makes the second run skip every mutant; a substrate not admitted is refused with the reason.
"""

import json
import multiprocessing
import os
import re
import shutil

import pytest

from harness.campaign import main
from harness.compiler.batches import ptx_digest
from harness.engine.run import default_workers, spare_mode, spares_wanted, workers_that_fit
from harness.gate.command import main as gate_main
from harness.report_diff import status_differences, statuses
from tests import rule_candidates

OPERATORS = ["--operator", "relational_boundary", "--operator", "guard_deletion", "--operator", "ternary_swap"]


def test_the_ptx_digest_ignores_line_info_and_comments():
    ptx = "//\n// Generated\n.file 1 \"k.cu\"\n\tld.global.f32 %f1, [%rd4];\n\t.loc 1 7 5\n\tst.global.f32 [%rd6], %f2;\n"
    moved = "//\n.file 1 \"k.cu\"\n\t.loc 1 9 5\n\tld.global.f32 %f1, [%rd4];\n\tst.global.f32 [%rd6], %f2;\n"
    assert ptx_digest(ptx) == ptx_digest(moved)
    assert ptx_digest(ptx) != ptx_digest(ptx.replace("%f2", "%f3"))


@pytest.fixture(scope="module")
def admitted(tmp_path_factory):
    root = tmp_path_factory.mktemp("campaign")
    rule_candidates.write_candidates(root, [])
    assert gate_main([str(root / "substrates" / "candidate_rule_compliant.py"), "--backend", "cpu", "--no-progress",
                      "--timeout", "60"]) == 0
    # A second substrate of the same folder, never gated: the campaign must refuse it.
    (root / "substrates" / "candidate_never_gated.py").write_text(
        rule_candidates.variant_text("never_gated", []))
    (root / "substrates" / "candidate_RuleSeveral.py").unlink()
    return root


def _campaign(root, *extra):
    return main(["--backend", "cpu", "--substrates-dir", str(root / "substrates"), "--store",
                 str(root / "results.jsonl"), "--no-progress", *OPERATORS, *extra])


def test_a_campaign_gives_every_mutant_a_status_and_resumes_from_its_store(admitted, capsys):
    report = admitted / "report.json"
    assert _campaign(admitted, "rule_compliant", "--json", str(report)) == 0
    out = capsys.readouterr().out
    assert "campaign: 1 substrate(s), 2 mutants, 2 to run (0 stored) on backend cpu" in out
    cores = os.cpu_count() or 1  # one worker on the CPU backend: the other cores compile batches ahead
    assert (f"1 worker(s) over the CPU, {cores - 1} process(es) compiling batches ahead, a spare worker started "
            f"ahead per slot\n" in out) == (cores > 1)
    data = json.loads(report.read_text())
    mutants = data["files"]["rule_compliant.cu"]["mutants"]
    assert {m["mutatorName"]: m["status"] for m in mutants} == {"relational_boundary": "Killed",
                                                                "guard_deletion": "Killed"}
    assert all("writes_in_bounds" in m["statusReason"] for m in mutants)

    assert _campaign(admitted, "rule_compliant") == 0
    assert "2 mutants, 0 to run (2 stored)" in capsys.readouterr().out
    assert multiprocessing.active_children() == []  # the workers started ahead are stopped too


def test_workers_started_only_when_needed_give_the_same_statuses(admitted, tmp_path, capsys):
    report = tmp_path / "report.json"
    assert main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store",
                 str(tmp_path / "results.jsonl"), "--no-progress", *OPERATORS, "--spare-workers", "never",
                 "--json", str(report), "rule_compliant"]) == 0
    capsys.readouterr()
    mutants = json.loads(report.read_text())["files"]["rule_compliant.cu"]["mutants"]
    assert {m["mutatorName"]: m["status"] for m in mutants} == {"relational_boundary": "Killed",
                                                                "guard_deletion": "Killed"}


def test_a_substrate_not_admitted_is_refused_with_the_reason(admitted, capsys):
    assert _campaign(admitted) == 0  # every admitted one: never_gated is not one, and is left out saying why
    out = capsys.readouterr().out
    hint = f"run python gate.py --backend cpu {admitted / 'substrates' / 'candidate_never_gated.py'}"
    assert f"refused: never_gated: not admitted on cpu at its current source hash (never gated); {hint}\n" in out


def test_a_substrate_gated_against_another_copy_of_its_problem_is_refused_naming_the_copy_found(admitted, tmp_path,
                                                                                                 capsys):
    root = tmp_path / "copy"
    shutil.copytree(admitted, root, ignore=shutil.ignore_patterns("*.jsonl", "*.json.tmp"))
    problem = root / "problems" / "abs_plus_half.py"
    problem.write_text(problem.read_text() + "# another copy of the same problem\n")  # as a stand-in is
    assert main(["--backend", "cpu", "--substrates-dir", str(root / "substrates"), "--store",
                 str(tmp_path / "results.jsonl"), "--no-progress", *OPERATORS, "rule_compliant"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("refused: rule_compliant: not admitted on cpu at its current source hash (source or "
                          "problem file changed since it was admitted (cpu, ")
    assert (f"); the hash covers its problem file too, here {problem}: if it was gated against another copy of "
            f"abs_plus_half.py, pass that copy's --kb-root; run python gate.py --backend cpu ") in out


def test_a_named_substrate_refused_fails_the_campaign_and_its_hint_admits_it(admitted, tmp_path, capsys):
    root = tmp_path / "copy"  # the candidates with their problems, and the admissions of rule_compliant
    shutil.copytree(admitted, root, ignore=shutil.ignore_patterns("*.jsonl", "*.json.tmp"))
    argv = ["--backend", "cpu", "--substrates-dir", str(root / "substrates"), "--store",
            str(tmp_path / "results.jsonl"), "--no-progress", *OPERATORS]
    assert main([*argv, "never_gated"]) == 1
    captured = capsys.readouterr()
    hint = f"run python gate.py --backend cpu {root / 'substrates' / 'candidate_never_gated.py'}"
    assert captured.out == (f"refused: never_gated: not admitted on cpu at its current source hash (never gated); "
                            f"{hint}\n")
    assert captured.err == ("campaign: nothing to run: none of the substrates named is admitted on cpu (each refusal "
                            "above says why and what to run)\n")
    # Beside one that runs: the campaign runs it, then fails naming the refused one.
    assert main([*argv, "rule_compliant", "never_gated"]) == 1
    captured = capsys.readouterr()
    assert "campaign: 1 substrate(s), 2 mutants, 2 to run" in captured.out
    assert captured.err.endswith("campaign: refused, though named: never_gated (exit 1)\n")
    # The hint, as given, admits it under this --substrates-dir; then the campaign runs it.
    assert gate_main([*hint.split()[3:], "--no-progress", "--timeout", "60"]) == 0
    capsys.readouterr()
    assert main([*argv, "never_gated"]) == 0


def test_the_naive_mode_runs_each_mutant_alone_in_a_spawned_worker_and_agrees(admitted, capsys, monkeypatch):
    import harness.processes

    methods = []  # how each worker was started
    real_start = harness.processes.start_worker
    monkeypatch.setattr(harness.processes, "start_worker",
                        lambda env=None, prepare=None, method=None: methods.append(method) or real_start(env, prepare,
                                                                                                         method))
    assert _campaign(admitted, "rule_compliant", "--naive") == 0
    out = capsys.readouterr().out
    assert "campaign: 1 substrate(s), 2 mutants, 2 to run (0 stored)" in out  # naive ignores the store
    assert "statuses {'killed': 2}" in out
    # A fresh Python for each mutant, as KernelBench's evaluation starts one; not a fork of the engine's server.
    # (The plan's worker, which imports the candidate, is the campaign's own.)
    assert methods.count("spawn") == 2

    methods.clear()
    assert _campaign(admitted, "rule_compliant") == 0
    assert methods and set(methods) == {None}  # the campaign's own: the fork server, where there is one


def test_mutants_compiled_in_batches_get_the_statuses_they_get_compiled_alone(admitted, tmp_path, capsys):
    reports = {}
    for batch_size in ("1", "32"):
        reports[batch_size] = tmp_path / f"batch-{batch_size}.json"
        assert main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store",
                     str(tmp_path / f"store-{batch_size}.jsonl"), "--no-progress", "--batch-size", batch_size,
                     "--json", str(reports[batch_size]), "rule_compliant"]) == 0
    capsys.readouterr()
    first, second = (json.loads(reports[b].read_text()) for b in ("1", "32"))
    assert len(statuses(first)) >= 8
    assert status_differences(first, second) == []


def test_a_batch_size_below_one_is_a_usage_error(admitted, capsys):
    assert _campaign(admitted, "--batch-size", "0") == 2
    assert capsys.readouterr().err == "campaign: error: --batch-size must be at least 1\n"
    assert _campaign(admitted, "--sanitize-processes", "0") == 2
    assert capsys.readouterr().err == "campaign: error: --sanitize-processes must be at least 1, not 0\n"
    assert _campaign(admitted, "--compilers", "-1") == 2
    assert capsys.readouterr().err == "campaign: error: --compilers must be 0 or more\n"
    assert _campaign(admitted, "--sample", "0") == 2
    assert capsys.readouterr().err == "campaign: error: --sample must be at least 1, not 0\n"
    assert _campaign(admitted, "--sample-per-substrate", "0") == 2
    assert capsys.readouterr().err == "campaign: error: --sample-per-substrate must be at least 1, not 0\n"
    assert _campaign(admitted, "--sample", "3", "--sample-per-substrate", "1") == 2
    assert capsys.readouterr().err == ("campaign: error: --sample and --sample-per-substrate draw differently: give one "
                                       "of them\n")


def test_a_sample_is_drawn_over_every_substrate_the_same_for_a_seed_and_keeps_each_plans_order():
    from types import SimpleNamespace

    from harness.engine.plan import Plan, sampled

    def plan(name, n):
        return Plan(name, f"{name}.py", "src", "sha", [SimpleNamespace(id=f"{name}:{i}") for i in range(n)])

    plans = [plan("a", 40), plan("b", 40), plan("c", 2)]
    drawn = sampled(plans, 20, seed=0)
    ids = [m.id for p in drawn for m in p.mutants]
    assert len(ids) == 20 and len(set(ids)) == 20
    assert {p.name for p in drawn} >= {"a", "b"}  # not the first 20 of the first plan
    for p in drawn:  # each plan's own mutants, in their order
        assert [m.id for m in p.mutants] == sorted((m.id for m in p.mutants), key=lambda i: int(i.split(":")[1]))
    assert [m.id for p in sampled(plans, 20, seed=0) for m in p.mutants] == ids
    assert [m.id for p in sampled(plans, 20, seed=1) for m in p.mutants] != ids
    assert all(p.mutants for p in sampled(plans, 3, seed=0))  # a plan none of whose mutants is drawn is dropped
    assert [m.id for p in sampled(plans, 500, seed=0) for m in p.mutants] == [m.id for p in plans for m in p.mutants]
    assert len(plans[0].mutants) == 40  # the plans given are left as they were


def test_a_sample_per_substrate_draws_as_many_of_each_and_a_larger_one_keeps_the_smallers():
    from types import SimpleNamespace

    from harness.engine.plan import Plan, plans_sampled_per_substrate

    def plan(name, n):
        return Plan(name, f"{name}.py", "src", "sha", [SimpleNamespace(id=f"{name}:{i}") for i in range(n)])

    plans = [plan("a", 40), plan("b", 40), plan("c", 2), plan("d", 0)]
    two = plans_sampled_per_substrate(plans, 2, seed=0)
    assert [(p.name, len(p.mutants)) for p in two] == [("a", 2), ("b", 2), ("c", 2), ("d", 0)]
    three = plans_sampled_per_substrate(plans, 3, seed=0)
    assert [(p.name, len(p.mutants)) for p in three] == [("a", 3), ("b", 3), ("c", 2), ("d", 0)]
    for small, large in zip(two, three):
        assert {m.id for m in small.mutants} <= {m.id for m in large.mutants}
    assert [m.id for m in two[0].mutants] != ["a:0", "a:1"] or [m.id for m in two[1].mutants] != ["b:0", "b:1"]


def test_a_sampled_campaign_runs_only_the_drawn_mutants(admitted, capsys):
    assert _campaign(admitted, "rule_compliant", "--sample", "1", "--naive") == 0
    assert "campaign: 1 substrate(s), 1 mutants, 1 to run (0 stored)" in capsys.readouterr().out
    assert _campaign(admitted, "rule_compliant", "--sample-per-substrate", "2", "--naive") == 0
    assert "campaign: 1 substrate(s), 2 mutants, 2 to run (0 stored)" in capsys.readouterr().out


def test_compilers_beyond_the_cores_the_workers_leave_are_said_to_run_lowered(admitted, tmp_path, capsys):
    cores = os.cpu_count() or 1
    assert _campaign(admitted, "rule_compliant", "--compilers", str(cores + 1), "--store",
                     str(tmp_path / "r.jsonl")) == 0
    assert (f"1 worker(s) over the CPU, {cores + 1} process(es) compiling batches ahead (2 at nice 10)"
            in capsys.readouterr().out)


@pytest.mark.parametrize("slot, gpus, visible, expected", [
    (0, 0, None, {}),
    (0, 2, None, {"CUDA_VISIBLE_DEVICES": "0"}),
    (3, 2, None, {"CUDA_VISIBLE_DEVICES": "1"}),
    (2, 2, "2,3", {"CUDA_VISIBLE_DEVICES": "2"}),
    (1, 2, "GPU-aaa, GPU-bbb", {"CUDA_VISIBLE_DEVICES": "GPU-bbb"}),
    (5, 1, "1", {"CUDA_VISIBLE_DEVICES": "1"}),
])
def test_worker_slots_take_the_visible_gpus_in_turn(slot, gpus, visible, expected):
    from harness.engine.run import worker_environment

    assert worker_environment(slot, gpus, visible) == expected


def test_a_campaign_killed_with_sigkill_resumes_without_redoing_finished_mutants(admitted, tmp_path, capsys):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO_ROOT

    store = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "harness.campaign", "rule_compliant", "--backend", "cpu", "--no-progress",
               "--substrates-dir", str(admitted / "substrates"), "--store", str(store),
               "--cache-dir", str(tmp_path / "cold-cache"), "--batch-size", "1"]  # cold, each mutant compiled
    # alone: g++ runs keep the campaign running long enough for the kill to land mid-run
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not store.is_file() or len(store.read_text().splitlines()) < 3):
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the campaign and its workers, mid-run
    process.wait()
    finished = len(store.read_text().splitlines())
    assert 3 <= finished < 15, "the kill must land mid-campaign"

    assert main(["rule_compliant", "--backend", "cpu", "--no-progress", "--substrates-dir",
                 str(admitted / "substrates"), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"15 mutants, {15 - finished} to run ({finished} stored)" in out
    keys = [line.split('"mutant_id": ')[1].split(",")[0] for line in store.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 15


def test_every_mutant_of_the_template_gets_the_status_its_fault_earns(admitted, tmp_path, capsys):
    report = tmp_path / "all.json"
    assert main(["rule_compliant", "--backend", "cpu", "--no-progress", "--substrates-dir",
                 str(admitted / "substrates"), "--store", str(tmp_path / "r.jsonl"), "--json", str(report)]) == 0
    mutants = {m["id"].split(":", 1)[1]: (m["status"], m.get("statusReason", ""))
               for m in json.loads(report.read_text())["files"]["rule_compliant.cu"]["mutants"]}
    # An index narrowed to int overflows only past 2**31 elements: no suite can reach it.
    assert {k for k, (status, _why) in mutants.items() if status == "Survived"} == {
        "L4C5:narrow_long_long:0", "L4C20:narrow_long_long:0"}
    assert {status for status, _why in mutants.values()} == {"Survived", "Killed"}
    # The smallest trials go first (trial_order): the misaligned suite's trial 0, 3 x 37, is the smallest,
    # and only a misaligned shape has threads past the end (T0's 64 x 256 fills its blocks exactly).
    for mutant_id, killed_by in [
            ("L5C11:relational_boundary:0", "misaligned trial 0: writes_in_bounds: 4 bytes changed in the guard band"
                                            " after out"),
            ("L4C30:thread_block_swap:0", "misaligned trial 0: output_fully_written: "),
            ("L6C22:index_off_by_one:0", "misaligned trial 0: output_matches: ")]:
        assert mutants[mutant_id][1].startswith(killed_by), mutants[mutant_id]
    out = capsys.readouterr().out
    assert "survivors:\nrule_compliant:L4C5:narrow_long_long:0  L4: -    long long i = (long long)blockIdx.x" in out


class _Messages:
    """The worker's end of the pipe, kept in a list."""

    def __init__(self):
        self.sent = []

    def send(self, message):
        self.sent.append(message)


def test_a_worker_told_of_an_earlier_mutants_code_reports_a_duplicate_of_it(admitted):
    from harness.engine.compile import compile_variants
    from harness.engine.mutants import generate
    from harness.engine.worker import CampaignJob, _load_entry, run_campaign_job

    file = str(admitted / "substrates" / "candidate_rule_compliant.py")
    job = CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=())
    entry = _load_entry(job)
    mutant = next(m for m in generate(entry.cuda, entry.name) if m.operator.value == "guard_deletion")
    earlier = compile_variants([mutant.apply(entry.cuda)], entry, "sm_90", "rule_compliant.cu")[0]
    conn = _Messages()
    run_campaign_job(CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=(mutant.id,),
                                 run_baseline=False, known_digests=((earlier.digest, "an_earlier_worker:L1C1:x:0"),)),
                     conn)
    (result,) = [m[1] for m in conn.sent if m[0] == "result"]
    assert (result["status"], result["detail"]) == ("duplicate", "compiled code identical to an_earlier_worker:L1C1:x:0's")


def test_each_result_s_timings_carry_the_kernels_time_so_far_for_a_worker_killed_later(admitted):
    # The parent keeps a worker's last timings: one killed on a hang or by Ctrl-C said its kernels' time after each
    # result, not only at its job's end.
    from harness.engine.mutants import generate
    from harness.engine.worker import KERNEL_TIME, CampaignJob, _load_entry, run_campaign_job

    file = str(admitted / "substrates" / "candidate_rule_compliant.py")
    entry = _load_entry(CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=()))
    mutants = tuple(m.id for m in generate(entry.cuda, entry.name))[:3]
    conn = _Messages()
    run_campaign_job(CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=mutants,
                                 time_kernels=True), conn)
    kinds = [m[0] for m in conn.sent]
    after_first = conn.sent[kinds.index("result") + 1]
    assert after_first[0] == "timings" and after_first[1][KERNEL_TIME] > 0
    assert conn.sent[-1][0] == "timings" and conn.sent[-1][1][KERNEL_TIME] >= after_first[1][KERNEL_TIME]


def test_trials_that_kill_most_per_byte_go_first():
    from harness.engine.worker import trial_order

    # Trial 0 is large and has killed most; trial 2 is small with a few kills: 3 / 10 beats 11 / 1000.
    assert trial_order({0: 10, 1: 0, 2: 2}, [1000, 500, 10]) == [2, 0, 1]
    # Nothing killed yet: the smallest first, ties by index.
    assert trial_order({}, [300, 100, 100]) == [1, 2, 0]


def test_worker_time_names_every_phase_and_the_rest():
    from harness.engine.run import WorkerTime

    worker_time = WorkerTime()
    worker_time.add({"start-up": 1.0, "mutants": 2.5}, 5.0)
    worker_time.add({"compiling": 0.5}, 1.0)
    assert worker_time.describe() == ("worker time 6.0 s over 2 worker(s): start-up 1.0, trials and references 0.0, "
                                      "unmutated runs 0.0, compiling 0.5, mutants 2.5, process start, imports and unreported 2.0")


def test_worker_time_says_how_much_of_it_the_workers_spent_on_a_processor():
    from harness.engine.run import WorkerTime

    worker_time = WorkerTime()
    worker_time.add({"start-up": 1.0, "mutants": 2.5, "processor time": 2.25}, 5.0)
    worker_time.add({"compiling": 0.5, "processor time": 0.5}, 1.0)
    assert worker_time.describe() == (
        "worker time 6.0 s over 2 worker(s), 2.8 s of it on a processor: start-up 1.0, trials and references 0.0, "
        "unmutated runs 0.0, compiling 0.5, mutants 2.5, process start, imports and unreported 2.0")


def test_worker_time_says_how_long_the_kernels_ran_on_the_device_where_they_were_timed():
    from harness.engine.run import WorkerTime

    worker_time = WorkerTime()
    worker_time.add({"start-up": 1.0, "mutants": 2.5, "kernels on the device": 1.75}, 5.0)
    worker_time.add({"compiling": 0.5, "kernels on the device": 0.5}, 1.0)
    assert worker_time.describe() == (
        "worker time 6.0 s over 2 worker(s), its kernels 2.2 s on the device: start-up 1.0, trials and references 0.0, "
        "unmutated runs 0.0, compiling 0.5, mutants 2.5, process start, imports and unreported 2.0")


def test_kernel_times_are_asked_of_the_backend_and_printed_with_the_worker_time(admitted, capsys, tmp_path):
    from harness.engine import worker

    assert dict(worker.backend_settings("cpu", None, False, time_kernels=True))["time_kernels"] is True
    assert "time_kernels" not in dict(worker.backend_settings("cpu", None, False))
    assert _campaign(admitted, "rule_compliant", "--kernel-times", "--store", str(tmp_path / "timed.jsonl")) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("worker time "))
    assert re.search(r"^worker time [0-9.]+ s over 1 worker\(s\)(, [0-9.]+ s of it on a processor)?, its kernels "
                     r"[0-9.]+ s on the device: ", line), line
    assert _campaign(admitted, "rule_compliant", "--store", str(tmp_path / "untimed.jsonl")) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("worker time "))
    assert "on the device" not in line
    # The naive mode (a process per mutant) times them too.
    assert _campaign(admitted, "rule_compliant", "--naive", "--kernel-times") == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("worker time "))
    assert re.search(r", its kernels [0-9.]+ s on the device: ", line), line


def test_worker_time_tells_the_mutants_time_apart_without_counting_it_twice():
    from harness.engine.run import WorkerTime

    worker_time = WorkerTime()
    worker_time.add({"mutants": 2.5, "mutants: kernel: runs": 1.0, "mutants: loading": 0.25}, 3.0)
    worker_time.add({"mutants": 1.0, "mutants: kernel: runs": 0.5}, 1.0)
    assert worker_time.describe() == (
        "worker time 4.0 s over 2 worker(s): start-up 0.0, trials and references 0.0, unmutated runs 0.0, "
        "compiling 0.0, mutants 3.5, process start, imports and unreported 0.5\n"
        "mutants' time: kernel: runs 1.5, loading 0.2, the rest (compared code, trial order, messages) 1.8")


def test_a_part_of_a_part_of_the_mutants_time_is_counted_once():
    from harness.engine.run import WorkerTime

    worker_time = WorkerTime()
    worker_time.add({"mutants": 4.0, "mutants: checkers": 3.0, "mutants: checkers: the kernel's runs": 2.0,
                     "mutants: kernel: runs": 0.5}, 4.0)
    assert worker_time.describe().splitlines()[1] == (
        "mutants' time: checkers 3.0, checkers: the kernel's runs 2.0, kernel: runs 0.5, the rest (compared code, "
        "trial order, messages) 0.5")


def test_the_start_times_are_each_substrates_first_worker_milestones_of_the_first_substrates_given(monkeypatch):
    from harness.engine import run

    now = iter([1.0, 2.0, 3.0, 4.0, 5.5, 6.0, 7.0, 9.0, 10.0, 11.0])
    monkeypatch.setattr(run.time, "perf_counter", lambda: next(now))
    times = run.StartTimes(started=0.0)
    times.given("a")                                            # 1.0
    times.given("b")                                            # 2.0
    times.saw("a", ("step", "building the trials"))             # 3.0
    times.saw("b", ("step", "building the trials"))             # 4.0
    times.saw("a", ("step", "compiling the unmutated source"))  # 5.5
    times.saw("a", ("baseline", True, "", 0.1))                 # 6.0
    times.saw("a", ("result", {}))                              # 7.0
    times.saw("a", ("result", {}))                              # 9.0: not the first result
    times.saw("a", ("step", "a mutant's trial"))                # no milestone: no clock read
    times.given("c")                                            # 10.0: the third given, not among the first two
    assert times.describe(2) == ("the start, s from the run's start, median/last of the first 2 substrate(s): "
                                 "given 1.5/2.0, started 3.5/4.0, trials 5.5/5.5, baseline 6.0/6.0, "
                                 "first result 7.0/7.0")
    assert run.StartTimes().describe(4) == ""


def test_the_end_is_when_the_last_substrates_one_a_slot_ended_and_which_was_last(monkeypatch):
    from harness.engine import run

    now = iter([1.0, 2.0, 3.0, 8.0, 9.0, 12.5])
    monkeypatch.setattr(run.time, "perf_counter", lambda: next(now))
    times = run.StartTimes(started=0.0)
    assert times.describe_end(2) == ""
    times.given("a")   # 1.0
    times.given("b")   # 2.0
    times.ended("a")   # 3.0: a's slot takes c
    times.given("c")   # 8.0
    times.ended("b")   # 9.0
    times.ended("c")   # 12.5
    assert times.describe_end(2) == ("the end, s from the run's start: the last 2 substrate(s) ended at 9.0 (first), "
                                     "10.8 (median), 12.5 (last: c, given at 8.0)")
    assert times.describe_end(5).startswith("the end, s from the run's start: the last 3 substrate(s) ended at 3.0")


def test_a_run_cut_short_says_what_each_unfinished_substrates_worker_was_doing_and_for_how_long(monkeypatch):
    # kb_avgpool2d's worker spent the whole of a 309 s device call building its five 16 GiB T0 trials on the H100: the
    # interrupted campaign said only "0 mutant(s) judged".
    from harness.engine import run

    now = iter([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 309.5])
    monkeypatch.setattr(run.time, "perf_counter", lambda: next(now))
    times = run.StartTimes(started=0.0)
    times.given("kb_avgpool2d")                                           # 1.0
    times.saw("kb_avgpool2d", ("step", "building the trials"))            # 2.0
    times.saw("kb_avgpool2d", ("step", "building the trials: T0_original trial 4, 5 of 18"))  # no milestone
    times.given("kb_argmax")                                              # 3.0
    times.saw("kb_argmax", ("step", "building the trials"))               # 4.0
    times.saw("kb_argmax", ("step", "compiling the unmutated source"))    # 5.0
    times.ended("kb_argmax")                                              # 6.0: ended, not said
    assert times.describe_unfinished() == [                                # 309.5
        "campaign: kb_avgpool2d: cut short building its trials, 307.5 s into it (308.5 s since its worker was given "
        "it; its last step: building the trials: T0_original trial 4, 5 of 18)"]
    assert run.StartTimes(started=0.0).describe_unfinished(now=1.0) == []


def test_the_bar_shows_what_a_worker_is_doing_at_most_twice_a_second(monkeypatch):
    # kb_avgpool2d's worker built its trials for five minutes, the bar at 0 all along.
    import io

    from tqdm import tqdm

    from harness.engine import run

    now = iter([10.0, 10.2, 10.6])
    monkeypatch.setattr(run.time, "monotonic", lambda: next(now))
    progress = run.Progress(2, disabled=True)
    progress.step("kb_avgpool2d: building the trials")  # a disabled bar: nothing, no clock read
    shown = io.StringIO()
    progress.bar = tqdm(total=2, file=shown, disable=False)
    progress.step("kb_avgpool2d: building the trials: T0_original trial 1, 2 of 18")  # 10.0
    progress.step("kb_avgpool2d: building the trials: T0_original trial 2, 3 of 18")  # 10.2: too soon
    assert "now=kb_avgpool2d: building the trials: T0_original trial 1, 2 of 18" in shown.getvalue()
    assert "trial 2, 3 of 18" not in shown.getvalue()
    progress.step("kb_avgpool2d: building the trials: T0_original trial 3, 4 of 18")  # 10.6
    assert "killed=0, survived=0, now=kb_avgpool2d: building the trials: T0_original trial 3, 4 of 18" in (
        shown.getvalue())
    progress.close()


def test_a_memory_fault_is_blamed_only_when_judged_as_the_first_mutant_of_a_fresh_worker(tmp_path, capsys):
    # `n < 0` never holds, so the wild write is dead code; its negation writes 4 TiB past `out`. The CPU
    # shim catches the SIGSEGV, which used to end the worker: the mutant is the second of its worker, so
    # it is judged again as a fresh worker's first, in that worker's trial order.
    rule_candidates.write_candidates(tmp_path, [])
    (tmp_path / "substrates" / "candidate_RuleSeveral.py").unlink()
    (tmp_path / "substrates" / "candidate_rule_compliant.py").unlink()
    (tmp_path / "substrates" / "candidate_wild_write.py").write_text(rule_candidates.variant_text("wild_write", [(
        "    out[i] = fabsf(x[i]) + 0.5f * x[i];",
        "    if (n < 0) out[i + (1LL << 40)] = 0.0f;\n    out[i] = fabsf(x[i]) + 0.5f * x[i];")]))
    assert gate_main([str(tmp_path / "substrates" / "candidate_wild_write.py"), "--backend", "cpu", "--no-progress",
                      "--timeout", "60"]) == 0
    report = tmp_path / "report.json"
    assert main(["--backend", "cpu", "--substrates-dir", str(tmp_path / "substrates"), "--store",
                 str(tmp_path / "results.jsonl"), "--no-progress", "--operator", "relational_negation",
                 "--json", str(report)]) == 0
    output = capsys.readouterr().out
    assert "over 1 worker(s)" in output  # the fault did not end the worker
    outcomes = json.loads(report.read_text())["substrateHarness"]["substrates"]["wild_write"]["outcomes"]
    assert [(mutant_id.split(":")[1], o["status"]) for mutant_id, o in outcomes.items()] == [
        ("L5C11", "killed"), ("L6C11", "runtime_error")]
    wild = outcomes["wild_write:L6C11:relational_negation:0"]["detail"]
    # out lies between fences, mapped high: 4 TiB on is past the 47 bits of the address space, which x86 reports so
    assert re.search(r"trial \d+: CPU backend: memory fault: SIGSEGV \(an address outside the address space, not "
                     r"reported\) at address \(nil\) in block \(\d+,0,0\), thread \(\d+,0,0\) \(judged again as the "
                     r"first mutant of a fresh worker\)$", wild), wild


def test_a_mutant_whose_worker_dies_is_blamed_only_after_dying_first_in_a_fresh_one(
        admitted, tmp_path, monkeypatch, capsys):
    # A death the shim cannot catch (a heap an earlier mutant corrupted, say): played by a script.
    from harness.processes import WorkerLost

    jobs = []

    def scripted_worker(worker_time, job, handle, starter):
        jobs.append(job)
        first = job.mutant_ids[0]
        if len(jobs) == 1:
            handle(("mutant", first))
            handle(("result", _result(first, "killed", "a")))
            first = job.mutant_ids[1]
        handle(("mutant", first))
        raise WorkerLost(f"the worker process died during {first} T0_original trial 0 (killed by signal SIGSEGV)")

    outcomes = _scripted_campaign(admitted, tmp_path, monkeypatch, capsys, scripted_worker)
    first, dying = jobs[0].mutant_ids
    assert [job.mutant_ids for job in jobs] == [(first, dying), (dying,)]
    assert {m: o["status"] for m, o in outcomes.items()} == {first: "killed", dying: "runtime_error"}
    assert outcomes[dying]["detail"] == (f"the worker process died during {dying} T0_original trial 0 (killed by "
                                         f"signal SIGSEGV) (the first mutant of a fresh worker)")


def test_a_mutant_a_worker_hands_back_is_the_first_of_the_next_worker_and_judged_only_there(
        admitted, tmp_path, monkeypatch, capsys):
    # The parent's side of a trial damaged by a stray write (the worker's side is tested below): workers are
    # played by a script, since no real kernel here damages a worker's trial reproducibly.

    jobs = []

    def scripted_worker(worker_time, job, handle, starter):
        jobs.append(job)
        first, *rest = job.mutant_ids
        script = ([("mutant", first), ("result", _result(first, "killed", "a")), ("mutant", rest[0]),
                   ("retry", rest[0], "misaligned trial 0: output_matches: damaged; the worker's copy of that "
                                      "trial has changed")]
                  if len(jobs) == 1 else
                  [("mutant", m) for m in job.mutant_ids[:1]] + [("result", _result(job.mutant_ids[0], "killed", "b")),
                                                                  ("done",)])
        for message in script:
            if handle(message):
                return

    outcomes = _scripted_campaign(admitted, tmp_path, monkeypatch, capsys, scripted_worker)
    first, handed_back = jobs[0].mutant_ids
    assert jobs[1].mutant_ids == (handed_back,)
    assert (jobs[0].run_baseline, jobs[1].run_baseline) == (True, False)
    assert {m: o["status"] for m, o in outcomes.items()} == {first: "killed", handed_back: "killed"}
    assert outcomes[handed_back]["detail"] == "detail b"


@pytest.mark.parametrize("loss", ["lost", "handed back"])
def test_a_matrix_row_lost_or_handed_back_in_its_queued_trials_is_judged_again_a_trial_at_a_time(
        admitted, tmp_path, monkeypatch, capsys, loss):
    # A row's trials after the first are queued on a GPU and read at once (harness.engine.row): a worker that hangs or
    # dies there, or whose read the device fails (the worker hands the mutant back), cannot say which trial did it, so
    # the mutant goes first to a fresh worker that runs its row a trial at a time; the row's limit is the first
    # worker's, as the step timeout is.
    from harness.processes import WorkerLost

    jobs = []
    cell = {"suite": "T0_original", "trial": 0, "status": "passed"}

    def scripted_worker(worker_time, job, handle, starter):
        jobs.append(job)
        first = job.mutant_ids[0]
        if len(jobs) == 1:
            for message in [("step_timeout", 25.0), ("row_timeout", 9.5), ("mutant", first), ("row", first),
                            ("trial", "T0_original", 0), ("cell", cell), ("queued", first)]:
                handle(message)
            if loss == "lost":
                raise WorkerLost(f"timed out after 9.5 s during {first}: trials 1 to 10 queued (the worker was killed)")
            handle(("retry", first, "its queued trials failed the device (CUDA error): judged again a trial at a time"))
            return
        for mutant_id in job.mutant_ids:
            handle(("mutant", mutant_id))
            handle(("row", mutant_id))
            handle(("result", {**_result(mutant_id, "survived", mutant_id), "cells": [cell]}))
        handle(("done",))

    _scripted_campaign(admitted, tmp_path, monkeypatch, capsys, scripted_worker, "--matrix")
    first = jobs[0].mutant_ids[0]
    assert (jobs[0].rows_alone, jobs[0].row_timeout) == ((), None)
    assert (jobs[1].mutant_ids[0], jobs[1].rows_alone, jobs[1].row_timeout) == (first, (first,), 9.5)
    assert len(jobs) == 2


def _scripted_campaign(admitted, tmp_path, monkeypatch, capsys, scripted_worker, *extra) -> dict:
    """A campaign over rule_compliant whose workers are played by `scripted_worker`: its outcomes by mutant id."""
    from harness.engine import run

    monkeypatch.setattr(run, "_timed_converse", scripted_worker)
    report = tmp_path / "report.json"
    assert main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store",
                 str(tmp_path / "results.jsonl"), "--no-progress", *OPERATORS, "--json", str(report),
                 "rule_compliant", *extra]) == 0
    capsys.readouterr()
    return json.loads(report.read_text())["substrateHarness"]["substrates"]["rule_compliant"]["outcomes"]


def _result(mutant_id: str, status: str, digest: str) -> dict:
    return {"mutant_id": mutant_id, "status": status, "detail": f"detail {digest}", "seconds": 0.1,
            "ptx_sha256": digest}


def _template_job(admitted, operator: str, count: int):
    from harness.engine.mutants import generate
    from harness.engine.worker import CampaignJob, _load_entry

    file = str(admitted / "substrates" / "candidate_rule_compliant.py")
    entry = _load_entry(CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=()))
    ids = tuple(m.id for m in generate(entry.cuda, entry.name) if m.operator.value == operator)[:count]
    return CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=ids, run_baseline=False)


def _damaging(monkeypatch, campaign_worker, when):
    """first_failure fails every run once when() holds, and then, like a stray write, changes every trial."""
    built = []
    real_prepare = campaign_worker.prepare_trials

    def prepare(*args, **named):
        trials = real_prepare(*args, **named)
        built.extend(trials.built)
        return trials

    monkeypatch.setattr(campaign_worker, "prepare_trials", prepare)

    def first_failure(run, expected, entry):
        if not when():
            return ""
        for trial in built:
            trial.inputs[0].add_(1.0)
        return "output_matches: damaged"

    monkeypatch.setattr(campaign_worker, "first_failure", first_failure)


def test_a_kill_on_a_trial_its_run_damaged_is_the_mutants_own_when_it_ran_first(admitted, monkeypatch):
    from harness.engine import worker as campaign_worker

    _damaging(monkeypatch, campaign_worker, lambda: True)
    conn = _Messages()
    campaign_worker.run_campaign_job(_template_job(admitted, "narrow_long_long", 2), conn)
    results = [m[1] for m in conn.sent if m[0] == "result"]
    assert len(results) == 1  # the worker ends: its trials are damaged
    assert results[0]["status"] == "killed"
    assert results[0]["detail"].endswith("output_matches: damaged (and its stray writes changed the worker's copy "
                                         "of the trial)")


def test_a_kill_on_a_damaged_trial_after_other_mutants_is_judged_again_in_a_fresh_worker(admitted, monkeypatch):
    from harness.engine import worker as campaign_worker

    conn = _Messages()
    job = _template_job(admitted, "narrow_long_long", 2)
    _damaging(monkeypatch, campaign_worker, lambda: ("mutant", job.mutant_ids[1]) in conn.sent)
    campaign_worker.run_campaign_job(job, conn)
    assert [m[1]["status"] for m in conn.sent if m[0] == "result"] == ["survived"]
    (retry,) = [m for m in conn.sent if m[0] == "retry"]
    assert retry[1] == job.mutant_ids[1]
    assert retry[2].endswith("output_matches: damaged; the worker's copy of that trial has changed")


def test_a_kill_on_an_intact_trial_stands_without_running_the_unmutated_kernel_again(admitted, monkeypatch):
    from harness.engine import worker as campaign_worker

    monkeypatch.setattr(campaign_worker, "first_failure", lambda run, expected, entry: "output_matches: wrong")
    conn = _Messages()
    campaign_worker.run_campaign_job(_template_job(admitted, "narrow_long_long", 2), conn)
    assert [m[1]["status"] for m in conn.sent if m[0] == "result"] == ["killed", "killed"]
    assert not any(m[0] == "step" and "unmutated kernel again" in m[1] for m in conn.sent)


def test_a_kernelbench_root_without_problems_is_a_usage_error_from_the_flag_or_the_environment(
        admitted, tmp_path, monkeypatch, capsys):
    expected = (f"campaign: error: --kb-root (or $KERNELBENCH_ROOT): KernelBench root {tmp_path}: no problems there "
                f"(looked for {tmp_path / 'KernelBench' / 'level1'} and {tmp_path / 'level1'})\n")
    assert _campaign(admitted, "--kb-root", str(tmp_path)) == 2
    assert capsys.readouterr().err == expected
    monkeypatch.setenv("KERNELBENCH_ROOT", str(tmp_path))
    assert _campaign(admitted) == 2
    assert capsys.readouterr().err == expected


def test_a_trials_checksum_changes_with_any_element_of_any_tensor():
    import torch

    from harness.engine.worker import Trial, trial_checksum

    x = torch.arange(1001, dtype=torch.float32)  # 4004 bytes: 500 words and 4 bytes left over
    trial = Trial("s", 0, [x, 3, torch.tensor(2.0)], torch.zeros(7, dtype=torch.float16))
    before = trial_checksum(trial)
    assert trial_checksum(Trial("s", 0, [x.clone(), 3, torch.tensor(2.0)], torch.zeros(7, dtype=torch.float16))) == before
    # A misaligned suite's tensor is a view 4 bytes into its storage: it has sums too.
    misaligned = torch.arange(20, dtype=torch.float32)[1:]
    assert trial_checksum(Trial("s", 0, [misaligned], misaligned)) == trial_checksum(
        Trial("s", 0, [misaligned.clone()], misaligned.clone()))
    for damage in (lambda: x.__setitem__(0, -1.0), lambda: x.__setitem__(1000, 5.0),
                   lambda: trial.inputs[2].fill_(3.0), lambda: trial.expected.__setitem__(6, 1.0)):
        damage()
        assert trial_checksum(trial) != before
        before = trial_checksum(trial)


def test_the_trials_poison_flags_read_at_once_are_each_official_outputs_own():
    from types import SimpleNamespace

    import torch

    from harness.engine.worker import prepare_trials, trial_checksum
    from harness.gate.checks.guards import POISON_BYTES, poison_held
    from harness.gate.phases import PhaseClock

    # Each trial's official output: clean, pattern one somewhere, pattern two somewhere, both, and not a tensor.
    outputs = [torch.zeros(8), torch.zeros(8), torch.zeros(8), torch.zeros(16, dtype=torch.uint8), 3.5]
    outputs[1].view(torch.uint8)[4:8] = POISON_BYTES[0]
    outputs[2].view(torch.uint8)[:4] = POISON_BYTES[1]
    outputs[3][0], outputs[3][9] = POISON_BYTES
    entry = SimpleNamespace(suites=lambda: [("a", 2, lambda t: [torch.tensor([t])]),
                                            ("b", 3, lambda t: [torch.tensor([2 + t])])])
    trials = prepare_trials(entry, lambda x: outputs[int(x)], torch.device("cpu"), PhaseClock())
    assert [(trial.suite, trial.t) for trial in trials] == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]
    assert [trial.expected_poison for trial in trials] == [(False, False), (True, False), (False, True),
                                                           (True, True), None]
    for trial in trials.built[:4]:  # what a read of each gives
        assert trial.expected_poison == tuple(bool(poison_held(trial.expected, p)) for p in POISON_BYTES)
    assert trials.checksums == [trial_checksum(trial) for trial in trials]  # read with the flags, each its own


def test_the_trials_checksums_read_at_once_are_each_trials_own():
    import torch

    from harness.engine.worker import Trial, trial_checksum, trial_checksums
    from harness.gate.checks.guards import tensor_checksum

    x = torch.arange(1001, dtype=torch.float32)
    trials = [Trial("s", 0, [x, 3, torch.tensor(2.0)], torch.zeros(7, dtype=torch.float16)),
              Trial("s", 1, [4], torch.ones(3)), Trial("s", 2, [x[1:], x[:5]], x[2:])]
    assert trial_checksums(trials) == [trial_checksum(t) for t in trials] == [
        (tensor_checksum(x), tensor_checksum(torch.tensor(2.0)), tensor_checksum(torch.zeros(7, dtype=torch.float16))),
        (tensor_checksum(torch.ones(3)),), (tensor_checksum(x[1:]), tensor_checksum(x[:5]), tensor_checksum(x[2:]))]
    assert trial_checksums([]) == [] and trial_checksums([Trial("s", 0, [1], 2.0)]) == [()]


def test_each_inputs_sum_is_its_part_of_the_trials_checksum_and_what_run_kernel_computes():
    import torch

    from harness.engine.worker import Trial, input_sums, trial_checksum
    from harness.gate.checks.guards import INPUT_GUARD_BYTES, GuardedTensor, tensor_checksum

    misaligned = torch.arange(20, dtype=torch.float32)[1:]
    trial = Trial("s", 0, [misaligned, 3, torch.tensor(2.0)], torch.zeros(7, dtype=torch.float16))
    sums = input_sums(trial, trial_checksum(trial))
    assert sums == [tensor_checksum(misaligned), None, tensor_checksum(torch.tensor(2.0))]
    # run_kernel compares them with the sums of the inputs' guarded copies: equal bytes, equal sums.
    assert tensor_checksum(GuardedTensor.copy_of(misaligned, "cpu", INPUT_GUARD_BYTES[0]).tensor) == sums[0]


@pytest.mark.parametrize("gpus, cores, expected", [
    (0, 16, 1),   # the CPU backend: one worker unless asked
    (1, 16, 12),  # twelve per GPU, the fastest count measured on an H200 with 16 cores
    (2, 32, 24),
    (8, 128, 96),
    (1, 64, 12),
    (2, 6, 4),    # never more workers than three quarters of the cores: the pool and the parent keep the rest
    (1, 1, 1),
])
def test_default_workers_are_twelve_per_gpu_on_three_quarters_of_the_cores(gpus, cores, expected):
    assert default_workers(gpus, cores) == expected


GiB = 2**30


@pytest.mark.parametrize("worker_bytes, gpu_bytes, expected", [
    ([2 * GiB] * 28, 139 * GiB, 12),                  # the 28: twelve workers' trials fit many times over
    ([40 * GiB] * 4 + [2 * GiB] * 20, 139 * GiB, 3),  # KernelBench-sized T0s: the three largest fit, not four
    ([200 * GiB, 2 * GiB], 139 * GiB, 1),             # one that fits nowhere still gets its worker (and its verdict)
    ([60 * GiB] * 2, 139 * GiB, 12),                  # fewer substrates than workers: all of them fit
    ([40 * GiB] * 28, None, 12),                      # the GPU's memory not known: no limit
])
def test_default_workers_are_as_many_as_the_largest_substrates_trials_fit_beside_each_other(worker_bytes, gpu_bytes,
                                                                                            expected):
    assert workers_that_fit(12, worker_bytes, gpu_bytes) == expected


def test_a_campaign_says_why_it_runs_fewer_workers_than_its_default(capsys):
    from harness.campaign import default_workers_that_fit
    from harness.engine.plan import Plan

    big, small = (Plan(name, "f.py", "", "", [], t0_bytes=size) for name, size in (("big", 5 * GiB), ("small", 1024)))
    # A worker of `big` is estimated at 6 copies of its T0 and 2 GiB: 32 GiB; two fit in 80 GiB, three do not.
    assert default_workers_that_fit(24, 2, [big, big, big, small], 80 * GiB) == 4
    assert capsys.readouterr().out == ("campaign: 2 worker(s) a GPU, not 12: each keeps its substrate's trials on the "
                                       "device, and the largest substrates' would not fit in its 80 GiB side by side "
                                       "(--workers to choose)\n")
    assert default_workers_that_fit(12, 1, [small] * 28, 139 * GiB) == 12
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("mode, workers, cores, expected", [
    ("auto", 4, 16, True), ("auto", 8, 16, True), ("auto", 9, 16, False), ("auto", 2, 2, False),
    ("auto", 1, 2, True), ("always", 2, 2, True), ("never", 1, 16, False)])
def test_spare_workers_are_kept_where_each_worker_and_its_spare_can_have_a_core(mode, workers, cores, expected):
    assert spares_wanted(mode, workers, cores) is expected


@pytest.mark.parametrize("requested, backend, workers, cores, mode", [
    ("auto", "cuda", 4, 16, "warm"),     # a fault ends a GPU worker: the spare builds its trials ahead
    ("auto", "cpu", 1, 2, "always"),     # the CPU backend's workers seldom end: started ahead only
    ("auto", "cuda", 9, 16, "never"),    # no core for a spare
    ("always", "cuda", 4, 16, "always"), ("never", "cuda", 4, 16, "never"), ("warm", "cpu", 2, 2, "warm")])
def test_auto_spares_are_warmed_on_the_gpu_and_started_ahead_on_the_cpu(requested, backend, workers, cores, mode):
    assert spare_mode(requested, backend, workers, cores) == mode


def test_a_backend_made_ahead_goes_to_the_job_that_wants_one_made_so(tmp_path, monkeypatch):
    from harness import backends
    from harness.engine import worker

    made = []
    monkeypatch.setattr(backends, "create_backend", lambda name, **settings: made.append((name, settings)) or name)
    monkeypatch.setattr(worker, "_made_ahead", {})
    settings = worker.backend_settings("cuda", str(tmp_path), True)
    assert dict(settings) == {"cache_dir": tmp_path, "check_addresses": True, "blocking_sync": True}
    worker.make_backend_ahead("cuda", settings)
    assert made == [("cuda", {"cache_dir": tmp_path, "check_addresses": True, "blocking_sync": True})]
    assert worker._made_ahead == {("cuda", settings): "cuda"}
    # One that cannot be made ahead is left for the job, which says why as it always did.
    monkeypatch.setattr(backends, "create_backend", lambda name, **settings: 1 / 0)
    worker.make_backend_ahead("cpu", worker.backend_settings("cpu", None, False))
    assert list(worker._made_ahead) == [("cuda", settings)]


def test_on_the_cpu_backend_the_sanitizers_oracle_says_it_is_skipped_and_both_scores_are_tabled(admitted, capsys):
    assert _campaign(admitted, "rule_compliant") == 0
    out = capsys.readouterr().out
    assert "oracle sanitizers: skipped (CPU backend; compute-sanitizer checks CUDA kernels)" in out
    head = next(line for line in out.splitlines() if line.startswith("substrate"))
    assert head.split()[-5:] == ["by", "oracles", "value", "score", "score"]
    assert _campaign(admitted, "rule_compliant", "--oracles", "values") == 0
    assert "oracle sanitizers" not in capsys.readouterr().out


def test_worker_time_gives_the_parts_of_start_up_and_trials_that_a_worker_after_a_fault_pays_again():
    from harness.engine.run import WorkerTime

    worker_time = WorkerTime()
    worker_time.add({"start-up": 1.0, "start-up: backend": 0.75, "start-up: official model": 0.125,
                     "trials and references": 2.0, "trials and references: inputs": 1.5,
                     "trials and references: official outputs": 0.25, "mutants": 1.0, "mutants: loading": 0.5}, 5.0)
    assert worker_time.describe() == (
        "worker time 5.0 s over 1 worker(s): start-up 1.0, trials and references 2.0, unmutated runs 0.0, "
        "compiling 0.0, mutants 1.0, process start, imports and unreported 1.0\n"
        "mutants' time: loading 0.5, the rest (compared code, trial order, messages) 0.5\n"
        "start-up's time: backend 0.8, official model 0.1, the rest 0.1\n"
        "trials and references' time: inputs 1.5, official outputs 0.2, the rest 0.2")


def test_a_campaign_says_where_its_workers_start_up_and_trials_went(admitted, tmp_path, capsys):
    assert main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store",
                 str(tmp_path / "results.jsonl"), "--no-progress", *OPERATORS, "rule_compliant"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start_up = next(line for line in lines if line.startswith("start-up's time: "))
    assert re.fullmatch(r"start-up's time: (candidate imported|backend|official model) \d+\.\d, "
                        r"(candidate imported|backend|official model) \d+\.\d, "
                        r"(candidate imported|backend|official model) \d+\.\d, the rest \d+\.\d", start_up), start_up
    trials = next(line for line in lines if line.startswith("trials and references' time: "))
    assert re.fullmatch(r"trials and references' time: (inputs|official outputs) \d+\.\d, "
                        r"(inputs|official outputs) \d+\.\d, the rest \d+\.\d", trials), trials


class _JobAfterWarming(_Messages):
    """The worker's end of the pipe for a worker warmed ahead: what it sends kept, then its job to read."""

    def __init__(self, job):
        super().__init__()
        self.job = job

    def recv(self):
        self.sent.append(("read its job",))
        return ("target", (self.job,))


def test_a_worker_warmed_ahead_builds_the_trials_then_reads_its_job_and_judges_as_a_fresh_worker(admitted):
    from harness.engine.mutants import generate
    from harness.engine.worker import CampaignJob, _load_entry, run_campaign_job

    file = str(admitted / "substrates" / "candidate_rule_compliant.py")
    spec = CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=())
    entry = _load_entry(spec)
    ids = tuple(m.id for m in generate(entry.cuda, entry.name) if m.operator.value in ("guard_deletion",
                                                                                        "relational_boundary"))
    job = CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=ids, run_baseline=False)
    fresh, warmed = _Messages(), _JobAfterWarming(job)
    run_campaign_job(job, fresh)
    run_campaign_job(spec, warmed, wait_for_job=True)
    kinds = [m[0] if m[0] != "step" else m[1] for m in warmed.sent]
    # The trials and the unmutated source before the job is read; the mutants after.
    assert kinds.index("building the trials") < kinds.index("warmed ahead, waiting for its job") < kinds.index(
        "read its job") < kinds.index("mutant")
    results = [[(m[1]["mutant_id"], m[1]["status"], m[1]["detail"]) for m in conn.sent if m[0] == "result"]
               for conn in (fresh, warmed)]
    assert len(results[0]) == 2 and results[0] == results[1]


def test_a_worker_warmed_for_one_substrate_refuses_a_job_for_another(admitted):
    from harness.engine.worker import CampaignJob, run_campaign_job

    file = str(admitted / "substrates" / "candidate_rule_compliant.py")
    spec = CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=())
    other = CampaignJob(file=file, name="rule_compliant", backend="cpu", mutant_ids=(), batch_size=1)
    with pytest.raises(ValueError, match=r"a worker warmed for rule_compliant \(.*, batch size 32\) was given a job "
                                         r"for rule_compliant \(.*, batch size 1\)"):
        run_campaign_job(spec, _JobAfterWarming(other), wait_for_job=True)


def test_a_slots_spare_warmed_for_a_substrate_is_given_out_only_for_it(tmp_path):
    from harness.processes import WorkerStarter, converse
    from tests import worker_targets

    starter = WorkerStarter(ahead=True)
    taken = []
    try:
        taken.append(starter.take())
        assert taken[-1].warmed is False  # nothing warmed yet: the cold spare, or one started now
        starter.warm("substrate a", worker_targets.answers_then_serves, ())
        warmed = starter.take("substrate a")
        assert warmed.warmed is True
        seen = []
        converse(worker_targets.answers, (), 30.0, lambda message: seen.append(message) or True, worker=warmed)
        assert seen[0] == ("warmed",)  # what it did ahead, then its job
        starter.warm("substrate a", worker_targets.answers_then_serves, ())
        taken.append(starter.take("substrate b"))
        assert taken[-1].warmed is False  # warmed for another: stopped, and a worker started now
        taken.append(starter.take())
        assert taken[-1].warmed is False
    finally:
        for worker in taken:
            worker.stop()
        starter.close()


@pytest.mark.parametrize("mode", ["warm", "always"])
def test_under_warm_spares_every_worker_of_a_substrate_comes_from_a_starter_warming_the_next_for_it(
        mode, admitted, tmp_path, monkeypatch, capsys):
    from harness.engine.run import WarmingStarter
    from harness.processes import WorkerLost

    starters = []

    def scripted_worker(worker_time, job, handle, starter):
        starters.append(starter)
        first = job.mutant_ids[0]
        handle(("mutant", first))
        if len(starters) == 1:  # the first worker dies on its first mutant (its own runtime error)
            raise WorkerLost(f"the worker process died during {first} T0_original trial 0 (killed by signal SIGSEGV)")
        for mutant_id in job.mutant_ids:
            handle(("mutant", mutant_id))
            handle(("result", _result(mutant_id, "killed", mutant_id)))

    _scripted_campaign(admitted, tmp_path, monkeypatch, capsys, scripted_worker, "--spare-workers", mode)
    assert len(starters) == 2
    if mode == "always":
        assert not any(isinstance(s, WarmingStarter) for s in starters)
        return
    assert all(isinstance(s, WarmingStarter) for s in starters)
    file = str(admitted / "substrates" / "candidate_rule_compliant.py")
    assert {s.key for s in starters} == {(file, "rule_compliant", 32, False)}  # False: the cpu backend, unchecked
    spec = starters[1].spec  # the substrate alone: the mutants, digests and baseline come with each job
    assert (spec.mutant_ids, spec.batches, spec.known_digests, spec.run_baseline) == ((), (), (), False)


FORESEEN = ("kernel run: CUDA error 700 CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered "
            "(foreseen by the address check: a 4-byte access at 0x10, outside every allocation of the process; "
            "not made)")


def _foreseeing(monkeypatch, campaign_worker, conn, faulting: str, kill: str, damage: bool = False):
    """first_failure: the address check foresees a fault in `faulting` (writing into every trial first with `damage`),
    kills `kill` on every trial, passes the rest; trial_order's calls are recorded with the kills they were given."""
    from harness.backends import KernelFault

    built, orders = [], []
    real_prepare, real_order = campaign_worker.prepare_trials, campaign_worker.trial_order

    def prepare(*args, **named):
        trials = real_prepare(*args, **named)
        built.extend(trials.built)
        return trials

    monkeypatch.setattr(campaign_worker, "prepare_trials", prepare)
    monkeypatch.setattr(campaign_worker, "trial_order",
                        lambda kills, costs: orders.append(dict(kills)) or real_order(kills, costs))

    def first_failure(run, expected, entry):
        current = [m[1] for m in conn.sent if m[0] == "mutant"][-1]
        if current == faulting:
            if damage:
                for trial in built:
                    trial.inputs[0].add_(1.0)
            raise KernelFault(FORESEEN, poisons_context=False, foreseen=True)
        return "output_matches: wrong" if current == kill else ""

    monkeypatch.setattr(campaign_worker, "first_failure", first_failure)
    return orders


def test_a_foreseen_fault_is_a_runtime_error_the_worker_outlives_and_it_forgets_its_trial_order(
        admitted, monkeypatch):
    from harness.engine import worker as campaign_worker

    conn = _Messages()
    job = _template_job(admitted, "arithmetic_swap", 3)
    killed, faulting, _last = job.mutant_ids
    orders = _foreseeing(monkeypatch, campaign_worker, conn, faulting, kill=killed)
    campaign_worker.run_campaign_job(job, conn)
    results = {m[1]["mutant_id"]: m[1] for m in conn.sent if m[0] == "result"}
    assert [results[m]["status"] for m in job.mutant_ids] == ["killed", "runtime_error", "survived"]
    assert re.fullmatch(r"\w+ trial \d+: " + re.escape(FORESEEN), results[faulting]["detail"])
    # The kill taught the worker a trial order, which the fault made it forget, as a fresh worker would start.
    assert orders[1] and orders[2] == {}
    assert not any(m[0] == "retry" for m in conn.sent)


def test_a_foreseen_fault_that_wrote_into_the_trials_ends_the_worker(admitted, monkeypatch):
    from harness.engine import worker as campaign_worker

    conn = _Messages()
    job = _template_job(admitted, "arithmetic_swap", 3)
    orders = _foreseeing(monkeypatch, campaign_worker, conn, job.mutant_ids[0], kill="", damage=True)
    campaign_worker.run_campaign_job(job, conn)
    assert [(m[1]["mutant_id"], m[1]["status"]) for m in conn.sent if m[0] == "result"] == [
        (job.mutant_ids[0], "runtime_error")]  # no other mutant ran in this worker
    assert len(orders) == 1


def test_an_unmutated_kernel_the_address_check_stops_is_reported_so_by_its_worker(admitted, monkeypatch):
    import dataclasses

    from harness.backends import KernelFault
    from harness.engine import worker as campaign_worker

    def stopped(run, expected, entry):
        raise KernelFault(FORESEEN, poisons_context=False, foreseen=True)

    monkeypatch.setattr(campaign_worker, "first_failure", stopped)
    conn = _Messages()
    campaign_worker.run_campaign_job(dataclasses.replace(_template_job(admitted, "arithmetic_swap", 2),
                                                         run_baseline=True), conn)
    (baseline,) = [m for m in conn.sent if m[0] == "baseline"]
    assert baseline[1] is False
    assert re.fullmatch(r"the address check stopped the unmutated source on \w+ trial \d+: " + re.escape(FORESEEN),
                        baseline[2])
    assert not any(m[0] == "result" for m in conn.sent)


def test_a_substrate_whose_unmutated_kernel_the_check_stops_runs_its_mutants_unchecked(
        admitted, tmp_path, monkeypatch, capsys):
    from harness.engine import run

    jobs = []

    def scripted_worker(worker_time, job, handle, starter):
        jobs.append(job)
        if job.check_addresses:
            handle(("baseline", False, "the address check stopped the unmutated source on T0_original trial 0: "
                                       "kernel run: ...", 0.1))
            return
        handle(("baseline", True, "", 0.1))
        for mutant_id in job.mutant_ids:
            handle(("mutant", mutant_id))
            handle(("result", _result(mutant_id, "killed", mutant_id)))

    monkeypatch.setattr(run, "checks_addresses", lambda args, backend: True)
    monkeypatch.setattr(run, "_timed_converse", scripted_worker)
    report = tmp_path / "report.json"
    assert main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store",
                 str(tmp_path / "results.jsonl"), "--no-progress", *OPERATORS, "--json", str(report),
                 "rule_compliant"]) == 0
    err = capsys.readouterr().err
    assert [job.check_addresses for job in jobs] == [True, False]
    assert jobs[1].run_baseline and jobs[1].mutant_ids == jobs[0].mutant_ids
    assert ("rule_compliant: the address check stopped the unmutated source on T0_original trial 0: kernel run: ...; "
            "its mutants run without the address check") in err
    outcomes = json.loads(report.read_text())["substrateHarness"]["substrates"]["rule_compliant"]["outcomes"]
    assert {o["status"] for o in outcomes.values()} == {"killed"}


def test_a_slots_worker_that_ran_its_substrate_through_takes_the_next_with_the_statuses_fresh_workers_give(
        tmp_path, capsys):
    """One worker slot, two substrates: the worker that judged the first judges the second (its process, imports
    and backend kept), and every status is what a worker of its own gives each."""
    reports = {}
    for workers in ("1", "2"):
        reports[workers] = tmp_path / f"report-{workers}.json"
        assert main(["pad_const_b4", "masked_fill_b4", "--backend", "cpu", "--no-progress", "--operator",
                     "guard_deletion", "--workers", workers, "--compilers", "0", "--spare-workers", "never",
                     "--store", str(tmp_path / f"results-{workers}.jsonl"), "--cache-dir", str(tmp_path / "cache"),
                     "--json", str(reports[workers])]) == 0
        (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("worker time ")]
        assert (" over 2 worker(s) (1 kept from their slot's previous substrate), " in line) is (workers == "1"), line
    assert status_differences(json.loads(reports["1"].read_text()), json.loads(reports["2"].read_text())) == []
    assert len(statuses(json.loads(reports["1"].read_text()))) > 2


def test_mutants_run_from_their_schema_on_the_cpu_get_every_status_they_get_from_their_batches(admitted, tmp_path,
                                                                                                capsys):
    reports, lines = {}, {}
    for schemata in ("off", "on"):
        reports[schemata] = tmp_path / f"schemata-{schemata}.json"
        assert main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store",
                     str(tmp_path / f"store-{schemata}.jsonl"), "--no-progress", "--oracles", "values",
                     "--schemata", schemata, "--json", str(reports[schemata]), "rule_compliant"]) == 0
        lines[schemata] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("schemata: ")]
    batched, switched = (json.loads(reports[schemata].read_text()) for schemata in ("off", "on"))
    assert status_differences(batched, switched) == []
    assert lines["off"] == []
    (line,) = lines["on"]
    ran = re.match(r"schemata: (\d+) of (\d+) mutants run came from their substrate's schema", line)
    assert ran and 0 < int(ran.group(1)) < int(ran.group(2)), line  # its `long long` narrowing is left to its batch
    statuses_seen = {m["status"] for f in switched["files"].values() for m in f["mutants"]}
    assert {"Killed", "Survived"} <= statuses_seen, statuses_seen


def test_each_slot_s_first_worker_starts_before_the_plans_and_runs_the_slot_s_first_substrate(admitted, tmp_path,
                                                                                               capsys, monkeypatch):
    import harness.campaign
    import harness.processes

    events = []
    real_start, real_plans = harness.processes.start_worker, harness.campaign.make_plans
    monkeypatch.setattr(harness.processes, "start_worker", lambda env=None, prepare=None, method=None:
                        events.append("worker") or real_start(env, prepare, method))
    monkeypatch.setattr(harness.campaign, "make_plans", lambda *args: events.append("plans") or real_plans(*args))
    real_pool_start = harness.campaign.CompilePool.start
    monkeypatch.setattr(harness.campaign.CompilePool, "start",
                        lambda pool: events.append(f"pool of {pool.processes}") or real_pool_start(pool))
    assert main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store",
                 str(tmp_path / "results.jsonl"), "--no-progress", *OPERATORS, "--spare-workers", "never", "--workers",
                 "3", "--compilers", "1", "rule_compliant"]) == 0
    # One slot's worker (one substrate named, of three slots) and the compile pool, started before the plans; then
    # discovery's worker, in them; then none: the slot ran its substrate in the worker it adopted.
    assert events == ["worker", "pool of 1", "plans", "worker"]
    assert re.search(r"^worker time .* over 1 worker\(s\)", capsys.readouterr().out, re.M)
    assert multiprocessing.active_children() == []


def test_a_slot_no_plan_waits_for_ends_its_workers_at_once_not_after_every_slot(admitted, tmp_path, monkeypatch):
    import harness.campaign
    import harness.processes

    ended = []  # workers each stop_all ended, in order

    def counting(starters):
        held = [worker for starter in starters for worker in (starter._spare, starter._kept) if worker is not None]
        ended.append(len(held))
        harness.processes.stop_all(starters)

    monkeypatch.setattr(harness.campaign, "stop_all", counting)
    assert main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store",
                 str(tmp_path / "results.jsonl"), "--no-progress", *OPERATORS, "--spare-workers", "never",
                 "rule_compliant"]) == 0
    # The one plan's slot: its kept worker ended as the plan did; at the run's end, nothing left to end.
    assert ended == [1, 0]
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("matrix", [False, True], ids=["suites", "matrix"])
@pytest.mark.parametrize("at, sent", [(1, "short_of_memory"), (2, "retry")], ids=["fresh-worker", "later"])
def test_a_trial_the_device_s_memory_ran_out_on_judges_no_mutant(admitted, monkeypatch, matrix, at, sent):
    # torch's OutOfMemoryError is a RuntimeError naming CUDA: it was taken for a context the mutant broke, and the
    # mutant counted as killed. What ran out is the harness's allocations beside the campaign's other workers.
    import dataclasses

    import torch

    from harness.engine import worker as campaign_worker

    job = dataclasses.replace(_template_job(admitted, "arithmetic_swap", 2), matrix=matrix)
    method = "row_cell" if matrix else "run_trial"
    real = getattr(campaign_worker._SubstrateRun, method)

    def short_at_the_nth_mutant(self, *args, **kwargs):
        if self.started_here == at:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(campaign_worker._SubstrateRun, method, short_at_the_nth_mutant)
    conn = _Messages()
    campaign_worker.run_campaign_job(job, conn)
    results = [m[1]["mutant_id"] for m in conn.sent if m[0] == "result"]
    assert results == list(job.mutant_ids[:at - 1])  # the worker ended with the mutant it could not judge
    (said,) = [m for m in conn.sent if m[0] in ("retry", "short_of_memory")]
    assert said[:2] == (sent, job.mutant_ids[at - 1])
    words = r"\w+ trial \d+: the device's memory ran out \(CUDA out of memory\. Tried to allocate 2\.00 GiB\)"
    assert re.fullmatch(words + (": judged again, first in a fresh worker" if at > 1 else
                                 ", as the first mutant of a fresh worker"), said[2]), said[2]


def test_a_substrate_whose_fresh_worker_ran_out_of_memory_is_not_run_on_with_the_reason(tmp_path):
    from harness.engine.plan import Plan
    from harness.engine.run import Progress, _PlanMessages
    from harness.engine.store import ResultStore

    plan = Plan("rule_compliant", "f.py", "src", "sha", [])
    handle = _PlanMessages(plan, "cuda", ResultStore(tmp_path / "r.jsonl"), Progress(1, disabled=True), ["m"], {},
                           False, None, set())
    assert handle(("mutant", "m")) is False
    assert handle(("short_of_memory", "m", "T0_original trial 0: the device's memory ran out (x)")) is True
    assert plan.failure == "m: T0_original trial 0: the device's memory ran out (x)"
    assert handle.remaining == ["m"] and handle.state["current"] is None  # stored as nothing: not judged


def test_an_unmutated_launch_out_of_the_devices_memory_is_no_failure_of_the_source(admitted, monkeypatch):
    # kb_conv1d_dilated_strided beside eleven other workers on an H100: launch's 5.33 GiB output did not fit, and the
    # report said `the unmutated source fails T0_original trial 0: launch_arguments: launch raised OutOfMemoryError`.
    import dataclasses

    import torch

    import harness.gate.pipeline
    from harness.engine import worker as campaign_worker

    def short(*args):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 5.33 GiB")

    monkeypatch.setattr(harness.gate.pipeline, "_launch_problems", short)
    job = dataclasses.replace(_template_job(admitted, "arithmetic_swap", 2), run_baseline=True)
    conn = _Messages()
    assert campaign_worker.run_campaign_job(job, conn) is False
    assert [m for m in conn.sent if m[0] in ("baseline", "short_of_memory", "result")] == [
        ("short_of_memory", "rule_compliant", "the unmutated source on T0_original trial 0: the device's memory ran "
                                              "out (CUDA out of memory. Tried to allocate 5.33 GiB)")]


def test_a_substrate_out_of_memory_is_named_once_in_its_not_run_line(tmp_path):
    from harness.engine.plan import Plan
    from harness.engine.run import Progress, _PlanMessages
    from harness.engine.store import ResultStore

    plan = Plan("rule_compliant", "f.py", "src", "sha", [])
    handle = _PlanMessages(plan, "cuda", ResultStore(tmp_path / "r.jsonl"), Progress(1, disabled=True), ["m"], {},
                           False, None, set())
    assert handle(("short_of_memory", "rule_compliant", "building its trials, the device's memory ran out (x)"))
    assert plan.failure == "building its trials, the device's memory ran out (x)"


def _beside_rule_compliant(tmp_path, name: str, launch_start: str):
    """A substrates folder of rule_compliant and `name`, whose launch begins with `launch_start`, both gated."""
    rule_candidates.write_candidates(tmp_path, [])
    substrates = tmp_path / "substrates"
    (substrates / "candidate_RuleSeveral.py").unlink()
    (substrates / f"candidate_{name}.py").write_text(
        rule_candidates.variant_text(name, [("    out = torch.empty_like(x)\n", launch_start)]))
    assert gate_main([str(substrates), "--backend", "cpu", "--no-progress", "--timeout", "60"]) == 0
    return substrates


def _campaign_of_two_workers(tmp_path, substrates) -> int:
    return main(["--backend", "cpu", "--substrates-dir", str(substrates), "--store", str(tmp_path / "r.jsonl"),
                 "--no-progress", *OPERATORS, "--workers", "2", "--spare-workers", "never", "--json",
                 str(tmp_path / "report.json")])


_SHORT_ONCE = """    out = torch.empty_like(x)
    import pathlib

    marker = pathlib.Path(__file__).with_name("short.marker")
    if marker.exists():  # the device's memory ran out beside the campaign's other workers
        if marker.read_text() == "once":
            marker.unlink()
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")
"""


@pytest.mark.parametrize("short", ["once", "always"])
def test_a_substrate_out_of_memory_beside_others_is_judged_again_alone(tmp_path, capsys, short):
    # kb_conv2d and kb_conv1d_dilated_strided ran out of an H100's memory beside eleven other workers, and were left
    # out of the campaign ("run it with fewer --workers"); alone on the device they fit.
    substrates = _beside_rule_compliant(tmp_path, "short", _SHORT_ONCE)
    (substrates / "short.marker").write_text(short)
    status = _campaign_of_two_workers(tmp_path, substrates)
    captured = capsys.readouterr()
    assert ("campaign: short: the memory ran out beside the campaign's other workers: judged again, alone "
            "on the device\n") in captured.out
    mutants = json.loads((tmp_path / "report.json").read_text())["files"]
    if short == "once":
        assert status == 0
        assert {m["status"] for m in mutants["short.cu"]["mutants"]} == {"Killed"}
        assert "not run" not in captured.out + captured.err
        return
    assert status == 1
    assert ("not run: short: the unmutated source on T0_original trial 0: the device's memory ran out (CUDA out of "
            "memory. Tried to allocate 9.00 GiB); it ran alone on the device: a smaller --worker-memory keeps fewer "
            "of its trials there, or it needs a device (or a host) with more memory\n") in captured.out
    assert {m["status"] for m in mutants["rule_compliant.cu"]["mutants"]} == {"Killed"}


_KILLED_ONCE = """    out = torch.empty_like(x)
    import os, pathlib, signal

    marker = pathlib.Path(__file__).with_name("killed.marker")
    if marker.exists():  # the host's out-of-memory killer, beside the campaign's other workers
        marker.unlink()
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_substrate_whose_worker_is_sigkilled_beside_others_is_judged_again_alone(tmp_path, capsys):
    substrates = _beside_rule_compliant(tmp_path, "killed", _KILLED_ONCE)
    (substrates / "killed.marker").write_text("")
    status = _campaign_of_two_workers(tmp_path, substrates)
    captured = capsys.readouterr()
    assert status == 0, captured.out
    assert ("campaign: killed: the memory ran out beside the campaign's other workers: judged again, alone "
            "on the device\n") in captured.out
    mutants = json.loads((tmp_path / "report.json").read_text())["files"]
    assert {m["status"] for m in mutants["killed.cu"]["mutants"]} == {"Killed"}
    assert "SIGKILL" not in (tmp_path / "r.jsonl").read_text()


def test_trials_past_the_devices_share_that_the_host_has_no_room_for_say_so_and_the_substrate_is_not_run_on(
        admitted, monkeypatch):
    import dataclasses

    from harness.engine import trials
    from harness.engine import worker as campaign_worker

    monkeypatch.setattr(trials, "host_short_for", lambda size: "parked, it would leave 20.0 GiB of the host's 128 GiB "
                                                              "available, under the 25% kept for draws and other workers")
    conn = _Messages()
    job = dataclasses.replace(_template_job(admitted, "narrow_long_long", 2), device_share_bytes=0)
    assert campaign_worker.run_campaign_job(job, conn) is False
    (said,) = [m for m in conn.sent if m[0] == "short_of_memory"]
    assert said[:2] == ("short_of_memory", "rule_compliant")
    assert re.fullmatch(r"building its trials, the host's memory ran out: \w+ trial 0 \(0\.0 GiB\) is past the "
                        r"worker's 0\.0 GiB share of the device, and the host's memory has no room for it: parked, it would "
                        r"leave 20\.0 GiB of the host's 128 GiB available, under the 25% kept for draws and other "
                        r"workers", said[2]), said[2]
    assert not [m for m in conn.sent if m[0] in ("result", "mutant")]
    # Each trial begun is a step (a cut-short campaign names the last): here the first, which could not be parked.
    steps = [m[1] for m in conn.sent if m[0] == "step" and m[1].startswith("building the trials")]
    assert steps[0] == "building the trials" and re.fullmatch(r"building the trials: \w+ trial 0, 1 of 11", steps[1])
    assert len(steps) == 2, steps


def test_a_worker_sigkilled_from_outside_gives_no_verdict_and_its_substrate_goes_again_alone(admitted, tmp_path,
                                                                                              capsys):
    # The host's out-of-memory killer sends SIGKILL (three workers parking 8 GiB trials each on a 128 GiB host): no
    # kernel does, so the mutant being judged is no runtime error. Here a checker kills its own worker as it judges
    # the first mutant, every time: alone too, so the substrate is not run, its mutants unjudged.
    checks = tmp_path / "killing.py"
    checks.write_text("import os, signal\n\n_calls = [0]\n\n"
                      "def check(problem, kernel, device):\n"
                      "    _calls[0] += 1\n"
                      "    if _calls[0] > 1:  # the unmutated kernel first\n"
                      "        os.kill(os.getpid(), signal.SIGKILL)\n"
                      "    return True\n")
    store = tmp_path / "results.jsonl"
    status = main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store", str(store),
                   "--no-progress", *OPERATORS, "--checker", f"{checks}:check", "--spare-workers", "never",
                   "rule_compliant"])
    out = capsys.readouterr().out
    assert status == 1
    (line,) = [line for line in out.splitlines() if line.startswith("not run: rule_compliant: ")]
    assert re.fullmatch(r"not run: rule_compliant: the worker process died during \S+ .*\(killed by signal SIGKILL\): "
                        r"SIGKILL comes from outside the worker \(nothing of the harness's or of a kernel's sends "
                        r"it\), most often the host's out-of-memory killer; it ran alone on the device: a smaller "
                        r"--worker-memory keeps fewer of its trials there, or it needs a device \(or a host\) with "
                        r"more memory", line), line
    stored = [json.loads(row) for row in store.read_text().splitlines()] if store.is_file() else []
    assert not [row for row in stored if "SIGKILL" in row.get("detail", "")], stored


def test_trials_that_do_not_fit_in_the_devices_memory_say_so_and_the_substrate_is_not_run_on(admitted, monkeypatch):
    # kb_avgpool2d's five 16 GiB T0 trials on an 80 GiB H100 ended its worker, reported only as `lost outside any
    # mutant`: the worker keeps every trial of its substrate on the device.
    import torch

    from harness.engine import worker as campaign_worker

    def prepare_trials(*args, **named):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total capacity "
                                     "of 79.19 GiB of which 12.50 GiB is free.")

    monkeypatch.setattr(campaign_worker, "prepare_trials", prepare_trials)
    conn = _Messages()
    assert campaign_worker.run_campaign_job(_template_job(admitted, "narrow_long_long", 2), conn) is False
    said = [m for m in conn.sent if m[0] == "short_of_memory"]
    assert said == [("short_of_memory", "rule_compliant",
                     "building its trials, the device's memory ran out (CUDA out of memory. Tried to allocate 16.00 "
                     "GiB. GPU 0 has a total capacity of 79.19 GiB of which 12.50 GiB is free.)")]
    assert not [m for m in conn.sent if m[0] in ("result", "mutant")]

    def fails(*args, **named):
        raise ValueError("a builder's own error")

    monkeypatch.setattr(campaign_worker, "prepare_trials", fails)  # any other error: as before, the worker's end
    with pytest.raises(ValueError, match="a builder's own error"):
        campaign_worker.run_campaign_job(_template_job(admitted, "narrow_long_long", 2), _Messages())


def test_a_campaign_worker_never_builds_get_inputs_on_the_meta_device(admitted, monkeypatch):
    # Whether T0's and the checkers' draws go to helpers is read from T0's first trial as built: get_inputs() on the
    # meta device imports torch._dynamo for some ops (a comparison), 1 to 2 s of every worker's start.
    import dataclasses

    from harness.engine import worker as campaign_worker
    from harness.gate.checks import suite_rules

    built_on_meta = []
    monkeypatch.setattr(suite_rules, "official_signature", lambda *args, **kwargs: built_on_meta.append(1) or [])
    conn = _Messages()
    job = dataclasses.replace(_template_job(admitted, "narrow_long_long", 1), checkers=("kernelbench", "t0"))
    campaign_worker.run_campaign_job(job, conn)
    assert [m[1]["status"] for m in conn.sent if m[0] == "result"] in (["killed"], ["survived"])
    assert built_on_meta == []


@pytest.mark.parametrize("matrix", [False, True], ids=["suites", "matrix"])
def test_a_worker_whose_trials_are_parked_in_host_memory_judges_every_mutant_as_one_that_keeps_them(admitted, matrix):
    # kb_avgpool2d's five 16 GiB T0 trials do not fit an H100 beside the runs: past the worker's share of the device a
    # trial waits in host memory and is brought in, a fresh copy, when a kernel runs on it. A share of nothing parks
    # every trial (on the CPU backend the copy is a clone, as a kernel's stray write would find it on a GPU).
    import dataclasses

    from harness.engine import worker as campaign_worker
    from harness.engine.mutants import generate

    template = _template_job(admitted, "arithmetic_swap", 1)
    entry = campaign_worker._load_entry(template)
    ids = tuple(m.id for m in generate(entry.cuda, entry.name))
    outcomes = {}
    for share in (None, 1):
        job = dataclasses.replace(template, mutant_ids=ids, run_baseline=True, matrix=matrix, device_share_bytes=share)
        conn = _Messages()
        campaign_worker.run_campaign_job(job, conn)
        results = [m[1] for m in conn.sent if m[0] == "result"]
        outcomes[share] = [(r["mutant_id"], r["status"], r["detail"], r.get("cells")) for r in results]
        timings = [m[1] for m in conn.sent if m[0] == "timings"][-1]
        assert ("mutants: kernel: a parked trial brought to the device" in timings) == (share == 1)
        # the unmutated kernel's runs bring the trials in first: timed as that phase's, not the mutants'
        assert ("unmutated runs: kernel: a parked trial brought to the device" in timings) == (share == 1)
        assert ("trials and references: parked in host memory" in timings) == (share == 1)
    statuses = {status for _id, status, _detail, _cells in outcomes[None]}
    assert len(outcomes[None]) == len(ids) and {"killed", "survived"} <= statuses, statuses
    assert outcomes[1] == outcomes[None]


def test_worker_memory_reaches_the_workers_and_parks_their_trials(admitted, tmp_path, capsys):
    reports = {}
    for memory in ("default", "0"):
        reports[memory] = tmp_path / f"report-{memory}.json"
        assert main(["--backend", "cpu", "--substrates-dir", str(admitted / "substrates"), "--store",
                     str(tmp_path / f"results-{memory}.jsonl"), "--no-progress", *OPERATORS, "--json",
                     str(reports[memory]), *(["--worker-memory", memory] if memory != "default" else []),
                     "rule_compliant"]) == 0
        captured = capsys.readouterr()
        (line,) = [line for line in captured.out.splitlines() if line.startswith("mutants' time: ")]
        assert ("kernel: a parked trial brought to the device" in line) == (memory == "0"), line
        said = [line for line in captured.err.splitlines() if "wait in host memory" in line]
        assert said == ([] if memory == "default" else [
            "campaign: rule_compliant: 11 of its 11 trials wait in host memory, copied to the device when a kernel runs "
            "on them (slower, the same verdicts but where an access outside every allocation meets other memory): "
            "beside room for its runs they do not fit the worker's 0.0 GiB share of the device (--worker-memory)"])
    kept, parked = (json.loads(reports[memory].read_text()) for memory in ("default", "0"))
    assert status_differences(kept, parked) == []


def test_a_naive_campaigns_workers_park_their_trials_as_the_engines_do(admitted, capsys):
    assert _campaign(admitted, "rule_compliant", "--naive", "--worker-memory", "0") == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("mutants' time: ")]
    assert "kernel: a parked trial brought to the device" in line, line
