"""MNNVL ComputeDomains (``desired.compute_domains``), Grove's ``mnnvl/computedomain`` component: registered only
when the MNNVL feature is on (``Features.mnnvl``), as Grove registers it only when ``autoMNNVLEnabled``.

Missing domains are created; a domain no longer wanted (a PodCliqueSet replica scaled in) has its finalizer taken
off and is deleted, as Grove's ``deleteCD`` does; one that exists is left to the NVIDIA DRA driver, which owns its
status. A deleted PodCliqueSet's domains are released and deleted the same way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import delete_scaled, release
from scheduler.reconcile.components.observed import controlled
from scheduler.reconcile.desired.compute_domains import compute_domain_objects

__all__ = ["ComputeDomains"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ComputeDomains:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        pcs = state.pcs
        namespace = pcs.metadata.namespace
        wanted = {obj["metadata"]["name"]: obj for obj in compute_domain_objects(pcs)}
        live = {obj["metadata"]["name"]: obj for obj in controlled(self.api, "ComputeDomain", pcs, {pcs.metadata.uid})}
        writes = 0
        for name in sorted(live.keys() - wanted.keys()):
            writes += release(self.api, "ComputeDomain", live[name])
            if not live[name]["metadata"].get("deletionTimestamp"):
                self.api.delete("ComputeDomain", namespace=namespace, name=name)
                writes += 1
            log.info("deleted computedomain=%s/%s", namespace, name)
        for name in sorted(wanted.keys() - live.keys()):
            self.api.create(wanted[name])
            log.info("created computedomain=%s/%s", namespace, name)
            writes += 1
        return writes

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_scaled(self.api, "ComputeDomain", namespace=namespace, pcs=pcs)
