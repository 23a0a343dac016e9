"""The RoleBinding ``grove.io:pcs:<pcs>`` that grants the pod-reading Role to the ServiceAccount ``<pcs>``,
Grove's ``components/rolebinding``: every PodCliqueSet has one, and it binds that one account only (a pod's own
account, ``default`` included, is granted nothing)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import FieldPath, converge_one, delete_orphans
from scheduler.reconcile.desired.startup import pod_role_binding

__all__ = ["RoleBindings"]

_FIELDS: tuple[FieldPath, ...] = (("subjects",),)  # roleRef is immutable


@dataclass(frozen=True)
class RoleBindings:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        return converge_one(self.api, "RoleBinding", state.pcs, wanted=pod_role_binding(state.pcs), fields=_FIELDS)

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_orphans(self.api, "RoleBinding", namespace=namespace, pcs=pcs)
