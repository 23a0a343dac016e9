"""Rolling updates on the in-memory API, every write checked: a changed template rolls one PodCliqueSet replica at
a time, each gang replaced whole, as Grove's RollingRecreate orders it; OnDelete leaves pods alone.

Grove's own end-to-end checks (operator/e2e/tests/update/rolling_recreate_test.go, RU-7 to RU-12, with
``verifySinglePCSReplicaUpdatedFirst`` and the pod-event tracker in tracker.go) watch pods while an update runs;
``Recorded`` does the same after every single write the reconciler, the scheduler or the kubelet makes.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.grove import LABEL_PCS_REPLICA_INDEX, LABEL_PODGANG, LABEL_TEMPLATE_HASH
from scheduler.kube.memory.resources import PODS
from scheduler.kube.memory.store import Entry
from scheduler.reconcile.memory_client import InMemoryApi
from tests.reconcile.examples import example, reconciler
from tests.reconcile.rolling import ClusterStandIn, Generations, live, row, with_image

PCS = ("PodCliqueSet", "default", "training")


class Recorded(InMemoryApi):
    """The in-memory API, holding the rolling update's invariants after every write its store logs (``rolling``):
    no gang or PodCliqueSet replica mixes templates, and, once ``guarded``, at most one replica is below
    ``minAvailable``. It keeps each state's ``kubectl get pcs`` row and the order in which replicas lost pods."""

    def __init__(self, generations: Generations, *, lingering: bool = False) -> None:
        super().__init__()
        self.generations = generations
        self.lingering = lingering  # a deleted bound pod stays, terminating, until ``finish`` (its grace period)
        self.replicas_whole = True  # no PodCliqueSet replica holds two templates (OnDelete lets one)
        self.guarded = False
        self.rows: list[dict[str, Any]] = []
        self.replaced: list[int] = []  # PCS replica of every pod deleted, in order
        self.store.listen(self._seen)

    def _seen(self, entry: Entry) -> None:
        if entry.resource == PODS and entry.type == "DELETED":
            self.replaced.append(int(entry.obj["metadata"]["labels"][LABEL_PCS_REPLICA_INDEX]))
        pods = self.of_kind("Pod")
        mixed = self.generations.mixed(pods, terminating=self.lingering, replicas=self.replicas_whole)
        assert not mixed, mixed
        pcs = self.objects.get(PCS)
        if pcs is None:
            return
        if self.guarded:
            down = self.generations.unavailable(pods, pcs["spec"]["replicas"])
            assert len(down) <= 1, f"replicas {down} are below minAvailable at once"
        current = row(pcs, "podcliqueset")
        if not self.rows or self.rows[-1] != current:
            self.rows.append(current)

    def delete(self, kind: Any, *, namespace: str, name: str) -> None:
        stored = self.objects.get((kind, namespace, name))
        if not (self.lingering and kind == "Pod" and stored is not None and stored["spec"].get("nodeName")):
            super().delete(kind, namespace=namespace, name=name)
        elif not stored["metadata"].get("deletionTimestamp"):
            self._log("delete", stored)
            stored["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # its containers still run

    def terminating(self) -> list[str]:
        return sorted(p["metadata"]["name"] for p in self.of_kind("Pod") if p["metadata"].get("deletionTimestamp"))

    def finish(self, name: str) -> None:
        """The kubelet has stopped the pod's containers: it goes."""
        self.remove("Pod", namespace="default", name=name)


def _pods_of(api: InMemoryApi, podclique: str) -> list[dict[str, Any]]:
    return [p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"] == podclique]


def _deployed(document: dict[str, Any], *, lingering: bool = False) -> tuple[Recorded, ClusterStandIn, Generations]:
    generations = Generations(document)
    api = Recorded(generations, lingering=lingering)
    api.apply(document)
    cluster = ClusterStandIn(api)
    _run(api, cluster)
    api.guarded = True
    api.replaced.clear()
    return api, cluster, generations


def _run(api: Recorded, cluster: ClusterStandIn, *, seed: int = 1) -> None:
    """Reconcile, schedule and start pods until nothing changes."""
    for _ in range(100):
        before = len(api.writes)
        reconciler(api, seed).converge()
        finished = api.terminating()
        for name in finished:
            api.finish(name)
        if not cluster.settle() and len(api.writes) == before and not finished:
            return
    raise AssertionError("no steady state after 100 rounds")


def _training(replicas: int) -> dict[str, Any]:
    document = example("training-scaled")  # standalone cliques, a scaling group with scaled gangs, startup order
    document["spec"]["replicas"] = replicas
    return document


def _assert_rolled_out(api: Recorded, generations: Generations, replicas: int) -> None:
    pods = live(api.of_kind("Pod"))
    assert pods and all(generations.latest(pod) for pod in pods)
    status = api.objects[PCS]["status"]
    assert status["updatedReplicas"] == replicas
    progress = status["updateProgress"]
    assert progress["updateEndedAt"] and "currentlyUpdating" not in progress
    for podclique in api.of_kind("PodClique"):
        assert podclique["status"]["currentPodCliqueSetGenerationHash"] == status["currentGenerationHash"]
    for group in api.of_kind("PodCliqueScalingGroup"):
        assert group["status"]["currentPodCliqueSetGenerationHash"] == status["currentGenerationHash"]
        assert group["status"]["updatedReplicas"] == group["spec"]["replicas"]
    final = row(api.objects[PCS], "podcliqueset")
    assert final["Updated"] == replicas
    assert final["PCLQs-Updated"] == final["PCLQs-Total"] == replicas  # the coordinator is the one standalone clique
    assert final["PCSGs-Updated"] == final["PCSGs-Total"] == replicas


def test_image_change_replaces_one_replica_at_a_time_in_index_order_each_gang_whole() -> None:
    # Grove RU-7/RU-8 (rolling_recreate_test.go): a single PCS replica is updated before another begins, here with
    # every replica healthy, so in index order (rollingupdate.go: orderPCSReplicaInfo's last rank).
    api, cluster, generations = _deployed(_training(3))
    old_pods = {pod["metadata"]["uid"] for pod in api.of_kind("Pod")}
    changed = with_image(generations.document, "worker", "training/worker:v2")  # in the scaling group
    generations.add(changed)
    api.rows.clear()
    api.apply(changed)
    _run(api, cluster)
    _assert_rolled_out(api, generations, replicas=3)
    assert not old_pods & {pod["metadata"]["uid"] for pod in api.of_kind("Pod")}
    # Every replica's pods went at once, replica after replica: 16 pods each (coordinator 1 + 3 × (4 + 1)).
    assert api.replaced == [0] * 16 + [1] * 16 + [2] * 16
    # What `kubectl get pcs` showed along the way: Updated counts the replicas done, one by one.
    updated = [r["Updated"] for r in api.rows]
    assert updated[0] == 3  # the edit, before the reconciler saw it
    assert updated[updated.index(0) :] == sorted(updated[updated.index(0) :])
    assert {0, 1, 2, 3} <= set(updated)
    assert [r["PCSGs-Updated"] for r in api.rows if r["PCSGs-Total"] is not None][-1] == 3


def test_a_change_to_one_standalone_clique_still_replaces_its_whole_gang() -> None:
    # The coordinator is alone in no gang: it shares the base gang with the parameter server and the base workers,
    # so they are recreated with it (a gang is placed whole); the scaled gangs, which hold neither, keep running.
    api, cluster, generations = _deployed(_training(2))
    before = {pod["metadata"]["uid"]: pod["metadata"]["labels"][LABEL_PODGANG] for pod in api.of_kind("Pod")}
    changed = with_image(generations.document, "coordinator", "training/coord:v2")
    generations.add(changed)
    api.apply(changed)
    _run(api, cluster)
    _assert_rolled_out(api, generations, replicas=2)
    kept = {before[pod["metadata"]["uid"]] for pod in api.of_kind("Pod") if pod["metadata"]["uid"] in before}
    assert kept == {"training-0-workers-0", "training-0-workers-1", "training-1-workers-0", "training-1-workers-1"}
    assert len(before) - len([g for g in before.values() if g in kept]) == 2 * 6  # each base gang: 1 + (4 + 1)


def test_a_change_while_an_update_is_under_way_restarts_it_on_the_newest_template() -> None:
    # Grove's processGenerationHashChange: a new generation hash resets updateProgress whatever was under way.
    api, cluster, generations = _deployed(_training(3))
    first = with_image(generations.document, "worker", "training/worker:v2")
    generations.add(first)
    api.apply(first)
    reconciler(api).converge()  # replica 0 is replaced, its new pods not yet scheduled
    started = api.objects[PCS]["status"]["updateProgress"]["updateStartedAt"]
    assert api.objects[PCS]["status"]["updateProgress"]["currentlyUpdating"][0]["replicaIndex"] == 0
    second = with_image(first, "parameter-server", "training/ps:v3")
    generations.add(second)
    api.apply(second)
    _run(api, cluster)
    _assert_rolled_out(api, generations, replicas=3)
    assert api.objects[PCS]["status"]["updateProgress"]["updateStartedAt"] >= started
    hashes = {pod["metadata"]["labels"][LABEL_TEMPLATE_HASH] for pod in api.of_kind("Pod")}
    assert generations.hashes[1]["worker"] in hashes and generations.hashes[1]["parameter-server"] not in hashes


def test_a_gang_is_created_again_only_once_every_old_pod_of_it_is_gone() -> None:
    # On a cluster a deleted pod lingers, terminating, for its grace period: the new gang waits for the last old
    # pod to go, then all of it is created in one pass, so it is placed whole and on the capacity the old one held.
    api, cluster, generations = _deployed(_training(2))
    changed = with_image(generations.document, "coordinator", "training/coord:v2")
    generations.add(changed)
    api.apply(changed)
    reconciler(api).reconcile("default", "training")  # the update starts and picks replica 0
    assert api.objects[PCS]["status"]["updateProgress"]["currentlyUpdating"][0]["replicaIndex"] == 0
    assert api.replaced == []
    (lingering,) = _pods_of(api, "training-0-coordinator")
    api.objects[("Pod", "default", lingering["metadata"]["name"])]["metadata"]["deletionTimestamp"] = (
        "2026-01-01T00:00:00Z"
    )
    reconciler(api).reconcile("default", "training")
    base = [pod for pod in api.of_kind("Pod") if pod["metadata"]["labels"][LABEL_PODGANG] == "training-0"]
    assert [pod["metadata"]["name"] for pod in base] == [lingering["metadata"]["name"]]  # the rest deleted, none new
    api.remove("Pod", namespace="default", name=lingering["metadata"]["name"])  # its grace period is over
    reconciler(api).reconcile("default", "training")
    base = [pod for pod in api.of_kind("Pod") if pod["metadata"]["labels"][LABEL_PODGANG] == "training-0"]
    assert len(base) == 6 and all(
        generations.of(pod) == {1} or "coordinator" not in pod["metadata"]["name"] for pod in base
    )
    _run(api, cluster)
    _assert_rolled_out(api, generations, replicas=2)


def test_a_restarted_update_first_finishes_the_replica_it_had_taken_down() -> None:
    # The update reaches replica 1, whose new pods are bound but not Ready yet, when the template changes again.
    # Grove's order (no pod scheduled, then MinAvailableBreached, then index) would pick replica 0 next: replica 1's
    # breach reads Unknown while its update runs. Below minAvailable ranks second here, so replica 1 goes first.
    api, cluster, generations = _deployed(_training(3))
    first = with_image(generations.document, "worker", "training/worker:v2")
    generations.add(first)
    api.apply(first)
    for _ in range(20):
        reconciler(api).converge()
        if api.objects[PCS]["status"]["updateProgress"]["currentlyUpdating"][0]["replicaIndex"] == 1:
            break
        cluster.settle()
    while gangs := cluster.complete_gangs():  # replica 1 is scheduled, none of its new pods Ready
        for gang in gangs:
            cluster.schedule(gang)
        reconciler(api).converge()
    assert [pod for pod in api.of_kind("Pod") if pod["spec"].get("nodeName") is None] == []
    api.replaced.clear()
    second = with_image(first, "coordinator", "training/coord:v3")
    generations.add(second)
    api.apply(second)
    _run(api, cluster)  # Recorded holds: never two replicas below minAvailable
    _assert_rolled_out(api, generations, replicas=3)
    assert [replica for i, replica in enumerate(api.replaced) if i == 0 or api.replaced[i - 1] != replica] == [1, 0, 2]


def test_a_pod_evicted_in_a_replica_waiting_for_its_turn_comes_back_on_its_gangs_template() -> None:
    # Replica 1 still runs the old template while replica 0 is replaced: a pod it loses now is re-created from its
    # PodClique, which keeps the old template until the update reaches replica 1, so its gang stays whole.
    api, cluster, generations = _deployed(_training(2))
    changed = with_image(generations.document, "coordinator", "training/coord:v2")
    generations.add(changed)
    api.apply(changed)
    reconciler(api).converge()
    assert api.objects[PCS]["status"]["updateProgress"]["currentlyUpdating"][0]["replicaIndex"] == 0
    (evicted,) = _pods_of(api, "training-1-coordinator")
    api.guarded = False  # the eviction, not the update, takes replica 1 below minAvailable
    api.delete("Pod", namespace="default", name=evicted["metadata"]["name"])
    reconciler(api).converge()
    (back,) = _pods_of(api, "training-1-coordinator")
    assert back["metadata"]["uid"] != evicted["metadata"]["uid"] and generations.of(back) == {0}
    _run(api, cluster)
    _assert_rolled_out(api, generations, replicas=2)


def test_a_change_outside_the_pod_templates_starts_no_update() -> None:
    # computeGenerationHash hashes only the cliques' pod templates (and the priority class in them).
    api, cluster, generations = _deployed(_training(2))
    recorded = api.objects[PCS]["status"]["currentGenerationHash"]
    changed = dict(generations.document)
    changed["spec"] = {**changed["spec"], "template": {**changed["spec"]["template"], "terminationDelay": "1h"}}
    api.apply(changed)
    _run(api, cluster)
    assert api.replaced == []
    assert api.objects[PCS]["status"]["currentGenerationHash"] == recorded
    assert "updateProgress" not in api.objects[PCS]["status"]


def test_scale_out_during_an_update_creates_the_new_replica_from_the_new_template() -> None:
    # Grove RU-11: the PCS is scaled out while its rolling update runs; the new replica is made new.
    api, cluster, generations = _deployed(_training(2))
    changed = with_image(generations.document, "worker", "training/worker:v2")
    changed["spec"]["replicas"] = 3
    generations.add(changed)
    api.guarded = False  # the new replica is below minAvailable until it is scheduled: that is not the update
    api.apply(changed)
    _run(api, cluster)
    _assert_rolled_out(api, generations, replicas=3)
    assert 2 not in api.replaced  # made from the new template, never replaced


def test_on_delete_leaves_pods_until_deleted_and_reports_the_update_as_ended() -> None:
    # Grove's OnDelete (reconcilespec.go initUpdateProgress; e2e ondelete_test.go with verifyUpdateProgressFields):
    # the update starts and ends at once, no pod is deleted, and a deleted pod comes back on the new template.
    document = _training(2)
    document["spec"]["updateStrategy"] = {"type": "OnDelete"}
    api, cluster, generations = _deployed(document)
    changed = with_image(document, "coordinator", "training/coord:v2")
    generations.add(changed)
    api.apply(changed)
    _run(api, cluster)
    assert api.replaced == []
    progress = api.objects[PCS]["status"]["updateProgress"]
    assert progress["updateStartedAt"] == progress["updateEndedAt"] and "currentlyUpdating" not in progress
    assert progress["updatedPodCliquesCount"] == 0 and progress["totalPodCliquesCount"] == 2
    assert all(
        p["metadata"]["labels"][LABEL_TEMPLATE_HASH] == generations.hashes[1][p["spec"]["roleName"]]
        for p in api.of_kind("PodClique")
    )
    (coordinator,) = _pods_of(api, "training-0-coordinator")
    api.guarded = False  # the user's deletion takes replica 0 below minAvailable, as OnDelete lets them
    api.delete("Pod", namespace="default", name=coordinator["metadata"]["name"])
    _run(api, cluster)
    (replacement,) = _pods_of(api, "training-0-coordinator")
    assert generations.latest(replacement) and not generations.latest(coordinator)
    assert api.objects[PCS]["status"]["updateProgress"]["updatedPodCliquesCount"] == 1


def test_on_delete_a_gang_deleted_pod_by_pod_comes_back_whole_once_its_last_old_pod_is_gone() -> None:
    # kubectl delete -l grove.io/podgang=... deletes a gang's pods one request at a time, and each runs on through
    # its grace period: a pass in between must not put the new template beside the old ones in the gang.
    document = _training(2)
    document["spec"]["updateStrategy"] = {"type": "OnDelete"}
    api, cluster, generations = _deployed(document, lingering=True)
    changed = with_image(document, "worker", "training/worker:v2")
    generations.add(changed)
    api.apply(changed)
    _run(api, cluster)
    api.guarded = api.replicas_whole = False  # OnDelete lets a user take a gang down and its replica mix templates
    gang = [p for p in api.of_kind("Pod") if p["metadata"]["labels"][LABEL_PODGANG] == "training-1-workers-0"]
    old = sorted(p["metadata"]["name"] for p in gang)
    for name in old:
        api.delete("Pod", namespace="default", name=name)
        reconciler(api).reconcile("default", "training")
    for name in old:  # their grace periods end one by one
        assert sorted(p["metadata"]["name"] for p in api.of_kind("Pod") if p["metadata"]["labels"][LABEL_PODGANG]
                      == "training-1-workers-0") == sorted(set(old) & set(api.terminating()))  # fmt: skip
        api.finish(name)
        reconciler(api).reconcile("default", "training")
    _run(api, cluster)
    back = [p for p in api.of_kind("Pod") if p["metadata"]["labels"][LABEL_PODGANG] == "training-1-workers-0"]
    assert len(back) == len(old) and all(generations.latest(p) for p in back)
    assert not set(old) & {p["metadata"]["name"] for p in back}


def test_a_strategy_grove_does_not_have_is_refused_with_the_crds_message() -> None:
    document = _training(1)
    document["spec"]["updateStrategy"] = {"type": "Recreate"}
    api = InMemoryApi()
    api.apply(document)
    outcome = reconciler(api).reconcile("default", "training")
    assert outcome.errors == [
        'spec.updateStrategy.type: Unsupported value: "Recreate": supported values: "RollingRecreate", "OnDelete"'
    ]


_ACTIONS = st.lists(
    st.sampled_from(["reconcile", "reconcile", "schedule", "start", "start", "finish", "finish", "change"]), max_size=40
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=_ACTIONS, seed=st.integers(0, 2**16), replicas=st.integers(2, 3))
def test_every_interleaving_of_passes_binds_readiness_and_edits_rolls_out_without_mixing(
    actions: list[str], seed: int, replicas: int
) -> None:
    # The cluster's timings vary: passes of the reconciler, gangs the scheduler binds, pods the kubelet starts, pods
    # whose grace period ends (a deleted bound pod runs on until then), and the user's edits (up to three, to any
    # clique) land in any order. At every write no gang or replica holds two templates, terminating pods counted,
    # and at most one replica is below minAvailable; in the end every replica is on the last template.
    choose = random.Random(seed)
    api, cluster, generations = _deployed(_training(replicas), lingering=True)
    cliques = ["parameter-server", "coordinator", "worker"]
    edits = 0
    for action in actions:
        if action == "reconcile":
            reconciler(api, choose.randrange(1000)).reconcile("default", "training")
        elif action == "schedule" and (gangs := cluster.complete_gangs()):
            cluster.schedule(choose.choice(gangs))
        elif action == "start" and (starting := cluster.starting()):
            cluster.start(choose.choice(starting))
        elif action == "finish" and (terminating := api.terminating()):
            api.finish(choose.choice(terminating))
        elif action == "change" and edits < 3:
            edits += 1
            changed = with_image(generations.document, choose.choice(cliques), f"image:v{edits}")
            generations.add(changed)
            api.apply(changed)
    _run(api, cluster, seed=seed)
    if edits:
        _assert_rolled_out(api, generations, replicas=replicas)
    assert all(generations.latest(pod) for pod in api.of_kind("Pod"))
