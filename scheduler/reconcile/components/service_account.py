"""The ServiceAccount ``<pcs>`` whose token the startup-order init container reads pods with, Grove's
``components/serviceaccount``: every PodCliqueSet has one (``desired.startup`` says how it is used)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import FieldPath, converge_one, delete_orphans
from scheduler.reconcile.desired.startup import pod_service_account

__all__ = ["ServiceAccounts"]

_FIELDS: tuple[FieldPath, ...] = (("automountServiceAccountToken",),)


@dataclass(frozen=True)
class ServiceAccounts:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        return converge_one(
            self.api, "ServiceAccount", state.pcs, wanted=pod_service_account(state.pcs), fields=_FIELDS
        )

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_orphans(self.api, "ServiceAccount", namespace=namespace, pcs=pcs)
