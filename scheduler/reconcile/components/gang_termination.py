"""Gang termination (reference §7; Grove's ``gangterminate.go`` and ``processMinAvailableBreachedPCSGReplicas``).

A gang that was healthy and then lost members below ``minAvailable`` cannot do useful work, yet it holds GPUs.
After ``terminationDelay`` it is recycled whole, so the gang scheduler can place it again all-or-nothing:
- a PodCliqueSet replica whose standalone PodCliques or scaling groups are ``MinAvailableBreached`` for at least
  ``terminationDelay`` loses all its PodCliques (their pods go with them) and is recreated by the next pass;
- otherwise, a scaling-group replica whose PodCliques are breached that long is recycled alone, as long as the
  group keeps ``minAvailable`` replicas that are not breached (else the group itself is breached: the first rule).
Only regressions count: a PodClique that was never ``PodCliqueScheduled`` (or a group never free of a breach) is
left alone — recycling pods a full cluster cannot schedule would only churn. Pure: the caller deletes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from api.grove import LABEL_PCS_REPLICA_INDEX, LABEL_PCSG, LABEL_PCSG_REPLICA_INDEX
from scheduler.reconcile.status.cliques import BREACHED, IN_PROGRESS, SCHEDULED
from scheduler.reconcile.status.conditions import condition_of
from scheduler.reconcile.status.updates import updating

__all__ = ["Recycle", "recycle"]

_GRACE = timedelta(seconds=5)  # Grove's InitialScheduleGrace: a flip this soon after creation is the first setting


@dataclass(frozen=True)
class Recycle:
    """What to delete: whole PCS replicas (every PodClique of them) and single scaling-group replicas."""

    pcs_replicas: tuple[int, ...] = ()
    group_replicas: tuple[tuple[str, int], ...] = ()  # (PodCliqueScalingGroup FQN, group replica index)
    waiting: dict[str, float] = field(default_factory=dict)  # breached object → seconds until it is recycled
    breached: tuple[int, ...] = ()  # PCS replicas with a standalone PodClique or group breached, not yet recycled

    def podcliques(self, cliques: Iterable[Mapping[str, Any]]) -> list[str]:
        """The PodCliques to delete among ``cliques``."""
        names = []
        for clique in cliques:
            labels = clique["metadata"].get("labels") or {}
            pcs_replica = int(labels.get(LABEL_PCS_REPLICA_INDEX, -1))
            group = (labels.get(LABEL_PCSG, ""), int(labels.get(LABEL_PCSG_REPLICA_INDEX, -1)))
            if pcs_replica in self.pcs_replicas or group in self.group_replicas:
                names.append(clique["metadata"]["name"])
        return sorted(names)


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _ever(obj: Mapping[str, Any], type_: str, healthy: str) -> bool:
    """Grove's ``WasPCLQEverScheduled`` / ``WasPCSGEverHealthy``."""
    found = condition_of(obj, type_)
    if found is None:
        return False
    if found.get("status") == healthy:
        return True
    changed, created = _time(found.get("lastTransitionTime")), _time(obj["metadata"].get("creationTimestamp"))
    return changed is not None and created is not None and changed > created + _GRACE


def _breached_for(obj: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds the object has been breached, or None when it is not (or never was healthy)."""
    found = condition_of(obj, BREACHED)
    if found is None or found.get("status") != "True":
        return None
    healthy = _ever(obj, BREACHED, "False") if obj["kind"] == "PodCliqueScalingGroup" else _ever(obj, SCHEDULED, "True")
    since = _time(found.get("lastTransitionTime"))
    if not healthy or since is None:
        return None
    return (now - since).total_seconds()


def recycle(
    *,
    pcs_replicas: int,
    delay_seconds: float,
    standalone: Mapping[int, Sequence[Mapping[str, Any]]],
    groups: Mapping[int, Sequence[Mapping[str, Any]]],
    group_cliques: Mapping[str, Sequence[Mapping[str, Any]]],
    now: datetime,
    skip: frozenset[int] | set[int] = frozenset(),
) -> Recycle:
    """``standalone``/``groups``: PodCliques not in a group and scaling groups by PCS replica (with fresh status);
    ``group_cliques``: each group's PodCliques; ``skip``: PCS replicas not to judge (a standalone PodClique of
    them does not exist yet)."""
    whole: list[int] = []
    single: list[tuple[str, int]] = []
    waiting: dict[str, float] = {}
    breached_replicas: list[int] = []
    for replica in range(pcs_replicas):
        if replica in skip:
            continue
        breached = [
            (obj["metadata"]["name"], seconds)
            for obj in [*standalone.get(replica, []), *[g for g in groups.get(replica, []) if not _in_progress(g)]]
            if (seconds := _breached_for(obj, now)) is not None
        ]
        if any(seconds >= delay_seconds for _, seconds in breached):
            whole.append(replica)
            continue
        waiting.update({name: delay_seconds - seconds for name, seconds in breached})
        if breached:
            breached_replicas.append(replica)
        for group in groups.get(replica, []):
            if updating((group.get("status") or {}).get("updateProgress")):
                continue  # as Grove: a group being updated is not recycled replica by replica meanwhile
            name, spec = group["metadata"]["name"], group["spec"]
            by_index: dict[int, list[float]] = {}
            for clique in group_cliques.get(name, []):
                index = int((clique["metadata"].get("labels") or {}).get(LABEL_PCSG_REPLICA_INDEX, -1))
                if (seconds := _breached_for(clique, now)) is not None:
                    by_index.setdefault(index, []).append(seconds)
            due = sorted(index for index, times in by_index.items() if max(times) >= delay_seconds)
            if int(spec.get("replicas") or 0) - len(by_index) < int(spec.get("minAvailable") or 1):
                continue  # the group itself is breached: that is the whole replica's rule above
            single += [(name, index) for index in due]
            waiting.update({f"{name}-{i}": delay_seconds - max(t) for i, t in by_index.items() if i not in due})
    return Recycle(
        pcs_replicas=tuple(whole), group_replicas=tuple(single), waiting=waiting, breached=tuple(breached_replicas)
    )


def _in_progress(group: Mapping[str, Any]) -> bool:
    found = condition_of(group, IN_PROGRESS)
    return found is not None and found.get("status") == "True"
