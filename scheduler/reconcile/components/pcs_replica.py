"""PodCliqueSet replicas as wholes, as Grove's ``components/podcliquesetreplica`` acts on them: gang termination.

It runs after PodClique and PodCliqueScalingGroup status is written, because it decides on the
``MinAvailableBreached`` conditions (and when they last flipped) that status just recorded
(``gang_termination``). It deletes the PodCliques of a recycled replica, or of a recycled scaling-group replica,
and marks the groups it recycled; the next pass recreates them from the template. It owns no objects of its own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from api.grove import LABEL_PCS_REPLICA_INDEX, LABEL_PCSG, PodCliqueSet
from scheduler.reconcile.client import KubeObject, ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.gang_termination import recycle
from scheduler.reconcile.desired.state import Desired
from scheduler.reconcile.rules.fields import go_duration_seconds
from scheduler.reconcile.status.cliques import IN_PROGRESS
from scheduler.reconcile.status.conditions import Clock, condition
from scheduler.reconcile.status.writer import StatusWriter

__all__ = ["PodCliqueSetReplicas"]

log = logging.getLogger(__name__)


def _replica(obj: KubeObject) -> int:
    return int((obj["metadata"].get("labels") or {}).get(LABEL_PCS_REPLICA_INDEX, -1))


@dataclass(frozen=True)
class PodCliqueSetReplicas:
    api: ReconcileApi
    clock: Clock

    def sync(self, state: PassState) -> int:
        writer = StatusWriter(api=self.api, clock=self.clock)
        writes, state.requeue_after = self._terminate(
            state.pcs, desired=state.desired, groups=state.groups, podcliques=state.podcliques, writer=writer
        )
        return writes

    def delete(self, *, namespace: str, pcs: str) -> int:
        return 0

    def _terminate(
        self,
        pcs: PodCliqueSet,
        *,
        desired: Desired,
        groups: dict[str, KubeObject],
        podcliques: dict[str, KubeObject],
        writer: StatusWriter,
    ) -> tuple[int, float | None]:
        """Returns the writes issued, and in how many seconds a breached gang is due to be recycled (None: none
        is waiting), so the loop comes back then rather than at its next resync."""
        delay = go_duration_seconds(pcs.spec.template.terminationDelay or "") or 0.0
        expected: dict[int, set[str]] = {}
        for gang in desired.gangs:
            for plan in gang.cliques:
                if plan.group is None:
                    expected.setdefault(plan.pcs_replica, set()).add(plan.fqn)
        # Grove skips a PCS replica whose standalone PodCliques do not all exist yet.
        skip = {replica for replica, names in expected.items() if not names <= podcliques.keys()}
        standalone = {r: [podcliques[n] for n in sorted(names)] for r, names in expected.items() if r not in skip}
        by_replica: dict[int, list[KubeObject]] = {}
        for group in groups.values():
            by_replica.setdefault(_replica(group), []).append(group)
        members: dict[str, list[KubeObject]] = {}
        for clique in podcliques.values():
            if group_name := (clique["metadata"].get("labels") or {}).get(LABEL_PCSG):
                members.setdefault(group_name, []).append(clique)
        decision = recycle(
            pcs_replicas=max(pcs.spec.replicas, 0),
            delay_seconds=delay,
            standalone=standalone,
            skip=skip,
            groups=by_replica,
            group_cliques=members,
            now=self.clock(),
        )
        writes = 0
        namespace = pcs.metadata.namespace
        for name in decision.podcliques(podcliques.values()):
            self.api.delete("PodClique", namespace=namespace, name=name)
            writes += 1
        for replica in decision.pcs_replicas:
            log.warning("gang termination pcs=%s/%s replica=%d delay=%ss", namespace, pcs.metadata.name, replica, delay)
            for group in by_replica.get(replica, []):
                marker = condition(
                    IN_PROGRESS,
                    "True",
                    reason="GangTerminationActive",
                    message=f"Gang termination fired at PCS-replica scope for PCS replica {replica}; this PCSG's "
                    "PodCliques were deleted as part of the recycle",
                )
                status = group.get("status") or {}
                _, written = writer.write("PodCliqueScalingGroup", group, {**status, "conditions": [marker]})
                writes += written
        for group_name, index in decision.group_replicas:
            log.warning("gang termination pcsg=%s/%s replica=%d delay=%ss", namespace, group_name, index, delay)
        return writes, min(decision.waiting.values(), default=None)
