"""A Kubernetes Node as a snapshot carries it: labels, allocatable, capacity."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.core import GPU

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
CLIQUE = "nvidia.com/gpu.clique"
PRODUCT = "nvidia.com/gpu.product"
# Topograph v0.3–v0.5 keys (../shared/reference/topology-labels.md).
ACCELERATOR = "network.topology.nvidia.com/accelerator"
LEAF = "network.topology.nvidia.com/leaf"
SPINE = "network.topology.nvidia.com/spine"
CORE = "network.topology.nvidia.com/core"


def make_node(*, name: str, labels: Mapping[str, str], cpu: int, memory_gi: int, gpus: int) -> dict[str, Any]:
    allocatable = {"cpu": str(cpu), "memory": f"{memory_gi}Gi", "pods": "110", GPU: str(gpus)}
    all_labels = {HOSTNAME: name, **labels, "nvidia.com/gpu.count": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }
