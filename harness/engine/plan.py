"""The plan of a campaign: which substrates are mutated (those admitted at their current source hash on
the backend), and every mutant of each (`harness.engine.mutants`), as one Plan per substrate."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from harness import admissions
from harness.candidates import candidate_files
from harness.engine.mutants import Mutant, generate
from harness.worker import discover


class UsageError(Exception):
    """A campaign asked for what cannot be run (an unknown substrate, a bad option): exit 2."""


@dataclass
class Plan:
    """One substrate's part of the campaign."""

    name: str
    file: str
    source: str
    source_sha256: str
    mutants: list[Mutant]
    kernel_name: str = ""
    t0_bytes: int = 0
    to_run: list[str] = field(default_factory=list)
    failure: str = ""
    step_timeout: float | None = None  # set by the first worker from the unmutated run's slowest trial


def plans(args, backend: str) -> tuple[list[Plan], list[str]]:
    """The substrates to mutate, and why any named one is refused."""
    files = candidate_files(args.substrates_dir)
    entries, errors = discover(files, 120.0, args.kb_root, cache_dir=args.cache_dir)
    by_name = {s.name: (file, s) for file, summaries in entries.items() for s in summaries if not s.problems}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        raise UsageError(f"unknown substrate(s) {', '.join(unknown)}; registered: {', '.join(sorted(by_name)) or 'none'}")
    plans, refused = [], []
    for name in args.names or sorted(by_name):
        file, summary = by_name[name]
        record = admissions.load_record(admissions.record_path_for(Path(file)))
        if not admissions.is_admitted(record, name, summary.source_sha256, backend):
            refused.append(f"{name}: not admitted on {backend} at its current source hash "
                           f"({admissions.admission_status(record, name, summary.source_sha256)}); "
                           f"run python gate.py --backend {backend} {name}")
            continue
        mutants = [m for m in generate(summary.cuda, name) if not args.operator or m.operator.value in args.operator]
        plans.append(Plan(name, file, summary.cuda, summary.source_sha256, mutants, summary.kernel_name,
                          summary.t0_bytes))
    if getattr(args, "sample", None):
        plans = sampled(plans, args.sample, args.seed)
    return plans, refused


def sampled(plans: list[Plan], size: int, seed: int) -> list[Plan]:
    """`size` of the plans' mutants drawn uniformly over every substrate, the same ones for the same seed and mutants
    (each mutant ranked by a hash of the seed and its id), each plan keeping its own in their order; a plan left
    with none is dropped. A duplicate's original may be left out: the mutant is then judged on its own."""
    import hashlib

    def rank(mutant_id: str) -> str:
        return hashlib.sha256(f"{seed}:{mutant_id}".encode()).hexdigest()

    kept = set(sorted((m.id for plan in plans for m in plan.mutants), key=rank)[:size])
    drawn = [(plan, [m for m in plan.mutants if m.id in kept]) for plan in plans]
    return [replace(plan, mutants=mutants) for plan, mutants in drawn if mutants]
