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


def test_a_traced_clock_keeps_every_call_with_its_thread_and_start_and_an_untraced_one_none():
    import threading
    import time

    from harness.gate.records import SubstrateReport

    traced, plain = PhaseClock(trace=True), PhaseClock()
    for clock in (traced, plain):
        with clock.timing("the official output"):
            time.sleep(0.02)
        worker = threading.Thread(target=lambda clock=clock: clock.add("[thread] official Model on the CPU", 0.5),
                                  name="second-references_0")
        worker.start()
        worker.join()
    first, second = traced.trace()
    assert first["phase"] == "the official output" and first["thread"] == threading.current_thread().name
    assert 0 <= first["start"] < 0.01 and 0.02 <= first["seconds"] < 1
    # A call added with its length only is placed as ending when it was added.
    assert second == {"phase": "[thread] official Model on the CPU", "thread": "second-references_0",
                      "start": second["start"], "seconds": 0.5}
    assert second["start"] == round(second["start"], 6) and second["start"] < first["start"]
    # The same calls untraced (their longest are two sleeps' own lengths: equal only to a millisecond or so).
    assert plain.trace() == [] and {name: calls["calls"] for name, calls in plain.calls().items()} == {
        name: calls["calls"] for name, calls in traced.calls().items()}
    assert plain.calls()["the official output"]["longest"] >= 0.02
    # In the report only where traced: an untraced gate's JSON is as it was.
    report = SubstrateReport(name="x", file="f.py", phase_trace=traced.trace())
    assert SubstrateReport.from_json(report.to_json()).phase_trace == traced.trace()
    assert "phase_trace" not in SubstrateReport(name="x", file="f.py").to_json()


def test_a_traced_clock_stops_keeping_calls_at_its_limit_and_still_sums_them(monkeypatch):
    import harness.gate.phases as phases

    monkeypatch.setattr(phases, "TRACE_LIMIT", 3)
    clock = PhaseClock(trace=True)
    for _ in range(5):
        clock.add("kernel: runs", 0.25)
    assert len(clock.trace()) == 3 and clock.calls() == {"kernel: runs": {"calls": 5, "longest": 0.25}}
    assert clock.seconds() == {"kernel: runs": 1.25}
