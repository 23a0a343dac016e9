"""Keeping a PodCliqueSet's PodCliqueScalingGroups and PodCliques as Grove's controllers keep them.

Created from the template; afterwards the template still decides everything but ``spec.replicas``, which belongs
to whoever scales the object (``kubectl scale``, an HPA): an update writes the template's labels, annotations and
spec over the live object with the live ``replicas`` kept, conditional on its ``resourceVersion``, so a scale that
lands in between is a ``Conflict`` retried next pass, never overwritten. Objects no longer wanted (a PodCliqueSet
or scaling group scaled in) are deleted; their pods go with them (owner references).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from api.grove import PodCliqueSet
from scheduler.reconcile.client import KubeObject, OwnedKind, ReconcileApi
from scheduler.reconcile.desired.cliques import pcs_owner, pcsg_object, podclique_object
from scheduler.reconcile.desired.gangs import normalised_spec
from scheduler.reconcile.desired.state import Desired
from scheduler.reconcile.desired.template_hash import template_hashes

__all__ = ["CliqueSync"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CliqueSync:
    api: ReconcileApi

    def sync(
        self,
        pcs: PodCliqueSet,
        *,
        desired: Desired,
        live_groups: Mapping[str, KubeObject],
        live_cliques: Mapping[str, KubeObject],
    ) -> tuple[dict[str, KubeObject], dict[str, KubeObject], int]:
        """Groups first (their PodCliques need the group's uid as owner), then PodCliques. Returns the live groups
        and PodCliques by name after the pass, and the writes issued."""
        writes = 0
        owner = pcs_owner(pcs)
        wanted_groups = {group.fqn: pcsg_object(pcs=pcs, group=group, owner=owner) for group in desired.groups}
        groups, written = self._converge("PodCliqueScalingGroup", pcs, live_groups, wanted_groups)
        writes += written
        wanted_cliques: dict[str, KubeObject] = {}
        hashes = template_hashes(pcs)
        for gang in desired.gangs:
            for clique in gang.cliques:
                parent = groups.get(clique.group.fqn) if clique.group is not None else owner
                if parent is not None:
                    wanted_cliques[clique.fqn] = podclique_object(
                        pcs=pcs, clique=clique, owner=parent, template_hash=hashes[clique.template.name]
                    )
        cliques, written = self._converge("PodClique", pcs, live_cliques, wanted_cliques)
        return groups, cliques, writes + written

    def _converge(
        self,
        kind: OwnedKind,
        pcs: PodCliqueSet,
        live: Mapping[str, KubeObject],
        wanted: Mapping[str, KubeObject],
    ) -> tuple[dict[str, KubeObject], int]:
        writes = 0
        namespace = pcs.metadata.namespace
        for name in sorted(live.keys() - wanted.keys()):
            self.api.delete(kind, namespace=namespace, name=name)
            log.info("deleted kind=%s object=%s/%s", kind, namespace, name)
            writes += 1
        result: dict[str, KubeObject] = {}
        for name, obj in wanted.items():
            current = live.get(name)
            if current is None:
                result[name] = self.api.create(obj)
                log.info("created kind=%s object=%s/%s replicas=%s", kind, namespace, name, obj["spec"]["replicas"])
                writes += 1
                continue
            if _differs(current, obj):
                updated = copy.deepcopy(current)
                updated["metadata"]["labels"] = obj["metadata"]["labels"]
                updated["metadata"]["annotations"] = obj["metadata"].get("annotations", {})
                updated["spec"] = {**obj["spec"], "replicas": current["spec"].get("replicas")}
                current = self.api.replace(updated)
                writes += 1
            result[name] = current
        return result, writes


def _differs(live: KubeObject, wanted: KubeObject) -> bool:
    """Anything but ``spec.replicas`` differs (that one is the scaler's, not the template's)."""
    live_meta, wanted_meta = live["metadata"], wanted["metadata"]
    live_spec = {k: v for k, v in (live.get("spec") or {}).items() if k != "replicas"}
    wanted_spec = {k: v for k, v in wanted["spec"].items() if k != "replicas"}
    return bool(
        normalised_spec(live_spec) != normalised_spec(wanted_spec)
        or (live_meta.get("labels") or {}) != wanted_meta["labels"]
        or (live_meta.get("annotations") or {}) != wanted_meta.get("annotations", {})
    )
