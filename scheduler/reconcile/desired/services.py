"""The headless Service of each PodCliqueSet replica, as Grove's PodCliqueSet controller builds it
(``components/service/service.go``): it gives the replica's pods their ``<hostname>.<subdomain>`` DNS names."""

from __future__ import annotations

from api.grove import LABEL_PCS_REPLICA_INDEX, PodCliqueSet
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.cliques import controller_reference, pcs_owner
from scheduler.reconcile.desired.names import (
    COMPONENT_HEADLESS_SERVICE,
    LABEL_COMPONENT,
    LABEL_NAME,
    base_gang_name,
    grove_labels,
)

__all__ = ["service_object"]


def service_object(pcs: PodCliqueSet, replica: int) -> KubeObject:
    """The headless Service ``<pcs>-<r>`` that gives pods their ``<hostname>.<subdomain>`` DNS names."""
    config = pcs.spec.template.headlessServiceConfig or {}
    name = base_gang_name(pcs.metadata.name, replica)
    # Grove's service.go: the selector is managed-by + part-of + replica index; the labels add name and component.
    selector = grove_labels(pcs.metadata.name, **{LABEL_PCS_REPLICA_INDEX: str(replica)})
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": pcs.metadata.namespace,
            "labels": {**selector, LABEL_NAME: name, LABEL_COMPONENT: COMPONENT_HEADLESS_SERVICE},
            "ownerReferences": [controller_reference(pcs_owner(pcs))],
        },
        "spec": {
            "clusterIP": "None",
            "selector": selector,
            "publishNotReadyAddresses": bool(config.get("publishNotReadyAddresses", True)),
        },
    }
