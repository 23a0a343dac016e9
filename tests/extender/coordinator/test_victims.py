"""Which lower-priority work ``victims.gather`` offers the victim model: every running member of a gang or none of
it, reservations of gangs not started, other schedulers' pods whole, nothing at or above the preemptor's priority,
and pods already being deleted as capacity coming free rather than victims."""

from __future__ import annotations

from api.core import Pod
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.coordinator.victims import gather
from scheduler.extender.state import ClusterStore, load_snapshot_into
from scheduler.snapshot import Snapshot
from tests.builders import make_pod
from tests.extender_support import gang, node


def _on(pods: list[Pod], where: str) -> list[Pod]:
    return [p.model_copy(update={"spec": p.spec.model_copy(update={"nodeName": where})}) for p in pods]


def _store(pods: list[Pod], podgangs: list) -> ClusterStore:
    store = ClusterStore()
    load_snapshot_into(store, Snapshot(nodes=[node("a"), node("b")], pods=pods, podgangs=podgangs))
    return store


def test_a_gang_with_one_member_left_out_is_left_out_whole() -> None:
    # A budget refused low-w0 once: offering low's other seven members as "the whole gang" would let the model
    # evict them and leave low with one pod of its eight.
    low, pg = gang("low", workers=8, gpus=1)
    other, other_pg = gang("other", workers=4, gpus=1)
    store = _store(_on(low, "a") + _on(other, "b"), [pg, other_pg])
    found = gather(
        store=store,
        table=GangTable(),
        preemptor=GangRef("default", "high"),
        priority=10,
        evict=True,
        useful=None,
        excluded={"default/low-w0"},
    )
    assert set(found.gangs) == {"default/other"}
    assert {v.key for v in found.victims} == {p.key for p in other}


def test_priority_deleting_and_other_schedulers() -> None:
    low, pg = gang("low", workers=2, gpus=1)
    theirs_low = make_pod("web").scheduler("default-scheduler").priority(5).gpus(1).on("b").obj()
    theirs_high = make_pod("db").scheduler("default-scheduler").priority(50).gpus(1).on("b").obj()
    leaving = make_pod("old").scheduler("default-scheduler").gpus(2).on("b").deleting().obj()
    store = _store([*_on(low, "a"), theirs_low, theirs_high, leaving], [pg])
    found = gather(
        store=store, table=GangTable(), preemptor=GangRef("default", "high"), priority=10, evict=True, useful=None
    )
    # low (priority 0) and web (5) are below 10; db (50) is not; old is already going: room coming free on b.
    assert set(found.gangs) == {"default/low", "pod:default/web"}
    assert found.gangs["default/low"].min_replicas == {"worker": 2}
    assert found.terminating == {"default/old": "b"} and found.coming_free["b"]["nvidia.com/gpu"] == 2
    # Without eviction only reservations may make way (there are none here); the coming-free room stays.
    calm = gather(
        store=store, table=GangTable(), preemptor=GangRef("default", "high"), priority=10, evict=False, useful=None
    )
    assert calm.victims == [] and calm.terminating == {"default/old": "b"}


def test_victims_on_nodes_the_preemptor_cannot_use_are_not_offered() -> None:
    low, pg = gang("low", workers=2, gpus=1)
    store = _store(_on(low, "a"), [pg])
    found = gather(
        store=store, table=GangTable(), preemptor=GangRef("default", "high"), priority=10, evict=True, useful={"b"}
    )
    assert found.victims == []
