"""A stand-in for the NVIDIA DRA driver's ComputeDomain CRD (``computedomains.resource.nvidia.com``, v1beta1), served
only when a scenario asks: what ``grove-extender reconcile --mnnvl`` needs served before it starts (Grove's MNNVL
preflight), and the kind the shipped ``deploy/overlays/mnnvl/reconciler-rbac-mnnvl.yaml`` grants. Only its names: no
schema (a domain's spec is kept as written) and no driver behind it, so no domain becomes ready and no
ResourceClaimTemplate is made for the enrolled pods to claim.
"""

from __future__ import annotations

from typing import Any

import yaml

from benchmarks.controlplane.kubectl import Kubectl

__all__ = ["COMPUTE_DOMAINS", "serve_compute_domains"]

COMPUTE_DOMAINS = "computedomains.resource.nvidia.com"


def _crd() -> dict[str, Any]:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": COMPUTE_DOMAINS},
        "spec": {
            "group": "resource.nvidia.com",
            "scope": "Namespaced",
            "names": {"kind": "ComputeDomain", "listKind": "ComputeDomainList", "plural": "computedomains",
                      "singular": "computedomain"},
            "versions": [{"name": "v1beta1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
                          "subresources": {"status": {}}}],
        },
    }  # fmt: skip


def serve_compute_domains(kubectl: Kubectl) -> None:
    """Apply the CRD (again, if it is there) and wait until the API server serves it."""
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(_crd()))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{COMPUTE_DOMAINS}")
