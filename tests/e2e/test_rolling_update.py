"""A rolling update on the real control plane: ``kubectl patch`` a running PodCliqueSet's image and follow its pods
through a watch of the API server, every event of which is one state a user could have seen.

The PodCliqueSet is the user guide's multinode-aggregated example with 3 replicas: each is 2 model instances of
1 leader + 3 workers, instance 0 in the replica's base gang and instance 1 in a scaled gang of its own, so the
update replaces base and scaled gangs. Pods are told apart by image, as a user would (``kubectl get pods -o
wide``), not by the reconciler's hash labels. At every event the scenario checks what Grove's own e2e update tests
(operator/e2e/tests/update/, with the pod tracker of tracker.go) check on a kind cluster:
- no PodGang (the pods labelled ``grove.io/podgang``), and no PodCliqueSet replica, holds pods of both images;
- no more than one PodCliqueSet replica is below ``minAvailable`` (a replica is available when its scaling group
  has ``minAvailable`` (1) instances whose cliques have ``minAvailable`` (their replicas) Ready pods);
- the replicas are replaced one at a time: once a replica's old pods start going, no other replica loses one until
  that replica is whole again on the new image.
Meanwhile ``kubectl get pcs`` is read as a user would, and its Updated column must climb to 3.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import yaml

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.install import DEPLOY
from benchmarks.controlplane.rest import Api, ApiError
from tests.e2e.reads import PODS, all_whole, apply_in, load_average, pods, ready, wait_for

PCS = "multinode-aggregated"
REPLICAS = 3
OLD, NEW = "nginx:latest", "nginx:1.27"
# The example's cliques: minAvailable defaults to replicas; the scaling group's minAvailable defaults to 1.
CLIQUE_MIN = {"leader": 1, "worker": 3}
GROUP_MIN = 1
PCS_REPLICA = "grove.io/podcliqueset-replica-index"
GROUP_REPLICA = "grove.io/podcliquescalinggroup-replica-index"


def _image(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["image"])


def _clique(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["labels"]["grove.io/podclique"]).rsplit("-", 1)[-1]


def _terminating(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


@dataclass
class Watched:
    """The namespace's pods as the watch has shown them so far, and what broke the invariants on the way."""

    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: int = 0
    mixed: list[str] = field(default_factory=list)
    below: list[str] = field(default_factory=list)
    out_of_turn: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # the PCS replica each replacement started on, in order
    most_down: int = 0
    _replacing: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def see(self, kind: str, pod: dict[str, Any]) -> None:
        with self.lock:
            self.events += 1
            name = pod["metadata"]["name"]
            if kind == "DELETED":
                self.pods.pop(name, None)
            else:
                self.pods[name] = pod
            self._check(f"event {self.events} ({kind} {name}, resourceVersion {pod['metadata']['resourceVersion']})")

    def _check(self, at: str) -> None:
        listed = list(self.pods.values())
        for label in ("grove.io/podgang", PCS_REPLICA):
            images: dict[str, set[str]] = {}
            for pod in listed:
                images.setdefault(pod["metadata"]["labels"][label], set()).add(_image(pod))
            self.mixed += [
                f"{at}: {label}={key} holds {sorted(found)}" for key, found in images.items() if len(found) > 1
            ]
        down = [replica for replica in range(REPLICAS) if not _available(listed, replica)]
        self.most_down = max(self.most_down, len(down))
        if len(down) > 1:
            self.below.append(f"{at}: replicas {down} below minAvailable")
        # A replica is being replaced from the moment one of its old pods goes until all its pods are new and it is
        # available again; only then may another replica's old pods go.
        going = sorted(
            {int(p["metadata"]["labels"][PCS_REPLICA]) for p in listed if _image(p) == OLD and _terminating(p)}
        )
        if self._replacing is not None and self._replaced(listed, self._replacing):
            self._replacing = None
        for replica in going:
            if self._replacing is None:
                self._replacing = replica
                self.order.append(replica)
            elif replica != self._replacing:
                self.out_of_turn.append(f"{at}: replica {replica} loses pods while {self._replacing} is replaced")

    @staticmethod
    def _replaced(listed: list[dict[str, Any]], replica: int) -> bool:
        mine = [p for p in listed if int(p["metadata"]["labels"][PCS_REPLICA]) == replica]
        return (
            len(mine) == 8 and all(_image(p) == NEW and not _terminating(p) for p in mine) and _available(mine, replica)
        )


def _available(listed: list[dict[str, Any]], replica: int) -> bool:
    """Grove's availability of a PodCliqueSet replica, from its pods: enough scaling-group instances whose cliques
    each have ``minAvailable`` Ready pods that are not terminating."""
    ready_by: dict[tuple[str, str], int] = {}
    for pod in listed:
        labels = pod["metadata"]["labels"]
        if int(labels[PCS_REPLICA]) == replica and ready(pod) and not _terminating(pod):
            key = (labels[GROUP_REPLICA], _clique(pod))
            ready_by[key] = ready_by.get(key, 0) + 1
    instances = {instance for instance, _ in ready_by}
    whole = [i for i in instances if all(ready_by.get((i, c), 0) >= n for c, n in CLIQUE_MIN.items())]
    return len(whole) >= GROUP_MIN


async def _follow(api: Api, path: str, version: str, watched: Watched) -> None:
    """Every pod event from ``version`` on; the watch must not break (a missed event is a missed state)."""
    try:
        async for event in api.watch(path, resource_version=version, timeoutSeconds="600"):
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                watched.see(event["type"], event["object"])
            elif event["type"] == "ERROR":
                watched.errors.append(str(event["object"].get("message")))
                return
    except (ApiError, aiohttp.ClientError, ValueError) as err:
        watched.errors.append(f"{type(err).__name__}: {err}")


def _rows(table: str) -> list[dict[str, str]]:
    """The rows of a table kubectl printed, by column header; a column with nothing to show is "" (kubectl leaves
    it blank, so the columns are cut where their headers start)."""
    header, *lines = table.rstrip("\n").split("\n")
    starts = [match.start() for match in re.finditer(r"\S+", header)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [{header[a:b].strip(): line[a:b].strip() for a, b in bounds} for line in lines]


def _table(plane: ControlPlane, namespace: str) -> dict[str, str]:
    """``kubectl get pcs``'s one row."""
    (row,) = _rows(plane.kubectl("-n", namespace, "get", "pcs", PCS))
    return row


def test_image_change_rolls_replica_by_replica_each_gang_whole_and_kubectl_shows_it(
    control_plane: ControlPlane, namespace: str, figure: list[str]
) -> None:
    (pcs,) = yaml.safe_load_all((DEPLOY / "examples" / f"{PCS}.yaml").read_text())
    pcs["spec"]["replicas"] = REPLICAS
    apply_in(control_plane, namespace, [pcs])

    def steady() -> bool:
        listed = pods(control_plane, namespace)
        return (
            all_whole(control_plane, namespace, expected_gangs=2 * REPLICAS)
            and len(listed) == 8 * REPLICAS
            and all(map(ready, listed))
            and _table(control_plane, namespace).get("UPDATED") == str(REPLICAS)
        )

    wait_for(steady, timeout=120, what="every gang bound whole, every pod Ready, UPDATED 3",
             show=lambda: _table(control_plane, namespace))  # fmt: skip
    assert {_image(p) for p in pods(control_plane, namespace)} == {OLD}

    path = PODS.format(ns=namespace)
    listed = control_plane.api.get(path)
    watched = Watched()
    for pod in listed["items"]:
        watched.pods[pod["metadata"]["name"]] = pod
    version = listed["metadata"]["resourceVersion"]
    follower = control_plane.api.background(_follow(control_plane.api, path, version, watched))
    patch = [
        {"op": "replace", "path": f"/spec/template/cliques/{i}/spec/podSpec/containers/0/image", "value": NEW}
        for i in range(2)
    ]
    started = time.monotonic()
    control_plane.kubectl("-n", namespace, "patch", "pcs", PCS, "--type=json", "-p", json.dumps(patch))

    updated_seen: list[str] = []  # the UPDATED column each time a user ran kubectl get pcs

    def rolled_out() -> bool:
        row = _table(control_plane, namespace)
        if not updated_seen or updated_seen[-1] != row["UPDATED"]:
            updated_seen.append(row["UPDATED"])
        with watched.lock:
            now = list(watched.pods.values())
        done = len(now) == 8 * REPLICAS and all(_image(p) == NEW and ready(p) and not _terminating(p) for p in now)
        return done and row["UPDATED"] == str(REPLICAS)

    wait_for(rolled_out, timeout=300, every=0.3, what="every pod on the new image and Ready, UPDATED 3",
             show=lambda: (updated_seen, watched.order, len(watched.pods)))  # fmt: skip
    elapsed = time.monotonic() - started
    follower.cancel()

    assert not watched.errors, watched.errors
    assert not watched.mixed, watched.mixed[:10]
    assert not watched.below, watched.below[:10]
    assert not watched.out_of_turn, watched.out_of_turn[:10]
    assert watched.order == list(range(REPLICAS))  # each replica once, in Grove's order (all healthy: by index)
    assert watched.most_down == 1  # the update did take a replica down (its gangs were replaced whole)
    assert all_whole(control_plane, namespace, expected_gangs=2 * REPLICAS)

    # kubectl get pcs showed the progress: UPDATED climbed to 3 without going back.
    numbers = [int(value) for value in updated_seen if value]
    assert numbers == sorted(numbers) and numbers[-1] == REPLICAS and numbers[0] < REPLICAS, updated_seen
    final = _table(control_plane, namespace)
    assert {k: final[k] for k in ("REPLICAS", "AVAILABLE", "UPDATED", "PCSGS-UPDATED", "PCSGS-TOTAL")} == {
        "REPLICAS": "3", "AVAILABLE": "3", "UPDATED": "3", "PCSGS-UPDATED": "3", "PCSGS-TOTAL": "3"
    }  # fmt: skip
    status = control_plane.api.get(f"/apis/grove.io/v1alpha1/namespaces/{namespace}/podcliquesets/{PCS}")["status"]
    assert status["updateProgress"].get("updateEndedAt") and "currentlyUpdating" not in status["updateProgress"]
    groups = _rows(control_plane.kubectl("-n", namespace, "get", "pcsg"))
    assert len(groups) == REPLICAS
    for row in groups:
        assert (row["UPDATED"], row["PCLQS-UPDATED"], row["PCLQS-TOTAL"]) == ("2", "4", "4"), row
    figure.append(
        f"{8 * REPLICAS} pods in {2 * REPLICAS} gangs rolled to a new image replica by replica in {elapsed:.1f} s "
        f"(replica order {watched.order}, {watched.events} pod events checked, UPDATED seen {updated_seen}; "
        f"load {load_average()})"
    )
