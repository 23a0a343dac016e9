"""PodGang status as the reporter writes it from the gang table's states."""

from __future__ import annotations

from datetime import UTC, datetime

from scheduler.extender.cluster_writer import InMemoryClusterWriter
from scheduler.extender.coordinator.gang_state import PlanCommit, PodFacts, ReadyMember
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.coordinator.reporting import PodGangStatusReporter
from scheduler.extender.coordinator.work import WorkQueue
from scheduler.extender.state import ClusterStore, load_snapshot_into
from scheduler.snapshot import Snapshot
from tests.extender_support import gang, node

G = GangRef("default", "g")
W0, W1 = "default/g-w0", "default/g-w1"


def test_a_partly_bound_gang_being_repaired_goes_on_saying_partially_bound() -> None:
    # g (2 members, minReplicas 2): w0 bound, w1 ready and being bound by a release pass (the gang is Releasing
    # meanwhile). The release is the repair, not news: the PodGang must not flip to "Unscheduled" in between (seen
    # on the real control plane when the reporter thread read the state mid-pass).
    pods, pg = gang("g", workers=2, gpus=1)
    store = ClusterStore()
    load_snapshot_into(store, Snapshot(nodes=[node("n0"), node("n1")], pods=pods, podgangs=[pg]))
    table = GangTable()
    writer = InMemoryClusterWriter(store)
    reporter = PodGangStatusReporter(
        store=store, table=table, writer=writer, work=WorkQueue(), wall_clock=lambda: datetime(2026, 1, 1, tzinfo=UTC)
    )
    commit = PlanCommit(
        assignment={W0: "n0", W1: "n1"},
        kept={},
        demands={W0: {"nvidia.com/gpu": 1}, W1: {"nvidia.com/gpu": 1}},
        groups={W0: "worker", W1: "worker"},
        min_replicas={"worker": 2},
        bound={},
        placement_score=1.0,
        ttl_seconds=60,
    )
    assert table.planned(G, commit=commit, basis=table.planning_basis(G, now=0), now=0)
    table.member_bound_observed(G.key, W0, node="n0")
    reporter.report(G)
    assert [s["conditions"][-1]["reason"] for _, s in writer.statuses] == ["PartiallyBound"]
    table.member_ready(G.key, W1, member=ReadyMember("n1", "uid-default-g-w1"), expires_at=100)
    batch = table.release_started(
        G.key,
        pod_facts=lambda pod: PodFacts(True, f"uid-{pod.replace('/', '-')}", "n0" if pod == W0 else ""),
        used_on=lambda n: {},
        allocatable_of=lambda n: {"nvidia.com/gpu": 8},
    )
    assert batch.members  # the release is under way: the gang is Releasing
    reporter.report(G)
    assert len(writer.statuses) == 1, writer.statuses  # nothing new while it is repaired
    table.release_finished(G.key, bound=[W1], gone=[])
    reporter.report(G)
    assert [s["conditions"][-1]["reason"] for _, s in writer.statuses] == ["PartiallyBound", "GuaranteedPodsBound"]
