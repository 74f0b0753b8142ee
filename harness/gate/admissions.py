"""The admission record: which substrate was admitted, at which source hash, on which backend and device.

Kept in substrates/admissions.json and committed, so a mutation campaign (or a reviewer) can
tell whether a substrate is admitted as it stands: a changed source no longer matches its hash.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from harness.candidates import SUBSTRATES_DIR
from harness.gate.records import SubstrateReport

RECORD_NAME = "admissions.json"
DEFAULT_RECORD = SUBSTRATES_DIR / RECORD_NAME
SCHEMA = 1


def record_path_for(candidate_file: Path) -> Path:
    """The record a candidate's verdicts go to: admissions.json in the candidate's own folder."""
    return Path(candidate_file).resolve().parent / RECORD_NAME


def load_record(path: Path) -> dict:
    if not path.is_file():
        return {"schema": SCHEMA, "substrates": {}}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error}); fix or delete it") from error
    if not isinstance(record, dict):
        raise ValueError(f"{path}: holds a JSON {type(record).__name__}, not an admission record; fix or delete it")
    if record.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {record.get('schema')!r}, this harness reads schema {SCHEMA}")
    if not isinstance(record.get("substrates"), dict):
        raise ValueError(f"{path}: has no 'substrates' object; fix or delete it")
    return record


# What an entry says of the substrate; the rest ("device", "date") says where and when it was first said.
VERDICT_KEYS = ("admitted", "source_sha256", "reasons")


def with_result(record: dict, report: SubstrateReport, backend: str, device: str, when: str | None = None) -> dict:
    """A copy of `record` holding this verdict for (substrate, backend).

    The same verdict at the same source hash keeps the entry as it stands, with the device and date that first
    gave it: a clone's records (committed beside the project's own substrates) stay as they are when a user's gate
    only confirms them, and `git status` stays clean.
    """
    updated = json.loads(json.dumps(record))
    entry = {
        "admitted": report.admitted,
        "source_sha256": report.source_sha256,
        "device": device,
        "date": when or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "reasons": report.reasons(),
    }
    per_backend = updated["substrates"].setdefault(report.name, {})
    known = per_backend.get(backend)
    if not (isinstance(known, dict) and all(known.get(key) == entry[key] for key in VERDICT_KEYS)):
        per_backend[backend] = entry
    return updated


def save_record(path: Path, record: dict) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


@contextmanager
def _folder_locked(folder: Path):
    """An exclusive lock on a record's folder while its record is read, changed and written.

    flock on the folder itself: no lock file is left beside a user's candidates, and the record's own
    inode changes at every save (os.replace), so locking it would not exclude the next writer.
    """
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # and with it the lock


def update_record(path: Path, change) -> dict:
    """Apply change(record) to the record as it is on disk now and save it if that changed it; returns the record.

    Two gates recording into one folder at once (two shells, or bench_gate's chains on several GPUs)
    each re-read the record under the lock, so neither overwrites the other's verdicts with a copy it
    read earlier.
    """
    with _folder_locked(path.parent):
        before = load_record(path)
        as_it_was = json.dumps(before, sort_keys=True)  # before `change`, which may change the dict it is given
        record = change(before)
        if json.dumps(record, sort_keys=True) != as_it_was or not path.is_file():  # unchanged: not written again
            save_record(path, record)
    return record


def admission_status(record: dict, name: str, source_sha256: str) -> str:
    """One line on where `name` stands, for `gate.py --list`."""
    per_backend = record["substrates"].get(name, {})
    if not per_backend:
        return "never gated"
    parts = []
    for backend, entry in sorted(per_backend.items()):
        where = f"{backend}, {entry['device']}, {entry['date'][:10]}"
        if entry["source_sha256"] != source_sha256:
            # The hash covers the candidate and its problem file: another copy of the problem reads as a change.
            parts.append(f"source or problem file changed since it was {'admitted' if entry['admitted'] else 'rejected'}"
                         f" ({where})")
        elif entry["admitted"]:
            parts.append(f"admitted ({where})")
        else:
            parts.append(f"rejected ({where})")
    return "; ".join(parts)


def is_admitted(record: dict, name: str, source_sha256: str, backend: str | None = None) -> bool:
    per_backend = record["substrates"].get(name, {})
    return any(entry["admitted"] and entry["source_sha256"] == source_sha256
               for b, entry in per_backend.items() if backend in (None, b))
