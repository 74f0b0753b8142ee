"""harness/gate/admissions.py: the committed record of which substrate was admitted, at which source hash."""

import copy
import datetime
import json

import pytest

from harness.gate.admissions import SCHEMA, admission_status, is_admitted, load_record, save_record, with_result
from harness.gate.records import CheckName, CheckResult, CheckStatus, SubstrateReport

WHEN = "2025-01-02T03:04:05+00:00"
SHA = "a" * 64
OTHER_SHA = "b" * 64


def report(name="relu", admitted=True, sha=SHA):
    checks = [CheckResult(CheckName.COMPILE, CheckStatus.PASSED)]
    if not admitted:
        checks += [
            CheckResult(CheckName.OUTPUT_MATCHES, CheckStatus.FAILED, "suite small: 3 of 4 elements differ"),
            CheckResult(CheckName.WRITES_IN_BOUNDS, CheckStatus.FAILED, "4 bytes changed in the guard band after out"),
            CheckResult(CheckName.INPUTS_UNCHANGED, CheckStatus.NOT_RUN),
        ]
    return SubstrateReport(name=name, file=f"substrates/{name}.py", checks=checks, source_sha256=sha)


def empty():
    return {"schema": SCHEMA, "substrates": {}}


# --- load_record ----------------------------------------------------------------------------------

def test_missing_record_loads_as_an_empty_schema_1_record(tmp_path):
    assert load_record(tmp_path / "admissions.json") == {"schema": 1, "substrates": {}}


def test_each_missing_record_load_is_a_fresh_dict(tmp_path):
    first = load_record(tmp_path / "admissions.json")
    first["substrates"]["relu"] = {}
    assert load_record(tmp_path / "admissions.json") == {"schema": 1, "substrates": {}}


@pytest.mark.parametrize("text", ["{not json", "", '{"schema": 1,}', "{'schema': 1}"])
def test_invalid_json_raises_value_error_naming_the_path(tmp_path, text):
    path = tmp_path / "admissions.json"
    path.write_text(text)
    with pytest.raises(json.JSONDecodeError) as parse:
        json.loads(text)
    with pytest.raises(ValueError) as raised:
        load_record(path)
    assert str(raised.value) == f"{path}: not valid JSON ({parse.value}); fix or delete it"


@pytest.mark.parametrize("text, shown", [
    ('{"schema": 2, "substrates": {}}', "2"),
    ('{"schema": 0}', "0"),
    ('{"substrates": {}}', "None"),
    ('{"schema": "1", "substrates": {}}', "'1'"),
    ("{}", "None"),
])
def test_wrong_schema_raises_value_error_naming_the_path(tmp_path, text, shown):
    path = tmp_path / "admissions.json"
    path.write_text(text)
    with pytest.raises(ValueError) as raised:
        load_record(path)
    assert str(raised.value) == f"{path}: schema {shown}, this harness reads schema 1"


@pytest.mark.parametrize("text", ["[]", "null", "3", '"admissions"'])
def test_json_that_is_not_an_object_raises_value_error_naming_the_path(tmp_path, text):
    path = tmp_path / "admissions.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=str(path)):
        load_record(path)


def test_undecodable_file_raises_value_error_naming_the_path(tmp_path):
    path = tmp_path / "admissions.json"
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(ValueError) as raised:
        load_record(path)
    assert str(path) in str(raised.value)


# --- with_result ----------------------------------------------------------------------------------

def test_with_result_records_an_admission():
    record = empty()
    updated = with_result(record, report(), "cuda", "NVIDIA H200", when=WHEN)
    assert updated == {"schema": 1, "substrates": {"relu": {"cuda": {
        "admitted": True, "source_sha256": SHA, "device": "NVIDIA H200", "date": WHEN, "reasons": [],
    }}}}


def test_with_result_records_a_rejection_with_its_reasons():
    updated = with_result(empty(), report(admitted=False), "cpu", "cpu", when=WHEN)
    assert updated["substrates"]["relu"]["cpu"] == {
        "admitted": False, "source_sha256": SHA, "device": "cpu", "date": WHEN,
        "reasons": ["output_matches: suite small: 3 of 4 elements differ",
                    "writes_in_bounds: 4 bytes changed in the guard band after out"],
    }


def test_a_report_without_checks_is_recorded_as_rejected():
    bare = SubstrateReport(name="relu", file="substrates/relu.py", source_sha256=SHA)
    entry = with_result(empty(), bare, "cuda", "NVIDIA H200", when=WHEN)["substrates"]["relu"]["cuda"]
    assert entry["admitted"] is False and entry["reasons"] == []


def test_with_result_does_not_mutate_its_input():
    record = with_result(empty(), report("gelu"), "cpu", "cpu", when=WHEN)
    before = copy.deepcopy(record)
    updated = with_result(record, report("gelu", admitted=False), "cpu", "cpu", when=WHEN)
    updated = with_result(updated, report("relu"), "cuda", "NVIDIA H200", when=WHEN)
    assert record == before
    # nor share nested dicts with it
    updated["substrates"]["gelu"]["cpu"]["reasons"].append("edited")
    updated["substrates"]["gelu"]["cpu"]["admitted"] = "edited"
    assert record == before


def test_with_result_keeps_other_backends_and_substrates_and_replaces_the_same_backend():
    record = with_result(empty(), report("relu"), "cuda", "NVIDIA H200", when=WHEN)
    record = with_result(record, report("gelu"), "cuda", "NVIDIA H200", when=WHEN)
    record = with_result(record, report("relu", admitted=False, sha=OTHER_SHA), "cpu", "cpu", when=WHEN)
    record = with_result(record, report("relu", sha=OTHER_SHA), "cuda", "NVIDIA H100", when="2025-02-03T00:00:00+00:00")
    assert sorted(record["substrates"]) == ["gelu", "relu"]
    assert sorted(record["substrates"]["relu"]) == ["cpu", "cuda"]
    assert record["substrates"]["relu"]["cuda"] == {
        "admitted": True, "source_sha256": OTHER_SHA, "device": "NVIDIA H100",
        "date": "2025-02-03T00:00:00+00:00", "reasons": [],
    }
    assert record["substrates"]["relu"]["cpu"]["admitted"] is False
    assert record["substrates"]["gelu"]["cuda"]["source_sha256"] == SHA


def test_with_result_dates_an_undated_verdict_now_in_utc_to_the_second():
    start = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    date = with_result(empty(), report(), "cuda", "NVIDIA H200")["substrates"]["relu"]["cuda"]["date"]
    end = datetime.datetime.now(datetime.timezone.utc)
    parsed = datetime.datetime.fromisoformat(date)
    assert date.endswith("+00:00") and parsed.microsecond == 0
    assert start <= parsed <= end


# --- admission_status -----------------------------------------------------------------------------

def recorded(*verdicts):
    """A record holding (report, backend, device, date) verdicts, added in order."""
    record = empty()
    for rep, backend, device, date in verdicts:
        record = with_result(record, rep, backend, device, when=date)
    return record


@pytest.mark.parametrize("record, sha, status", [
    (empty(), SHA, "never gated"),
    ({"schema": 1, "substrates": {"relu": {}}}, SHA, "never gated"),
    (recorded((report("gelu"), "cuda", "NVIDIA H200", WHEN)), SHA, "never gated"),
    (recorded((report(), "cuda", "NVIDIA H200", WHEN)), SHA, "admitted (cuda, NVIDIA H200, 2025-01-02)"),
    (recorded((report(admitted=False), "cuda", "NVIDIA H200", WHEN)), SHA, "rejected (cuda, NVIDIA H200, 2025-01-02)"),
    (recorded((report(), "cuda", "NVIDIA H200", WHEN)), OTHER_SHA,
     "source or problem file changed since it was admitted (cuda, NVIDIA H200, 2025-01-02)"),
    (recorded((report(admitted=False), "cpu", "cpu", WHEN)), OTHER_SHA,
     "source or problem file changed since it was rejected (cpu, cpu, 2025-01-02)"),
    # backends in name order whatever the order they were added in
    (recorded((report(admitted=False), "cuda", "NVIDIA H200", WHEN),
              (report(), "cpu", "x86_64", "2025-01-03T23:59:59+00:00")), SHA,
     "admitted (cpu, x86_64, 2025-01-03); rejected (cuda, NVIDIA H200, 2025-01-02)"),
    (recorded((report(sha=OTHER_SHA), "cuda", "NVIDIA H200", WHEN),
              (report(), "cpu", "cpu", WHEN)), SHA,
     "admitted (cpu, cpu, 2025-01-02); source or problem file changed since it was admitted (cuda, NVIDIA H200, 2025-01-02)"),
])
def test_admission_status(record, sha, status):
    assert admission_status(record, "relu", sha) == status


# --- is_admitted ----------------------------------------------------------------------------------

@pytest.fixture
def mixed_record():
    return recorded(
        (report("relu"), "cuda", "NVIDIA H200", WHEN),
        (report("relu", admitted=False), "cpu", "cpu", WHEN),
        (report("gelu", sha=OTHER_SHA), "cpu", "cpu", WHEN),
    )


@pytest.mark.parametrize("name, sha, backend, admitted", [
    ("relu", SHA, None, True),
    ("relu", SHA, "cuda", True),
    ("relu", SHA, "cpu", False),  # rejected on this backend
    ("relu", SHA, "rocm", False),  # never gated on this backend
    ("relu", OTHER_SHA, None, False),  # source changed
    ("relu", OTHER_SHA, "cuda", False),
    ("gelu", OTHER_SHA, "cpu", True),
    ("gelu", OTHER_SHA, "cuda", False),
    ("gelu", SHA, None, False),
    ("silu", SHA, None, False),  # never gated at all
])
def test_is_admitted(mixed_record, name, sha, backend, admitted):
    assert is_admitted(mixed_record, name, sha, backend) is admitted


# --- save_record ----------------------------------------------------------------------------------

def test_save_record_round_trips(tmp_path, mixed_record):
    path = tmp_path / "admissions.json"
    save_record(path, mixed_record)
    assert load_record(path) == mixed_record
    assert path.read_text() == json.dumps(mixed_record, indent=2, sort_keys=True) + "\n"
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_save_record_replaces_an_existing_record(tmp_path, mixed_record):
    path = tmp_path / "admissions.json"
    save_record(path, mixed_record)
    save_record(path, empty())
    assert load_record(path) == {"schema": 1, "substrates": {}}
    assert list(tmp_path.iterdir()) == [path]


def test_saved_status_reads_the_same_after_loading(tmp_path, mixed_record):
    path = tmp_path / "admissions.json"
    save_record(path, mixed_record)
    loaded = load_record(path)
    assert admission_status(loaded, "relu", SHA) == "rejected (cpu, cpu, 2025-01-02); admitted (cuda, NVIDIA H200, 2025-01-02)"
    assert is_admitted(loaded, "relu", SHA, "cuda") and not is_admitted(loaded, "relu", SHA, "cpu")


# --- two gates recording into one folder ---------------------------------------------------------------------

def test_two_gates_recording_into_one_folder_keep_each_others_verdicts(tmp_path):
    from harness.gate.command import RecordBook

    path = tmp_path / "admissions.json"
    first, second = RecordBook(path), RecordBook(path)  # each read the (empty) record when it started
    first.add(report("relu"), "cuda", "NVIDIA H200")
    second.add(report("gelu", admitted=False), "cuda", "NVIDIA H200")
    substrates = load_record(path)["substrates"]
    assert sorted(substrates) == ["gelu", "relu"]  # the second did not write back its stale copy
    assert substrates["relu"]["cuda"]["admitted"] and not substrates["gelu"]["cuda"]["admitted"]


def test_a_record_is_updated_under_a_lock_on_its_folder(tmp_path):
    import fcntl
    import os
    import threading

    from harness.gate.admissions import update_record

    path = tmp_path / "admissions.json"
    held = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # another gate is recording
    done = threading.Event()
    writer = threading.Thread(target=lambda: (update_record(path, lambda r: with_result(r, report(), "cpu", "CPU")),
                                              done.set()))
    writer.start()
    assert not done.wait(0.5) and not path.exists()  # it waits for the lock
    os.close(held)
    writer.join(10)
    assert done.is_set() and list(load_record(path)["substrates"]) == ["relu"]


# --- a verdict confirmed leaves the record as it is -------------------------------------------------

def test_the_same_verdict_at_the_same_hash_keeps_the_first_device_and_date():
    first = with_result(empty(), report(), "cpu", "CPU: AMD EPYC (2 cores)", when=WHEN)
    again = with_result(first, report(), "cpu", "CPU: Intel Xeon (8 cores)", when="2027-01-01T00:00:00+00:00")
    assert again == first


@pytest.mark.parametrize("changed", [dict(admitted=False), dict(sha=OTHER_SHA)])
def test_a_changed_verdict_or_source_replaces_the_entry_with_its_own_device_and_date(changed):
    first = with_result(empty(), report(), "cpu", "CPU: AMD EPYC (2 cores)", when=WHEN)
    later = "2027-01-01T00:00:00+00:00"
    entry = with_result(first, report(**changed), "cpu", "CPU: Intel Xeon (8 cores)", when=later)["substrates"]["relu"]["cpu"]
    assert (entry["device"], entry["date"]) == ("CPU: Intel Xeon (8 cores)", later)


def test_a_gate_that_only_confirms_the_record_does_not_write_it(tmp_path):
    # The README's first command on a fresh clone: the committed record must stay byte for byte (git status clean).
    from harness.gate.admissions import update_record

    path = tmp_path / "admissions.json"
    update_record(path, lambda record: with_result(record, report(), "cpu", "CPU: AMD EPYC (2 cores)", when=WHEN))
    written = path.read_bytes()
    path.write_bytes(written.replace(b"\n", b"\n", 1))  # the same bytes, a new modification time
    stamp = path.stat().st_mtime_ns
    update_record(path, lambda record: with_result(record, report(), "cpu", "CPU: Intel Xeon (8 cores)"))
    assert path.read_bytes() == written and path.stat().st_mtime_ns == stamp
    update_record(path, lambda record: with_result(record, report(admitted=False), "cpu", "CPU: Intel Xeon (8 cores)"))
    assert json.loads(path.read_text())["substrates"]["relu"]["cpu"]["admitted"] is False


def test_every_family_substrate_has_a_cpu_admission_at_its_current_source_and_problem():
    # A campaign runs only what is admitted at the current hash, which covers the problem file too: the backward pads'
    # Models were changed (sliced folds) without the records, and a campaign refused eight of the 28 until each was
    # gated again. CI gates on the CPU, so the CPU's records can always be kept current with the tree.
    from harness.candidates import candidate_files, import_candidate, make_entry, register_candidate
    from harness.gate.admissions import record_path_for

    stale = []
    for path in candidate_files():
        record = load_record(record_path_for(path))
        for name, raw in register_candidate(import_candidate(path), path).items():
            entry, _problems = make_entry(name, raw, path)
            if not is_admitted(record, name, entry.source_sha256(), "cpu"):
                stale.append(f"{name}: {admission_status(record, name, entry.source_sha256())}")
    assert stale == []
