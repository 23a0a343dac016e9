"""Reservation lifetimes: the pace kube-scheduler offers pods at, and the window a gang gets to gather."""

from __future__ import annotations

import pytest

from scheduler.extender.coordinator.gathering import ArrivalRate, GatherWindow


def test_the_rate_follows_a_steady_pace_and_decays_when_it_stops() -> None:
    rate = ArrivalRate(tau=5.0)
    assert rate.per_second(0.0) == 0.0
    for i in range(800):  # 80 calls per second for 10 s: two time constants
        rate.observe(i / 80)
    # An EWMA of a step reaches 1 - e^-2 ≈ 86% of it after two time constants: 80 × 0.865 ≈ 69.
    assert 65 < rate.per_second(10.0) < 72
    # Ten quiet seconds (two more time constants) later it has fallen by e^-2.
    assert rate.per_second(20.0) == pytest.approx(rate.per_second(10.0) * 0.1353, rel=0.01)


@pytest.mark.parametrize(
    ("members", "rate", "expected"),
    [
        # 60 s base + 2 × members / rate + 10 s of kube-scheduler backoff
        pytest.param(8, 80.0, 60 + 2 * 8 / 80 + 10, id="small-gang"),
        pytest.param(2400, 80.0, 60 + 2 * 2400 / 80 + 10, id="2400-at-80-per-s"),
        pytest.param(10_000, 80.0, 60 + 2 * 10_000 / 80 + 10, id="10000-at-80-per-s"),
        pytest.param(2400, 0.0, 60 + 2 * 2400 / 20 + 10, id="no-pace-yet-uses-the-floor"),
    ],
)
def test_the_window_grows_with_the_gang_and_shrinks_with_the_pace(members: int, rate: float, expected: float) -> None:
    assert GatherWindow().seconds(members=members, rate=rate) == pytest.approx(expected)


def test_pods_queued_ahead_lengthen_the_window_as_the_gangs_own_members_do() -> None:
    window = GatherWindow()
    assert window.seconds(members=8, rate=100.0, ahead=3000) == pytest.approx(60 + 2 * 3008 / 100 + 10)
    assert window.seconds(members=8, rate=100.0, ahead=3000) == window.seconds(members=3008, rate=100.0)
