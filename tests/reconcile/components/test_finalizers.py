"""Grove's finalizers on PodCliques and scaling groups, and their remover, against the in-memory API (which keeps an
object with finalizers, marked for deletion, until a write takes the last one off, as the API server does).

Mirrors Grove snapshot fcc3b3bb: ``podcliqueset/components/podclique/podclique.go`` and
``podcliqueset/components/podcliquescalinggroup/podcliquescalinggroup.go`` (``buildResource`` adds the finalizer at
creation), ``podclique/reconciledelete.go`` and ``podcliquescalinggroup/reconciledelete.go`` (the deletion flow
removes it, and the garbage collector does the rest).
"""

from __future__ import annotations

from scheduler.reconcile.memory_client import InMemoryApi
from tests.reconcile.examples import cluster, example, reconciler

NS = "default"
PCS = "multinode-aggregated"  # one PodCliqueSet replica; group model-instance: 2 replicas of a leader and 3 workers
PODCLIQUE = "grove.io/podclique.grove.io"
GROUP = "grove.io/podcliquescalinggroup.grove.io"


def _converged() -> InMemoryApi:
    api = cluster(example(PCS))
    reconciler(api).converge()
    return api


def test_podcliques_and_scaling_groups_are_created_with_groves_finalizers() -> None:
    api = _converged()
    assert {tuple(c["metadata"]["finalizers"]) for c in api.of_kind("PodClique")} == {(PODCLIQUE,)}
    assert {tuple(g["metadata"]["finalizers"]) for g in api.of_kind("PodCliqueScalingGroup")} == {(GROUP,)}


def test_a_deleted_pcs_leaves_nothing_behind_once_the_reconciler_releases_the_finalizers() -> None:
    api = _converged()
    api.remove("PodCliqueSet", namespace=NS, name=PCS)
    held = api.of_kind("PodCliqueScalingGroup")  # its finalizer holds it, and so its PodCliques and their pods
    assert held and all(o["metadata"].get("deletionTimestamp") for o in held)
    assert len(api.of_kind("Pod")) == 8
    reconciler(api).converge()
    assert not api.of_kind("PodCliqueScalingGroup") and not api.of_kind("PodClique") and not api.of_kind("Pod")


def test_a_pcs_being_deleted_in_the_foreground_is_torn_down() -> None:
    # kubectl delete --cascade=foreground: the PodCliqueSet stays (deletionTimestamp) until what it owns is gone.
    api = _converged()
    pcs = api.objects[("PodCliqueSet", NS, PCS)]
    pcs["metadata"]["finalizers"] = ["foregroundDeletion"]
    api.remove("PodCliqueSet", namespace=NS, name=PCS)
    reconciler(api).converge()
    assert not api.of_kind("PodClique") and not api.of_kind("Pod")


def test_a_podclique_a_user_deletes_is_released_and_made_again() -> None:
    api = _converged()
    name = f"{PCS}-0-model-instance-0-worker"
    uid = api.objects[("PodClique", NS, name)]["metadata"]["uid"]
    api.remove("PodClique", namespace=NS, name=name)
    assert api.objects[("PodClique", NS, name)]["metadata"]["deletionTimestamp"]
    reconciler(api).converge()
    again = api.objects[("PodClique", NS, name)]
    assert again["metadata"]["uid"] != uid and not again["metadata"].get("deletionTimestamp")
    assert again["metadata"]["finalizers"] == [PODCLIQUE]
    assert sum(p["metadata"]["labels"]["grove.io/podclique"] == name for p in api.of_kind("Pod")) == 3


def test_a_scaled_in_group_replica_and_its_podcliques_go_whole() -> None:
    api = _converged()
    api.scale("PodCliqueScalingGroup", namespace=NS, name=f"{PCS}-0-model-instance", replicas=1)
    reconciler(api).converge()
    assert sorted(c["metadata"]["name"] for c in api.of_kind("PodClique")) == [
        f"{PCS}-0-model-instance-0-leader",
        f"{PCS}-0-model-instance-0-worker",
    ]
    api.remove("PodCliqueScalingGroup", namespace=NS, name=f"{PCS}-0-model-instance")  # a user deletes the group
    reconciler(api).converge()
    (group,) = api.of_kind("PodCliqueScalingGroup")  # released, gone with its PodCliques, then made again
    assert not group["metadata"].get("deletionTimestamp") and len(api.of_kind("PodClique")) == 4


def test_objects_made_before_finalizers_get_them() -> None:
    api = _converged()
    for kind in ("PodClique", "PodCliqueScalingGroup"):
        for obj in api.of_kind(kind):
            del api.objects[(kind, NS, obj["metadata"]["name"])]["metadata"]["finalizers"]
    reconciler(api).converge()
    assert all(c["metadata"]["finalizers"] == [PODCLIQUE] for c in api.of_kind("PodClique"))
    assert all(g["metadata"]["finalizers"] == [GROUP] for g in api.of_kind("PodCliqueScalingGroup"))


def test_another_controllers_finalizer_is_left_alone() -> None:
    api = _converged()
    name = f"{PCS}-0-model-instance-0-leader"
    api.objects[("PodClique", NS, name)]["metadata"]["finalizers"].append("example.com/keep")
    api.remove("PodClique", namespace=NS, name=name)
    reconciler(api).converge()
    assert api.objects[("PodClique", NS, name)]["metadata"]["finalizers"] == ["example.com/keep"]
