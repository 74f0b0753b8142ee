"""Turns at the device's memory for large-index processes side by side (harness.oracles.memory_turns)."""

import multiprocessing
import threading
import time

import pytest

from harness.oracles import memory_turns
from harness.oracles.memory_turns import MemoryWait, goes_now, turn_with_room, wait_for_memory

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
    with turn_with_room(lock, 0, lambda: (0, 0), lambda: 0, 0):
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

        def heartbeat(waited, free):
            beats.append((waited, free))
            if time.monotonic() > releasing:
                release.set()

        with turn_with_room(lock, GIB, lambda: (80 * GIB, 80 * GIB), lambda: 0, 60, heartbeat) as wait:
            got.append(time.monotonic())
        assert got and got[0] >= releasing and release.is_set()
        assert len(beats) >= 5 and beats == sorted(beats)  # it said it waited, as it waited
        assert {free for _waited, free in beats} == {None}  # for the turn, not for room
        assert wait.fits and wait.turn_seconds >= 0.5 and wait.seconds >= wait.turn_seconds
    finally:
        release.set()
        holder.join(30)
    with turn_with_room(None, GIB, lambda: (80 * GIB, 80 * GIB), lambda: 0, 0) as alone:  # no turn to take
        assert alone.fits


def test_a_trial_that_fits_goes_unless_an_earlier_waiter_fits_too_or_has_waited_past_the_backfill():
    # 30 GiB free; a waiter since t=0 needs 60 (it does not fit), another 20 (it does).
    assert goes_now(10 * GIB, 30 * GIB, [], now=5.0)
    assert not goes_now(40 * GIB, 30 * GIB, [], now=5.0)
    assert goes_now(10 * GIB, 30 * GIB, [(60 * GIB, 0.0)], now=5.0, backfill_seconds=10.0)  # it passes the 60
    assert not goes_now(10 * GIB, 30 * GIB, [(60 * GIB, 0.0)], now=11.0, backfill_seconds=10.0)  # not any more
    assert not goes_now(10 * GIB, 30 * GIB, [(60 * GIB, 0.0), (20 * GIB, 4.0)], now=5.0)  # the 20 goes first


def _waiting_then_going(lock, need, memory, me, log, **kwargs):
    with turn_with_room(lock, need, lambda: (memory["free"], 80 * GIB), lambda: 0, 30, me=me,
                        alive=lambda pid: True, **kwargs) as wait:
        log.append((me, "in", wait.fits))
        if "then" in memory and me in memory["then"]:
            memory["free"] = memory["then"][me]
    log.append((me, "out", wait.fits))


def _two_waiters(tmp_path, monkeypatch, backfill: float) -> list:
    """A process needing 60 GiB of the 30 free, waiting; then one needing 10 asks. Whichever of them gets its turn
    first frees 50 GiB inside it, and the running processes give 50 GiB back 0.5 s after the second asks (memory
    comes back either way), so the other then has room too."""
    monkeypatch.setattr(memory_turns, "POLL_SECONDS", 0.01)
    lock, log = str(tmp_path / "turns.lock"), []
    memory = {"free": 30 * GIB, "then": {1: 80 * GIB, 2: 80 * GIB}}
    given_back = threading.Timer(0.5, lambda: memory.update(free=80 * GIB))
    big = threading.Thread(target=_waiting_then_going, args=(lock, 60 * GIB, memory, 1, log),
                           kwargs={"backfill_seconds": backfill})
    big.start()
    ledger = memory_turns.WaitersLedger(lock, alive=lambda pid: True)
    deadline = time.monotonic() + 10
    while 1 not in ledger.read() and time.monotonic() < deadline:  # the big one waits, its need written down
        time.sleep(0.01)
    assert ledger.read()[1]["need"] == 60 * GIB
    time.sleep(0.05)
    small = threading.Thread(target=_waiting_then_going, args=(lock, 10 * GIB, memory, 2, log),
                             kwargs={"backfill_seconds": backfill})
    small.start()
    given_back.start()
    small.join(20)
    big.join(20)
    given_back.join()
    return log


def test_a_process_waiting_for_room_lets_the_turn_go_to_a_later_one_whose_trial_fits(tmp_path, monkeypatch):
    # Waiting in the turn, the 60 GiB trial held back every process behind it: the convoy (8 to 41 s a backward pad
    # on the H100).
    log = _two_waiters(tmp_path, monkeypatch, backfill=60.0)
    assert log == [(2, "in", True), (2, "out", True), (1, "in", True), (1, "out", True)]
    assert memory_turns.WaitersLedger(str(tmp_path / "turns.lock")).read() == {}  # nobody left waiting


def test_once_the_longest_waiter_has_waited_past_the_backfill_no_later_process_passes_it(tmp_path, monkeypatch):
    log = _two_waiters(tmp_path, monkeypatch, backfill=0.0)
    assert log == [(1, "in", True), (1, "out", True), (2, "in", True), (2, "out", True)]


def test_a_waiter_that_died_holds_no_one_back(tmp_path):
    lock = str(tmp_path / "turns.lock")
    memory_turns.WaitersLedger(lock).write({2**22 + 12345: {"need": 60 * GIB, "since": 0.0}})  # no such process
    with turn_with_room(lock, 10 * GIB, lambda: (30 * GIB, 80 * GIB), lambda: 0, 0, clock=lambda: 1e9) as wait:
        assert wait.fits and wait.seconds == 0.0


def test_a_waiters_entry_not_written_again_for_a_minute_is_dropped(tmp_path):
    # An entry its process left behind (an exception between two polls) holds no one back for ever.
    lock = str(tmp_path / "turns.lock")
    ledger = memory_turns.WaitersLedger(lock, alive=lambda pid: True)
    ledger.write({7: {"need": 60 * GIB, "since": 0.0, "seen": 100.0}, 8: {"need": GIB, "since": 5.0, "seen": 150.0}})
    assert set(ledger.read(now=150.0)) == {7, 8}
    assert set(ledger.read(now=100.0 + memory_turns.STALE_SECONDS + 1)) == {8}
    with turn_with_room(lock, 10 * GIB, lambda: (30 * GIB, 80 * GIB), lambda: 0, 0, clock=lambda: 1e9,
                        alive=lambda pid: True, backfill_seconds=0.0) as wait:
        assert wait.fits


def test_the_deadline_counts_the_time_a_trial_did_not_fit_not_the_turn_nor_the_queue(tmp_path, monkeypatch):
    # Two 60 GiB trials, 30 GiB free, first come first served, 1.5 s each to wait for room. 40 GiB come back at
    # 1.2 s: the first builds and holds 60 until 1.8 s, when the second finds room. Counting from its first ask (1.7 s
    # by then), the second gave up; it waited for room 0.5 s of it, as it would have in its turn.
    monkeypatch.setattr(memory_turns, "POLL_SECONDS", 0.01)
    lock, log, state, guard = str(tmp_path / "turns.lock"), [], {"others": 50 * GIB, "mine": 0}, threading.Lock()

    def info():
        with guard:
            return 80 * GIB - state["others"] - state["mine"], 80 * GIB

    def process(me, hold):
        with turn_with_room(lock, 60 * GIB, info, lambda: 0, 1.5, me=me, alive=lambda pid: True,
                            backfill_seconds=0.0) as wait:
            if wait.fits:
                with guard:
                    state["mine"] += 60 * GIB
            log.append((me, wait.fits))
        if wait.fits:
            time.sleep(hold)
            with guard:
                state["mine"] -= 60 * GIB

    def given_back():
        time.sleep(1.2)
        state["others"] = 10 * GIB

    threads = [threading.Thread(target=given_back), threading.Thread(target=process, args=(1, 0.6))]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    threads.append(threading.Thread(target=process, args=(2, 0.0)))
    threads[-1].start()
    for thread in threads:
        thread.join(30)
    assert log == [(1, True), (2, True)]
