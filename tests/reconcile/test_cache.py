"""The reconciler's cache: a pass reads the informers, and never reads older than its own last write."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from kubernetes import client

from api.grove import LABEL_PART_OF
from benchmarks.sim.fakeapi import PODGANGS, PODS, running
from scheduler.reconcile.cache import OVERLAY_SECONDS, OwnedCache
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.rest_client import WATCHED_KINDS, KubeApi
from tests.reconcile.examples import example


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _pod(name: str, version: int, **meta: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": str(version),
            "labels": {LABEL_PART_OF: "set"},
            "managedFields": [{"manager": "x"}],
            **meta,
        },
    }


def _cache(*listed: dict[str, Any]) -> tuple[OwnedCache, _Clock]:
    clock = _Clock()
    cache = OwnedCache(["Pod"], clock=clock)
    cache.handler("Pod").on_list(list(listed))
    return cache, clock


def _names(cache: OwnedCache) -> list[str]:
    return [obj["metadata"]["name"] for obj in cache.list("Pod", namespace="ns", part_of="set")]


def test_a_kind_is_read_from_the_cache_only_once_its_informer_has_listed() -> None:
    cache = OwnedCache(["Pod"])
    assert not cache.serves("Pod")
    cache.handler("Pod").on_list([])
    assert cache.serves("Pod")
    assert not cache.serves("Service")


def test_a_created_object_is_listed_before_its_watch_event_and_retired_by_it() -> None:
    cache, _ = _cache(_pod("a", 5))
    cache.wrote("Pod", _pod("b", 9))
    assert _names(cache) == ["a", "b"]
    cache.handler("Pod").on_event("ADDED", _pod("b", 7))  # an older state of it: ours stays
    assert cache.get("Pod", "ns", "b")["metadata"]["resourceVersion"] == "9"
    cache.handler("Pod").on_event("MODIFIED", _pod("b", 9))
    assert cache.pending() == 0
    assert _names(cache) == ["a", "b"]


def test_a_deleted_object_is_hidden_until_the_watch_takes_it_away() -> None:
    cache, _ = _cache(_pod("a", 5), _pod("b", 6))
    cache.deleted("Pod", "ns", "b", None)
    assert _names(cache) == ["a"]
    cache.handler("Pod").on_event("DELETED", _pod("b", 6))
    assert _names(cache) == ["a"]
    assert cache.pending() == 0


def test_an_object_made_again_under_a_deleted_name_shows_once_the_watch_has_it() -> None:
    cache, _ = _cache(_pod("b", 6))
    cache.deleted("Pod", "ns", "b", None)
    cache.handler("Pod").on_event("MODIFIED", _pod("b", 12))
    assert _names(cache) == ["b"]


def test_an_object_a_finalizer_holds_reads_as_terminating_not_gone() -> None:
    cache, _ = _cache(_pod("b", 6))
    cache.deleted("Pod", "ns", "b", _pod("b", 8, deletionTimestamp="2026-11-29T00:00:00Z"))
    assert cache.get("Pod", "ns", "b")["metadata"]["deletionTimestamp"]


def test_a_write_the_watch_never_confirms_counts_only_for_a_while() -> None:
    cache, clock = _cache()
    cache.wrote("Pod", _pod("b", 9))
    clock.now = OVERLAY_SECONDS - 1
    assert _names(cache) == ["b"]
    clock.now = OVERLAY_SECONDS
    assert _names(cache) == []


def test_reads_are_copies_without_managed_fields() -> None:
    cache, _ = _cache(_pod("a", 5))
    first = cache.get("Pod", "ns", "a")
    assert "managedFields" not in first["metadata"]
    first["metadata"]["labels"]["edited"] = "yes"
    assert "edited" not in cache.get("Pod", "ns", "a")["metadata"]["labels"]


def test_passes_on_a_watch_that_never_delivers_make_each_object_once() -> None:
    """Every kind's informer has listed an empty cluster and then hears nothing: each pass sees only its own
    writes. Without them a second pass would create the pods again under new names."""
    with running() as server:
        api = KubeApi(client.ApiClient(client.Configuration(host=server.url)), timeout=5.0)
        for kind in WATCHED_KINDS:
            api.cache.handler(kind).on_list([])
        server.apply(example("multinode-aggregated"))
        reconciler = Reconciler(api, rng=random.Random(1))
        writes = [reconciler.reconcile("default", "multinode-aggregated").writes for _ in range(3)]
        pods = Counter(p["metadata"]["labels"]["grove.io/podgang"] for p in server.objects(PODS))
        assert pods == {"multinode-aggregated-0": 4, "multinode-aggregated-0-model-instance-0": 4}
        assert len(server.objects(PODGANGS)) == 2
        assert writes[0] > 0 and writes[2] == 0, writes


def test_an_object_our_write_let_go_of_is_gone_once_the_watch_deletes_it() -> None:
    # Releasing the last finalizer of an object being deleted is a write whose answer is the object; the watch then
    # deletes it. Read as gone, not as the answer: a pass waits for it to be gone before making it again.
    cache, _ = _cache(_pod("b", 6, deletionTimestamp="2026-11-29T00:00:00Z"))
    cache.wrote("Pod", _pod("b", 9, deletionTimestamp="2026-11-29T00:00:00Z"))
    cache.handler("Pod").on_event("DELETED", _pod("b", 10))
    assert _names(cache) == [] and cache.pending() == 0


def test_an_object_made_again_after_the_deletion_the_watch_reports_stays() -> None:
    cache, _ = _cache(_pod("b", 6))
    cache.wrote("Pod", _pod("b", 12))  # made again under its name after the deletion at 10
    cache.handler("Pod").on_event("DELETED", _pod("b", 10))
    assert _names(cache) == ["b"]


def test_a_write_answered_after_the_watch_deleted_the_object_does_not_bring_it_back() -> None:
    # The same release, the other way round: the watch reports the deletion before the PUT's answer reaches us.
    cache, _ = _cache(_pod("b", 6, deletionTimestamp="2026-11-29T00:00:00Z"))
    cache.handler("Pod").on_event("DELETED", _pod("b", 10))
    cache.wrote("Pod", _pod("b", 9, deletionTimestamp="2026-11-29T00:00:00Z"))
    assert _names(cache) == [] and cache.pending() == 0
    cache.wrote("Pod", _pod("b", 11))  # made again after the deletion: shown
    assert _names(cache) == ["b"]
