"""Where a gate's time goes (harness.gate.phases): seconds, calls and the longest call per phase."""

from harness.gate.phases import PhaseClock


def test_the_clock_counts_each_phases_calls_and_keeps_its_longest():
    from harness.gate.records import SubstrateReport

    clock = PhaseClock()
    for seconds in (0.5, 0.01, 0.02):
        clock.add("official Model in float64, ahead", seconds)
    clock.add("kernel: runs", 0.7)
    assert clock.calls() == {"kernel: runs": {"calls": 1, "longest": 0.7},
                             "official Model in float64, ahead": {"calls": 3, "longest": 0.5}}
    report = SubstrateReport(name="x", file="f.py", phase_seconds=clock.seconds(), phase_calls=clock.calls())
    assert SubstrateReport.from_json(report.to_json()).phase_calls == clock.calls()
