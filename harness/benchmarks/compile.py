"""`python -m harness.benchmarks.compile`: compiling mutants alone against compiling them in batches.

For every substrate of the folders given, every mutant is compiled twice with NVRTC, in this
process, one at a time: alone (as the naive mode and `--batch-size 1` do) and in batches as a
campaign worker does (`harness.engine.compile.compile_variants`). Prints the milliseconds per
mutant of each, and checks that both ways sort the mutants into the same Equivalent, Duplicate
and to-run classes, which is what makes the batch digests safe to use. Needs no GPU.

Exit status: 0 the classes agree everywhere, 1 some mutant is classed differently.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def classes(original: str, digests: list[str | None]) -> list[str]:
    """How a campaign worker classes each mutant from its code digest, in order (`code_status`)."""
    from harness.engine.worker import code_status

    seen: dict[str, str | None] = {original: None}
    out = []
    for i, digest in enumerate(digests):
        status = None if digest is None else code_status(seen, digest, str(i))  # None: not comparable, runs
        out.append("run" if status is None else status.value)
    return out


def main(argv: list[str] | None = None) -> int:
    from harness.candidates import candidate_files, import_candidate, make_entry, register_candidate
    from harness.compiler.batches import ptx_digest
    from harness.compiler.nvrtc import DEFAULT_ARCH, CompileError, compile_cuda, compiler_version
    from harness.engine.compile import compile_variants
    from harness.engine.mutants import generate
    from harness.engine.worker import BATCH_SIZE

    parser = argparse.ArgumentParser(prog="python -m harness.benchmarks.compile", description=__doc__.splitlines()[0],
                                     epilog="Exit status: 0 both ways class every mutant alike, 1 otherwise.")
    parser.add_argument("folders", nargs="*", type=Path, default=[Path("substrates"), Path("examples/substrates")])
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error(f"--batch-size must be at least 1, not {args.batch_size}")
    for folder in args.folders:
        if not folder.is_dir():
            parser.error(f"{folder}: not a folder")
        if not candidate_files(folder):
            parser.error(f"{folder}: no candidate_*.py files there")

    print(f"NVRTC {compiler_version()}, arch {DEFAULT_ARCH}, batches of {args.batch_size}")
    print(f"{'substrate':28} {'mutants':>7} {'alone ms':>9} {'batched ms':>10} {'equivalent':>10} {'duplicate':>9}")
    totals = {"mutants": 0, "alone": 0.0, "batched": 0.0, "differ": 0}
    for folder in args.folders:
        for path in candidate_files(folder):
            registered = register_candidate(import_candidate(path), path)
            for name in registered:
                entry, problems = make_entry(name, registered[name], path)
                if entry is None:
                    print(f"{name:28} skipped: {'; '.join(problems)}")
                    continue
                sources = [m.apply(entry.cuda) for m in generate(entry.cuda, name)]

                def digest_alone(source: str) -> str | None:
                    try:
                        return ptx_digest(compile_cuda(source, entry.kernel_name, DEFAULT_ARCH).ptx)
                    except CompileError:
                        return None

                started = time.perf_counter()
                alone = [digest_alone(s) for s in [entry.cuda, *sources]]
                if alone[0] is None:
                    print(f"{name:28} skipped: the unmutated source does not compile")
                    continue
                alone_seconds = time.perf_counter() - started
                started = time.perf_counter()
                original = compile_variants([entry.cuda], entry, DEFAULT_ARCH, f"{name}.cu")[0]
                batched = []
                for first in range(0, len(sources), args.batch_size):
                    variants = compile_variants(sources[first:first + args.batch_size], entry, DEFAULT_ARCH,
                                                f"{name}.cu")
                    batched += [v.digest if v else None for v in variants]
                batched_seconds = time.perf_counter() - started
                by_alone = classes(alone[0], alone[1:])
                by_batch = classes(original.digest if original else "", batched)
                differ = [i for i, (a, b) in enumerate(zip(by_alone, by_batch)) if a != b]
                count = len(sources) + 1  # the original is compiled both ways too
                print(f"{name:28} {len(sources):7d} {1000 * alone_seconds / count:9.0f} "
                      f"{1000 * batched_seconds / count:10.0f} {by_alone.count('equivalent'):10d} "
                      f"{by_alone.count('duplicate'):9d}" + (f"  DIFFER at {len(differ)} mutants" if differ else ""))
                totals["mutants"] += len(sources)
                totals["alone"] += alone_seconds
                totals["batched"] += batched_seconds
                totals["differ"] += len(differ)
    print(f"{totals['mutants']} mutants: alone {totals['alone']:.1f} s, batched {totals['batched']:.1f} s "
          f"({totals['alone'] / max(totals['batched'], 1e-9):.2f}x); classed differently: {totals['differ']}")
    return 1 if totals["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
