"""A running PodCliqueSet's image changed on the fake API server, with the reconciler deployed as it runs (its
watches and its loop) and a stand-in gang scheduler and kubelet beside it: every state the API server went through
is replayed from its write log and held to the rolling update's invariants, and ``kubectl get`` shows the progress
through the shipped CRDs' printer columns. Grove's e2e update tests (operator/e2e/tests/update/, with the pod
tracker in tracker.go) watch the same things on a kind cluster."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.sim.fakeapi import PODCLIQUESETS, PODS, FakeApiServer
from tests.reconcile.deployed import reconciling, until
from tests.reconcile.examples import example
from tests.reconcile.kubectl import Kubectl
from tests.reconcile.rolling import ClusterStandIn, Generations, OnServer, live, row, with_image

PART_OF = "app.kubernetes.io/part-of=training"


def _stand_in(server: FakeApiServer, stop: threading.Event) -> None:
    """The gang scheduler and the kubelet, acting every 50 ms."""
    cluster = ClusterStandIn(OnServer(server))
    while not stop.wait(0.05):
        cluster.settle()


@pytest.fixture
def deployed() -> Iterator[tuple[FakeApiServer, Kubectl]]:
    """The fake API server with the reconciler, the gang scheduler and the kubelet running against it."""
    with reconciling(_stand_in) as deployed:
        yield deployed


def _pcs(kubectl: Kubectl) -> dict[str, Any]:
    (pcs,) = kubectl.get("pcs")["pcs"]
    return pcs


def test_image_change_rolls_gang_by_gang_and_kubectl_get_pcs_shows_its_progress(
    deployed: tuple[FakeApiServer, Kubectl],
) -> None:
    server, kubectl = deployed
    document = example("training-scaled")  # 2 replicas of 16 pods: 1 standalone, 3 group replicas (2 scaled gangs)
    generations = Generations(document)
    server.apply(document)
    until(lambda: row(_pcs(kubectl), "podcliqueset")["Updated"] == 2)
    until(lambda: row(_pcs(kubectl), "podcliqueset")["Available"] == 2)
    since = server.store.rv
    changed = with_image(document, "worker", "training/worker:v2")
    generations.add(changed)
    server.apply(changed)

    def rolled_out() -> bool:
        pods = live(kubectl.get("pods", selector=PART_OF)["pods"])
        progress = _pcs(kubectl)["status"].get("updateProgress") or {}
        return len(pods) == 32 and all(generations.latest(p) for p in pods) and bool(progress.get("updateEndedAt"))

    until(rolled_out)
    until(lambda: row(_pcs(kubectl), "podcliqueset")["Updated"] == 2)

    # Every state of the API server, from its log of writes, in order.
    state: dict[str, dict[tuple[str, str], dict[str, Any]]] = {PODS: {}, PODCLIQUESETS: {}}
    rows: list[dict[str, Any]] = []
    with server.store.cond:
        log = list(server.store.log)
    for entry in log:
        if entry.resource not in state or entry.type not in ("ADDED", "MODIFIED", "DELETED"):
            continue
        key = (entry.obj["metadata"].get("namespace", ""), entry.obj["metadata"]["name"])
        if entry.type == "DELETED":
            state[entry.resource].pop(key, None)
        else:
            state[entry.resource][key] = entry.obj
        pods = list(state[PODS].values())
        assert not generations.mixed(pods), (entry.rv, generations.mixed(pods))
        if entry.rv > since:
            down = generations.unavailable(pods, replicas=2)
            assert len(down) <= 1, f"at resourceVersion {entry.rv} replicas {down} are below minAvailable"
            if entry.resource == PODCLIQUESETS:
                rows.append(row(entry.obj, "podcliqueset"))
    updated = [r["Updated"] for r in rows]
    assert updated[updated.index(0) :] == sorted(updated[updated.index(0) :]) and {0, 1, 2} <= set(updated)

    # `kubectl get pcs,pcsg,pclq` once it is over: what Grove's printer columns show.
    assert row(_pcs(kubectl), "podcliqueset") == {
        "NAME": "training",
        "Replicas": 2,
        "Available": 2,
        "Updated": 2,
        "PCLQs-Updated": 2,
        "PCLQs-Total": 2,
        "PCSGs-Updated": 2,
        "PCSGs-Total": 2,
        "Valid": "True",
    }
    for group in kubectl.get("pcsg")["pcsg"]:
        assert {k: v for k, v in row(group, "podcliquescalinggroup").items() if k != "NAME"} == {
            "MinAvail": 1,
            "Replicas": 3,
            "Available": 3,
            "Scheduled": 3,
            "Updated": 3,
            "PCLQs-Updated": 6,
            "PCLQs-Total": 6,
        }
    for podclique in kubectl.get("pclq")["pclq"]:
        columns = row(podclique, "podclique")
        assert columns["Updated"] == columns["Replicas"] == columns["Ready"], columns
