"""tests/many_files.py: the many-files batch issue 45 times is one correct substrate a file, corpus then family."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import many_files  # noqa: E402

from harness.candidates import import_candidate, register_candidate  # noqa: E402
from harness.gate.command import main as gate_main  # noqa: E402


def test_the_files_are_one_substrate_each_every_name_different_the_corpus_first(tmp_path):
    written = many_files.write(tmp_path / "a", 70)
    assert len(written) == 70 == len(list((tmp_path / "a").glob("candidate_*.py")))
    corpus = sorted(path.name for path in many_files.CORPUS.glob("candidate_*.py"))
    assert [path.name for path in written[:len(corpus)]] == corpus
    names = []
    for path in written:
        registered = register_candidate(import_candidate(path), path)
        assert len(registered) == 1, path
        names += list(registered)
    assert len(set(names)) == 70
    assert names[len(corpus):] == [f"mf{i:02d}_{name}" for i, (_b, name, _c) in
                                   enumerate(many_files.family()[:70 - len(corpus)])]
    assert [p.read_text() for p in many_files.write(tmp_path / "b", 70)] == [p.read_text() for p in written]


def test_a_family_copy_is_admitted_unchanged_and_a_corpus_copy_at_its_stand_in_size(tmp_path, capsys):
    written = many_files.write(tmp_path, 65)  # the 63 of the corpus, then two of the family
    chosen = [written[0], written[-1]]
    assert gate_main(["--backend", "cpu", "--no-record", "--no-progress", "--kb-root",
                      str(many_files.STANDIN_ROOT), *map(str, chosen)]) == 0
    assert "2 admitted, 0 rejected" in capsys.readouterr().out
