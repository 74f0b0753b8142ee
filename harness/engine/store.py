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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as stream:
            # A torn line from an earlier kill must not swallow this one.
            if stream.tell() and not self.path.read_bytes().endswith(b"\n"):
                stream.write("\n")
            stream.write(json.dumps(record, sort_keys=True) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        self._results[key] = record
