"""The RoleBinding ``grove.io:pcs:<pcs>`` that grants the pod-reading Role to every account a ``grove-initc``
runs as (the PodCliqueSet's own, and any a pod names), our counterpart of Grove's ``components/rolebinding``. Only
a PodCliqueSet with a startup order has one."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import FieldPath, converge_one, delete_orphans
from scheduler.reconcile.desired.startup import pod_role_binding, startup_accounts

__all__ = ["RoleBindings"]

_FIELDS: tuple[FieldPath, ...] = (("subjects",),)


@dataclass(frozen=True)
class RoleBindings:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        pcs = state.pcs
        if not (accounts := startup_accounts(pcs, state.desired)):
            return 0
        return converge_one(self.api, "RoleBinding", pcs, wanted=pod_role_binding(pcs, accounts), fields=_FIELDS)

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_orphans(self.api, "RoleBinding", namespace=namespace, pcs=pcs)
