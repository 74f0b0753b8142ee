"""A campaign worker's trials kept on the device where they fit its share, the rest parked in host memory
(harness.engine.trials)."""

import torch

import pytest

from harness.engine.trials import (RESERVED_TRIALS, HostMemoryShort, Parking, Trial, Trials, host_short_for, parks,
                                   trial_checksum)
from harness.gate.phases import PhaseClock

GIB = 2**30


def test_trials_past_the_workers_share_less_the_reserve_are_parked():
    # kb_avgpool2d's T0, 16.5 GiB a trial, one worker: four trials' room kept aside for the runs beside the trials.
    trial = int(16.5 * GIB)
    assert parks(0, trial, trial, 80 * GIB)  # an H100: 80 - 66 GiB left for trials, none fits; all five parked
    h200 = 139 * GIB
    assert not parks(3 * trial, trial, trial, h200)  # an H200: four kept
    assert parks(4 * trial, trial, trial, h200)  # and the fifth parked
    assert not parks(10 * trial, trial, trial, None)  # no share known (the CPU backend): every trial kept
    assert parks(0, 1, 1, 0)  # a share of nothing parks everything


def _trials(sizes: list[int], share: int | None, host_short=lambda size: "") -> tuple[list[Trial], Parking]:
    parking = Parking(share, PhaseClock(), host_short)
    made = []
    for t, size in enumerate(sizes):
        trial = Trial("T0_original", t, [torch.full((size,), float(t)), 3], torch.full((size,), -float(t)))
        originals = [trial.inputs[0].clone(), trial.expected.clone()]
        parking.place(t, trial)
        made.append((trial, originals))
    return made, parking


def test_parking_moves_a_trial_to_host_memory_as_it_was_made():
    trial = 2 * 100 * 4  # bytes: input and output, 100 float32 each
    made, parking = _trials([100, 100, 100, 10], share=(2 + RESERVED_TRIALS) * trial + 2 * 10 * 4)
    assert parking.parked == {2}  # the first two fit; the third does not; the small fourth does
    for trial, (inputs, expected) in made:
        assert torch.equal(trial.inputs[0], inputs) and torch.equal(trial.expected, expected)
        assert trial.inputs[1] == 3


def test_a_parked_trial_is_brought_in_as_a_fresh_copy_and_dropped_when_another_is_asked_for():
    made, parking = _trials([50, 50, 50], share=0)
    built = [trial for trial, _ in made]
    trials = Trials(built, parking.parked, [trial_checksum(t) for t in built], torch.device("cpu"), PhaseClock())
    assert parking.parked == {0, 1, 2} and trials.held() == []
    first = trials[0]
    assert first is trials[0] and first is not built[0] and trials.held() == [0]
    first.inputs[0].add_(7.0)  # a kernel's stray write reaches the copy only
    assert torch.equal(built[0].inputs[0], made[0][1][0])
    second = trials[1]
    assert first.inputs == [] and first.expected is None  # dropped: its memory the device's again
    assert torch.equal(second.expected, made[1][1][1]) and trials.held() == [1]
    again = trials[0]
    assert torch.equal(again.inputs[0], made[0][1][0])  # as built, not as the stray write left the copy
    trials.evict()
    assert trials.held() == [] and again.expected is None
    assert [trial.t for trial in trials] == [0, 1, 2] and len(trials) == 3


def test_trials_kept_on_the_device_are_the_trials_themselves():
    made, parking = _trials([20, 20], share=None)
    built = [trial for trial, _ in made]
    trials = Trials(built, parking.parked, [trial_checksum(t) for t in built], torch.device("cpu"))
    assert trials[0] is built[0] and trials[1] is built[1] and trials.held() == [0, 1]


def test_the_copies_in_are_timed_on_the_clock_of_the_block_they_are_made_in():
    made, parking = _trials([50, 50], share=0)
    built = [trial for trial, _ in made]
    mutants, unmutated = PhaseClock(), PhaseClock()
    trials = Trials(built, parking.parked, [trial_checksum(t) for t in built], torch.device("cpu"), mutants)
    with trials.timed_on(unmutated):
        trials[0]
    trials[1]
    assert list(unmutated.seconds()) == ["kernel: a parked trial brought to the device"]
    assert list(mutants.seconds()) == ["kernel: a parked trial brought to the device"]
    assert trials.clock is mutants


def test_a_trial_the_host_has_no_room_to_park_is_said_and_parks_nothing_more(monkeypatch):
    # Three workers parking kb_argmax's five 8 GiB trials each would take 120 GiB of a 128 GiB host: a quarter of it
    # stays available, and a trial past both the device's share and that is the substrate's trials not fitting.
    made, parking = _trials([100], share=0)  # room: parked
    assert parking.parked == {0}
    with pytest.raises(HostMemoryShort) as raised:
        _trials([100, 100], share=0, host_short=lambda size: "no room here" if size else "")
    assert str(raised.value) == ("T0_original trial 0 (0.0 GiB) is past the worker's 0.0 GiB share of the device, "
                                 "and the host's memory has no room for it: no room here")
    gib = 2**30
    monkeypatch.setattr("harness.gate.trial_inputs.host_memory_total", lambda: 128 * gib)
    monkeypatch.setattr("harness.gate.trial_inputs.host_memory_available", lambda: 40 * gib)
    assert host_short_for(8 * gib) == ""  # 32 GiB left: a quarter of 128
    assert host_short_for(9 * gib) == ("parked, it would leave 31.0 GiB of the host's 128 GiB available, under the "
                                       "25% kept for draws and other workers")
    monkeypatch.setattr("harness.gate.trial_inputs.host_memory_available", lambda: None)
    assert host_short_for(9 * gib) == ""  # the system does not say: parked as before
