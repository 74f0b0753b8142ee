"""Gate KernelBench corpus candidates against the project's small stand-ins, as CI does, by hand.

    python tests/kernelbench_shrunk_gate.py examples/kernelbench/candidate_kb_relu.py [...] [-- gate options]

Each candidate is copied into a temporary folder with its problem's size constants replaced by the
stand-in's (tests/test_kernelbench_examples.py's substitution), then `gate.py --backend cpu
--kb-root tests/kernelbench_standin --no-record` runs over the copies; options after `--` go to the gate.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from test_kernelbench_examples import STANDIN_ROOT, _shrunk_copy  # noqa: E402


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    candidates, gate_options = argv[:split], argv[split + 1:]
    if not candidates:
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        copies = [str(_shrunk_copy(Path(c).resolve(), Path(folder))[0]) for c in candidates]
        command = [sys.executable, "gate.py", "--backend", "cpu", "--no-record", "--kb-root", str(STANDIN_ROOT),
                   *gate_options, *copies]
        return subprocess.run(command, cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
