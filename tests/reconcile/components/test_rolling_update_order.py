"""Which replica a rolling update replaces next: Grove's ``orderPCSReplicaInfo`` and ``orchestrateRollingUpdate``
(operator/internal/controller/podcliqueset/components/podcliquesetreplica/rollingupdate.go, Grove fcc3b3bb)."""

from __future__ import annotations

import pytest

from scheduler.reconcile.components.rolling_update import ReplicaProgress, next_replica


def _replica(index: int, *, updated: bool = False, scheduled: int = 4, available: bool = True) -> ReplicaProgress:
    return ReplicaProgress(index=index, updated=updated, scheduled_pods=scheduled, available=available)


@pytest.mark.parametrize(
    ("replicas", "breached", "first"),
    [
        pytest.param([_replica(0), _replica(1), _replica(2)], (), 0, id="all healthy: ascending ordinal"),
        pytest.param([_replica(0), _replica(1), _replica(2, scheduled=0)], (), 2, id="no scheduled pods first"),
        pytest.param([_replica(0), _replica(1), _replica(2)], (1,), 1, id="then minAvailable breached"),
        pytest.param([_replica(0), _replica(1, scheduled=0), _replica(2)], (2,), 1, id="unscheduled before breached"),
        pytest.param([_replica(0), _replica(1, available=False), _replica(2)], (), 1, id="then below minAvailable"),
        pytest.param([_replica(0, updated=True), _replica(1), _replica(2)], (), 1, id="updated replicas are done"),
    ],
)
def test_the_next_replica_is_picked_in_groves_order(
    replicas: list[ReplicaProgress], breached: tuple[int, ...], first: int
) -> None:
    assert next_replica(replicas, current=None, breached=breached) == (False, first)


def test_the_replica_under_way_is_waited_for_then_the_next_is_picked_and_then_none() -> None:
    assert next_replica([_replica(0), _replica(1)], current=0, breached=()) == (True, 0)
    assert next_replica([_replica(0, updated=True), _replica(1)], current=0, breached=()) == (False, 1)
    assert next_replica([_replica(0, updated=True), _replica(1, updated=True)], current=1, breached=()) == (False, None)


def test_a_replica_under_way_that_is_gone_is_not_waited_for() -> None:
    # Scaled in (or recycled by gang termination) mid-update: Grove finds no currentlyUpdatingReplicaInfo and moves on.
    assert next_replica([_replica(0), _replica(1)], current=2, breached=()) == (False, 0)
