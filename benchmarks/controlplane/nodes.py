"""Fake GPU nodes with the topology labels real clusters carry, made Ready as a kubelet would make them.

No kubelet registers them: the harness creates each Node, writes its status (capacity, allocatable, ``Ready``),
then sets its taints, because admission gives every new Node ``node.kubernetes.io/not-ready`` and only the node
lifecycle controller (absent here) would lift it.

Shape (GB200 NVL72-like, as the benchmarks' generated clusters): 4 GPUs a node, 18 nodes to an NVLink domain
(``nvidia.com/gpu.clique``, GPU Feature Discovery's ``<cluster UUID>.<clique>``), 4 domains to a block
(``network.topology.nvidia.com/block``), blocks spread over two zones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.controlplane.rest import Api

__all__ = ["CLIQUE", "GPU", "NodeSpec", "create_nodes", "gpu_nodes"]

GPU = "nvidia.com/gpu"
CLIQUE = "nvidia.com/gpu.clique"
BLOCK = "network.topology.nvidia.com/block"
ZONE = "topology.kubernetes.io/zone"
NODES_PER_CLIQUE = 18
CLIQUES_PER_BLOCK = 4
CLUSTER_UUID = "7c2a1f00-0e2e-4d0c-9a11-5e2e5e2e5e2e"


@dataclass(frozen=True)
class NodeSpec:
    name: str
    labels: dict[str, str]
    gpus: int = 4
    cpu: str = "96"
    memory: str = "1000Gi"
    pods: int = 110
    taints: tuple[dict[str, str], ...] = field(default_factory=tuple)

    def capacity(self) -> dict[str, str]:
        found = {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods), "ephemeral-storage": "1800Gi"}
        if self.gpus:
            found[GPU] = str(self.gpus)
        return found


def gpu_nodes(count: int, *, prefix: str = "gpu", gpus: int = 4, start: int = 0) -> list[NodeSpec]:
    """``count`` nodes named ``<prefix>-0000``…, in NVLink domains of 18, blocks of 4 domains, two zones."""
    blocks = max(1, -(-count // (NODES_PER_CLIQUE * CLIQUES_PER_BLOCK)))
    specs = []
    for index in range(start, start + count):
        name = f"{prefix}-{index:04d}"
        clique = index // NODES_PER_CLIQUE
        block = clique // CLIQUES_PER_BLOCK
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "nvidia.com/gpu.product": "NVIDIA-GB200",
            "nvidia.com/gpu.count": str(gpus),
            CLIQUE: f"{CLUSTER_UUID}.{clique}",
            BLOCK: f"block-{block:02d}",
            ZONE: "zone-a" if block < (blocks + 1) // 2 else "zone-b",
        }
        specs.append(NodeSpec(name=name, labels=labels, gpus=gpus))
    return specs


def _ready_status(spec: NodeSpec) -> dict[str, Any]:
    def condition(kind: str, status: str, reason: str) -> dict[str, str]:
        return {"type": kind, "status": status, "reason": reason, "message": f"e2e node reports {kind} {status}"}

    return {
        "status": {
            "capacity": spec.capacity(),
            "allocatable": spec.capacity(),
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID"),
                condition("Ready", "True", "KubeletReady"),
            ],
            "nodeInfo": {"kubeletVersion": "v1.36.2", "operatingSystem": "linux", "architecture": "amd64"},
        }
    }


def create_nodes(api: Api, specs: Sequence[NodeSpec]) -> None:
    """Create every node Ready, with exactly its own taints (none unless given)."""

    async def one(spec: NodeSpec) -> None:
        await api.acall("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                   "metadata": {"name": spec.name, "labels": spec.labels}})  # fmt: skip
        path = f"/api/v1/nodes/{spec.name}"
        await api.acall("PATCH", f"{path}/status", _ready_status(spec), content_type="application/merge-patch+json")
        taints = [dict(t) for t in spec.taints] or None
        await api.acall("PATCH", path, {"spec": {"taints": taints}}, content_type="application/merge-patch+json")

    api.many([lambda spec=spec: one(spec) for spec in specs])  # type: ignore[misc]
