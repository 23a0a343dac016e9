"""The Role ``grove.io:pcs:<pcs>`` that lets ``grove-initc`` read pods (get, list, watch pods and pods/status),
Grove's ``components/role``: every PodCliqueSet has one."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import FieldPath, converge_one, delete_orphans
from scheduler.reconcile.desired.startup import pod_role

__all__ = ["Roles"]

_FIELDS: tuple[FieldPath, ...] = (("rules",),)


@dataclass(frozen=True)
class Roles:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        return converge_one(self.api, "Role", state.pcs, wanted=pod_role(state.pcs), fields=_FIELDS)

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_orphans(self.api, "Role", namespace=namespace, pcs=pcs)
