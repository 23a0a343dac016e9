"""The reconciler's work queue: distinct PodCliqueSets at once, one never by two workers, no change lost."""

from __future__ import annotations

import random
import threading
import time

from scheduler.reconcile.workqueue import WorkQueue

A, B = ("default", "a"), ("default", "b")


def test_a_key_added_twice_before_it_is_taken_is_taken_once() -> None:
    queue = WorkQueue()
    queue.add(A)
    queue.add(B)
    queue.add(A)
    assert [queue.get(0), queue.get(0), queue.get(0)] == [A, B, None]


def test_a_held_key_goes_to_no_other_worker_and_comes_back_once_done_if_it_changed_meanwhile() -> None:
    queue = WorkQueue()
    queue.add(A)
    assert queue.get(0) == A
    queue.add(A)  # changed while the first worker reconciles it
    queue.add(A)
    assert queue.get(0) is None, "a second worker was handed a key another holds"
    queue.done(A)
    assert queue.get(0) == A
    queue.done(A)
    assert queue.get(0) is None, "a change seen once was reconciled twice after"


def test_a_key_unchanged_while_held_is_not_queued_again() -> None:
    queue = WorkQueue()
    queue.add(A)
    queue.done(queue.get(0) or B)
    assert queue.get(0) is None


def test_a_key_held_back_is_handed_out_at_its_time_not_before() -> None:
    queue = WorkQueue()
    queue.add_after(A, 0.3)
    queue.add(B)
    assert queue.get(0) == B
    assert queue.get(0) is None  # A's time has not come
    started = time.monotonic()
    assert queue.get(5.0) == A  # the waiting worker wakes at A's time, not at its own timeout
    assert 0.1 < time.monotonic() - started < 4.0


def test_close_wakes_every_waiting_worker() -> None:
    queue = WorkQueue()
    answers: list[object] = []
    workers = [threading.Thread(target=lambda: answers.append(queue.get(30.0))) for _ in range(3)]
    for worker in workers:
        worker.start()
    time.sleep(0.1)
    queue.close()
    for worker in workers:
        worker.join(timeout=5)
    assert answers == [None, None, None]


def test_many_workers_never_hold_one_key_together_and_every_change_is_seen_after_it_was_made() -> None:
    """Eight workers, twenty keys changed at random: a key is never held by two workers at once, and each worker's
    pass of a key starts after the last change made to it before the workers stop (no change lost)."""
    queue = WorkQueue()
    keys = [("default", f"pcs-{i}") for i in range(20)]
    lock = threading.Lock()
    held: set[tuple[str, str]] = set()
    overlaps: list[tuple[str, str]] = []
    changed_at: dict[tuple[str, str], int] = {}
    seen_at: dict[tuple[str, str], int] = {}
    clock = iter(range(10**9))
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            key = queue.get(0.05)
            if key is None:
                continue
            with lock:
                if key in held:
                    overlaps.append(key)
                held.add(key)
                seen_at[key] = next(clock)
            time.sleep(random.random() / 1000)
            with lock:
                held.discard(key)
            queue.done(key)

    workers = [threading.Thread(target=work) for _ in range(8)]
    for worker in workers:
        worker.start()
    rng = random.Random(7)
    for _ in range(2000):
        key = rng.choice(keys)
        with lock:
            changed_at[key] = next(clock)
        queue.add(key)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with lock:
            if len(queue) == 0 and not held and all(seen_at.get(k, -1) > changed_at[k] for k in changed_at):
                break
        time.sleep(0.01)
    stop.set()
    for worker in workers:
        worker.join(timeout=5)
    assert overlaps == []
    assert all(seen_at.get(key, -1) > at for key, at in changed_at.items()), "a change was never reconciled"
