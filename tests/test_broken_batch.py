"""tests/broken_batch.py: the batch of mostly broken one-substrate candidates issue 45 measures the gate on."""

import importlib.util
import sys
from pathlib import Path

from harness.candidates import import_candidate, register_candidate
from harness.gate.command import main

ROOT = Path(__file__).resolve().parent.parent


def _broken_batch():
    spec = importlib.util.spec_from_file_location("broken_batch", ROOT / "tests" / "broken_batch.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["broken_batch"] = module
    spec.loader.exec_module(module)
    return module


def test_the_batch_is_one_substrate_a_file_the_same_every_time_most_of_them_bugged(tmp_path):
    batch = _broken_batch()
    first, second = batch.write(tmp_path / "a", 40), batch.write(tmp_path / "b", 40)
    assert [p.read_text() for p in first] == [p.read_text() for p in second]
    bases = {name: cuda for _path, name, cuda in batch.family()}
    bugged = 0
    for path in first:
        (name, raw), = register_candidate(import_candidate(path), path).items()
        base = name.split("_", 1)[1].removesuffix("_as_is")  # bb07_pad_const_b4 -> pad_const_b4
        assert base in bases, name
        bugged += raw["cuda"] != bases[base]
        assert (raw["cuda"] == bases[base]) == name.endswith("_as_is")
    assert bugged == 38


def test_a_bugged_file_is_rejected_and_an_unchanged_one_admitted(tmp_path, capsys):
    written = _broken_batch().write(tmp_path, 40)
    chosen = [written[0], written[-1]]  # a deleted guard in masked_fill_b1; a substrate as it is
    assert main(["--backend", "cpu", "--no-record", "--no-progress", *map(str, chosen)]) == 1
    out = capsys.readouterr().out
    assert "bb00_masked_fill_b1 " in out and "1 admitted, 1 rejected" in out
    assert [line.split()[1] for line in out.splitlines() if line.startswith("bb")] == ["rejected", "admitted"]
