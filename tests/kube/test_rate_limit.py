"""The reconciler's client held to ``--qps`` after ``--burst``, as client-go's token bucket holds a client."""

from __future__ import annotations

import threading

import pytest

from scheduler.kube.rate_limit import TokenBucket


class Clock:
    """Time that moves only when someone sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_burst_goes_at_once_then_one_request_per_tick() -> None:
    clock = Clock()
    bucket = TokenBucket(10.0, 3, clock=clock, sleep=clock.sleep)
    waits = [bucket.take() for _ in range(6)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.1, 0.1, 0.1])
    assert clock.now == pytest.approx(0.3)  # six requests: three at once, then 10 a second


def test_idle_time_refills_the_burst_and_no_more() -> None:
    clock = Clock()
    bucket = TokenBucket(10.0, 3, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        bucket.take()
    clock.now += 60.0
    assert [bucket.take() for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


def test_threads_together_stay_within_the_rate() -> None:
    """Twenty requests from four threads at once, 200 a second after a burst of 5: each takes a turn of its own (the
    clock stands still, so the turns are the reservations alone: 5 at once, then one per 1/200 s)."""
    clock = Clock()
    bucket = TokenBucket(200.0, 5, clock=clock, sleep=lambda _: None)
    waited: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(4)

    def send() -> None:
        start.wait()
        for _ in range(5):
            wait = bucket.take()
            with lock:
                waited.append(wait)

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(waited) == pytest.approx([0.0] * 5 + [turn / 200 for turn in range(1, 16)])


@pytest.mark.parametrize(("qps", "burst"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_a_rate_that_lets_nothing_through_is_refused(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match=r"qps|burst"):
        TokenBucket(qps, burst)
