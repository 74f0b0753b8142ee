"""The plan of a campaign: which substrates are mutated (those admitted at their current source hash on
the backend), and every mutant of each (`harness.engine.mutants`), as one Plan per substrate."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.candidates import candidate_files
from harness.engine.mutants import Mutant, generate
from harness.gate import admissions
from harness.gate.worker import discover


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
    row_timeout: float | None = None  # --matrix: set with it, the limit of a row's queued trials (engine.row)
    # A shard's (shards()): the plan's batches before its own, whose digests its workers learn first.
    learn_batches: tuple[tuple[str, ...], ...] = ()

    # Mutants not judged where a worker ran out of the device's memory (ran_out_of_memory): the campaign runs them
    # again with its substrate alone on the device (harness.campaign.short_of_memory_again).
    short_of_memory: list[str] | None = None
    parked_said: bool = False  # a worker's trials parked in host memory: said once, however many workers park them

    def ran_out_of_memory(self, where: str, why: str, left: list[str]) -> None:
        """A worker's `short_of_memory`: the substrate is not run on, `left` its mutants not judged. `where` is a
        mutant's id, or the substrate's own name (its trials or its unmutated run), which the report's `not run:
        NAME:` line says already."""
        if not self.failure:
            self.failure = why if where == self.name else f"{where}: {why}"
            self.short_of_memory = list(left)


class Refused(enum.Enum):
    DID_NOT_IMPORT = "did not import"      # a candidate file: none of its substrates is known
    NOT_REGISTERED = "not registered"      # an entry register() added is incomplete or wrong
    NOT_ADMITTED = "not admitted"          # the gate has not admitted it at its current source on the backend


@dataclass(frozen=True)
class Refusal:
    """A substrate (or a candidate file) the campaign cannot mutate, why, and the command that would change that."""

    what: str           # the substrate's name, or the file's path when it did not import
    reason: Refused
    why: str
    hint: str = ""
    named: bool = False  # asked for by name (a failure of the run), not merely left out of "every admitted one"

    def line(self) -> str:
        return f"refused: {self.what}: {self.why}" + (f"; {self.hint}" if self.hint else "")


def plans(args, backend: str) -> tuple[list[Plan], list[Refusal]]:
    """The substrates to mutate, and what is refused: files that did not import, entries that did not register,
    substrates not admitted on `backend` at their current source."""
    files = candidate_files(args.substrates_dir)
    entries, errors = discover(files, 120.0, args.kb_root, cache_dir=args.cache_dir)
    refused = [Refusal(file, Refused.DID_NOT_IMPORT, error.removeprefix(f"{file}: "))
               for file, error in sorted(errors.items())]
    refused += [Refusal(s.name, Refused.NOT_REGISTERED, "; ".join(s.problems), named=s.name in args.names)
                for summaries in entries.values() for s in summaries if s.problems]
    by_name = {s.name: (file, s) for file, summaries in entries.items() for s in summaries if not s.problems}
    unknown = [n for n in args.names if n not in by_name and not any(r.what == n for r in refused)]
    if unknown:
        unimported = f"; {len(errors)} file(s) there did not import: {', '.join(sorted(errors))}" if errors else ""
        raise UsageError(f"unknown substrate(s) {', '.join(unknown)} in {args.substrates_dir}; registered: "
                         f"{', '.join(sorted(by_name)) or 'none'}{unimported}")
    plans = []
    for name in [n for n in args.names if n in by_name] or ([] if args.names else sorted(by_name)):
        file, summary = by_name[name]
        record = admissions.load_record(admissions.record_path_for(Path(file)))
        if not admissions.is_admitted(record, name, summary.source_sha256, backend):
            refused.append(Refusal(name, Refused.NOT_ADMITTED, f"not admitted on {backend} at its current source hash "
                                         f"({admissions.admission_status(record, name, summary.source_sha256)})"
                                         f"{_problem_file_note(file, summary, record, args.kb_root)}",
                                   gate_hint(file, backend, args.kb_root), named=name in args.names))
            continue
        mutants = [m for m in generate(summary.cuda, name) if not args.operator or m.operator.value in args.operator]
        plans.append(Plan(name, file, summary.cuda, summary.source_sha256, mutants, summary.kernel_name,
                          summary.t0_bytes))
    if getattr(args, "sample", None):
        plans = sampled(plans, args.sample, args.seed)
    if getattr(args, "sample_per_substrate", None):
        plans = plans_sampled_per_substrate(plans, args.sample_per_substrate, args.seed)
    return plans, refused


def shards(plan: Plan, batch_size: int) -> list[Plan]:
    """The plan cut at its compile batches (harness.engine.compile.batches), a Plan for each batch holding a mutant to
    run, so that several workers judge one substrate at once: for campaigns that run every trial of every mutant
    (--matrix, --checker), whose substrates take a worker minutes each. Each shard keeps every mutant of the plan (the
    batches stay the plan's) and learns the digests of the batches before its own (CampaignJob.learn_batches)."""
    from harness.engine.compile import batches

    to_run = set(plan.to_run)
    cut = batches([m.id for m in plan.mutants], batch_size)
    return [replace(plan, to_run=[m for m in plan.to_run if m in batch], learn_batches=tuple(cut[:k]))
            for k, batch in enumerate(cut) if to_run & set(batch)]


def _problem_file_note(file: str, summary, record: dict, kb_root: Path | None) -> str:
    """Where a record holds the substrate at another source hash: that the hash covers its problem file too, and
    which copy of it this run found (a corpus gated against a KernelBench checkout, run here without --kb-root,
    finds the stand-in: its candidate is unchanged)."""
    entries = record["substrates"].get(summary.name, {}).values()
    if not summary.kb_file or not any(e["source_sha256"] != summary.source_sha256 for e in entries):
        return ""
    from harness.problems import ProblemError, ProblemSearch

    try:
        found = ProblemSearch.for_candidate(Path(file), kb_root).resolve(summary.kb_file)
    except ProblemError:
        return ""
    return (f"; the hash covers its problem file too, here {found}: if it was gated against another copy of "
            f"{summary.kb_file}, pass that copy's --kb-root")


def gate_hint(file: str | Path, backend: str, kb_root: Path | None) -> str:
    """The gate command that admits `file`'s substrates, whichever folder it is in (gate.py takes a file's path)."""
    path = Path(file)
    try:
        path = path.resolve().relative_to(Path.cwd())
    except ValueError:
        pass  # outside the working folder: its absolute path
    return f"run python gate.py --backend {backend}{f' --kb-root {kb_root}' if kb_root else ''} {path}"


def plans_sampled_per_substrate(plans: list[Plan], size: int, seed: int) -> list[Plan]:
    """`size` of each plan's mutants (all of a plan with fewer), drawn by sampled's ranks: the same for the same seed,
    and a larger `size` keeps a smaller one's, so a store filled for one goes on for the other."""
    return [sampled([plan], size, seed)[0] if plan.mutants else plan for plan in plans]


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
