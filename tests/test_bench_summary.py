"""harness.benchmarks.summary: bench_gate's runs of several calls as one table, each substrate's latest row."""

import json

import pytest

from harness.benchmarks.summary import latest, main, totals


def _row(substrate, gate, base, trials_run=5, verdict="admitted", memory=1.0):
    return {"substrate": substrate, "gate_verdict": verdict, "gate_wall_seconds": gate, "memory_ratio": memory,
            "baseline": {"trials": 5, "trials_run": trials_run, "wall_seconds": base}}


def _run(tmp_path, name, device, rows):
    path = tmp_path / name
    path.write_text(json.dumps({"device": device, "date": "2026-12-05", "commit": "abc", "rows": rows}))
    return path


def test_a_later_row_replaces_an_earlier_one_and_one_with_an_unfinished_baseline_does_not(tmp_path):
    runs = [("old.json", {"device": "H200", "rows": [_row("a", 3.0, 2.0), _row("b", 1.0, 1.0)]}),
            ("new.json", {"device": "H200", "rows": [_row("a", 2.0, 2.0), _row("b", 9.0, 1.0, trials_run=2)]})]
    rows = {r.substrate: r for r in latest(runs)}
    assert (rows["a"].gate_seconds, rows["a"].source) == (2.0, "new.json")
    assert (rows["b"].gate_seconds, rows["b"].source) == (1.0, "old.json")  # the cut baseline measures nothing
    assert totals(list(rows.values())) == {"H200": {"rows": 2, "gate_seconds": 3.0, "baseline_seconds": 3.0,
                                                    "ratio": 1.0}}


def test_the_table_sums_per_device_and_names_the_rows_over_the_bound(tmp_path, capsys):
    first = _run(tmp_path, "h200.json", "NVIDIA H200", [_row("slow", 6.0, 2.0), _row("fast", 1.0, 2.0)])
    second = _run(tmp_path, "h100.json", "NVIDIA H100", [_row("other", 1.3, 1.0, memory=None)])
    out_json = tmp_path / "summary.json"
    assert main([str(first), str(second), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["substrate", "verdict", "gate", "s", "base", "s", "time", "x", "mem", "x", "device",
                              "/", "file"]
    assert out[1].split()[:6] == ["slow", "admitted", "6.0", "2.0", "3.00", "1.00"]
    assert out[3].split()[4:6] == ["1.30", "n/a"]
    assert "NVIDIA H200: 2 substrate(s), gates 7.0 s against baselines 4.0 s: 1.75x" in out
    assert "NVIDIA H100: 1 substrate(s), gates 1.3 s against baselines 1.0 s: 1.30x" in out
    assert out[-1] == "over 1.2x: slow 3.00x, other 1.30x"
    written = json.loads(out_json.read_text())
    assert [r["substrate"] for r in written["rows"]] == ["slow", "fast", "other"] and written["over"] == 1.2


def test_what_is_not_a_bench_gate_run_or_measures_nothing_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "list.json").write_text("[]")
    cut = _run(tmp_path, "cut.json", "H200", [_row("a", 1.0, 1.0, trials_run=1)])
    for argv, said in (([str(tmp_path / "missing.json")], "missing.json: [Errno 2]"),
                       ([str(tmp_path / "text.json")], "text.json: Expecting value"),
                       ([str(tmp_path / "list.json")], "list.json: not a bench_gate run (no rows)"),
                       ([str(cut)], "no row of these runs has both a gate and a complete baseline")):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2 and said in capsys.readouterr().err
