"""Write many one-substrate candidate files, all correct, as a user gating a day's candidates has them.

`python tests/many_files.py OUT_DIR [--files N]`: N files (default 100) in OUT_DIR. First the KernelBench corpus
(examples/kernelbench/, one substrate a file) copied at the stand-in sizes CI gates it at (gate them with
`--kb-root tests/kernelbench_standin`), then the family's substrates (substrates/), each in a file of its own under a
name of its own, in turn until there are N. The same N gives the same files.

Issue 45 measures the gate over them at once against the gate run on one file at a time (`MANY=1 bash
tests/gpu_session.sh`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from broken_batch import TEMPLATE, family  # noqa: E402
from test_kernelbench_examples import _shrunk_copy  # noqa: E402

CORPUS = ROOT / "examples" / "kernelbench"
STANDIN_ROOT = ROOT / "tests" / "kernelbench_standin"


def write(out: Path, files: int) -> list[Path]:
    """The files, corpus first; each registers one substrate, every name different."""
    out.mkdir(parents=True, exist_ok=True)
    written = [_shrunk_copy(path, out)[0] for path in sorted(CORPUS.glob("candidate_*.py"))[:files]]
    substrates = family()
    for index in range(files - len(written)):
        base, substrate, cuda = substrates[index % len(substrates)]
        name = f"mf{index:02d}_{substrate}"
        target = out / f"candidate_{name}.py"
        doc = f"Written by tests/many_files.py: {substrate} of {base.name} as {name}, unchanged."
        target.write_text(TEMPLATE.format(doc=doc, base=str(base), substrate=substrate, cuda=cuda, name=name))
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/many_files.py", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write the candidate files into")
    parser.add_argument("--files", type=int, default=100, help="how many files (default 100)")
    args = parser.parse_args(argv)
    if args.files < 1:
        parser.error("--files must be at least 1")
    written = write(args.out, args.files)
    corpus = sum(1 for path in written if not path.name.startswith("candidate_mf"))
    print(f"{len(written)} candidate files in {args.out}: {corpus} of the corpus at stand-in sizes (--kb-root "
          f"{STANDIN_ROOT.relative_to(ROOT)}), {len(written) - corpus} of the family")
    return 0


if __name__ == "__main__":
    sys.exit(main())
