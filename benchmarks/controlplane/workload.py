"""Gangs created straight through the API, as the Grove operator creates them once a PodGang's pods are listed in
it: the PodGang, then its pods (labelled ``grove.io/podgang``, their gate already lifted), many at a time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.controlplane.nodes import GPU
from benchmarks.controlplane.rest import Api

__all__ = ["Gang", "create_gangs", "pod_manifest", "podgang_manifest"]


@dataclass(frozen=True)
class Gang:
    name: str
    size: int
    gpus: int = 1  # per pod
    cpu: str = "1"
    required: str | None = None  # the gang's required pack: a node-label key
    scheduler: str = "grove"
    priority_class: str | None = None
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[tuple[str, str], ...] = ()  # (key, value) tolerated with effect NoSchedule
    member: bool = True  # False: pods of no PodGang (no grove.io/podgang label), e.g. a pod of another scheduler
    # False: the class on the PodGang only, as Grove puts a PodCliqueSet's priorityClassName (its pods carry none)
    class_on_pods: bool = True

    def pod_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.size)]


def pod_manifest(gang: Gang, name: str, namespace: str) -> dict[str, Any]:
    requests = {"cpu": gang.cpu, "memory": "4Gi"}
    limits = {}
    if gang.gpus:
        requests[GPU] = limits[GPU] = str(gang.gpus)
    spec: dict[str, Any] = {
        "schedulerName": gang.scheduler,
        "containers": [{"name": "worker", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                        "resources": {"requests": requests, "limits": limits}}],
        "terminationGracePeriodSeconds": 30,
    }  # fmt: skip
    if gang.priority_class and gang.class_on_pods:
        spec["priorityClassName"] = gang.priority_class
    if gang.node_selector:
        spec["nodeSelector"] = dict(gang.node_selector)
    if gang.tolerations:
        spec["tolerations"] = [
            {"key": key, "operator": "Equal", "value": value, "effect": "NoSchedule"} for key, value in gang.tolerations
        ]
    labels = {"grove.io/podgang": gang.name, "grove.io/podclique": f"{gang.name}-worker"} if gang.member else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec}  # fmt: skip


def podgang_manifest(gang: Gang, namespace: str, *, min_replicas: int | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {
        "name": f"{gang.name}-worker",
        "minReplicas": gang.size if min_replicas is None else min_replicas,
        "podReferences": [{"namespace": namespace, "name": n} for n in gang.pod_names()],
    }
    spec: dict[str, Any] = {"podgroups": [group]}
    if gang.required:
        spec["topologyConstraint"] = {"packConstraint": {"required": gang.required}}
    if gang.priority_class:
        spec["priorityClassName"] = gang.priority_class
    return {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang",
            "metadata": {"name": gang.name, "namespace": namespace}, "spec": spec}  # fmt: skip


def create_gangs(
    api: Api, namespace: str, gangs: list[Gang], *, min_replicas: int | None = None, podgangs: bool = True
) -> None:
    """Every PodGang first (of gangs whose pods are ``member``; none with ``podgangs=False``, for pods created again
    for gangs that exist), then every pod, concurrently."""
    gang_path = f"/apis/scheduler.grove.io/v1alpha1/namespaces/{namespace}/podgangs"
    pod_path = f"/api/v1/namespaces/{namespace}/pods"

    def post(path: str, body: dict[str, Any]) -> Any:
        return lambda: api.acall("POST", path, body)

    if podgangs:
        api.many(
            [post(gang_path, podgang_manifest(g, namespace, min_replicas=min_replicas)) for g in gangs if g.member]
        )
    api.many([post(pod_path, pod_manifest(g, n, namespace)) for g in gangs for n in g.pod_names()])
