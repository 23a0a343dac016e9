"""PodCliqueSet replicas as wholes, as Grove's ``components/podcliquesetreplica`` acts on them: gang termination,
then the rolling update.

It runs after PodClique and PodCliqueScalingGroup status is written, because it decides on what that status just
recorded. Gang termination (``gang_termination``) reads the ``MinAvailableBreached`` conditions and when they last
flipped: it deletes the PodCliques of a recycled replica, or of a recycled scaling-group replica, and marks the
groups it recycled; the next pass recreates them from the template. The rolling update (``rolling_update``) reads
the update fields: once the replica under way is done it picks the next, or ends the update, in the pass's
``Rollout``, which the PodCliqueSet's status then records; the next pass replaces that replica. It owns no objects
of its own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from api.grove import LABEL_PCS_REPLICA_INDEX, LABEL_PCSG, PodCliqueSet
from scheduler.reconcile.client import KubeObject, ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.gang_termination import Recycle, recycle
from scheduler.reconcile.components.rolling_update import ReplicaProgress, next_replica
from scheduler.reconcile.desired.state import CliquePlan, Desired
from scheduler.reconcile.rules.fields import go_duration_seconds
from scheduler.reconcile.status.cliques import IN_PROGRESS
from scheduler.reconcile.status.conditions import Clock, condition, stamp
from scheduler.reconcile.status.updates import clique_available, group_available, group_updated, podclique_updated
from scheduler.reconcile.status.writer import StatusWriter

__all__ = ["PodCliqueSetReplicas"]

log = logging.getLogger(__name__)


def _replica(obj: KubeObject) -> int:
    return int((obj["metadata"].get("labels") or {}).get(LABEL_PCS_REPLICA_INDEX, -1))


def _status_int(obj: KubeObject, key: str) -> int:
    value = (obj.get("status") or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True)
class PodCliqueSetReplicas:
    api: ReconcileApi
    clock: Clock

    def sync(self, state: PassState) -> int:
        writer = StatusWriter(api=self.api, clock=self.clock)
        decision, writes = self._terminate(
            state.pcs, desired=state.desired, groups=state.groups, podcliques=state.podcliques, writer=writer
        )
        # A breached gang waiting out terminationDelay brings the loop back when it is due, not at its next resync.
        state.requeue_after = min(decision.waiting.values(), default=None)
        if state.rollout.rolling:
            self._roll(state, decision)
        return writes

    def _roll(self, state: PassState, decision: Recycle) -> None:
        """Grove's ``orchestrateRollingUpdate``: wait for the replica under way, then pick the next or finish."""
        rollout, pcs = state.rollout, state.pcs
        progress = _replica_progress(state, recycled=decision.pcs_replicas)
        wait, following = next_replica(progress, current=rollout.updating, breached=decision.breached)
        if wait:
            return
        now = stamp(self.clock())
        namespace, name = pcs.metadata.namespace, pcs.metadata.name
        if following is None:
            log.info("rolling update complete pcs=%s/%s generation=%s", namespace, name, rollout.generation)
            rollout.complete(now)
        else:
            log.info("rolling update pcs=%s/%s replica=%d", namespace, name, following)
            rollout.select(following, now)

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
    ) -> tuple[Recycle, int]:
        """Returns the decision (which replicas are recycled, breached or waiting out terminationDelay) and the
        writes issued."""
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
        return decision, writes


def _replica_progress(state: PassState, *, recycled: tuple[int, ...]) -> list[ReplicaProgress]:
    """Each PCS replica as the rolling update sees it, from the PodCliques and scaling groups with this pass's
    status (Grove's ``computeUpdateProgress`` and ``getNumScheduledPods``); replicas being recycled are left out."""
    rollout, pcs = state.rollout, state.pcs
    standalone: dict[int, list[CliquePlan]] = {}
    for plan in state.desired.cliques().values():
        if plan.group is None:
            standalone.setdefault(plan.pcs_replica, []).append(plan)
    groups: dict[int, list[str]] = {}
    for group in state.desired.groups:
        groups.setdefault(group.pcs_replica, []).append(group.fqn)
    minimum = {
        c.name: c.spec.minAvailable if c.spec.minAvailable is not None else c.spec.replicas
        for c in pcs.spec.template.cliques
    }
    progress = []
    for replica in range(max(pcs.spec.replicas, 0)):
        if replica in recycled:
            continue
        plans = standalone.get(replica, [])
        cliques = [state.podcliques.get(plan.fqn) for plan in plans]
        scaling = [state.groups.get(name) for name in groups.get(replica, [])]
        hashes = [rollout.template_hashes[plan.template.name] for plan in plans]
        updated = all(
            c is not None and podclique_updated(c, template_hash=h, generation=rollout.generation)
            for h, c in zip(hashes, cliques, strict=True)
        ) and all(g is not None and group_updated(g, rollout.generation) for g in scaling)
        # A scaling group's scheduled replicas count as minAvailable pods of each of its cliques, as in Grove.
        scheduled = sum(_status_int(c, "scheduledReplicas") for c in cliques if c is not None) + sum(
            _status_int(g, "scheduledReplicas") * sum(minimum.get(n, 0) for n in g["spec"].get("cliqueNames", []))
            for g in scaling
            if g is not None
        )
        available = all(c is not None and clique_available(c) for c in cliques) and all(
            g is not None and group_available(g) for g in scaling
        )
        progress.append(ReplicaProgress(index=replica, updated=updated, scheduled_pods=scheduled, available=available))
    return progress
