"""Reservations over time and cluster changes, leadership, status, unknown pods — through the app."""

from __future__ import annotations

import logging

import pytest

from api.core import Pod
from placement import ClusterView, GangRequest, Result, SolveOptions, Status, solve
from scheduler.extender.coordinator import BackgroundWorker
from scheduler.extender.coordinator.members import gang_ref_of
from scheduler.extender.state import ClusterStore, load_snapshot_into
from scheduler.snapshot import Snapshot
from tests.builders import make_pod
from tests.extender_support import CLIQUE, SyncClient, bind_body, filter_body, gang, harness, node, pod, podgang

NODES = [node("a0", clique="A"), node("a1", clique="A"), node("b0", clique="B")]
NAMES = ["a0", "a1", "b0"]


def test_reservations_expire_by_ttl_and_the_next_filter_plans_again() -> None:
    pods, pg = gang("g", workers=2, gpus=8)
    h = harness(nodes=NODES, pods=pods, podgangs=[pg])
    client = SyncClient(h.app)
    assert client.post("/filter", json=filter_body(pods[0], NAMES)).json()["NodeNames"]
    assert h.coordinator.table.reservation_count() == 2
    # No filter arrived before this one, so the pace is the floor (20/s): 60 s + 2 × 2 members / 20 per s + 10 s
    # of backoff = 70.2 s. A second short of it the plan holds; past it, it is given back.
    h.clock.now += 70.2 - 1
    assert h.coordinator.expire() == []
    h.clock.now += 2
    assert h.coordinator.expire() == ["default/g"]
    assert h.coordinator.table.reservation_count() == 0 and h.coordinator.debug_gangs() == []
    assert client.post("/filter", json=filter_body(pods[1], NAMES)).json()["NodeNames"]
    assert h.coordinator.table.reservation_count() == 2


class LateMemberStore(ClusterStore):
    """A store whose watch delivers ``late`` (a new pod, or one that lost its gate) right after a plan looked the
    pod up for the ``misses``-th time and found it missing (or gated): the race of a gang's last member with the plan
    it makes possible."""

    def __init__(self, late: Pod, *, misses: int) -> None:
        super().__init__()
        self._late: Pod | None = late
        self._misses = misses

    def pod(self, key: str) -> Pod | None:
        late = self._late
        if late is None or key != late.key:
            return super().pod(key)
        earlier = super().pod(key)
        self._misses -= 1
        if self._misses == 0:
            self._late = None
            self.apply("Pod", "ADDED" if earlier is None else "MODIFIED", late)  # as the watch thread would, mid-plan
        return earlier

    @property
    def delivered(self) -> bool:
        return self._late is None


# A gang short of pods is planned alone: the pod arrives between its read and its decision. A gang whose pods all
# exist, one still gated, is planned with the queue's head: read by the one-gang planner, then by the head planner,
# where the gate must go second to fall between the head's read and its basis.
@pytest.mark.parametrize(("queued", "gated"), [(0, False), (1, True)], ids=["created-late", "ungated-late"])
def test_a_member_arriving_while_its_gangs_first_plan_runs_gets_the_gang_planned_not_refused(
    queued: int, gated: bool
) -> None:
    pods, pg = gang("g", workers=2, gpus=8)
    others = [gang(f"other{i}", workers=1, gpus=8) for i in range(queued)]
    late = pods[1]
    store = LateMemberStore(late=late, misses=2 if gated else 1)
    present = [pods[0]] + ([pod(late.metadata.name, gang="g", gpus=8, gated=True)] if gated else [])
    load_snapshot_into(store, Snapshot(nodes=NODES, pods=present + [p for ps, _ in others for p in ps],
                                       podgangs=[pg] + [g for _, g in others]))  # fmt: skip
    h = harness(nodes=NODES, store=store)
    h.coordinator.plan_ahead(gang_ref_of(pods[0]))
    assert store.delivered, "the member arrived during the plan"
    while h.background():  # the arrival queued the gang for planning again
        pass
    client = SyncClient(h.app)
    for member in pods:
        assert client.post("/filter", json=filter_body(member, NAMES)).json()["NodeNames"], member.key


def test_a_gang_planned_behind_a_long_queue_holds_its_reservation_until_kube_scheduler_can_reach_it() -> None:
    # 40 gangs of 2 pods planned ahead, oldest first, before kube-scheduler offers anything (the pace is the floor,
    # 20/s). The k-th waits for the 2k pods planned before it: 60 s + 2 × (2 + 2k) / 20 + 10 s, so 70.2 s for the
    # first and 78 s for the last. One lifetime for all would let the tail expire while kube-scheduler works
    # through the head.
    gangs = [gang(f"g{k:02d}", workers=2, gpus=1) for k in range(40)]
    h = harness(nodes=[node(f"n{i}") for i in range(10)], pods=[p for ps, _ in gangs for p in ps],
                podgangs=[g for _, g in gangs])  # fmt: skip
    for members, _ in gangs:
        h.coordinator.plan_ahead(gang_ref_of(members[0]))
    assert h.coordinator.table.reservation_count() == 80
    h.clock.now += 74.9
    expired = h.coordinator.expire()
    # Gone: the gangs whose 70 + 0.2 × (k + 1) s have passed (k ≤ 23); the rest, queued behind them, still hold.
    assert expired == [f"default/g{k:02d}" for k in range(24)]
    assert h.coordinator.table.reservation_count() == 2 * 16
    h.clock.now += 3.2
    assert len(h.coordinator.expire()) == 16


def test_deleting_the_podgang_or_a_pod_releases_its_reservations() -> None:
    pods, pg = gang("g", workers=2, gpus=8)
    h = harness(nodes=NODES, pods=pods, podgangs=[pg])
    client = SyncClient(h.app)
    client.post("/filter", json=filter_body(pods[0], NAMES))
    h.store.apply("Pod", "DELETED", pods[1])
    assert set(h.coordinator.table.planning_basis(gang_ref_of(pods[0]), now=0).held) == {pods[0].key}
    h.store.apply("PodGang", "DELETED", pg)
    assert h.coordinator.table.reservation_count() == 0 and h.coordinator.debug_gangs() == []


def test_a_plan_broken_by_a_foreign_bind_is_replanned() -> None:
    p = pod("solo", gpus=8)
    h = harness(nodes=NODES, pods=[p])
    client = SyncClient(h.app)
    first = client.post("/filter", json=filter_body(p, NAMES)).json()["NodeNames"][0]
    # Another scheduler fills the planned node: our reservation no longer fits there.
    h.store.apply("Pod", "ADDED", pod("intruder", gpus=8, node_name=first))
    second = client.post("/filter", json=filter_body(p, NAMES)).json()["NodeNames"]
    assert second and second[0] != first
    assert h.coordinator.metrics.replans.labels("cluster_changed")._value.get() == 1


def test_a_standby_is_not_ready_and_refuses_to_act() -> None:
    class Standby:
        def is_leader(self) -> bool:
            return False

    p = pod("solo", gpus=1)
    h = harness(nodes=NODES, pods=[p], leadership=Standby())
    client = SyncClient(h.app)
    assert client.get("/readyz").status_code == 503
    assert "standby" in client.post("/filter", json=filter_body(p, NAMES)).json()["Error"]
    assert "standby" in client.post("/bind", json=bind_body(p, "a0")).json()["Error"]
    assert h.writer.bindings == []


def test_a_pod_whose_podgang_our_watch_has_not_shown_yet_is_told_to_retry_not_parked() -> None:
    # Grove creates the PodGang before it ungates the pods, so this only lasts as long as our watch lags: Error
    # (kube-scheduler retries within 1-10 s) rather than FailedNodes (parked until some cluster event, up to 5 min).
    orphan = pod("orphan", gang="nowhere", gpus=1)
    h = harness(nodes=NODES, pods=[orphan])
    client = SyncClient(h.app)
    reply = client.post("/filter", json=filter_body(orphan, NAMES)).json()
    assert reply["FailedNodes"] == {} and "PodGang default/nowhere" in reply["Error"]
    h.store.apply("PodGang", "ADDED", podgang("nowhere", {"w": (["orphan"], 1)}))
    assert client.post("/filter", json=filter_body(orphan, NAMES)).json()["NodeNames"]


def test_podgang_reaches_running_once_its_guaranteed_pods_run() -> None:
    pods, pg = gang("g", workers=2, gpus=8, required=CLIQUE)
    h = harness(
        nodes=NODES,
        pods=[pod(p.metadata.name, gang="g", gpus=8, node_name=n) for p, n in zip(pods, ["a0", "a1"], strict=True)],
        podgangs=[pg],
    )
    worker = BackgroundWorker(h.coordinator)
    worker.run_once()
    for p, n in zip(pods, ["a0", "a1"], strict=True):
        h.store.apply("Pod", "MODIFIED", pod(p.metadata.name, gang="g", gpus=8, node_name=n, phase="Running"))
    worker.run_once()
    status = h.store.podgang("default/g").status
    assert status is not None and status.phase == "Running"


def test_a_change_of_leadership_drops_plans_and_reservations() -> None:
    class Flag:
        def __init__(self) -> None:
            self.leader = True

        def is_leader(self) -> bool:
            return self.leader

    flag = Flag()
    p = pod("solo", gpus=8)
    h = harness(nodes=NODES, pods=[p], leadership=flag)
    worker = BackgroundWorker(h.coordinator)
    client = SyncClient(h.app)
    assert client.post("/filter", json=filter_body(p, NAMES)).json()["NodeNames"]
    assert h.coordinator.table.reservation_count() == 1
    flag.leader = False
    worker.run_once()  # the worker notices without any request arriving
    assert h.coordinator.table.reservation_count() == 0 and h.coordinator.debug_gangs() == []
    flag.leader = True
    assert client.post("/filter", json=filter_body(p, NAMES)).json()["NodeNames"]


def test_on_a_stale_view_the_extender_is_not_ready_and_plans_binds_and_nominates_nothing() -> None:
    # The watches keep failing (a network cut, RBAC taken away): the store's view may hold a node that is gone or
    # a pod bound elsewhere since. kube-scheduler is told Error (it retries) rather than a node, the planner does
    # not plan ahead, /readyz turns 503 so the Service routes elsewhere; once the watches come back, all resumes.
    stale: list[str] = ["watches failing: Pod for 12 s"]
    pods, pg = gang("g", workers=2, gpus=8)
    h = harness(nodes=NODES, pods=pods, podgangs=[pg])
    h.coordinator.add_freshness(lambda: stale[0] if stale else None)
    worker = BackgroundWorker(h.coordinator)
    client = SyncClient(h.app)
    worker.run_once()
    assert h.coordinator.table.reservation_count() == 0 and h.writer.nominations == []
    answer = client.post("/filter", json=filter_body(pods[0], NAMES)).json()
    assert answer["NodeNames"] in (None, []) and "stale (watches failing: Pod for 12 s)" in answer["Error"]
    assert "stale" in client.post("/bind", json=bind_body(pods[0], "a0")).json()["Error"]
    assert client.get("/readyz").status_code == 503 and client.get("/healthz").status_code == 200
    assert h.writer.bindings == []
    stale.clear()
    assert client.get("/readyz").status_code == 200
    assert client.post("/filter", json=filter_body(pods[0], NAMES)).json()["NodeNames"]
    assert h.coordinator.table.reservation_count() == 2


def test_a_plan_that_ran_out_of_time_is_tried_again_on_the_next_filter() -> None:
    calls: list[str] = []

    def slow_then_fine(request: GangRequest, view: ClusterView, options: SolveOptions) -> Result:
        calls.append(request.key)
        if len(calls) == 1:
            return Result(status=Status.TIMED_OUT, reason="no plan found within the time limit")
        return solve(request, view, options)

    p = pod("solo", gpus=8)
    h = harness(nodes=NODES, pods=[p], solver=slow_then_fine)
    client = SyncClient(h.app)
    first = client.post("/filter", json=filter_body(p, NAMES)).json()
    assert first["NodeNames"] == [] and "time limit" in first["FailedNodes"]["a0"]
    # Nothing in the cluster changed, yet the next call plans again instead of repeating the refusal.
    assert client.post("/filter", json=filter_body(p, NAMES)).json()["NodeNames"]
    assert len(calls) == 2


def test_a_pod_refused_for_capacity_is_placed_once_another_schedulers_pod_frees_it() -> None:
    # One 8-GPU node; another scheduler's pod holds 6 GPUs: a 4-GPU pod does not fit (8 - 6 = 2 free).
    theirs = make_pod("web").scheduler("default-scheduler").gpus(6).on("a0").phase("Running").obj()
    p = pod("solo", gpus=4)
    h = harness(nodes=[node("a0")], pods=[p, theirs])
    client = SyncClient(h.app)
    assert client.post("/filter", json=filter_body(p, ["a0"])).json()["NodeNames"] == []
    h.store.apply("Pod", "DELETED", theirs)  # the store keeps it as capacity only (a ForeignPod); its going frees a0
    assert client.post("/filter", json=filter_body(p, ["a0"])).json()["NodeNames"] == ["a0"]


def test_a_pod_refused_for_capacity_is_placed_once_a_bound_pod_of_ours_goes_away() -> None:
    # The same with a pod of ours: bound by us, its solo gang record dropped once bound, then deleted.
    ours = pod("done", gpus=6, node_name="a0", phase="Running")
    p = pod("solo", gpus=4)
    h = harness(nodes=[node("a0")], pods=[p, ours])
    client = SyncClient(h.app)
    assert client.post("/filter", json=filter_body(p, ["a0"])).json()["NodeNames"] == []
    h.store.apply("Pod", "DELETED", ours)
    assert client.post("/filter", json=filter_body(p, ["a0"])).json()["NodeNames"] == ["a0"]


def test_only_gangs_whose_pods_our_scheduler_offers_are_planned_ahead() -> None:
    # Both gangs are Grove gangs (kept whole in the store), but kube-scheduler's grove profile only ever offers
    # the first: the second's pods name another scheduler and must not hold a reservation.
    ours, ours_pg = gang("ours", workers=2, gpus=4)
    theirs = [make_pod(f"theirs-w{i}").scheduler("default-scheduler").gang("theirs").gpus(4).obj() for i in range(2)]
    theirs_pg = podgang("theirs", {"worker": ([p.metadata.name for p in theirs], 2)})
    h = harness(nodes=NODES, pods=[*ours, *theirs], podgangs=[ours_pg, theirs_pg])
    for pg in (theirs_pg, ours_pg):  # as the PodGangs' watch events queue them
        h.store.apply("PodGang", "MODIFIED", pg.model_copy(update={"spec": pg.spec.model_copy(deep=True)}))
    BackgroundWorker(h.coordinator).run_once()
    held = {pod.rsplit("-", 1)[0] for pod in h.coordinator.table.planning_basis(gang_ref_of(ours[0]), now=0).held}
    assert held == {"default/ours"}
    assert h.coordinator.table.planning_basis(gang_ref_of(theirs[0]), now=0).held == {}
    assert h.coordinator.table.reservation_count() == 2  # ours' two members, nothing for theirs


@pytest.mark.parametrize("lease_first", [False, True], ids=["synced-then-leader", "leader-then-synced"])
def test_a_new_leader_on_a_synced_store_plans_ahead_and_reports_gangs_found_whole(lease_first: bool) -> None:
    # Found on a real control plane: a restarted extender synced before it held the Lease (the plans its sync queued
    # were skipped), or held it before its watches listed a PodGang ahead of its pods (the plan found no pods); either
    # way a gang bound whole just before the old process died was never looked at again and kept no status.
    class Flag:
        leader = False

        def is_leader(self) -> bool:
            return self.leader

    flag = Flag()
    whole_pods, whole = gang("whole", workers=2, gpus=8)
    nodes = ["a0", "a1"]
    bound = [pod(p.metadata.name, gang="whole", gpus=8, node_name=n) for p, n in zip(whole_pods, nodes, strict=True)]
    pending, waiting = gang("pending", workers=1, gpus=8)
    store = ClusterStore()
    h = harness(nodes=[], store=store, leadership=flag)  # built before the sync, as serve builds it
    worker = BackgroundWorker(h.coordinator)
    if lease_first:
        flag.leader = True
        worker.run_once()
    store.replace("Node", NODES)
    store.replace("PodGang", [whole, waiting])  # as the watches may list them: PodGangs before their pods
    worker.run_once()
    store.replace("Pod", [*bound, *pending])
    store.mark_synced()
    worker.run_once()
    flag.leader = True
    worker.run_once()  # notices the leadership, or the sync
    while worker.run_once():
        pass
    assert [key for key, status in h.writer.statuses if status.get("phase") == "Starting"] == ["default/whole"]
    assert h.coordinator.table.reservation_count() == 1  # the pending gang planned ahead


def test_verbs_wait_for_the_first_list_instead_of_refusing_from_a_partial_cluster() -> None:
    """Seen on the real control plane after an extender restart: a filter answered before the Node list arrived
    refused the gang on every node ("0 eligible nodes"), and kube-scheduler parked its pods for minutes. Until the
    store is synced every verb says retry, and nothing is planned."""
    pods, pg = gang("g", workers=2, gpus=8)
    store = ClusterStore()
    for p in pods:
        store.apply("Pod", "ADDED", p)
    store.apply("PodGang", "ADDED", pg)
    h = harness(nodes=[], store=store)
    client = SyncClient(h.app)
    assert client.get("/readyz").status_code == 503
    reply = client.post("/filter", json=filter_body(pods[0], NAMES)).json()
    assert "still listing" in reply["Error"] and not reply.get("FailedNodes")
    assert "still listing" in client.post("/bind", json=bind_body(pods[0], "a0")).json()["Error"]
    h.coordinator.plan_ahead(gang_ref_of(pods[0]))
    assert h.coordinator.debug_gangs() == [] and h.writer.bindings == []
    for n in NODES:
        store.apply("Node", "ADDED", n)
    store.mark_synced()
    assert client.post("/filter", json=filter_body(pods[0], NAMES)).json()["NodeNames"]


def test_after_a_restart_a_gang_cut_mid_release_is_planned_before_the_queue_head_takes_its_room() -> None:
    # Clique A (a0, a1: 8 GPUs each) and B (b0, b1). "cut" (8 × 1 GPU, all guaranteed, required in one clique) was
    # cut mid-release by a SIGKILL: 7 members bound on a0, w7 pending; it must finish in A, which has 9 GPUs free.
    # Two fresh gangs wait; the first of 9 pods fits A's 9 free GPUs exactly, which best fit (partly used domains
    # first) prefers. kube-scheduler offers a fresh gang's pod first: if the head were planned before "cut", it
    # would take A and leave "cut" partly bound for good (make e2e's SIGKILL scenario: 2 of 100 gangs).
    cut = [pod(f"cut-w{i}", gang="cut", gpus=1, node_name="a0" if i < 7 else "") for i in range(8)]
    cut_gang = podgang("cut", {"w": ([p.metadata.name for p in cut], 8)}, required=CLIQUE)
    nine, nine_gang = gang("nine", workers=9, gpus=1)
    two, two_gang = gang("two", workers=2, gpus=1)
    nodes = [node("a0", clique="A"), node("a1", clique="A"), node("b0", clique="B"), node("b1", clique="B")]
    h = harness(nodes=nodes, pods=[*cut, *nine, *two], podgangs=[cut_gang, nine_gang, two_gang])
    h.coordinator.plan_ahead(gang_ref_of(nine[0]))  # the head, before the resync reaches "cut"
    states = {g["gang"]: g for g in h.coordinator.debug_gangs()}
    assert states["default/cut"]["state"] == "PartiallyBound" and states["default/cut"]["plan"], states["default/cut"]
    assert set(states["default/cut"]["plan"].values()) <= {"a0", "a1"}
    assert states["default/nine"]["state"] == "Planned"


def test_a_standby_with_a_stale_view_says_so(caplog: pytest.LogCaptureFixture) -> None:
    """A network cut costs a leader its Lease and its watches alike, whichever it notices first: the probe says (and
    the log tells an operator) that the view is stale, not only that the replica does not lead."""

    class Standby:
        def is_leader(self) -> bool:
            return False

    h = harness(nodes=NODES, leadership=Standby())
    h.coordinator.add_freshness(lambda: "watches failing: Pod for 12 s")
    with caplog.at_level(logging.WARNING):
        assert not h.coordinator.ready()
    assert any("view stale" in r.getMessage() and "Pod for 12 s" in r.getMessage() for r in caplog.records)
