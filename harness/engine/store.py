"""The campaign's result store: one JSON line per finished mutant, appended and flushed as it comes.

A result is keyed by what decides it: the substrate's source hash (its candidate file, CUDA
source and problem, so suites and tolerance are covered), the backend, and the mutant's id. A
campaign stopped at any point, even by kill -9, loses at most the mutant it was running; the
next run skips every mutant whose key is stored, so a second run over unchanged substrates does
nothing but read this file. A torn last line (the process died mid-write) is ignored.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

DEFAULT_STORE = Path(".campaign") / "results.jsonl"


@dataclass(frozen=True)
class ResultKey:
    source_sha256: str
    backend: str
    mutant_id: str


class ResultStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._results: dict[ResultKey, dict] = {}
        # The engine's worker slots and the oracles' threads put results at once: one append at a time, or one
        # thread's torn-line check could see another's half-written line (a blank line in the store, seen on the H200).
        self._lock = threading.Lock()
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                    key = ResultKey(record["source_sha256"], record["backend"], record["mutant_id"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line torn by a kill mid-write, or not ours
                self._results[key] = record

    def get(self, key: ResultKey) -> dict | None:
        return self._results.get(key)

    def __contains__(self, key: ResultKey) -> bool:
        return key in self._results

    def __len__(self) -> int:
        return len(self._results)

    def put(self, key: ResultKey, result: dict) -> None:
        """Append one result and make it durable before returning."""
        record = {"source_sha256": key.source_sha256, "backend": key.backend, "mutant_id": key.mutant_id, **result}
        line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.path, "a+b") as stream:
            # A torn line from an earlier kill must not swallow this one. Only the last byte is read: the whole
            # store, read at every put, made a campaign's appends quadratic in its length.
            end = stream.seek(0, os.SEEK_END)
            if end:
                stream.seek(end - 1)
                if stream.read(1) != b"\n":
                    line = b"\n" + line
            stream.write(line)  # append mode: at the end, wherever the read left the position
            stream.flush()
            os.fsync(stream.fileno())
            self._results[key] = record
