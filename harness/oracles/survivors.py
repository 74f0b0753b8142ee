"""A campaign's survivors judged again by an oracle that sees more than values: compute-sanitizer's tools.

A mutant that every value suite lets through may still race, overrun a buffer into harmless bytes
or leave a barrier half-reached. After the value phase, each survivor, and first its unmutated
substrate, runs under the chosen tools on the substrate's sanitizer cases (harness.oracles.sanitizer).
A tool judges a substrate's mutants only if the unmutated substrate passes it: a report of that
tool on the mutant then kills it. Judgements are stored beside the value results, under the
mutant's id and the oracle's name (`oracle_key`), so a resumed campaign judges only what is not
stored, and a report still knows what the value suites alone decided.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.campaign_store import ResultKey, ResultStore
from harness.oracles.sanitizer import SanitizerTarget, sanitize
from harness.records import CheckStatus

VALUES = "values"
SANITIZERS = "sanitizers"
ORACLES = (VALUES, SANITIZERS)  # in the order they judge: a later one sees only what the earlier let survive


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


@dataclass(frozen=True)
class Unmutated:
    substrate: str
    file: str
    kernel_name: str
    t0_bytes: int
    source: str


def judge_with_sanitizers(unmutated: list[Unmutated], survivors: list[Survivor], store: ResultStore, backend: str,
                          tools: tuple[str, ...], sanitizer, cache_dir: str | None = None) -> dict[str, str]:
    """Run the tools over the survivors (and their unmutated substrates) and store a judgement per survivor.

    Returns, per substrate, why a tool could not judge its mutants (the unmutated substrate fails it), if so.
    """
    targets = [SanitizerTarget(u.file, u.substrate, u.kernel_name, u.t0_bytes, u.source) for u in unmutated]
    targets += [SanitizerTarget(s.file, s.substrate, s.kernel_name, s.t0_bytes, s.source,
                                label=program_label(s.mutant_id), replaces_cuda=True) for s in survivors]
    checks = sanitize(targets, tools, sanitizer, backend, cache_dir)
    unusable: dict[str, str] = {}
    judging: dict[str, set[str]] = {}
    for u in unmutated:
        passed = {c.check.value for c in checks.get(u.substrate, []) if c.status is CheckStatus.PASSED}
        judging[u.substrate] = passed
        refused = [f"{c.check.value} ({c.detail})" for c in checks.get(u.substrate, [])
                   if c.status is not CheckStatus.PASSED]
        if refused:
            unusable[u.substrate] = "the unmutated substrate does not pass " + "; ".join(refused)
    for s in survivors:
        results = checks.get(program_label(s.mutant_id), [])
        killed = [c for c in results if c.check.value in judging.get(s.substrate, set())
                  and c.status is CheckStatus.FAILED]
        record = {"oracle": SANITIZERS, "killed_by": killed[0].check.value if killed else "",
                  "detail": killed[0].detail if killed else "; ".join(
                      f"{c.check.value}: {c.status.value}" for c in results),
                  "tools": {c.check.value: c.status.value for c in results},
                  "judged_by": sorted(judging.get(s.substrate, set()))}
        store.put(oracle_key(s.source_sha256, backend, s.mutant_id, SANITIZERS), record)
    return unusable


def decided(value_record: dict, oracle_records: list[dict]) -> tuple[str, str, str]:
    """(status, detail, oracle) of a mutant: the value suites' verdict, unless a later oracle killed a survivor.

    `oracle` is "" when the value suites decided, else the tool that killed it.
    """
    if value_record["status"] == "survived":
        for record in oracle_records:
            if record.get("killed_by"):
                return "killed", f"killed by {record['killed_by']} (compute-sanitizer): {record['detail']}", (
                    record["killed_by"])
    return value_record["status"], value_record.get("detail", ""), ""
