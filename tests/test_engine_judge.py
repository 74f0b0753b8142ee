"""harness.engine.judge, large_index and survivors: a campaign's survivors judged by compute-sanitizer's tools (on
the CPU through tests/fake_sanitizer.py; the tools' own runs are tested on the GPU) and on the large trials."""

import re
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from harness.campaign import main as campaign_main
from harness.candidates import import_candidate, register_candidate
from harness.engine.judge import judge_with_sanitizers
from harness.engine.large_index import LargeSettings, hang_limit, judge_on_large_trial
from harness.engine.survivors import LARGE_INDEX, SANITIZERS, Survivor, Unmutated, decided, oracle_key, program_label
from harness.engine.store import ResultStore
from harness.oracles.large_index_run import largest_length, tile_factor

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "fake_sanitizer.py"
FORMS = REPO / "tests" / "candidates" / "candidate_row_sum_forms.py"
MUTANT_ID = "forms_row_sum:L7C5:atomic_to_plain:0"


def _substrate():
    raw = register_candidate(import_candidate(FORMS), FORMS)["forms_row_sum"]
    unmutated = Unmutated("forms_row_sum", str(FORMS), raw["kernel_name"], 0, raw["cuda"])
    mutated = raw["cuda"].replace("atomicAdd(&out[i / cols], x[i]);", "out[i / cols] += x[i];")
    assert mutated != raw["cuda"]
    return unmutated, Survivor("forms_row_sum", str(FORMS), raw["kernel_name"], 0, "f" * 64, MUTANT_ID, mutated)


def test_each_substrates_survivors_follow_its_unmutated_kernel_into_the_tools(tmp_path, monkeypatch):
    # A tool's process builds a substrate's cases once for its targets in a row (sanitized_run.Prepared).
    from dataclasses import replace

    from harness.engine import judge

    given = []
    monkeypatch.setattr(judge, "sanitize", lambda targets, *args, **kwargs: given.extend(targets) or {})
    unmutated, survivor = _substrate()
    other = replace(unmutated, substrate="forms_wrong_distribution")
    survivors = [replace(survivor, mutant_id=f"{name}:L1C1:op:{n}", substrate=name)
                 for n, name in enumerate(["forms_row_sum", "forms_wrong_distribution", "forms_row_sum"])]
    judge_with_sanitizers([unmutated, other], survivors, ResultStore(tmp_path / "r.jsonl"), "cpu", ("memcheck",), FAKE)
    assert [t.label or t.name for t in given] == [
        "forms_row_sum", program_label("forms_row_sum:L1C1:op:0"), program_label("forms_row_sum:L1C1:op:2"),
        "forms_wrong_distribution", program_label("forms_wrong_distribution:L1C1:op:1")]


def _race_at(program: str) -> str:
    return (f"Error: Race reported between Write access at row_sum_atomic(const float *, float *, long long, long "
            f"long)+0x90 in {program}.cu:7|    and Write access at row_sum_atomic(...)+0x90 in {program}.cu:7 "
            f"[4 hazards]")


def test_a_survivor_a_tool_reports_is_killed_by_that_tool(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_SYNCCHECK", _race_at(program_label(MUTANT_ID)))
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, survivor = _substrate()
    assert judge_with_sanitizers([unmutated], [survivor], store, "cpu", ("memcheck", "synccheck"), FAKE) == {}
    record = store.get(oracle_key("f" * 64, "cpu", MUTANT_ID, SANITIZERS))
    assert record["killed_by"] == "synccheck" and record["judged_by"] == ["memcheck", "synccheck"]
    assert record["tools"] == {"memcheck": "passed", "synccheck": "failed"}
    assert record["detail"].startswith(f"1 report(s): synccheck: {program_label(MUTANT_ID)}.cu:7: Race reported")
    status, detail, oracle = decided({"status": "survived", "detail": ""}, [record])
    assert (status, oracle) == ("killed", "synccheck")
    assert detail.startswith("killed by synccheck (compute-sanitizer): 1 report(s)")
    # Stored beside the value result, which stays as the value suites left it.
    assert ResultStore(tmp_path / "results.jsonl").get(oracle_key("f" * 64, "cpu", MUTANT_ID, SANITIZERS)) == record


def test_racecheck_skipped_for_want_of_shared_memory_is_no_refusal_and_judges_nothing(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, survivor = _substrate()
    assert judge_with_sanitizers([unmutated], [survivor], store, "cpu", ("memcheck", "racecheck"), FAKE) == {}
    record = store.get(oracle_key("f" * 64, "cpu", MUTANT_ID, SANITIZERS))
    assert record["judged_by"] == ["memcheck"] and record["killed_by"] == ""
    assert record["tools"] == {"memcheck": "passed", "racecheck": "skipped"}


def test_a_tool_the_unmutated_substrate_fails_judges_none_of_its_mutants(tmp_path, monkeypatch):
    both = _race_at("forms_row_sum") + "|" + _race_at(program_label(MUTANT_ID))
    monkeypatch.setenv("FAKE_SANITIZER_SYNCCHECK", both)
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, survivor = _substrate()
    unusable = judge_with_sanitizers([unmutated], [survivor], store, "cpu", ("memcheck", "synccheck"), FAKE)
    assert unusable["forms_row_sum"].startswith("the unmutated substrate does not pass synccheck (1 report(s): "
                                                "synccheck: forms_row_sum.cu:7")
    record = store.get(oracle_key("f" * 64, "cpu", MUTANT_ID, SANITIZERS))
    assert record["killed_by"] == "" and record["judged_by"] == ["memcheck"]
    assert decided({"status": "survived", "detail": ""}, [record]) == ("survived", "", "")


def test_only_survivors_are_decided_again():
    killed_by_values = {"status": "killed", "detail": "killed by probe trial 0: output_matches"}
    racecheck_kill = {"killed_by": "racecheck", "detail": "1 report(s)"}
    assert decided(killed_by_values, [racecheck_kill]) == ("killed", "killed by probe trial 0: output_matches", "")
    assert decided({"status": "equivalent"}, [racecheck_kill]) == ("equivalent", "", "")


def test_on_the_cpu_backend_the_sanitizers_oracle_is_skipped_and_a_bad_oracle_list_is_a_usage_error(capsys):
    assert campaign_main(["--backend", "cpu", "--oracles", "sanitizers"]) == 2
    assert "--oracles: 'sanitizers': values, and any of sanitizers, large-index" in capsys.readouterr().err
    assert campaign_main(["--backend", "cpu", "--sanitize-tools", "leakcheck"]) == 2
    assert "--sanitize-tools: 'leakcheck': choose from memcheck, racecheck, synccheck, initcheck" in (
        capsys.readouterr().err)


# On the CPU, "large" is scaled down: past 2^12 elements, within 2^21.
SMALL = LargeSettings(min_elements=2**12, max_elements=2**21)
GUARD = "if (i >= rows * cols) return;"


def _guarded_survivor(condition: str, number: int) -> Survivor:
    unmutated, _ = _substrate()
    assert GUARD in unmutated.source
    source = unmutated.source.replace(GUARD, f"if (i >= rows * cols || {condition}) return;")
    return Survivor("forms_row_sum", str(FORMS), unmutated.kernel_name, 0, "f" * 64,
                    f"forms_row_sum:L6C5:guard:{number}", source)


def test_a_survivor_wrong_only_on_a_large_input_is_killed_by_the_large_trial(tmp_path, monkeypatch):
    # On the CPU, "large" is scaled down: T0 trial 0 (64 x 256) tiled until its output has more than 4096 rows
    # (65 times: the least factor), then along the last axis until its input has more than 4096 elements.
    # The first survivor drops every element past 300000 (T0's 16384 never reach it); the second past 2^40.
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, _ = _substrate()
    dropping, harmless = _guarded_survivor("i >= 300000", 0), _guarded_survivor("i >= (1LL << 40)", 1)
    heard = []  # what the campaign prints as each substrate is done: the oracle takes minutes per substrate
    notes = judge_on_large_trial([unmutated], [dropping, harmless], store, "cpu", SMALL,
                                 on_substrate=lambda *said: heard.append(said))
    assert notes == {}
    ((name, outcome),) = heard
    assert (name, len(outcome.judged), outcome.killed()) == ("forms_row_sum", 2, 1) and outcome.seconds > 0
    # One process for the four trials in turn (T0 along axis 0 and along the last, the lowest rank (T0's), the
    # largest): nothing ended it early.
    assert outcome.processes == 1
    # Where the time went, said on the substrate's line: every part measured, none longer than the whole.
    assert list(outcome.parts) == ["building the trials", "compiling kernels", "loading kernels", "running kernels",
                                   "checking kernels"]
    assert all(0 < seconds < outcome.seconds for seconds in outcome.parts.values())
    said = r"2 survivor\(s\) judged, 1 killed, in \d+\.\d s, 1 process\(es\) \(building the trials \d+\.\d s, "
    said += r"compiling kernels \d+\.\d s, loading kernels \d+\.\d s, running kernels \d+\.\d s, checking kernels "
    said += r"\d+\.\d s\)"
    assert re.fullmatch(said, outcome.describe()), outcome.describe()
    killed = store.get(oracle_key("f" * 64, "cpu", dropping.mutant_id, LARGE_INDEX))
    assert killed["killed_by"] == LARGE_INDEX and killed["trial"] == "T0 trial 0 tiled 65x along axis 0: 4160x256, out 4160"
    assert "elements differ" in killed["detail"]
    spared = store.get(oracle_key("f" * 64, "cpu", harmless.mutant_id, LARGE_INDEX))
    assert spared["killed_by"] == "" and spared["detail"] == ""
    # Then, T0's rank being the lowest, the largest trial of that rank cut to the most rows the bound allows.
    assert spared["trial"] == ("T0 trial 0 tiled 65x along axis 0: 4160x256, out 4160; "
                               "T0 trial 0 tiled 1x along axis -1: 64x256, out 64; "
                               "T0_original trial 0 tiled 128x along axis 0 and cut to 8192: 8192x256, out 8192")
    status, detail, oracle = decided({"status": "survived"}, [killed])
    assert (status, oracle) == ("killed", LARGE_INDEX)
    assert detail.startswith("killed by the large-index trial (T0 trial 0 tiled 65x along axis 0: 4160x256, out 4160): ")
    # The processes' plans and events are gone with the oracle: a campaign leaves no directory of its own behind.
    assert list(temporary.glob("large-index-*")) == []


def test_the_tile_factor_is_the_least_that_takes_both_the_input_and_the_output_past_the_bound():
    import torch

    # A pad adding 3 rows: input 8 x 100, output 11 x 110; both past 1000 elements at a factor of 2.
    assert tile_factor([torch.zeros(8, 100)], (11, 110), 1000) == 2
    # A backward pad taking 3 rows off: the output decides (8f - 3 rows of 50 > 1000 from f = 3).
    assert tile_factor([torch.zeros(8, 100)], (5, 50), 1000) == 3
    # Past 2^31 + 2^20 and no further: the least factor, not the next power of two (800 x 2685666 = 2148532800).
    assert tile_factor([torch.zeros(8, 100)], (8, 100), 2**31 + 2**20) == 2685666
    # Along the last axis a pad's output grows by the columns; a reduction's (another rank) is not counted.
    assert tile_factor([torch.zeros(8, 100)], (8, 90), 1000, axis=-1) == 2
    assert tile_factor([torch.zeros(64, 256)], (64,), 2**20, axis=-1) == 65
    # A scalar output (a loss): only the input is counted.
    assert tile_factor([torch.zeros(4, 4)], (), 100) == 7


def test_the_largest_legal_length_keeps_every_tensor_within_the_u32_counts():
    # A pad adding 3001 to a rank-1 input: the output decides; a backward pad taking 2000 off: the input does.
    assert largest_length((3,), (3004,)) == 2**32 - 1 - 3001
    assert largest_length((3001,), (1001,)) == 2**32 - 1
    # Rows of 256 summed into one value each; a loss (a scalar) counts the input alone.
    assert largest_length((64, 256), (64,)) == (2**32 - 1) // 256
    assert largest_length((4, 4), ()) == (2**32 - 1) // 4


def test_no_tile_factor_takes_a_trial_past_the_bound_within_the_contract_s_u32_counts():
    import torch

    # 2^31 + 1 elements already: one more copy passes 2^32 - 1.
    assert tile_factor([torch.zeros(2**16, 2**15 + 1, device="meta")], (2**16, 2**15 + 1), 2**31 + 2**20) is None
    assert tile_factor([torch.zeros(0, 8)], (0, 8), 1000) is None


def test_a_survivor_wrong_only_past_a_column_count_is_killed_by_the_trial_along_the_last_axis(tmp_path):
    # T0 trial 0 is 64 x 256: tiled along axis 0 its rows grow, its columns stay; along the last axis they grow.
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, _ = _substrate()
    wide = _guarded_survivor("cols > 1000", 2)
    assert judge_on_large_trial([unmutated], [wide], store, "cpu", replace(SMALL, min_elements=2**18)) == {}
    killed = store.get(oracle_key("f" * 64, "cpu", wide.mutant_id, LARGE_INDEX))
    assert killed["killed_by"] == LARGE_INDEX
    assert killed["trial"] == "T0 trial 0 tiled 17x along axis -1: 64x4352, out 64", killed["trial"]


def _spinning_survivor() -> Survivor:
    """A survivor that spins for ever past element 300000 (on no trial of the suites')."""
    unmutated, _ = _substrate()
    return Survivor("forms_row_sum", str(FORMS), unmutated.kernel_name, 0, "f" * 64, "forms_row_sum:spin:0",
                    unmutated.source.replace(GUARD, GUARD + " if (i >= 300000) { volatile int spin = 1; "
                                                            "while (spin) {} }"))


def test_a_survivor_that_hangs_on_the_large_trial_is_killed_as_hung_and_the_next_one_is_still_judged(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, _ = _substrate()
    spinning = _spinning_survivor()
    dropping = _guarded_survivor("i >= 300000", 0)
    heard = []
    assert judge_on_large_trial([unmutated], [spinning, dropping], store, "cpu", replace(SMALL, hang_floor=3.0),
                                on_substrate=lambda *said: heard.append(said)) == {}
    # The hung process is killed; a second builds the same trial again for the survivor after it.
    assert [outcome.processes for _name, outcome in heard] == [2]
    hung = store.get(oracle_key("f" * 64, "cpu", spinning.mutant_id, LARGE_INDEX))
    assert hung["killed_by"] == LARGE_INDEX
    # The limit is the floor, or 50 times the unmutated kernel's time where that is longer (a loaded machine, or the
    # CPU backend's contention, can take the unmutated kernel past 60 ms).
    said = re.fullmatch(r"the kernel hung: ran past (\d+) s on the large trial, where the unmutated kernel took "
                        r"([0-9.]+) s.*", hung["detail"], re.S)
    assert said, hung["detail"]
    # The words round both figures: 0.0699 s reads `0.070` and gives a limit of 3.495 s, `3` (from 0.070: 3.5, `4`).
    shown = float(said.group(2))
    assert round(hang_limit(shown - 0.0005, 3.0)) <= int(said.group(1)) <= round(hang_limit(shown + 0.0005, 3.0)), \
        hung["detail"]
    assert store.get(oracle_key("f" * 64, "cpu", dropping.mutant_id, LARGE_INDEX))["killed_by"] == LARGE_INDEX


@pytest.mark.parametrize("fault, detail, processes", [
    # The CPU shim catches the read: the launch fails, as an illegal address does on the GPU. (4 TiB past a large
    # tensor, mapped high, is past the address space: "outside the address space" rather than "every mapping".)
    (" if (i >= 300000) out[0] = x[i + (1LL << 40)];",
     "the kernel faulted: KernelFault: CPU backend: memory fault: SIGSEGV (an address outside ", 1),
    # Caught, but after a write into an input: the trial is no longer the one the next survivor must meet.
    (" if (i >= 300000) { ((float*)x)[0] = 7.0f; out[0] = x[i + (1LL << 40)]; }",
     "the kernel faulted: KernelFault: CPU backend: memory fault: SIGSEGV (an address outside ", 2),
    # A death the process does not survive: a fresh process judges the next survivor.
    ("\n#ifdef HARNESS_CPU\n if (i >= 300000) std::abort();\n#endif\n",
     "the oracle's process died while it ran: the process ended (killed by signal SIGABRT)", 2),
], ids=["caught", "caught-after-a-write", "died"])
def test_a_survivor_that_faults_on_the_large_trial_is_killed_and_the_next_one_is_still_judged(tmp_path, fault,
                                                                                              detail, processes):
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, _ = _substrate()
    crashing = Survivor("forms_row_sum", str(FORMS), unmutated.kernel_name, 0, "f" * 64, "forms_row_sum:crash:0",
                        unmutated.source.replace(GUARD, GUARD + fault))
    harmless = _guarded_survivor("i >= (1LL << 40)", 1)
    heard = []
    assert judge_on_large_trial([unmutated], [crashing, harmless], store, "cpu", SMALL,
                                on_substrate=lambda *said: heard.append(said)) == {}
    # One process for the four trials; a fault the shim caught, with nothing written first, does not end it (the
    # GPU's address check foresees one as the shim catches it), while a death costs a second, which takes over on
    # the trial where the first ended.
    assert [outcome.processes for _name, outcome in heard] == [processes]
    died = store.get(oracle_key("f" * 64, "cpu", crashing.mutant_id, LARGE_INDEX))
    assert died["killed_by"] == LARGE_INDEX
    assert died["detail"].startswith(detail), died["detail"]
    spared = store.get(oracle_key("f" * 64, "cpu", harmless.mutant_id, LARGE_INDEX))
    assert spared["killed_by"] == ""
    # Every trial judged it, those after the fault in whichever process was left.
    assert spared["trial"] == ("T0 trial 0 tiled 65x along axis 0: 4160x256, out 4160; "
                               "T0 trial 0 tiled 1x along axis -1: 64x256, out 64; "
                               "T0_original trial 0 tiled 128x along axis 0 and cut to 8192: 8192x256, out 8192")


def test_a_death_on_a_later_trial_is_the_kernel_that_was_running_not_one_an_earlier_trial_killed(tmp_path):
    # The first survivor is killed on T0 tiled along axis 0 (4160 rows); the second dies only on the trial cut to
    # 8192 rows, later in the same process: that death is its own, and nothing is left for another process.
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, _ = _substrate()
    dropping = _guarded_survivor("i >= 300000", 0)
    dying = replace(_guarded_survivor("i >= (1LL << 40)", 4), source=unmutated.source.replace(
        GUARD, GUARD + "\n#ifdef HARNESS_CPU\n if (rows > 5000) std::abort();\n#endif\n"))
    heard = []
    assert judge_on_large_trial([unmutated], [dropping, dying], store, "cpu", SMALL,
                                on_substrate=lambda *said: heard.append(said)) == {}
    assert store.get(oracle_key("f" * 64, "cpu", dropping.mutant_id, LARGE_INDEX))["trial"] == (
        "T0 trial 0 tiled 65x along axis 0: 4160x256, out 4160")
    died = store.get(oracle_key("f" * 64, "cpu", dying.mutant_id, LARGE_INDEX))
    assert died["detail"].startswith("the oracle's process died while it ran: the process ended (killed by signal "
                                     "SIGABRT)"), died
    assert died["trial"] == "T0_original trial 0 tiled 128x along axis 0 and cut to 8192: 8192x256, out 8192"
    assert [outcome.processes for _name, outcome in heard] == [1]


OUT_OF_MEMORY_DEATH = ('\n#ifdef HARNESS_CPU\n if (rows > 5000) { fprintf(stderr, "Traceback (most recent call last):\\n'
                       'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 19.29 GiB\\n"); std::abort(); }'
                       '\n#endif\n')


@pytest.mark.parametrize("beside_others", [False, True], ids=["alone", "beside-others"])
def test_a_process_that_dies_out_of_device_memory_kills_no_survivor(tmp_path, beside_others):
    # The comparison's or the trial's memory running out beside other processes is the device's limit, not the
    # kernel's fault (head-3 on an H100: a mutant was 'killed' by torch.OutOfMemoryError). The survivor is not
    # judged on that trial; beside others the substrate is judged again alone.
    from harness.engine.large_index import _judge_substrate

    unmutated, _ = _substrate()
    starving = replace(_guarded_survivor("i >= (1LL << 40)", 4), source=unmutated.source.replace(
        GUARD, GUARD + OUT_OF_MEMORY_DEATH))
    settings = replace(SMALL, memory_lock=str(tmp_path / "turns.lock")) if beside_others else SMALL
    outcome = _judge_substrate(unmutated, [starving], "cpu", settings)
    assert outcome.short_of_memory is beside_others
    killed, _detail, trials = outcome.judged[starving.mutant_id]
    assert killed is False and "cut to 8192" not in trials  # judged on the trials before, not on the one it died on
    unjudged = [why for why in outcome.why_not if why.startswith(f"{program_label(starving.mutant_id)} not judged")]
    assert unjudged == [f"{program_label(starving.mutant_id)} not judged on T0_original trial 0 tiled 128x along "
                        "axis 0 and cut to 8192: 8192x256, out 8192: the device's memory fell short while it ran: "
                        "the process ended (killed by signal SIGABRT): torch.OutOfMemoryError: CUDA out of memory. "
                        "Tried to allocate 19.29 GiB"], outcome.why_not


def test_only_the_last_traceback_s_out_of_memory_is_a_death_of_the_device_s_memory():
    from harness.engine.large_index import ran_out_of_device_memory

    assert ran_out_of_device_memory("Traceback (most recent call last):\n  ...\ntorch.OutOfMemoryError: CUDA out")
    # A context or library allocation: torch's advice is the last line, the words are above it.
    assert ran_out_of_device_memory("Traceback (most recent call last):\nRuntimeError: CUDA error: out of memory\n"
                                    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
    assert not ran_out_of_device_memory("Traceback (most recent call last):\nRuntimeError: CUDA error: an illegal "
                                        "memory access was encountered")
    assert not ran_out_of_device_memory("Traceback (most recent call last):\ntorch.OutOfMemoryError: caught\n"
                                        "Traceback (most recent call last):\nKernelFault: illegal address")
    assert not ran_out_of_device_memory("")


def test_an_unmutated_substrate_that_fails_a_large_trial_judges_none_of_its_survivors_on_it(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, _ = _substrate()
    broken = Unmutated(unmutated.substrate, unmutated.file, unmutated.kernel_name, 0,
                       unmutated.source.replace(GUARD, "if (i >= rows * cols || i >= 300000) return;"))
    survivor = _guarded_survivor("i >= 300000", 0)
    notes = judge_on_large_trial([broken], [survivor], store, "cpu", SMALL)
    assert notes["forms_row_sum"].startswith("T0 trial 0 along axis 0: the unmutated substrate fails its large "
                                             "trial: "), notes
    # Along the last axis T0 stays below 300000 elements: the unmutated kernel passes that trial, which judges.
    record = store.get(oracle_key("f" * 64, "cpu", survivor.mutant_id, LARGE_INDEX))
    assert record["killed_by"] == "" and record["trial"] == "T0 trial 0 tiled 1x along axis -1: 64x256, out 64"


def test_a_survivor_wrong_only_along_one_long_axis_is_killed_by_the_suites_rank_1_trial_tiled(tmp_path):
    # T0 of pad_replicate is rank 4: tiled along any axis, each axis stays short. The suites' rank-1 trial,
    # tiled along its one axis, takes a coordinate past the bound (on the CPU scaled down: a mutant wrong past
    # coordinate 5000, where narrowing to int is wrong past 2^31).
    path = REPO / "substrates" / "candidate_pad_replicate.py"
    raw = register_candidate(import_candidate(path), path)["pad_replicate_b4"]
    line = "long long i = rest % g.out_shape[d] - g.left_pad[d];"
    assert line in raw["cuda"]
    unmutated = Unmutated("pad_replicate_b4", str(path), raw["kernel_name"], 0, raw["cuda"])
    short = Survivor("pad_replicate_b4", str(path), raw["kernel_name"], 0, "e" * 64, "pad_replicate_b4:L21C9:short:0",
                     raw["cuda"].replace(line, line + " if (i > 5000) i = 0;"))
    store = ResultStore(tmp_path / "results.jsonl")
    assert judge_on_large_trial([unmutated], [short], store, "cpu", replace(SMALL, max_elements=2**23)) == {}
    killed = store.get(oracle_key("e" * 64, "cpu", short.mutant_id, LARGE_INDEX))
    assert killed["killed_by"] == LARGE_INDEX, killed
    # The suites' rank-1 trial of the most elements; T0's two trials judged it first and let it through.
    assert killed["trial"] == "misaligned trial 0 tiled 1x along axis 0: 75851, out 75854", killed["trial"]


def test_where_both_past_the_bound_overrun_u32_the_tile_factor_takes_one_past():
    import torch

    # T0 of pad_reflect: tiled along its last axis, the output (7 x 35 x 105 per column) grows 3.8 times as fast
    # as the input: with the input past 2^31 + 2^20 the output passes 2^32 - 1. The output alone is taken past.
    f = tile_factor([torch.zeros(4, 32, 96, 96, device="meta")], (7, 35, 105, 105), 2**31 + 2**20, axis=-1)
    assert 7 * 35 * 105 * (96 * (f - 1) + 9) <= 2**31 + 2**20 < 7 * 35 * 105 * (96 * f + 9) <= 2**32 - 1


def test_a_survivor_wrong_only_near_the_largest_legal_count_is_killed_by_the_trial_cut_to_it(tmp_path):
    # A thread index computed in 32 bits wraps only once the grid passes 2^32 threads: a launch within one
    # block of the u32 counts' end. On the CPU, scaled down: a survivor wrong only past 2^21 - 256 elements,
    # where the trials tiled the least past the bound (4160 x 256 and 64 x 256) stay below.
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, _ = _substrate()
    near_the_end = _guarded_survivor("rows * cols > 2097152 - 256", 3)
    assert judge_on_large_trial([unmutated], [near_the_end], store, "cpu", SMALL) == {}
    killed = store.get(oracle_key("f" * 64, "cpu", near_the_end.mutant_id, LARGE_INDEX))
    assert killed["killed_by"] == LARGE_INDEX
    assert killed["trial"] == "T0_original trial 0 tiled 128x along axis 0 and cut to 8192: 8192x256, out 8192"


def test_the_memory_a_large_trial_needs_counts_a_model_whose_temporaries_outweigh_its_output():
    import torch

    from harness.oracles.large_index_run import needed_bytes

    x = torch.zeros(10, 100)  # tiled 10x: 40 000 bytes of input, as much output
    assert needed_bytes([x], (10, 100), torch.float32, 10) == 40_000 + 3 * 40_000
    # A Model that holds an int64 index per element beside its output at the tiled size (120 000 bytes at its peak):
    assert needed_bytes([x], (10, 100), torch.float32, 10, model_bytes=120_000) == 40_000 + 120_000
    assert needed_bytes([x], (10, 100), torch.float32, 10, model_bytes=100) == 160_000  # the tensors' count


def test_the_models_peak_at_a_large_size_grows_only_by_what_grew_between_two_measured_sizes():
    from harness.oracles.large_index_run import model_peak_at

    # Reflect pad tiled along axis 0 of a rank-4 trial: 88 MiB untiled, hardly more at 28x; not 1822 x 88 MiB.
    untiled, probe = 88 * 2**20, 90 * 2**20
    assert model_peak_at(1822, untiled, probe, 28) == int(untiled + 2 * 2**20 / 27 * 1821)
    assert model_peak_at(1822, untiled, probe, 28) < 1 * 2**30
    # Its rank-1 trial: an int64 map per element grows with the trial, so the peak does too.
    assert model_peak_at(100, 8_000, 80_000, 10) == 8_000 + 8_000 * 99
    # A peak that measured lower at the larger size (the allocator's rounding) is taken not to grow.
    assert model_peak_at(1000, 5_000, 4_000, 10) == 5_000


def _large_index_events(tmp_path) -> list[dict]:
    """The events of the large-index program run here on the substrate's large trials, the unmutated kernel and a
    survivor (the same source) to judge on them."""
    import json

    from harness.oracles import large_index_run

    unmutated, _ = _substrate()
    plan, events = tmp_path / "plan.json", tmp_path / "events.jsonl"
    plan.write_text(json.dumps({"backend": "cpu", "cache_dir": str(tmp_path / "cache"), "file": unmutated.file,
                                "name": unmutated.substrate, "min_elements": 2**12, "max_elements": 2**21,
                                "kernels": [[unmutated.substrate, unmutated.source], ["same", unmutated.source]]}))
    assert large_index_run.main([str(plan), str(events)]) == 0
    return [json.loads(line) for line in events.read_text().splitlines()]


def test_a_model_out_of_memory_on_a_64th_of_the_large_trial_skips_it_with_the_reason(tmp_path, monkeypatch):
    from harness.oracles import large_index_run

    def measured(model, inputs, torch, again=True):  # a device's measurement: the probe does not fit
        if not again:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.\nmore")
        return model(*inputs), 1000

    monkeypatch.setattr(large_index_run, "_model_peak", measured)
    record = _large_index_events(tmp_path)[0]
    assert record == {"event": "skipped", "trial": 0, "memory": True,
                      "why": "the official Model ran out of device memory on a 64th of the large trial: CUDA out of "
                             "memory. Tried to allocate 2.00 GiB."}


def test_a_large_trial_that_runs_out_of_device_memory_while_it_is_built_is_skipped_with_the_reason(tmp_path,
                                                                                                    monkeypatch):
    import torch

    from harness import problems

    real_load = problems.load_problem

    class OutOfMemoryPast:  # the official Model, failing as the device does on the tiled trial only
        def __init__(self, problem):
            self.problem = problem

        def __getattr__(self, name):  # get_inputs and the rest: the real problem's
            return getattr(self.problem, name)

        def build_model(self, device):
            model = self.problem.build_model(device)

            def run(*inputs):
                if inputs[0].numel() > 20_000:
                    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 GiB. GPU 0 has a total "
                                                 "capacity of 139.80 GiB of which 27.19 GiB is free.\nmore")
                return model(*inputs)

            return run

    monkeypatch.setattr(problems, "load_problem", lambda *a, **k: OutOfMemoryPast(real_load(*a, **k)))
    record = _large_index_events(tmp_path)[0]
    assert record == {"event": "skipped", "trial": 0, "memory": True,
                      "why": "the large trial did not fit in the device's memory while it was built (about 0.0 GiB "
                             "estimated): CUDA out of memory. Tried to allocate 32.00 GiB. GPU 0 has a total capacity "
                             "of 139.80 GiB of which 27.19 GiB is free."}


def test_the_oracles_judge_side_by_side_and_their_lines_keep_the_oracles_order(tmp_path, monkeypatch, capsys):
    import argparse
    import threading

    from harness.engine import judge
    from harness.engine.large_index import SubstrateJudged

    unmutated, survivor = _substrate()
    monkeypatch.setattr(judge, "value_survivors",
                        lambda plans, store, backend, oracle, batch_size: ([unmutated], [survivor]))
    both_running = threading.Barrier(2, timeout=20)  # broken, and raising, if one oracle waited for the other
    seen = {}

    def sanitizers(*args, **kwargs):
        both_running.wait()
        args[-1].append("memcheck 3.0 s (start 1.0 s, loading 0.5 s, cases 1.5 s; slowest forms_row_sum 1.5 s)")
        return {}

    def large_index(unmutated, survivors, store, backend, settings, on_substrate=None):
        both_running.wait()
        seen["check_addresses"], seen["at_once"], seen["backfill"] = (settings.check_addresses, settings.at_once,
                                                                      settings.backfill)
        on_substrate("forms_row_sum", SubstrateJudged(judged={"m": (False, "", "t")}, processes=4, seconds=2.5))
        return {"forms_row_sum": "T0 trial 0 along axis -1: skipped"}

    monkeypatch.setattr(judge, "judge_with_sanitizers", sanitizers)
    monkeypatch.setattr(judge, "judge_on_large_trial", large_index)
    args = argparse.Namespace(cache_dir=None, kb_root=None, sanitizer=FAKE, sanitize_processes=1,
                              large_index_processes=3, large_index_backfill=0.0)
    said = judge.judge_survivors([], args, "cuda", ResultStore(tmp_path / "results.jsonl"),
                                 ("values", SANITIZERS, LARGE_INDEX), ("memcheck",), check_addresses=True)
    lines = said.splitlines()
    assert re.fullmatch(r"oracle sanitizers: 1 survivor\(s\) judged, 0 killed, in \d+\.\d s", lines[0]), lines
    # Where each tool's time went, a line under the sanitizers' own.
    assert lines[1] == ("  sanitizers' time: memcheck 3.0 s (start 1.0 s, loading 0.5 s, cases 1.5 s; slowest "
                        "forms_row_sum 1.5 s)")
    assert re.fullmatch(r"oracle large-index: 1 survivor\(s\) judged, 0 killed, in \d+\.\d s", lines[2]), lines
    assert lines[3:] == ["  forms_row_sum: T0 trial 0 along axis -1: skipped"]
    assert seen == {"check_addresses": True, "at_once": 3, "backfill": 0.0}
    out = capsys.readouterr().out
    assert "  large-index: forms_row_sum: 1 survivor(s) judged, 0 killed, in 2.5 s, 4 process(es)\n" in out


def _two_substrates():
    """forms_row_sum and forms_wrong_distribution (the same kernel on the same problem), a dropping survivor each."""
    unmutated, _ = _substrate()
    second = Unmutated("forms_wrong_distribution", unmutated.file, unmutated.kernel_name, 0, unmutated.source)
    dropping = _guarded_survivor("i >= 300000", 0)
    return [unmutated, second], [dropping, replace(dropping, substrate=second.substrate,
                                                   mutant_id=dropping.mutant_id.replace("forms_row_sum",
                                                                                        second.substrate))]


def _large_index_events_with_memory(tmp_path, monkeypatch, free: list[int], total: int, wait: float,
                                    **plan_too) -> list[dict]:
    """The program's events beside other processes (a turn to take, `wait` s to wait for room), the backend's free
    memory read as `free` says, one reading a poll; `plan_too` added to the plan."""
    import json

    from harness.backends.cpu import CpuBackend
    from harness.oracles import large_index_run, memory_turns

    readings = iter(free)
    last = [free[0]]
    monkeypatch.setattr(CpuBackend, "memory_info", lambda self: (last.__setitem__(0, next(readings, last[0])) or
                                                                 last[0], total))
    monkeypatch.setattr(memory_turns, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(memory_turns, "HEARTBEAT_SECONDS", 0.0)
    unmutated, _ = _substrate()
    plan, events = tmp_path / "plan.json", tmp_path / "events.jsonl"
    plan.write_text(json.dumps({"backend": "cpu", "cache_dir": str(tmp_path / "cache"), "file": unmutated.file,
                                "name": unmutated.substrate, "min_elements": 2**12, "max_elements": 2**21,
                                "trials": [["t0", 0, "least"]], "memory_lock": str(tmp_path / "turns.lock"),
                                "memory_wait": wait, "kernels": [[unmutated.substrate, unmutated.source],
                                                                 ["same", unmutated.source]], **plan_too}))
    assert large_index_run.main([str(plan), str(events)]) == 0
    return [json.loads(line) for line in events.read_text().splitlines()]


def test_a_large_trial_that_fits_passes_a_waiter_within_the_plans_backfill_and_not_after_it(tmp_path, monkeypatch):
    # Another process has waited since long ago for more than the device holds free; this trial fits.
    import os
    import threading
    import time

    from harness.oracles.memory_turns import WaitersLedger

    def events_beside_a_waiter(folder, backfill: float) -> list[dict]:
        folder.mkdir()
        ledger = WaitersLedger(str(folder / "turns.lock"))
        # Alive (this test's parent), waiting since long ago, its entry fresh.
        ledger.write({os.getppid(): {"need": 2**50, "since": 0.0, "seen": time.monotonic()}})
        gone = threading.Timer(0.3, lambda: ledger.write({}))  # the waiter gives up after 0.3 s
        gone.start()
        started = time.monotonic()
        events = _large_index_events_with_memory(folder, monkeypatch, [2**40], 2**40, 60.0, backfill=backfill)
        gone.join()
        return events, time.monotonic() - started

    passed, _took = events_beside_a_waiter(tmp_path / "passes", 1e12)
    assert [e["event"] for e in passed][0] == "trial"  # built at once
    held, took = events_beside_a_waiter(tmp_path / "waits", 0.0)
    assert [e["event"] for e in held][0] == "waiting" and held[0]["free"] == 2**40  # room, held back all the same
    assert took >= 0.3 and [e["event"] for e in held if e["event"] != "waiting"][0] == "trial"


def test_a_large_trial_beside_others_waits_in_its_turn_for_the_memory_they_give_back(tmp_path, monkeypatch):
    events = _large_index_events_with_memory(tmp_path, monkeypatch, [0, 0, 0, 2**40], 2**40, 60.0)
    kinds = [e["event"] for e in events]
    # A heartbeat a poll here (HEARTBEAT_SECONDS 0): one for each of the three readings with no room.
    assert kinds == ["waiting"] * 3 + ["trial", "compiled", "start", "result", "start", "result", "done"]
    assert events[0]["free"] == 0 and events[0]["need"] > 0  # what it waits for, said as it waits
    assert [(e["key"], e["killed"]) for e in events if e["event"] == "result"] == [("forms_row_sum", False),
                                                                                   ("same", False)]
    # Where the build's time went: every step said, the three polls with no room among them.
    from harness.oracles.large_index_run import BUILD_PARTS, ROOM

    trial = events[3]
    assert list(trial["parts"]) == list(BUILD_PARTS) and trial["parts"][ROOM] >= 0.03
    assert sum(trial["parts"].values()) <= trial["seconds"] + 0.01


def test_a_substrates_line_says_apart_the_time_its_trials_waited_for_the_memory(tmp_path):
    import json

    from harness.engine.large_index import LARGE_TRIALS, SubstrateJudged, TrialRun, _Progress, _read_events
    from harness.oracles.large_index_run import MODEL_LARGE, ROOM, TURN

    events = tmp_path / "events.jsonl"
    trial = {"event": "trial", "source": "T0 trial 0", "factor": 2, "axis": 0, "out": [4], "shapes": [[4]]}
    events.write_text("\n".join(json.dumps(record) for record in (
        {**trial, "trial": 0, "seconds": 5.0, "parts": {TURN: 2.0, ROOM: 1.5, MODEL_LARGE: 1.0}},
        {"event": "done", "trial": 0},
        {**trial, "trial": 1, "seconds": 0.5, "parts": {TURN: 0.001, ROOM: 0.0, MODEL_LARGE: 0.3}})) + "\n")
    progress = _Progress([TrialRun({}, "", "") for _ in LARGE_TRIALS], [])
    _read_events(events, progress, "forms_row_sum")
    assert progress.parts == pytest.approx({"building the trials": 1.5 + 0.499, "waiting for the device's memory": 3.5})
    said = SubstrateJudged(seconds=6.0, processes=1, parts=progress.parts).describe()
    assert said.endswith("(building the trials 2.0 s, waiting for the device's memory 3.5 s)"), said


def test_a_large_trial_asks_room_for_the_models_peak_and_then_holds_only_what_judging_takes(tmp_path, monkeypatch):
    """A backward pad's official Model peaks at several times its trial (pad_backward_reflect_bf16: 39.9 GiB asked
    for a trial judged in about 16 on the H100). The room is asked for the peak; once the output is made, the
    process keeps for the turns after it only the inputs and three outputs' worth."""
    from harness.oracles import large_index_run

    asked, held = [], []
    real_room = large_index_run._room_for
    monkeypatch.setattr(large_index_run, "_model_bytes", lambda *args: 2**40)  # the Model's peak, foreseen
    monkeypatch.setattr(large_index_run, "_room_for", lambda need, *args: asked.append(need) or real_room(need, *args))
    monkeypatch.setattr(large_index_run, "_reserve", lambda hold, backend, torch: held.append(hold))
    events = _large_index_events_with_memory(tmp_path, monkeypatch, [2**41], 2**41, 0.0)

    assert [e["event"] for e in events][:2] == ["trial", "compiled"]
    assert len(asked) == len(held) == 1 and asked[0] >= 2**40 > 2**30 > held[0] > 0


def test_a_large_trial_beside_others_that_no_room_comes_for_is_skipped_with_how_long_it_waited(tmp_path,
                                                                                                 monkeypatch):
    events = _large_index_events_with_memory(tmp_path, monkeypatch, [0], 2**40, 0.05)
    skipped = events[-1]
    assert skipped["event"] == "skipped" and skipped["memory"] is True and skipped["beyond_device"] is False
    assert re.fullmatch(r"the large trial needs about 0\.0 GiB of device memory; 0\.0 GiB of 1024\.0 GiB are free "
                        r"\(no room came within 0\.05 s\)", skipped["why"]), skipped["why"]
    # One no process's memory could make room for is refused at once: the device is smaller than the trial.
    (tmp_path / "tiny").mkdir()
    tiny = _large_index_events_with_memory(tmp_path / "tiny", monkeypatch, [0], 1, 60.0)
    assert [e["event"] for e in tiny] == ["skipped"] and tiny[0]["beyond_device"] is True
    assert tiny[0]["why"].endswith("(the device holds too little even with every other process's memory given back)")


def test_only_a_trial_the_memory_fell_short_of_beside_others_has_the_substrate_judged_again_alone(tmp_path):
    import json

    from harness.engine.large_index import LARGE_TRIALS, TrialRun, _Progress, _read_events

    def short_of_memory(*skips: dict) -> list[bool]:
        events = tmp_path / "events.jsonl"
        events.write_text("".join(json.dumps({"event": "skipped", "memory": True, "why": "short", **skip}) + "\n"
                                  for skip in skips))
        progress = _Progress([TrialRun({}, "", "") for _ in LARGE_TRIALS], [])
        _read_events(events, progress, "forms_row_sum")
        return [run.short_of_memory for run in progress.runs]

    # The others held the room (no room came in time): alone, it may fit.
    assert short_of_memory({"trial": 0, "beyond_device": False}) == [True, False, False, False]
    # The device is smaller than the trial whatever the others give back: alone, it is skipped the same.
    assert short_of_memory({"trial": 0, "beyond_device": True}) == [False] * 4
    # One of each: the one the others held room for still has the substrate judged again alone.
    assert short_of_memory({"trial": 0, "beyond_device": True},
                           {"trial": 3, "beyond_device": False}) == [False, False, False, True]


def test_an_unmutated_kernel_its_check_ran_out_of_memory_on_says_so_and_the_trial_judges_nothing(tmp_path):
    import json

    from harness.engine.large_index import LARGE_TRIALS, TrialRun, _Progress, _read_events

    _unmutated, survivor = _substrate()
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"event": "result", "trial": 0, "key": "forms_row_sum", "killed": False,
                                  "memory": True, "error": "checking its output: CUDA out of memory. Tried to "
                                                           "allocate 19.29 GiB"}) + "\n")
    progress = _Progress([TrialRun({}, "T0 trial 0 tiled 65x", "") for _ in LARGE_TRIALS], [survivor])
    _read_events(events, progress, "forms_row_sum")
    assert progress.position == 1 and progress.runs[0].short_of_memory
    assert progress.runs[0].why == ("the unmutated kernel was not judged on it: checking its output: CUDA out of "
                                    "memory. Tried to allocate 19.29 GiB")


def test_substrates_side_by_side_take_turns_at_the_memory_and_one_judged_again_alone_takes_none(tmp_path,
                                                                                               monkeypatch):
    from harness.engine import large_index

    unmutated, survivors = _two_substrates()
    seen, real = [], large_index._drive_processes

    def drive(u, mine, backend, settings):
        seen.append((u.substrate, settings.memory_lock))
        return real(u, mine, backend, settings)

    monkeypatch.setattr(large_index, "_drive_processes", drive)
    store = ResultStore(tmp_path / "results.jsonl")
    assert judge_on_large_trial(unmutated, survivors, store, "cpu", replace(SMALL, at_once=2)) == {}
    locks = {lock for _name, lock in seen}
    assert len(seen) == 2 and len(locks) == 1 and None not in locks  # one turn for both
    assert not Path(locks.pop()).parent.exists()  # and gone once they are judged
    seen.clear()
    assert judge_on_large_trial(unmutated, survivors, ResultStore(tmp_path / "alone.jsonl"), "cpu", SMALL) == {}
    assert [lock for _name, lock in seen] == [None, None]


def test_substrates_judged_side_by_side_store_what_they_store_one_at_a_time(tmp_path):
    unmutated, survivors = _two_substrates()
    stored = {}
    for at_once in (1, 2):
        store = ResultStore(tmp_path / f"results-{at_once}.jsonl")
        heard = []
        assert judge_on_large_trial(unmutated, survivors, store, "cpu", replace(SMALL, at_once=at_once),
                                    on_substrate=lambda *said: heard.append(said)) == {}
        assert sorted(said[0] for said in heard) == ["forms_row_sum", "forms_wrong_distribution"]
        stored[at_once] = [store.get(oracle_key("f" * 64, "cpu", s.mutant_id, LARGE_INDEX)) for s in survivors]
    assert stored[1] == stored[2] and all(record["killed_by"] == LARGE_INDEX for record in stored[1])


def test_a_substrate_the_device_s_memory_fell_short_of_beside_others_is_judged_again_alone(tmp_path, monkeypatch):
    import threading

    from harness.engine import large_index

    unmutated, survivors = _two_substrates()
    calls, running, lock = [], [0], threading.Lock()
    real = large_index._judge_substrate

    def judged(u, mine, backend, settings):
        with lock:
            running[0] += 1
            calls.append((u.substrate, running[0]))  # which substrate, and how many were running with it
        try:
            outcome = real(u, mine, backend, settings)
            if u.substrate == "forms_row_sum" and sum(name == u.substrate for name, _ in calls) == 1:
                outcome.short_of_memory, outcome.judged = True, {}  # as if a launch ran out beside the other
            return outcome
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(large_index, "_judge_substrate", judged)
    store = ResultStore(tmp_path / "results.jsonl")
    heard = []
    assert judge_on_large_trial(unmutated, survivors, store, "cpu", replace(SMALL, at_once=2),
                                on_substrate=lambda name, outcome: heard.append((name, len(outcome.judged),
                                                                                 outcome.killed()))) == {}
    assert sorted(calls[:2]) in ([("forms_row_sum", 1), ("forms_wrong_distribution", 2)],
                                 [("forms_row_sum", 2), ("forms_wrong_distribution", 1)])
    assert calls[2] == ("forms_row_sum", 1)  # again, with nothing beside it
    assert sorted(heard) == [("forms_row_sum", 1, 1), ("forms_wrong_distribution", 1, 1)]  # its first outcome unsaid
    assert store.get(oracle_key("f" * 64, "cpu", survivors[0].mutant_id, LARGE_INDEX))["killed_by"] == LARGE_INDEX


def test_survivors_are_compiled_in_the_programs_the_campaign_compiled_them_in(tmp_path, monkeypatch):
    from harness.backends.cpu import CpuBackend
    from harness.candidates import make_entry
    from harness.compiler import nvrtc
    from harness.engine.large_index import compiled_batches
    from harness.oracles.large_index_run import compiled_in_batches

    unmutated, _ = _substrate()
    dropping, harmless = _guarded_survivor("i >= 300000", 0), _guarded_survivor("i >= (1LL << 40)", 1)
    batch = (dropping.source, unmutated.source, harmless.source)  # as a plan's batch holds them, in its order
    in_batch = [replace(dropping, batch=batch, index=0), replace(harmless, batch=batch, index=2)]
    alone = replace(dropping, mutant_id="forms_row_sum:alone:0")  # a survivor the campaign compiled alone
    programs = compiled_batches(unmutated, [*in_batch, alone])
    assert programs == [
        {"program": "forms_row_sum.cu", "sources": [unmutated.source], "members": {"forms_row_sum": 0}},
        {"program": "forms_row_sum.cu", "sources": list(batch),
         "members": {program_label(in_batch[0].mutant_id): 0, program_label(in_batch[1].mutant_id): 2}}]

    compiles = []
    real = nvrtc.compile_program
    monkeypatch.setattr(nvrtc, "compile_program", lambda *a, **k: compiles.append(a[2:]) or real(*a, **k))
    raw = register_candidate(import_candidate(FORMS), FORMS)["forms_row_sum"]
    entry, _ = make_entry("forms_row_sum", raw, FORMS)
    backend = CpuBackend(cache_dir=tmp_path)
    found = compiled_in_batches(programs, entry, backend)
    assert len(compiles) == 2  # a program each, not a compile per kernel
    assert set(found) == {"forms_row_sum", *(program_label(s.mutant_id) for s in in_batch)}
    survivor_kernels = [found[program_label(s.mutant_id)] for s in in_batch]
    assert survivor_kernels[0].ptx == survivor_kernels[1].ptx  # one program's code
    assert survivor_kernels[0].lowered_name != survivor_kernels[1].lowered_name
    assert compiled_in_batches(programs, entry, backend).keys() == found.keys() and len(compiles) == 2  # cached
    # And judged from them, the verdicts are those of kernels compiled alone.
    store, alone_store = ResultStore(tmp_path / "batched.jsonl"), ResultStore(tmp_path / "alone.jsonl")
    assert judge_on_large_trial([unmutated], in_batch, store, "cpu", SMALL) == {}
    assert judge_on_large_trial([unmutated], [dropping, harmless], alone_store, "cpu", SMALL) == {}
    for s in (dropping, harmless):
        key = oracle_key("f" * 64, "cpu", s.mutant_id, LARGE_INDEX)
        assert store.get(key) == alone_store.get(key)


def test_address_checked_survivors_load_from_the_code_of_their_programs_members_alone(tmp_path):
    """A checked backend assembles the cubin of the PTX it loads: each program's survivors get the PTX of them alone,
    one for the program (every process of the substrate asks for the same, so the cache serves all but the first);
    a program whose every variant is a member keeps its own, the campaign's key."""
    from harness.backends.cpu import CpuBackend
    from harness.candidates import make_entry
    from harness.compiler.batches import pruned_ptx
    from harness.engine.large_index import compiled_batches
    from harness.oracles.large_index_run import compiled_in_batches

    unmutated, _ = _substrate()
    dropping, harmless = _guarded_survivor("i >= 300000", 0), _guarded_survivor("i >= (1LL << 40)", 1)
    batch = (dropping.source, unmutated.source, harmless.source)
    in_batch = [replace(dropping, batch=batch, index=0), replace(harmless, batch=batch, index=2)]
    programs = compiled_batches(unmutated, in_batch)
    raw = register_candidate(import_candidate(FORMS), FORMS)["forms_row_sum"]
    entry, _ = make_entry("forms_row_sum", raw, FORMS)
    backend = CpuBackend(cache_dir=tmp_path)
    whole = compiled_in_batches(programs, entry, backend)
    backend.check_addresses = True
    checked = compiled_in_batches(programs, entry, backend)
    assert checked["forms_row_sum"] == whole["forms_row_sum"]  # a program of one: its own code and key
    first, second = (program_label(s.mutant_id) for s in in_batch)
    batch_ptx = whole[first].ptx
    assert checked[first].ptx is checked[second].ptx == pruned_ptx(batch_ptx, 3, {0, 2}) != batch_ptx
    # The unmutated source's place in the batch (its variant 1) is left out; the members' entries are there.
    assert batch_ptx.count(".entry") == 3 and checked[first].ptx.count(".entry") == 2
    assert all(f".entry {checked[key].lowered_name}" in checked[first].ptx for key in (first, second))
    assert {key: kernel.lowered_name for key, kernel in checked.items()} == \
        {key: kernel.lowered_name for key, kernel in whole.items()}


def test_a_survivor_carries_the_batch_the_plan_compiled_it_in(tmp_path):
    from types import SimpleNamespace

    from harness.engine.compile import batches
    from harness.engine.survivors import value_survivors
    from harness.engine.mutants import generate
    from harness.engine.store import ResultKey

    unmutated, _ = _substrate()
    mutants = generate(unmutated.source, "forms_row_sum")
    plan = SimpleNamespace(name="forms_row_sum", file=unmutated.file, kernel_name=unmutated.kernel_name, t0_bytes=0,
                           source=unmutated.source, source_sha256="f" * 64, mutants=mutants)
    store = ResultStore(tmp_path / "results.jsonl")
    chosen = mutants[3], mutants[-1]  # survivors of two different batches of 4
    for m in mutants:
        store.put(ResultKey("f" * 64, "cpu", m.id), {"status": "survived" if m in chosen else "killed"})
    _, survivors = value_survivors([plan], store, "cpu", LARGE_INDEX, batch_size=4)
    fixed = batches([m.id for m in mutants], 4)
    for mutant, survivor in zip(chosen, survivors):
        (batch,) = [b for b in fixed if mutant.id in b]
        assert survivor.batch == tuple(m.apply(unmutated.source) for m in mutants if m.id in batch)
        assert survivor.batch[survivor.index] == survivor.source == mutant.apply(unmutated.source)
    _, unbatched = value_survivors([plan], store, "cpu", LARGE_INDEX, batch_size=1)
    assert [s.batch for s in unbatched] == [(), ()]


def test_a_kernel_whose_campaign_program_does_not_load_is_loaded_alone():
    from harness.compiler.nvrtc import CompileError
    from harness.oracles.large_index_run import _load

    class Refusing:  # ptxas refuses the whole program address-checked; the kernel alone loads, unless it too is bad
        def __init__(self, alone_too: bool = False):
            self.calls, self.alone_too = [], alone_too

        def load(self, source, kernel_name, program_name, compiled=None):
            self.calls.append(compiled)
            if compiled is not None or self.alone_too:
                raise CompileError("ptxas refused it")
            return f"{program_name} alone"

    backend = Refusing()
    assert _load(backend, "src", "k", "m", compiled="its program") == "m.cu alone"
    assert backend.calls == ["its program", None]
    with pytest.raises(CompileError):  # compiled alone already: the error is the kernel's own, said as it is
        _load(Refusing(alone_too=True), "src", "k", "m", None)


def test_an_interrupt_while_the_oracles_judge_stops_their_threads_and_stores_nothing_they_decide_after(
        tmp_path, monkeypatch):
    import argparse
    import os
    import signal
    import threading
    import time

    from harness.engine import judge

    unmutated, survivor = _substrate()
    monkeypatch.setattr(judge, "value_survivors",
                        lambda plans, store, backend, oracle, batch_size: ([unmutated], [survivor]))
    killed, seen, ended = [], {}, []

    def waits_for_the_stop(name, stop):
        deadline = time.monotonic() + 20
        while not stop.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen[name] = stop.is_set()
        ended.append(name)
        return {}

    large_index_started = threading.Event()

    def sanitizers(unmutated, survivors, store, backend, tools, sanitizer, cache_dir, processes, kb_root, stop, timings):
        large_index_started.wait(20)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: the main thread gets it, both oracles running
        return waits_for_the_stop("sanitizers", stop)

    def large_index(unmutated, survivors, store, backend, settings, on_substrate):
        large_index_started.set()
        return waits_for_the_stop("large-index", settings.stop)

    monkeypatch.setattr(judge, "judge_with_sanitizers", sanitizers)
    monkeypatch.setattr(judge, "judge_on_large_trial", large_index)
    monkeypatch.setattr(judge, "kill_descendants", lambda: killed.append(sorted(seen)))
    args = argparse.Namespace(cache_dir=None, kb_root=None, sanitizer=FAKE, sanitize_processes=1)
    # Python's own handler, as a campaign's main process has it (a test before may have run a worker's code here,
    # which leaves SIGINT to end the process).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            judge.judge_survivors([], args, "cuda", ResultStore(tmp_path / "results.jsonl"),
                                  ("values", SANITIZERS, LARGE_INDEX), ("memcheck",))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == {"sanitizers": True, "large-index": True}  # both told to stop...
    assert killed == [[]]  # ... before their processes were killed, which was before either had ended
    assert sorted(ended) == ["large-index", "sanitizers"]  # and both ended before the interrupt went on


def test_once_stopped_the_large_index_oracle_starts_no_process_and_stores_nothing(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    import threading

    unmutated, _ = _substrate()
    settings = replace(SMALL, stop=threading.Event())  # replace() alone shares SMALL's event with every later test
    settings.stop.set()
    heard = []
    assert judge_on_large_trial([unmutated], [_guarded_survivor("i >= 300000", 0)], store, "cpu", settings,
                                on_substrate=lambda *said: heard.append(said)) == {}
    assert heard == [] and store.get(oracle_key("f" * 64, "cpu", "forms_row_sum:L6C5:guard:0", LARGE_INDEX)) is None


def test_once_stopped_the_sanitizers_oracle_stores_nothing(tmp_path, monkeypatch):
    import threading

    monkeypatch.setenv("FAKE_SANITIZER_SYNCCHECK", _race_at(program_label(MUTANT_ID)))
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, survivor = _substrate()
    stop = threading.Event()
    stop.set()
    assert judge_with_sanitizers([unmutated], [survivor], store, "cpu", ("synccheck",), FAKE, stop=stop) == {}
    assert store.get(oracle_key("f" * 64, "cpu", MUTANT_ID, SANITIZERS)) is None


@pytest.mark.gpu
def test_on_the_gpu_one_process_judges_the_four_trials_and_a_hang_costs_one_more(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    unmutated, _ = _substrate()
    # clock64() is a volatile read: the loop stays (a loop over a volatile local was compiled to pass here).
    spinning = replace(_spinning_survivor(), source=unmutated.source.replace(
        GUARD, GUARD + " if (i >= 300000) { while (clock64() >= 0) {} }"))
    faulting = Survivor("forms_row_sum", str(FORMS), unmutated.kernel_name, 0, "f" * 64, "forms_row_sum:fault:0",
                        unmutated.source.replace(GUARD, GUARD + " if (i >= 300000) out[0] = x[i + (1LL << 40)];"))
    dropping, harmless = _guarded_survivor("i >= 300000", 0), _guarded_survivor("i >= (1LL << 40)", 1)
    heard = []
    settings = replace(SMALL, hang_floor=3.0, check_addresses=True, at_once=2)
    assert judge_on_large_trial([unmutated], [faulting, dropping, spinning, harmless], store, "cuda", settings,
                                on_substrate=lambda *said: heard.append(said)) == {}
    records = {s.mutant_id: store.get(oracle_key("f" * 64, "cuda", s.mutant_id, LARGE_INDEX))
               for s in (faulting, dropping, spinning, harmless)}
    assert records[faulting.mutant_id]["detail"].startswith("the kernel faulted: "), records[faulting.mutant_id]
    assert "elements differ" in records[dropping.mutant_id]["detail"]
    assert records[spinning.mutant_id]["detail"].startswith("the kernel hung: ran past 3 s on the large trial")
    assert records[harmless.mutant_id]["killed_by"] == "" and records[harmless.mutant_id]["trial"].count(";") == 2
    # The foreseen fault left the process to judge the next kernel; the hang cost one more process.
    assert [outcome.processes for _name, outcome in heard] == [2]


@pytest.mark.gpu
def test_on_the_gpu_substrates_taking_turns_at_the_memory_store_what_they_store_one_at_a_time(tmp_path):
    # Side by side, each process builds its trial in its turn and reserves the rest of what it needs in its cache.
    unmutated, survivors = _two_substrates()
    stored = {}
    for at_once in (1, 2):
        store = ResultStore(tmp_path / f"results-{at_once}.jsonl")
        assert judge_on_large_trial(unmutated, survivors, store, "cuda", replace(SMALL, at_once=at_once)) == {}
        stored[at_once] = [store.get(oracle_key("f" * 64, "cuda", s.mutant_id, LARGE_INDEX)) for s in survivors]
    # The row sum adds with atomics: on the GPU their order, and so the last bits of the first mismatches' values the
    # detail quotes, differ from run to run. The verdicts, the trials and the mismatch counts do not.
    def verdict(record: dict) -> dict:
        return dict(record, detail=record["detail"].split(";")[0].split(" (max abs error")[0])

    assert [verdict(r) for r in stored[1]] == [verdict(r) for r in stored[2]]
    assert all(record["killed_by"] == LARGE_INDEX for record in stored[1])


def test_the_substrates_with_most_survivors_start_first_and_ties_keep_the_campaigns_order(tmp_path, monkeypatch):
    from harness.engine import large_index
    from harness.engine.large_index import SubstrateJudged

    started = []
    monkeypatch.setattr(large_index, "_judge_substrate",
                        lambda u, mine, backend, settings: started.append(u.substrate) or SubstrateJudged())
    unmutated = [Unmutated(name, "f.py", "k", 0, "") for name in ("one", "three", "two", "also_three")]
    counts = {"one": 1, "three": 3, "two": 2, "also_three": 3}
    survivors = [Survivor(name, "f.py", "k", 0, "f" * 64, f"{name}:{i}", "") for name in counts
                 for i in range(counts[name])]
    judge_on_large_trial(unmutated, survivors, ResultStore(tmp_path / "results.jsonl"), "cpu", SMALL)
    assert started == ["three", "also_three", "two", "one"]


def test_the_suites_lowest_rank_trial_is_found_once_a_process_for_every_trial_tiled_from_it():
    import types

    import torch

    from harness.oracles.large_index_run import lowest_rank_trial

    built = []

    def rows(t):
        built.append(("rows", t))
        return [torch.ones(4, 8 + t), torch.ones(1)]

    def vector(t):
        built.append(("vector", t))
        return [torch.ones(100 * (t + 1)), torch.ones(1)]

    entry = types.SimpleNamespace(suites=lambda: [("rows", 2, rows), ("vectors", 3, vector)])
    t0 = [torch.ones(2, 3, 4)]
    memo = {}
    below, where = lowest_rank_trial(entry, t0, torch, below_t0=True, found=memo)
    assert where == "vectors trial 2" and below[0].shape == (300,)  # rank 1, the most elements of that rank
    assert len(built) == 5
    again, where_again = lowest_rank_trial(entry, t0, torch, below_t0=False, found=memo)
    assert where_again == where and again is below and len(built) == 5  # the second trial built nothing again
    # Without a rank below T0's, the trial below it is refused, from the memo too.
    assert lowest_rank_trial(entry, [torch.ones(7)], torch, found=memo) == (
        None, "no suite's trial has a rank below T0's (1)")


def test_a_trial_a_process_died_building_after_judging_others_is_built_again_in_a_fresh_one(tmp_path):
    # Before: 'the large trial could not be built' and the survivors never met it, though the process had run kernels
    # (one may have broken it). The problem's Model dies the first time it meets the trial cut to 8192 rows.
    import shutil

    (tmp_path / "candidates").mkdir()
    (tmp_path / "problems").mkdir()
    candidate = tmp_path / "candidates" / FORMS.name
    shutil.copy(FORMS, candidate)
    marker = tmp_path / "died-once"
    (tmp_path / "problems" / "row_sum.py").write_text(
        (REPO / "tests" / "problems" / "row_sum.py").read_text().replace(
            "        return torch.sum(x, dim=1)",
            f"        import os, pathlib\n"
            f"        marker = pathlib.Path({str(marker)!r})\n"
            f"        if x.shape[0] == 8192 and not marker.exists():\n"
            f"            marker.touch()\n"
            f"            os.abort()\n"
            f"        return torch.sum(x, dim=1)"))
    unmutated, _ = _substrate()
    unmutated = replace(unmutated, file=str(candidate))
    harmless = replace(_guarded_survivor("i >= (1LL << 40)", 1), file=str(candidate))
    store = ResultStore(tmp_path / "results.jsonl")
    heard = []
    assert judge_on_large_trial([unmutated], [harmless], store, "cpu", SMALL,
                                on_substrate=lambda *said: heard.append(said)) == {}
    assert marker.exists()
    assert [outcome.processes for _name, outcome in heard] == [2]
    assert store.get(oracle_key("f" * 64, "cpu", harmless.mutant_id, LARGE_INDEX))["trial"].endswith(
        "T0_original trial 0 tiled 128x along axis 0 and cut to 8192: 8192x256, out 8192")


def test_a_substrate_no_large_trial_judged_says_why_in_its_line():
    # On an H100 pad_reflect_b8's every large trial needs more than the device (120.8 GiB): its line read
    # `0 survivor(s) judged, 0 killed, in 5.0 s, 1 process(es)`, the reason only in the notes after the oracle.
    from harness.engine.large_index import SubstrateJudged

    why = "T0 trial 0 along axis 0: the large trial needs about 120.8 GiB of device memory; 37.3 GiB of 79.2 GiB are free"
    assert SubstrateJudged(why_not=[why, "another"], processes=1, seconds=5.0).describe() == (
        f"0 survivor(s) judged, 0 killed, in 5.0 s, 1 process(es) (none judged: {why})")
    judged = SubstrateJudged(judged={"m": (True, "d", "t")}, why_not=[why], processes=1, seconds=5.0,
                             parts={"running kernels": 0.5})
    assert judged.describe() == "1 survivor(s) judged, 1 killed, in 5.0 s, 1 process(es) (running kernels 0.5 s)"


def test_the_survivors_are_compiled_alone_ahead_of_the_tools_as_the_tools_load_them(tmp_path, monkeypatch):
    # Each compile was in the path of the first tool to reach its survivor: here they are in the cache before.
    from harness.compiler import cache, nvrtc
    from harness.engine import judge

    monkeypatch.setenv("SUBSTRATE_CACHE_DIR", str(tmp_path / "default-cache"))
    found = {}

    def tools(targets, tools, sanitizer, backend, cache_dir, **kwargs):
        for target in targets:
            compiled, from_cache = cache.compile_cached(
                target.cuda, target.kernel_name, nvrtc.DEFAULT_ARCH, tmp_path / "cache", f"{target.label}.cu")
            found[target.label or target.name] = from_cache
        return {}

    monkeypatch.setattr("harness.backends.gpu_arch", lambda: None)
    monkeypatch.setattr(judge, "sanitize", tools)
    started = []
    real = judge._survivors_compiled_ahead

    def ahead_then_wait(targets, backend, cache_dir):
        executor = real(targets, backend, cache_dir)
        started.append(executor)
        executor.shutdown(wait=True)  # here the tools start after it: every survivor compiled by then
        return executor

    monkeypatch.setattr(judge, "_survivors_compiled_ahead", ahead_then_wait)
    unmutated, survivor = _substrate()
    judge_with_sanitizers([unmutated], [survivor], ResultStore(tmp_path / "r.jsonl"), "cuda", ("memcheck",), FAKE,
                          str(tmp_path / "cache"))
    assert started and found == {program_label(MUTANT_ID): True, "forms_row_sum": False}  # survivors only
    assert real([], "cpu", None) is None  # the CPU backend's tools do not run
