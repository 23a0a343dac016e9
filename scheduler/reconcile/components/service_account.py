"""The ServiceAccount ``<pcs>``, our counterpart of Grove's ``components/serviceaccount``: pods with a startup
order that name no account of their own run as it, so that ``grove-initc`` has a token (``desired.startup`` says
why and how this differs from Grove). Synced before the pods: a pod naming an account that does not exist yet is
refused by the API server."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import FieldPath, converge_one, delete_orphans
from scheduler.reconcile.desired.startup import pod_service_account, startup_accounts

__all__ = ["ServiceAccounts"]

_FIELDS: tuple[FieldPath, ...] = (("automountServiceAccountToken",),)


@dataclass(frozen=True)
class ServiceAccounts:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        pcs = state.pcs
        if pcs.metadata.name not in startup_accounts(pcs, state.desired):
            return 0  # no startup order, or every pod with one names its own account
        return converge_one(self.api, "ServiceAccount", pcs, wanted=pod_service_account(pcs), fields=_FIELDS)

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_orphans(self.api, "ServiceAccount", namespace=namespace, pcs=pcs)
