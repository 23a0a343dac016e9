"""Kubernetes objects for one generated gang: a PodGang and its pending pods, named and labelled as Grove names
them for replica 0 of a PodCliqueSet (``<pcs>-0`` gang, ``<pcs>-0-<clique>`` groups, ``<group>-<i>`` pods)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from api.core import GPU
from api.grove import (
    LABEL_PCS_REPLICA_INDEX,
    LABEL_POD_INDEX,
    LABEL_PODCLIQUE,
    LABEL_PODGANG,
    LABEL_SCHEDULER_NAME,
    SCHEDULER_API_VERSION,
)
from benchmarks.generate.shapes import GangShape, Role
from scheduler.snapshot import DURATION_ANNOTATION

KIND_ANNOTATION = "grove-extender/workload-kind"
_UUID_NS = uuid.UUID("0e7c9d1c-3b8a-4f6e-a2d4-5c9b1e7f3a20")


def _timestamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(*, shape: GangShape, role: Role, pcs: str, index: int, namespace: str, created: str) -> dict[str, Any]:
    group = f"{pcs}-0-{role.name}"
    name = f"{group}-{index}"
    if role.gpus:
        requests = {
            "cpu": str(role.gpus * shape.cpu_per_gpu),
            "memory": f"{role.gpus * shape.memory_gi_per_gpu}Gi",
            GPU: str(role.gpus),
        }
    else:
        requests = {"cpu": "4", "memory": "16Gi"}
    spec: dict[str, Any] = {
        "schedulerName": "grove",
        "containers": [{"name": role.name, "resources": {"requests": requests, "limits": dict(requests)}}],
    }
    if shape.node_selector:
        spec["nodeSelector"] = dict(shape.node_selector)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid5(_UUID_NS, f"{namespace}/{name}")),
            "creationTimestamp": created,
            "labels": {
                "app.kubernetes.io/part-of": pcs,
                LABEL_PODGANG: f"{pcs}-0",
                LABEL_PODCLIQUE: group,
                LABEL_PCS_REPLICA_INDEX: "0",
                LABEL_POD_INDEX: str(index),
            },
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def gang_objects(
    shape: GangShape, *, pcs: str, namespace: str, start: datetime, arrival_seconds: int, duration_seconds: int
) -> list[dict[str, Any]]:
    """The PodGang first, then its pods; every object is created at the gang's arrival."""
    created = _timestamp(start + timedelta(seconds=arrival_seconds))
    gang = f"{pcs}-0"
    pods: list[dict[str, Any]] = []
    podgroups: list[dict[str, Any]] = []
    for role in shape.roles:
        members = [
            _pod(shape=shape, role=role, pcs=pcs, index=i, namespace=namespace, created=created)
            for i in range(role.replicas)
        ]
        pods.extend(members)
        group: dict[str, Any] = {
            "name": f"{gang}-{role.name}",
            "podReferences": [{"namespace": namespace, "name": pod["metadata"]["name"]} for pod in members],
            "minReplicas": role.min_available,
        }
        if role.pack:
            group["topologyConstraint"] = role.pack.constraint()
        podgroups.append(group)
    spec: dict[str, Any] = {"podgroups": podgroups}
    if shape.priority_class:
        spec["priorityClassName"] = shape.priority_class
    if shape.pack:
        spec["topologyConstraint"] = shape.pack.constraint()
    if shape.configs:
        spec["topologyConstraintGroupConfigs"] = [
            {
                "name": config.name,
                "podGroupNames": [f"{gang}-{role}" for role in config.roles],
                "topologyConstraint": config.pack.constraint(),
            }
            for config in shape.configs
        ]
    podgang = {
        "apiVersion": SCHEDULER_API_VERSION,
        "kind": "PodGang",
        "metadata": {
            "name": gang,
            "namespace": namespace,
            "uid": str(uuid.uuid5(_UUID_NS, f"podgang/{namespace}/{gang}")),
            "creationTimestamp": created,
            "labels": {
                "app.kubernetes.io/managed-by": "grove-operator",
                "app.kubernetes.io/part-of": pcs,
                "app.kubernetes.io/component": "podgang",
                LABEL_SCHEDULER_NAME: "grove",
            },
            "annotations": {DURATION_ANNOTATION: str(duration_seconds), KIND_ANNOTATION: shape.kind},
        },
        "spec": spec,
    }
    return [podgang, *pods]
