"""What mutant schemata would save a campaign's compile, and whether they are faithful, for every substrate: the
switched mutants' schema compiled once (NVRTC to PTX, then nvJitLink with the address check, as the campaign's pool
does) against the same mutants compiled as the campaign's batches; and each switched mutant's schema fixed at
compile time (Schema.specialised) against the mutant compiled alone, code digest for code digest. No GPU needed.

Usage: python tests/schema_probe.py [SUBSTRATE ...]   (default: every registered substrate)
Prints a line per substrate and the totals last.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(names: set[str]) -> None:
    from harness.backends import address_check
    from harness.compiler import nvrtc
    from harness.compiler.batches import batch_program, code_digests
    from harness.engine.compile import batches
    from harness.engine.mutants import generate
    from harness.engine.schema import schema
    from harness.engine.worker import BATCH_SIZE
    from tests.conftest import registered_entries

    totals = {"switched": 0, "left out": 0, "faithful": 0, "schema s": 0.0, "batches s": 0.0}
    for entry in registered_entries():
        if names and entry.name not in names:
            continue
        mutants = generate(entry.cuda, entry.name)
        made = schema(entry.cuda, mutants)
        by_id = {m.id: m for m in mutants}
        switched = list(made.switches)

        def digests(sources: list[str]) -> list[str]:
            found = []
            for batch in batches(list(range(len(sources))), BATCH_SIZE):
                program = batch_program([sources[i] for i in batch], entry.kernel_name, f"{entry.name}.cu")
                compiled = nvrtc.compile_program(program.source, program.name_expressions, "compute_90")
                found += code_digests(compiled.ptx, len(batch))
            return found

        def compile_checked(sources: list[str]) -> None:
            program = batch_program(sources, entry.kernel_name, f"{entry.name}.cu")
            compiled = nvrtc.compile_program(program.source, program.name_expressions, "compute_90")
            address_check.assemble(address_check.instrument(compiled.ptx), "sm_90")

        faithful = sum(a == b for a, b in zip(digests([made.specialised(i) for i in switched] + [made.specialised(None)]),
                                              digests([by_id[i].apply(entry.cuda) for i in switched] + [entry.cuda])))
        began = time.process_time()
        compile_checked([made.source()])
        as_schema = time.process_time() - began
        began = time.process_time()
        for batch in batches(switched, BATCH_SIZE):
            compile_checked([by_id[i].apply(entry.cuda) for i in batch])
        as_batches = time.process_time() - began
        for key, value in (("switched", len(switched)), ("left out", len(made.left_out)), ("faithful", faithful),
                           ("schema s", as_schema), ("batches s", as_batches)):
            totals[key] += value
        print(f"{entry.name}: {len(switched)} switched, {len(made.left_out)} left out; {faithful} of "
              f"{len(switched) + 1} fixed at compile time are the mutant's own code (the last: the unmutated); "
              f"compiled {as_schema:.2f} s as a schema, {as_batches:.2f} s as batches", flush=True)
    print(f"all: {totals['switched']} switched, {totals['left out']} left out, {totals['faithful']} faithful; "
          f"{totals['schema s']:.2f} s of processor time as schemata, {totals['batches s']:.2f} s as batches", flush=True)


if __name__ == "__main__":
    main(set(sys.argv[1:]))
