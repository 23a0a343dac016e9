"""Headless Services, one per PodCliqueSet replica, as Grove's PodCliqueSet controller keeps them
(``components/service``): they give the replica's pods their DNS names. The selector and
``publishNotReadyAddresses`` are ours to keep; the API server's fields (``clusterIP``) are left alone."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import FieldPath, converge_fields, delete_orphans
from scheduler.reconcile.components.observed import controlled
from scheduler.reconcile.desired.services import service_object

__all__ = ["HeadlessServices"]

_FIELDS: tuple[FieldPath, ...] = (("spec", "selector"), ("spec", "publishNotReadyAddresses"))


@dataclass(frozen=True)
class HeadlessServices:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        pcs = state.pcs
        live = controlled(self.api, "Service", pcs, {pcs.metadata.uid})
        wanted = [service_object(pcs, replica) for replica in range(max(pcs.spec.replicas, 0))]
        return converge_fields(
            self.api, "Service", namespace=pcs.metadata.namespace, live=live, wanted=wanted, fields=_FIELDS
        )

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_orphans(self.api, "Service", namespace=namespace, pcs=pcs)
