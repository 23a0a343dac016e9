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
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import yaml

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.install import DEPLOY
from benchmarks.controlplane.rest import Api, ApiError
from tests.e2e.reads import GROVE, PODS, all_whole, apply_in, load_average, pods, ready, wait_for

PCS = "multinode-aggregated"
REPLICAS = 3
OLD, NEW, NEWER = "nginx:latest", "nginx:1.27", "nginx:1.28"
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
    mixed: list[str] = field(default_factory=list)  # a gang holding both images
    mixed_replicas: list[str] = field(default_factory=list)  # a PodCliqueSet replica holding both
    below: list[str] = field(default_factory=list)
    out_of_turn: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # the PCS replica each replacement started on, in order
    newest: str = NEW  # the image the PodCliqueSet asks for now
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
        for label, found in (("grove.io/podgang", self.mixed), (PCS_REPLICA, self.mixed_replicas)):
            images: dict[str, set[str]] = {}
            for pod in listed:
                images.setdefault(pod["metadata"]["labels"][label], set()).add(_image(pod))
            found += [f"{at}: {label}={key} holds {sorted(seen)}" for key, seen in images.items() if len(seen) > 1]
        down = [replica for replica in range(REPLICAS) if not _available(listed, replica)]
        self.most_down = max(self.most_down, len(down))
        if len(down) > 1:
            self.below.append(f"{at}: replicas {down} below minAvailable")
        # A replica is being replaced from the moment one of its old pods goes until all its pods are new and it is
        # available again; only then may another replica's old pods go.
        going = sorted(
            {int(p["metadata"]["labels"][PCS_REPLICA]) for p in listed if _image(p) != self.newest and _terminating(p)}
        )
        if self._replacing is not None and self._replaced(listed, self._replacing):
            self._replacing = None
        for replica in going:
            if self._replacing is None:
                self._replacing = replica
                self.order.append(replica)
            elif replica != self._replacing:
                self.out_of_turn.append(f"{at}: replica {replica} loses pods while {self._replacing} is replaced")

    def _replaced(self, listed: list[dict[str, Any]], replica: int) -> bool:
        mine = [p for p in listed if int(p["metadata"]["labels"][PCS_REPLICA]) == replica]
        fresh = all(_image(p) == self.newest and not _terminating(p) for p in mine)
        return len(mine) == 8 and fresh and _available(mine, replica)

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.pods.values())

    def replaced_all(self) -> bool:
        now = self.snapshot()
        return len(now) == 8 * REPLICAS and all(
            _image(p) == self.newest and ready(p) and not _terminating(p) for p in now
        )

    def assert_kept(self) -> None:
        """Nothing broke the invariants, and the watch saw every event."""
        assert not self.errors, self.errors
        assert not self.mixed, self.mixed[:10]
        assert not self.mixed_replicas, self.mixed_replicas[:10]
        assert not self.below, self.below[:10]
        assert not self.out_of_turn, self.out_of_turn[:10]


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


def _deploy(plane: ControlPlane, namespace: str, *, strategy: str | None = None) -> None:
    """The example with 3 replicas (and ``strategy``), applied and waited for: every gang whole, every pod Ready."""
    (pcs,) = yaml.safe_load_all((DEPLOY / "examples" / f"{PCS}.yaml").read_text())
    pcs["spec"]["replicas"] = REPLICAS
    if strategy is not None:
        pcs["spec"]["updateStrategy"] = {"type": strategy}
    apply_in(plane, namespace, [pcs])

    def steady() -> bool:
        listed = pods(plane, namespace)
        return (
            all_whole(plane, namespace, expected_gangs=2 * REPLICAS)
            and len(listed) == 8 * REPLICAS
            and all(map(ready, listed))
            and _table(plane, namespace).get("UPDATED") == str(REPLICAS)
        )

    wait_for(steady, timeout=120, what="every gang bound whole, every pod Ready, UPDATED 3",
             show=lambda: _table(plane, namespace))  # fmt: skip
    assert {_image(p) for p in pods(plane, namespace)} == {OLD}


def _watch(plane: ControlPlane, namespace: str) -> tuple[Watched, Future[None]]:
    """The namespace's pods listed, then watched from that list on (cancel the future to stop)."""
    path = PODS.format(ns=namespace)
    listed = plane.api.get(path)
    watched = Watched()
    for pod in listed["items"]:
        watched.pods[pod["metadata"]["name"]] = pod
    version = listed["metadata"]["resourceVersion"]
    return watched, plane.api.background(_follow(plane.api, path, version, watched))


def _set_image(plane: ControlPlane, namespace: str, image: str) -> None:
    """What a user types: ``kubectl patch pcs … --type=json`` on both cliques' image."""
    patch = [
        {"op": "replace", "path": f"/spec/template/cliques/{i}/spec/podSpec/containers/0/image", "value": image}
        for i in range(2)
    ]
    plane.kubectl("-n", namespace, "patch", "pcs", PCS, "--type=json", "-p", json.dumps(patch))


def _pcs_status(plane: ControlPlane, namespace: str) -> dict[str, Any]:
    status: dict[str, Any] = plane.api.get(f"{GROVE.format(ns=namespace)}/podcliquesets/{PCS}").get("status") or {}
    return status


def _rolling(plane: ControlPlane, namespace: str) -> tuple[Watched, Future[None], float]:
    """The example deployed and steady, its pods watched, then its image patched to ``NEW``: the watch, its future
    and when the patch was sent."""
    _deploy(plane, namespace)
    watched, follower = _watch(plane, namespace)
    started = time.monotonic()
    _set_image(plane, namespace, NEW)
    return watched, follower, started


def test_image_change_rolls_replica_by_replica_each_gang_whole_and_kubectl_shows_it(
    control_plane: ControlPlane, namespace: str, figure: list[str]
) -> None:
    watched, follower, started = _rolling(control_plane, namespace)

    updated_seen: list[str] = []  # the UPDATED column each time a user ran kubectl get pcs

    def rolled_out() -> bool:
        row = _table(control_plane, namespace)
        if not updated_seen or updated_seen[-1] != row["UPDATED"]:
            updated_seen.append(row["UPDATED"])
        return watched.replaced_all() and row["UPDATED"] == str(REPLICAS)

    wait_for(rolled_out, timeout=300, every=0.3, what="every pod on the new image and Ready, UPDATED 3",
             show=lambda: (updated_seen, watched.order, len(watched.pods)))  # fmt: skip
    elapsed = time.monotonic() - started
    follower.cancel()

    watched.assert_kept()
    assert watched.order == list(range(REPLICAS))  # each replica once, in Grove's order (all healthy: by index)
    assert watched.most_down == 1  # the update did take a replica down (its gangs were replaced whole)
    assert all_whole(control_plane, namespace, expected_gangs=2 * REPLICAS)

    # kubectl get pcs showed the progress: UPDATED climbed to 3 without going back.
    # (The first reads may come before the reconciler saw the patch: they still show the old template's 3.)
    numbers = [int(value) for value in updated_seen if value]
    began = next((i for i, n in enumerate(numbers) if n < REPLICAS), len(numbers))
    assert numbers[began:] == sorted(numbers[began:]) and numbers[began] == 0 and numbers[-1] == REPLICAS, updated_seen
    final = _table(control_plane, namespace)
    assert {k: final[k] for k in ("REPLICAS", "AVAILABLE", "UPDATED", "PCSGS-UPDATED", "PCSGS-TOTAL")} == {
        "REPLICAS": "3", "AVAILABLE": "3", "UPDATED": "3", "PCSGS-UPDATED": "3", "PCSGS-TOTAL": "3"
    }  # fmt: skip
    status = _pcs_status(control_plane, namespace)
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


def test_a_second_change_mid_update_restarts_it_on_the_newest_image_still_one_replica_at_a_time(
    control_plane: ControlPlane, namespace: str, figure: list[str]
) -> None:
    watched, follower, started = _rolling(control_plane, namespace)
    wait_for(lambda: len(watched.order) >= 2, timeout=120, every=0.05, what="the second replica being replaced",
             show=lambda: watched.order)  # fmt: skip
    with watched.lock:
        watched.newest = NEWER  # from now on, a pod not on NEWER is out of date
    _set_image(control_plane, namespace, NEWER)
    wait_for(watched.replaced_all, timeout=300, every=0.3, what="every pod on the newest image and Ready",
             show=lambda: (watched.order, sorted({_image(p) for p in watched.snapshot()})))  # fmt: skip
    elapsed = time.monotonic() - started
    follower.cancel()
    watched.assert_kept()
    # Replica 1, caught half-way, is finished first (on the newest image); then the other two, one at a time.
    assert watched.order[:2] == [0, 1] and sorted(watched.order[2:]) == [0, 2], watched.order
    wait_for(lambda: _table(control_plane, namespace)["UPDATED"] == str(REPLICAS), timeout=60, what="UPDATED 3")
    progress = _pcs_status(control_plane, namespace)["updateProgress"]
    assert progress.get("updateEndedAt") and "currentlyUpdating" not in progress
    figure.append(f"restarted mid-update: every pod on the newest image {elapsed:.1f} s after the first patch "
                  f"(replacements in order {watched.order}; load {load_average()})")  # fmt: skip


def test_on_delete_leaves_every_pod_until_a_gang_is_deleted_which_comes_back_on_the_new_image(
    control_plane: ControlPlane, namespace: str
) -> None:
    _deploy(control_plane, namespace, strategy="OnDelete")
    before = {p["metadata"]["uid"] for p in pods(control_plane, namespace)}
    watched, follower = _watch(control_plane, namespace)
    _set_image(control_plane, namespace, NEW)
    wait_for(lambda: (_pcs_status(control_plane, namespace).get("updateProgress") or {}).get("updateEndedAt"),
             timeout=60, what="the OnDelete update recorded as ended at once")  # fmt: skip
    time.sleep(5)  # the reconciler's passes over the changed PodCliqueSet have run: still nothing may be replaced
    assert {p["metadata"]["uid"] for p in pods(control_plane, namespace)} == before
    assert {_image(p) for p in pods(control_plane, namespace)} == {OLD}
    assert _table(control_plane, namespace)["UPDATED"] == "0"

    gang = f"{PCS}-1-model-instance-0"  # replica 1's scaled gang: a user deletes its pods
    control_plane.kubectl("-n", namespace, "delete", "pods", "-l", f"grove.io/podgang={gang}", "--wait=false")

    def back() -> bool:
        mine = [p for p in watched.snapshot() if p["metadata"]["labels"]["grove.io/podgang"] == gang]
        return len(mine) == 4 and all(_image(p) == NEW and ready(p) and not _terminating(p) for p in mine)

    wait_for(back, timeout=120, what=f"{gang} back on {NEW}, Ready")
    follower.cancel()
    # (A replica does hold both images now: OnDelete replaces what is deleted, and only that.)
    assert not watched.errors and not watched.mixed, (watched.errors, watched.mixed[:10])
    assert not watched.below, watched.below[:10]  # (the watched replica never dropped below minAvailable: 1 of 2)
    others = [p for p in pods(control_plane, namespace) if p["metadata"]["labels"]["grove.io/podgang"] != gang]
    assert len(others) == 20 and {p["metadata"]["uid"] for p in others} <= before
    assert {_image(p) for p in others} == {OLD}
    assert all_whole(control_plane, namespace, expected_gangs=2 * REPLICAS)
