"""What the oracles judge: the value suites' survivors and their unmutated substrates, and where a judgement is stored.

Every value survivor is judged by every chosen oracle (harness.engine.judge), and the first in ORACLES order that
kills it is named. Judgements are stored beside the value results, under the mutant's id and the oracle's name
(`oracle_key`), so a resumed campaign judges only what is not stored, and a report still knows what the value suites
alone decided (`decided`). Pure: no torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.engine.store import ResultKey, ResultStore

VALUES = "values"
SANITIZERS = "sanitizers"
LARGE_INDEX = "large-index"
ORACLES = (VALUES, SANITIZERS, LARGE_INDEX)  # a kill is credited to the first of these that makes it


def oracle_key(source_sha256: str, backend: str, mutant_id: str, oracle: str) -> ResultKey:
    return ResultKey(source_sha256, backend, f"{mutant_id}|{oracle}")


def program_label(mutant_id: str) -> str:
    """A mutant's program name under the tools: its id with what a file name should not hold replaced."""
    return re.sub(r"[^\w.+-]", "_", mutant_id)


@dataclass(frozen=True)
class Survivor:
    """A mutant the value suites let through, with what it runs."""

    substrate: str
    file: str
    kernel_name: str
    t0_bytes: int
    source_sha256: str
    mutant_id: str
    source: str  # the mutated CUDA source
    # The sources of the batch the campaign compiled it in (the plan's fixed batches; empty where none), and its
    # place there: the large-index program finds that program in the compile cache rather than compiling it alone.
    batch: tuple[str, ...] = ()
    index: int = 0


@dataclass(frozen=True)
class Unmutated:
    substrate: str
    file: str
    kernel_name: str
    t0_bytes: int
    source: str


def decided(value_record: dict, oracle_records: list[dict]) -> tuple[str, str, str]:
    """(status, detail, oracle) of a mutant: the value suites' verdict, unless a later oracle killed a survivor.

    `oracle_records` in ORACLES order; `oracle` is "" when the value suites decided, else what killed it
    (a tool's name, or "large-index").
    """
    if value_record["status"] == "survived":
        for record in oracle_records:
            if record.get("killed_by"):
                killer = record.get("killer") or record["killed_by"]
                return "killed", f"killed by {killer}: {record['detail']}", record["killed_by"]
    return value_record["status"], value_record.get("detail", ""), ""


def value_survivors(plans: list, store: ResultStore, backend: str, oracle: str, batch_size: int = 1):
    """The substrates and the survivors of the value suites that `oracle` has not judged yet, each with the batch
    the campaign compiled it in (batches of `batch_size`, as the plan fixes them; none for 1)."""
    from harness.engine.compile import batches

    unmutated, survivors = [], []
    for plan in plans:
        mine = [m for m in plan.mutants
                if (r := store.get(ResultKey(plan.source_sha256, backend, m.id))) and r["status"] == "survived"
                and oracle_key(plan.source_sha256, backend, m.id, oracle) not in store]
        if not mine:
            continue
        unmutated.append(Unmutated(plan.name, plan.file, plan.kernel_name, plan.t0_bytes, plan.source))
        by_id = {m.id: m for m in plan.mutants}
        batch_of = ({i: batch for batch in batches(list(by_id), batch_size) for i in batch} if batch_size > 1
                    else {})
        sources: dict[tuple, tuple[str, ...]] = {}  # each batch's sources, made once for all its survivors
        for m in mine:
            batch = batch_of.get(m.id, ())
            if batch not in sources:
                sources[batch] = tuple(by_id[i].apply(plan.source) for i in batch)
            survivors.append(Survivor(plan.name, plan.file, plan.kernel_name, plan.t0_bytes, plan.source_sha256,
                                      m.id, m.apply(plan.source), sources[batch], batch.index(m.id) if batch else 0))
    return unmutated, survivors
