"""HorizontalPodAutoscalers for ``autoScalingConfig`` and ``scaleConfig``, as Grove's PodCliqueSet controller keeps
them (``components/hpa``): the spec is ours, the status the HPA controller's. One goes when its config does."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import FieldPath, converge_fields, delete_orphans
from scheduler.reconcile.components.observed import controlled
from scheduler.reconcile.desired.autoscale import hpa_objects

__all__ = ["Autoscalers"]

_FIELDS: tuple[FieldPath, ...] = (("spec",),)


@dataclass(frozen=True)
class Autoscalers:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        pcs = state.pcs
        live = controlled(self.api, "HorizontalPodAutoscaler", pcs, {pcs.metadata.uid})
        wanted = hpa_objects(pcs, state.desired)
        return converge_fields(
            self.api,
            "HorizontalPodAutoscaler",
            namespace=pcs.metadata.namespace,
            live=live,
            wanted=wanted,
            fields=_FIELDS,
        )

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_orphans(self.api, "HorizontalPodAutoscaler", namespace=namespace, pcs=pcs)
