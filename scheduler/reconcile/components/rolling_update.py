"""Which PodCliqueSet replica a rolling update replaces next, and when the one under way is done (Grove's
``components/podcliquesetreplica/rollingupdate.go``).

One replica at a time. The one under way is done once every standalone PodClique of it is updated (on the current
template and generation, ``minAvailable`` pods updated and ready) and every scaling group of it has converged to
the current generation. The next is chosen in Grove's order (``orderPCSReplicaInfo``): a replica with no pod
scheduled first (replacing it costs nothing), then one already below ``minAvailable``, then the lowest index.
Replicas gang termination is recycling now are left out: they come back new. Pure: the ``pcs_replica`` component
reads the live objects and moves the ``Rollout`` on.

Grove's second rank is a replica whose ``MinAvailableBreached`` is True but not yet recycled; ours is any replica
below ``minAvailable``, breached or not. The difference shows when an update restarts on a newer template: the
replica it was replacing is still coming up, and its breach reads Unknown while its own update is under way. By
Grove's rank the restarted update would take replica 0 down beside it; by ours it finishes that replica first, so
never more than one replica is below ``minAvailable`` because of the update.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ReplicaProgress", "next_replica"]


@dataclass(frozen=True)
class ReplicaProgress:
    """One PCS replica as the rolling update sees it."""

    index: int
    updated: bool  # Grove's computeUpdateProgress: done
    scheduled_pods: int  # Grove's getNumScheduledPods
    available: bool  # every standalone PodClique and scaling group at its minAvailable (Grove's availableReplicas)


def next_replica(
    replicas: Sequence[ReplicaProgress], *, current: int | None, breached: Collection[int]
) -> tuple[bool, int | None]:
    """(whether to wait: ``current`` is under way and not done yet; else the replica to replace next, ``None`` when
    every replica is done). A ``current`` that is gone (scaled in, being recycled) is not waited for."""
    by_index: Mapping[int, ReplicaProgress] = {replica.index: replica for replica in replicas}
    if current is not None and current in by_index and not by_index[current].updated:
        return True, current
    pending = [r for r in replicas if r.index != current and not r.updated]
    if not pending:
        return False, None
    first = min(pending, key=lambda r: (r.scheduled_pods != 0, r.available and r.index not in breached, r.index))
    return False, first.index
