"""Write a batch of one-substrate candidate files, most of them broken, as automated kernel authors produce them.

`python tests/broken_batch.py OUT_DIR [--files N]`: N files (default 40) in OUT_DIR, each registering one
substrate of the family (substrates/) under a name of its own. All but two carry one realistic bug, made by the
campaign's own mutation operators: a deleted bounds guard (writes past out: guard damage, or a fault), an index or
a constant off by one (wrong strides and extents), a boundary moved, an atomic made plain (a race), a `long long`
narrowed to `int`. Two are the substrates as they are, to be admitted. Which bug goes where is fixed (the family's
sources in order, the operators in turn), so two runs write the same batch.

Issue 45 measures the gate over such a batch with its sanitizers against the same gate with --no-sanitize
(`BROKEN_BATCH=1 bash tests/gpu_session.sh`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.candidates import candidate_files, import_candidate, register_candidate  # noqa: E402
from harness.engine.mutants import Operator, generate  # noqa: E402

# The bugs, in the order they are dealt: each substrate takes the first of these (from its own place in the
# rotation) that its source allows.
BUGS = (Operator.GUARD_DELETION, Operator.INDEX_OFF_BY_ONE, Operator.ATOMIC_TO_PLAIN, Operator.RELATIONAL_BOUNDARY,
        Operator.CONSTANT_OFF_BY_ONE, Operator.NARROW_LONG_LONG)
CORRECT = 2

TEMPLATE = '''"""{doc}"""

import importlib.util
from pathlib import Path

BASE = Path({base!r})
SUBSTRATE = {substrate!r}
CUDA = {cuda!r}


def register(K, torch, ctypes):
    spec = importlib.util.spec_from_file_location("broken_batch_base_" + BASE.stem, BASE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class Registry:
        PROBLEMS = {{}}

    module.register(Registry, torch, ctypes)
    entry = dict(Registry.PROBLEMS[SUBSTRATE])
    entry["cuda"] = CUDA
    K.PROBLEMS[{name!r}] = entry
'''


def family() -> list[tuple[Path, str, str]]:
    """(file, substrate, CUDA source) of every family substrate, in file then registration order."""
    found = []
    for path in candidate_files():
        for name, raw in register_candidate(import_candidate(path), path).items():
            found.append((path, name, raw["cuda"]))
    return found


def planned(files: int) -> list[tuple[Path, str, str, str, str]]:
    """(base file, substrate, new name, CUDA source, what was done to it) for each file of the batch."""
    substrates, plan = family(), []
    for index in range(files - CORRECT):
        path, name, cuda = substrates[index % len(substrates)]
        by_operator = {}
        for mutant in generate(cuda, name):
            by_operator.setdefault(mutant.operator, []).append(mutant)
        turn = index + index // len(substrates)  # a second pass over the family takes the next bug
        operators = [BUGS[(turn + k) % len(BUGS)] for k in range(len(BUGS))]
        operator = next(op for op in operators if op in by_operator)
        mutant = by_operator[operator][(index // len(substrates)) % len(by_operator[operator])]
        plan.append((path, name, f"bb{index:02d}_{name}", mutant.apply(cuda),
                     f"{mutant.id}: {mutant.description}"))
    for k in range(CORRECT):
        path, name, cuda = substrates[(7 * k + 3) % len(substrates)]
        plan.append((path, name, f"bb{files - CORRECT + k:02d}_{name}_as_is", cuda, "unchanged: to be admitted"))
    return plan


def write(out: Path, files: int) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for base, substrate, name, cuda, what in planned(files):
        doc = f"Written by tests/broken_batch.py: {substrate} of {base.name} as {name}; {what}."
        target = out / f"candidate_{name}.py"
        target.write_text(TEMPLATE.format(doc=doc.replace('"', "'"), base=str(base), substrate=substrate, cuda=cuda,
                                          name=name))
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/broken_batch.py", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write the candidate files into")
    parser.add_argument("--files", type=int, default=40, help="how many files (default 40, of which 2 correct)")
    args = parser.parse_args(argv)
    if args.files <= CORRECT:
        parser.error(f"--files must be more than {CORRECT}")
    written = write(args.out, args.files)
    print(f"{len(written)} candidate files in {args.out}: {len(written) - CORRECT} with a bug, {CORRECT} as they are")
    return 0


if __name__ == "__main__":
    sys.exit(main())
