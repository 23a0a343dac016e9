"""The objects that serve a PodCliqueSet's pods without being them: headless Services (DNS names), HPAs (scaling)
and, when some clique has a startup order, the ServiceAccount, Role and RoleBinding its ``grove-initc`` uses."""

from __future__ import annotations

from dataclasses import dataclass

from api.grove import PodCliqueSet
from scheduler.reconcile.client import KubeObject, OwnedKind, ReconcileApi
from scheduler.reconcile.components.converge import OwnedSync
from scheduler.reconcile.components.observed import OwnedObjects, controlled
from scheduler.reconcile.desired.autoscale import hpa_objects
from scheduler.reconcile.desired.services import service_object
from scheduler.reconcile.desired.startup import pod_role, pod_role_binding, pod_service_account, service_account_of
from scheduler.reconcile.desired.state import Desired

__all__ = ["SupportingObjects"]


@dataclass(frozen=True)
class SupportingObjects:
    api: ReconcileApi

    def sync(self, pcs: PodCliqueSet, *, desired: Desired, owned: OwnedObjects) -> int:
        """Returns the writes issued."""
        sync, namespace = OwnedSync(self.api), pcs.metadata.namespace
        services = [service_object(pcs, replica) for replica in range(max(pcs.spec.replicas, 0))]
        writes = sync.sync("Service", namespace=namespace, live=owned.services, wanted=services)
        writes += sync.sync(
            "HorizontalPodAutoscaler", namespace=namespace, live=owned.hpas, wanted=hpa_objects(pcs, desired)
        )
        accounts = {
            service_account_of(clique.template.spec.podSpec, pcs.metadata.name)
            for gang in desired.gangs
            for clique in gang.cliques
            if clique.parents
        }
        if not accounts:
            return writes  # startupsAfter is immutable: a PodCliqueSet without an order never needs them
        identity: list[tuple[OwnedKind, KubeObject]] = [
            ("Role", pod_role(pcs)),
            ("RoleBinding", pod_role_binding(pcs, accounts)),
        ]
        if pcs.metadata.name in accounts:
            identity.insert(0, ("ServiceAccount", pod_service_account(pcs)))
        root = {pcs.metadata.uid}
        for kind, obj in identity:
            live = [
                o for o in controlled(self.api, kind, pcs, root) if o["metadata"]["name"] == obj["metadata"]["name"]
            ]
            writes += sync.sync(kind, namespace=namespace, live=live, wanted=[obj])
        return writes
