"""Pods for a PodClique, built from the PodClique object as Grove's PodClique controller builds them (reference §2).

``api.core.Pod`` models only what the scheduler reads, so the pods we *create* are dicts: every field of the user's
``podSpec`` must survive. The name is ``<pclqFQN>-<5 random chars>`` (Kubernetes' ``generateName`` alphabet);
the caller supplies the random source, so tests are deterministic.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

from api.grove import GANG_GATE, LABEL_PCS_REPLICA_INDEX, LABEL_POD_INDEX, LABEL_PODCLIQUE, LABEL_PODGANG
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.claims import add_claim_references
from scheduler.reconcile.desired.cliques import controller_reference, label_ref, prepend_env
from scheduler.reconcile.desired.names import base_gang_name
from scheduler.reconcile.desired.startup import add_init_container
from scheduler.reconcile.desired.state import CliquePlan

__all__ = ["pod_name", "pod_object"]

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' utilrand: no vowels, no look-alikes


def pod_name(clique_fqn: str, rng: random.Random) -> str:
    return f"{clique_fqn}-{''.join(rng.choice(_SUFFIX_ALPHABET) for _ in range(5))}"


def _grove_env(*, pcs: str, namespace: str, clique: CliquePlan) -> list[KubeObject]:
    service = base_gang_name(pcs, clique.pcs_replica)
    return [
        {"name": "GROVE_PCS_NAME", "value": pcs},
        {"name": "GROVE_PCS_INDEX", "value": str(clique.pcs_replica)},
        {"name": "GROVE_PCLQ_NAME", "value": clique.fqn},
        {"name": "GROVE_HEADLESS_SERVICE", "value": f"{service}.{namespace}.svc.cluster.local"},
        label_ref("GROVE_PCLQ_POD_INDEX", LABEL_POD_INDEX),
    ]


def pod_object(
    *,
    podclique: Mapping[str, Any],
    clique: CliquePlan,
    index: int,
    name: str,
    scheduler_name: str,
    initc_image: str,
    claims: Sequence[str] = (),
) -> KubeObject:
    """The pod Grove's PodClique controller would create for pod index ``index`` of ``podclique``, gated;
    ``claims``: the shared ResourceClaims it references (``claims.pod_claim_names``)."""
    meta = podclique["metadata"]
    pcs, namespace = meta["labels"]["app.kubernetes.io/part-of"], meta["namespace"]
    labels = dict(meta["labels"])
    labels.update(
        {
            LABEL_PODCLIQUE: clique.fqn,
            LABEL_PCS_REPLICA_INDEX: str(clique.pcs_replica),
            LABEL_PODGANG: clique.gang,
            LABEL_POD_INDEX: str(index),
        }
    )
    spec: KubeObject = json.loads(json.dumps(podclique["spec"]["podSpec"]))  # a private copy, faster than deepcopy
    spec["schedulingGates"] = [{"name": GANG_GATE}]
    spec["schedulerName"] = scheduler_name  # what Grove's backend PreparePod does, for this scheduler
    # Grove's order: env before the init container is added, so grove-initc gets no GROVE_* variables.
    prepend_env(spec, _grove_env(pcs=pcs, namespace=namespace, clique=clique))
    spec["hostname"] = f"{clique.fqn}-{index}"
    spec["subdomain"] = base_gang_name(pcs, clique.pcs_replica)
    add_claim_references(spec, claims)  # before grove-initc, which uses none of them (Grove's order)
    if clique.parents:
        add_init_container(spec, pcs=pcs, parents=clique.parents, image=initc_image)
    metadata: KubeObject = {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "ownerReferences": [controller_reference(podclique)],
    }
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
