"""The one list-watch-relist loop, as the reconciler and initc use it (objects whole, in one namespace, picked by
label) against the fake API server; the extender's use of it is ``test_mirror``."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kubernetes.client import ApiClient

from benchmarks.sim.fakeapi import PODGANGS as PODGANG_OBJECTS
from benchmarks.sim.fakeapi import PODS, FakeApiServer
from scheduler.kube.backoff import Backoff
from scheduler.kube.decoding import EventType, JsonDecoder
from scheduler.kube.informer import Informer, start_informers
from scheduler.kube.listing import ALL_PODS, PODGANGS
from tests.kube import objects as k
from tests.kube.waiting import wait_for

SELECTOR = "app=web"


class Recorder:
    """A handler that keeps what it heard: each list's names, then each event."""

    def __init__(self) -> None:
        self.lists: list[list[str]] = []
        self.events: list[tuple[str, str]] = []

    def on_list(self, objects: Sequence[dict[str, Any]]) -> None:
        self.lists.append(sorted(f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objects))

    def on_event(self, event_type: EventType, obj: dict[str, Any]) -> None:
        self.events.append((event_type, f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"))


def web(name: str, namespace: str = "team-a", *, app: str = "web") -> dict[str, Any]:
    pod = k.pod(name, namespace=namespace)
    pod["metadata"]["labels"]["app"] = app
    return pod


def pods_informer(api_client: ApiClient, **overrides: Any) -> Informer[dict[str, Any]]:
    settings: dict[str, Any] = {
        "api_client": api_client,
        "resource": ALL_PODS,
        "decoder": JsonDecoder(stamp=ALL_PODS.stamp),
        "namespace": "team-a",
        "label_selector": SELECTOR,
        "watch_timeout": 2,
        "backoff": Backoff(initial=0.01, cap=0.05),
    }
    return Informer(**(settings | overrides))


@pytest.fixture
def running_informer(
    fake: FakeApiServer, api_client: ApiClient
) -> Iterator[tuple[Recorder, Recorder, threading.Event]]:
    fake.put(PODS, web("a-0"))
    fake.put(PODS, web("db-0", app="db"))
    fake.put(PODS, web("b-0", namespace="team-b"))
    informer = pods_informer(api_client)
    first, second = Recorder(), Recorder()
    informer.add_handler(first)
    informer.add_handler(second)
    stop = threading.Event()
    threads = start_informers([informer], stop)
    yield first, second, stop
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive(), f"{thread.name} did not stop"


def test_every_handler_hears_the_namespace_and_selector_it_asked_for(
    fake: FakeApiServer, running_informer: tuple[Recorder, Recorder, threading.Event]
) -> None:
    first, second, _ = running_informer
    wait_for(lambda: first.lists == [["team-a/a-0"]])
    fake.put(PODS, web("a-1"))
    fake.put(PODS, web("db-1", app="db"))
    fake.put(PODS, web("b-1", namespace="team-b"))
    fake.delete(PODS, "a-0", "team-a")
    wait_for(lambda: ("DELETED", "team-a/a-0") in first.events)
    assert first.events == [("ADDED", "team-a/a-1"), ("DELETED", "team-a/a-0")]
    assert (second.lists, second.events) == (first.lists, first.events)
    lists = [r for r in fake.requests_to("GET", r"^/api/v1/namespaces/team-a/pods$") if not r.query.get("watch")]
    assert lists and all(r.query["labelSelector"] == SELECTOR for r in lists)
    assert not fake.requests_to("GET", r"^/api/v1/pods$"), "a namespaced informer never lists the whole cluster"


def test_410_gone_hands_the_handlers_the_whole_new_list(
    fake: FakeApiServer, running_informer: tuple[Recorder, Recorder, threading.Event]
) -> None:
    first, _, _ = running_informer
    wait_for(lambda: len(first.lists) == 1)
    fake.put(PODS, web("late"), silent=True)  # changes no watch will ever report
    fake.delete(PODS, "a-0", "team-a", silent=True)
    fake.expire_watches(PODS)
    wait_for(lambda: len(first.lists) == 2)
    assert first.lists[1] == ["team-a/late"]
    fake.put(PODS, web("after"))  # and the watch carries on from the relist's version
    wait_for(lambda: ("ADDED", "team-a/after") in first.events)


def test_a_cluster_scoped_custom_resource_reads_through_the_same_loop(
    fake: FakeApiServer, api_client: ApiClient
) -> None:
    fake.put(PODGANG_OBJECTS, k.podgang("g", namespace="team-a", pods=["x"]))
    informer = Informer(api_client=api_client, resource=PODGANGS, decoder=JsonDecoder(stamp=PODGANGS.stamp))
    heard = Recorder()
    informer.add_handler(heard)
    synced: list[int] = []
    stop = threading.Event()
    threads = start_informers([informer], stop, on_synced=lambda: synced.append(len(heard.lists)))
    try:
        wait_for(lambda: synced == [1])
        assert heard.lists == [["team-a/g"]]
        fake.put(PODGANG_OBJECTS, k.podgang("h", namespace="team-b", pods=["y"]))
        wait_for(lambda: heard.events == [("ADDED", "team-b/h")])
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)


def test_a_stop_that_lands_while_a_watch_is_opened_ends_the_run_at_once(
    fake: FakeApiServer, api_client: ApiClient
) -> None:
    # A stop can come after the watch request is sent but before its stream is registered, so the interrupt
    # finds nothing to close; the watch must then end as soon as it opens, not at its timeout.
    fake.delay("GET", r"^/api/v1/namespaces/team-a/pods$", 1.0)  # the list and the watch each answer late
    informer = pods_informer(api_client, watch_timeout=300)
    stop = threading.Event()
    runner = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    runner.start()
    wait_for(lambda: any(r.query.get("watch") for r in fake.requests_to("GET", r"/pods$")))
    stop.set()
    informer.interrupt()  # what start_informers' stopper does: nothing is open yet
    runner.join(timeout=30)  # the server would hold the stream open for 300 s
    assert not runner.is_alive()
