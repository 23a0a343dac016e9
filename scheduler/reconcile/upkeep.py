"""After the spec is converged: PodClique and PodCliqueScalingGroup status, then gang termination on it.

Status first, because gang termination reads the ``MinAvailableBreached`` conditions (and when they last flipped)
that the status just recorded. What termination deletes, the next pass recreates from the template.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from api.grove import PodCliqueSet
from scheduler.reconcile.api import KubeObject, ReconcileApi
from scheduler.reconcile.clique_status import BREACHED, StatusWriter, condition_of, pcsg_status, podclique_status
from scheduler.reconcile.desired import Desired
from scheduler.reconcile.fields import go_duration_seconds
from scheduler.reconcile.names import LABEL_PCS_REPLICA_INDEX, LABEL_PCSG
from scheduler.reconcile.status import Clock, condition
from scheduler.reconcile.termination import IN_PROGRESS, recycle

__all__ = ["Upkeep"]

log = logging.getLogger(__name__)


def _replica(obj: KubeObject) -> int:
    return int((obj["metadata"].get("labels") or {}).get(LABEL_PCS_REPLICA_INDEX, -1))


@dataclass(frozen=True)
class Upkeep:
    api: ReconcileApi
    clock: Clock

    def run(
        self,
        pcs: PodCliqueSet,
        *,
        desired: Desired,
        groups: dict[str, KubeObject],
        podcliques: dict[str, KubeObject],
        pods: Mapping[str, list[KubeObject]],
    ) -> tuple[int, float | None]:
        """Returns the writes issued, and in how many seconds a breached gang is due to be recycled (None: none
        is waiting), so the loop comes back then rather than at its next resync."""
        writer = StatusWriter(api=self.api, clock=self.clock)
        writes = 0
        for name, clique in podcliques.items():
            podcliques[name], written = writer.write("PodClique", clique, podclique_status(clique, pods.get(name, [])))
            writes += written
        members: dict[str, list[KubeObject]] = {}
        for clique in podcliques.values():
            if group := (clique["metadata"].get("labels") or {}).get(LABEL_PCSG):
                members.setdefault(group, []).append(clique)
        for name, group in groups.items():
            wanted = pcsg_status(group, members.get(name, []))
            breached = next(c for c in wanted["conditions"] if c["type"] == BREACHED)
            in_progress = condition_of(group, IN_PROGRESS)
            if breached["status"] == "False" and in_progress is not None:
                # The recycled group is whole again: Grove drops the marker that kept it from being recycled twice.
                current = [
                    c for c in (group.get("status") or {}).get("conditions") or [] if c.get("type") != IN_PROGRESS
                ]
                group = {**group, "status": {**(group.get("status") or {}), "conditions": current}}
            groups[name], written = writer.write("PodCliqueScalingGroup", group, wanted)
            writes += written
        terminated, due = self._terminate(pcs, desired=desired, groups=groups, podcliques=podcliques, writer=writer)
        return writes + terminated, due

    def _terminate(
        self,
        pcs: PodCliqueSet,
        *,
        desired: Desired,
        groups: dict[str, KubeObject],
        podcliques: dict[str, KubeObject],
        writer: StatusWriter,
    ) -> tuple[int, float | None]:
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
