"""When attempts to make room may run again, and what they leave behind."""

from __future__ import annotations

from scheduler.extender.coordinator.room_attempts import RoomAttempts


def _attempts() -> RoomAttempts:
    return RoomAttempts(retry_seconds=10, backoff_seconds=30, exclude_seconds=300)


def test_a_fruitless_attempt_waits_for_news_or_the_retry() -> None:
    attempts = _attempts()
    assert attempts.may_try("g", (1, 2), now=0)
    attempts.fruitless("g", (1, 2), now=0)
    assert attempts.just_tried("g", now=0) and not attempts.just_tried("g", now=1)
    assert not attempts.may_try("g", (1, 2), now=5)  # nothing it reads changed, 5 s < 10 s
    assert attempts.may_try("g", (1, 3), now=5)  # news
    assert attempts.may_try("g", (1, 2), now=10)  # the retry


def test_a_gang_preempts_at_most_once_per_backoff_unless_a_budget_refused() -> None:
    attempts = _attempts()
    attempts.committed("g", now=100, deadline=220)
    assert not attempts.may_try("g", (0,), now=129)
    assert attempts.may_try("g", (0,), now=130)
    attempts.committed("h", now=100, deadline=220)
    attempts.refused("h", ["ns/p"], now=101)  # nothing was evicted: no backoff, the pod left out
    assert attempts.may_try("h", (0,), now=102)
    assert attempts.excluded(now=102) == frozenset({"ns/p"})
    assert attempts.excluded(now=401) == frozenset()


def test_deadlines_come_due_and_finished_preemptions_go_quietly() -> None:
    attempts = _attempts()
    attempts.committed("slow", now=0, deadline=120)
    attempts.committed("done", now=0, deadline=120)
    attempts.committed("later", now=50, deadline=170)
    assert attempts.due(now=60, waiting=["slow", "later"]) == []  # "done" waits for nothing: off the books
    assert sorted(attempts.under_way()) == ["later", "slow"]
    assert attempts.due(now=121, waiting=["slow", "later"]) == ["slow"]
    assert attempts.under_way() == ["later"]
    attempts.reset()
    assert attempts.under_way() == []
