"""Raw API-server JSON for Nodes, Pods and PodGangs, as the fake API server stores and serves them."""

from __future__ import annotations

from typing import Any


def node(name: str, *, gpus: int = 8, labels: dict[str, str] | None = None) -> dict[str, Any]:
    allocatable = {"cpu": "96", "memory": "1000Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    node_name: str = "",
    phase: str = "Pending",
    gang: str | None = None,
    gpus: int = 4,
) -> dict[str, Any]:
    labels = {"grove.io/podgang": gang} if gang else {}
    container = {
        "name": "main",
        "image": "nvcr.io/nvidia/pytorch:24.01",
        "env": [{"name": "HF_TOKEN", "value": "hf_secret_value"}, {"name": "MODE", "value": "train"}],
        "resources": {"requests": {"cpu": "8", "nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}},
    }
    spec: dict[str, Any] = {"schedulerName": "grove", "containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
        "status": {"phase": phase},
    }


def podgang(
    name: str, *, namespace: str = "default", pods: list[str], min_replicas: int | None = None
) -> dict[str, Any]:
    group = {
        "name": f"{name}-worker",
        "podReferences": [{"namespace": namespace, "name": p} for p in pods],
        "minReplicas": len(pods) if min_replicas is None else min_replicas,
    }
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"podgroups": [group], "topologyConstraint": {"packConstraint": {"required": "nvidia.com/gpu.clique"}}},
    }


def gang_cluster(*, nodes: int, pods: int, gang: str = "g") -> list[tuple[str, dict[str, Any]]]:
    """``nodes`` GPU nodes ``gpu-<i>`` and one pending gang of ``pods`` pods ``w-<i>``, as fake-server seed."""
    seed = [("v1/nodes", node(f"gpu-{i}")) for i in range(nodes)]
    seed += [("v1/pods", pod(f"w-{i}", gang=gang)) for i in range(pods)]
    seed.append(("scheduler.grove.io/v1alpha1/podgangs", podgang(gang, pods=[f"w-{i}" for i in range(pods)])))
    return seed
