"""Deciding that a search is exhausted: two identical quiet waves, never one, never with traffic."""

from __future__ import annotations

from symcc_ulfm.core.master.termination import Status, Waves

IDLE = Status(True, 3, 3)


def wave(waves: Waves, statuses: dict[int, Status]) -> bool:
    number = waves.start()
    for master, status in statuses.items():
        waves.reply(master, number, status)
    assert waves.complete
    return waves.exhausted()


def test_two_consecutive_identical_quiet_waves_decide():
    waves = Waves((0, 4))
    assert not wave(waves, {0: IDLE, 4: Status(True, 1, 1)})
    assert wave(waves, {0: IDLE, 4: Status(True, 1, 1)})


def test_a_busy_master_or_a_message_in_flight_or_a_change_between_waves_does_not_decide():
    waves = Waves((0, 4))
    assert not wave(waves, {0: IDLE, 4: Status(False, 1, 1)})
    assert not wave(waves, {0: IDLE, 4: Status(False, 1, 1)})
    in_flight = {0: Status(True, 4, 3), 4: Status(True, 1, 1)}  # 5 sent, 4 received
    assert not wave(waves, in_flight) and not wave(waves, in_flight)
    assert not wave(waves, {0: IDLE, 4: Status(True, 1, 1)})
    assert not wave(waves, {0: Status(True, 3, 4), 4: Status(True, 2, 1)}), "balanced, but counters moved"
    assert wave(waves, {0: Status(True, 3, 4), 4: Status(True, 2, 1)})


def test_replies_of_another_wave_or_a_stranger_do_not_count():
    waves = Waves((0, 4))
    first = waves.start()
    waves.reply(0, first, IDLE)
    waves.reply(4, first - 1, IDLE)
    waves.reply(9, first, IDLE)
    assert not waves.complete
    waves.reply(4, first, IDLE)
    assert waves.complete


def test_one_complete_wave_of_satisfied_masters_spends_the_budget_busy_or_not():
    waves = Waves((0, 4))
    number = waves.start()
    waves.reply(0, number, Status(False, 2, 1, satisfied=True))
    assert not waves.complete
    waves.reply(4, number, Status(True, 1, 1, satisfied=False))
    assert waves.complete and not waves.satisfied()
    number = waves.start()
    waves.reply(0, number, Status(False, 2, 1, satisfied=True))
    waves.reply(4, number, Status(False, 1, 1, satisfied=True))
    assert waves.satisfied() and not waves.exhausted()


def test_whether_masters_are_satisfied_does_not_count_as_a_change_between_quiet_waves():
    waves = Waves((0, 4))
    assert not wave(waves, {0: Status(True, 3, 3, satisfied=False), 4: Status(True, 1, 1)})
    assert wave(waves, {0: Status(True, 3, 3, satisfied=True), 4: Status(True, 1, 1)})
