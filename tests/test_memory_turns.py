"""Turns at the device's memory for large-index processes side by side (harness.oracles.memory_turns)."""

import multiprocessing
import time

import pytest

from harness.oracles import memory_turns
from harness.oracles.memory_turns import MemoryWait, memory_turn, wait_for_memory

GIB = 2**30


class _Clock:
    """A clock that moves only when slept on."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _readings(*free: int, total: int = 80 * GIB):
    readings = iter(free)
    last = [None]

    def memory_info():
        last[0] = next(readings, last[0])
        return last[0], total

    return memory_info


def test_memory_that_is_free_or_a_backend_that_cannot_tell_is_not_waited_for():
    assert wait_for_memory(10 * GIB, _readings(20 * GIB), lambda: 0, 300) == MemoryWait(20 * GIB, 80 * GIB)
    assert wait_for_memory(10 * GIB, lambda: (0, 0), lambda: 0, 300).fits  # the CPU backend: (0, 0)


def test_a_trial_waits_for_the_memory_others_give_back_and_says_it_is_alive_meanwhile():
    clock, beats = _Clock(), []
    # 30 GiB free, 50 held by the others: room for 60 comes when they give 30 back, 12 s later.
    free = [30 * GIB] * 61 + [70 * GIB]
    wait = wait_for_memory(60 * GIB, _readings(*free), lambda: 0, 300, lambda waited, now_free: beats.append(waited),
                           clock=clock, sleep=clock.sleep)
    assert wait.fits and wait.free == 70 * GIB and wait.seconds == pytest.approx(12.2)
    assert beats == pytest.approx([5.0, 10.0], abs=0.25)  # every HEARTBEAT_SECONDS, as the polls fall


def test_a_trial_no_amount_of_given_back_memory_would_fit_is_refused_at_once():
    clock = _Clock()
    # 30 GiB free of 80; this process holds 45 of the other 50 itself: the others could give back 5 at most.
    wait = wait_for_memory(60 * GIB, _readings(30 * GIB), lambda: 45 * GIB, 300, clock=clock, sleep=clock.sleep)
    assert not wait.fits and wait.seconds == 0.0
    assert wait.gave_up == "the device holds too little even with every other process's memory given back"
    assert wait.beyond_device  # alone on the device it would not fit either: no use trying it again alone


def test_a_wait_ends_at_its_deadline_and_a_process_alone_does_not_wait():
    clock = _Clock()
    wait = wait_for_memory(60 * GIB, _readings(30 * GIB), lambda: 0, 2.0, clock=clock, sleep=clock.sleep)
    assert not wait.fits and wait.seconds == pytest.approx(2.0, abs=0.25) and wait.gave_up == "no room came within 2 s"
    assert not wait.beyond_device  # the others held what it needed: alone, it may fit
    alone = wait_for_memory(60 * GIB, _readings(30 * GIB), lambda: 0, 0, clock=clock, sleep=clock.sleep)
    assert not alone.fits and alone.gave_up == "not waited for: no other large-index process runs beside it"


def _hold_the_turn(lock: str, entered, release) -> None:
    with memory_turn(lock):
        entered.set()
        release.wait(30)


def test_a_process_takes_its_turn_only_once_the_one_holding_it_lets_go(tmp_path, monkeypatch):
    monkeypatch.setattr(memory_turns, "HEARTBEAT_SECONDS", 0.05)
    monkeypatch.setattr(memory_turns, "POLL_SECONDS", 0.02)
    lock = str(tmp_path / "turns.lock")
    context = multiprocessing.get_context("spawn")
    entered, release = context.Event(), context.Event()
    holder = context.Process(target=_hold_the_turn, args=(lock, entered, release))
    holder.start()
    try:
        assert entered.wait(60)
        beats, got = [], []
        releasing = time.monotonic() + 0.5
        with memory_turn(lock, heartbeat=lambda waited: (beats.append(waited),
                                                          release.set() if time.monotonic() > releasing else None)):
            got.append(time.monotonic())
        assert got and got[0] >= releasing and release.is_set()
        assert len(beats) >= 5 and beats == sorted(beats)  # it said it waited, as it waited
    finally:
        release.set()
        holder.join(30)
    with memory_turn(None):  # alone: no turn to take
        pass
