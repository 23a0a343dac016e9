"""Nodes, Pods and PodGangs as a real API server serves them to a watch: managedFields, conditions, node images
and info included, because decoding what nobody reads is part of what the extender pays for.

Sizes follow a kubeadm cluster's objects: a GPU Node of ~6 KB of JSON, a Pod of ~4 KB.
"""

from __future__ import annotations

from typing import Any

GPU = "nvidia.com/gpu"
CLIQUE = "nvidia.com/gpu.clique"
STAMP = "2026-11-26T00:00:00Z"
NODES_PER_CLIQUE = 18  # one GB200 NVL72 rack: 18 trays


def _managed(manager: str, fields: dict[str, Any], subresource: str | None = None) -> dict[str, Any]:
    entry = {"manager": manager, "operation": "Update", "apiVersion": "v1", "time": STAMP, "fieldsType": "FieldsV1",
             "fieldsV1": fields}  # fmt: skip
    if subresource:
        entry["subresource"] = subresource
    return entry


def _condition(kind: str, status: str, reason: str, heartbeat: str = STAMP) -> dict[str, Any]:
    return {"type": kind, "status": status, "lastHeartbeatTime": heartbeat, "lastTransitionTime": STAMP,
            "reason": reason, "message": f"kubelet reports {kind} {status}"}  # fmt: skip


def node_conditions(heartbeat: str) -> list[dict[str, Any]]:
    """What a kubelet's status update rewrites: every condition's ``lastHeartbeatTime``."""
    return [
        _condition("MemoryPressure", "False", "KubeletHasSufficientMemory", heartbeat),
        _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", heartbeat),
        _condition("PIDPressure", "False", "KubeletHasSufficientPID", heartbeat),
        _condition("Ready", "True", "KubeletReady", heartbeat),
    ]


def node(index: int, *, gpus: int) -> dict[str, Any]:
    name = f"node-{index:05d}"
    allocatable = {"cpu": "96", "memory": "1000Gi", "pods": "110", "ephemeral-storage": "1800Gi", GPU: str(gpus)}
    images = [
        {
            "names": [f"nvcr.io/nvidia/image-{i}@sha256:{i:064x}", f"nvcr.io/nvidia/image-{i}:25.{i % 12:02d}"],
            "sizeBytes": 1_000_000_000 + i,
        }
        for i in range(12)
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-4000-8000-{index:012d}",
            "creationTimestamp": STAMP,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "gb200",
                "nvidia.com/gpu.product": "NVIDIA-GB200",
                "nvidia.com/gpu.count": str(gpus),
                CLIQUE: f"cluster-1.{index // NODES_PER_CLIQUE}",
                "network.topology.nvidia.com/leaf": f"leaf-{index // (4 * NODES_PER_CLIQUE)}",
                "topology.kubernetes.io/zone": "zone-a",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "managedFields": [
                _managed("kubelet", {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/hostname": {}}}}),
                _managed(
                    "kubelet",
                    {
                        "f:status": {
                            "f:conditions": {'k:{"type":"Ready"}': {"f:lastHeartbeatTime": {}}},
                            "f:images": {},
                            "f:nodeInfo": {},
                        }
                    },
                    "status",
                ),
                _managed("gpu-feature-discovery", {"f:metadata": {"f:labels": {f"f:{CLIQUE}": {}}}}),
            ],
        },
        "spec": {"podCIDR": f"10.{index // 256}.{index % 256}.0/24", "providerID": f"fake://{name}"},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": node_conditions(STAMP),
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{index // 256}.{index % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{index:032x}",
                "systemUUID": f"{index:032x}",
                "bootID": f"{index:032x}",
                "kernelVersion": "6.8.0-1015-nvidia",
                "osImage": "Ubuntu 24.04.1 LTS",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": "v1.36.2",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
        },
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    scheduler: str = "grove",
    gang: str | None = None,
    gpus: int = 1,
    cpu: str = "4",
    node_name: str = "",
    phase: str = "Pending",
) -> dict[str, Any]:
    labels = {"app.kubernetes.io/part-of": gang or "web", "app.kubernetes.io/managed-by": "grove-operator"}
    if gang:
        labels.update({"grove.io/podgang": gang, "grove.io/podclique": f"{gang}-worker"})
    requests = {"cpu": cpu, "memory": "32Gi"}
    limits: dict[str, str] = {}
    if gpus:
        requests[GPU] = limits[GPU] = str(gpus)
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "worker",
                "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                "command": ["torchrun"],
                "args": ["--nnodes=8", "train.py"],
                "env": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "GROVE_PCS_NAME", "value": gang or ""}],
                "resources": {"requests": requests, "limits": limits},
                "volumeMounts": [
                    {
                        "name": "kube-api-access",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "readOnly": True,
                    }
                ],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "volumes": [
            {
                "name": "kube-api-access",
                "projected": {
                    "defaultMode": 420,
                    "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}],
                },
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "securityContext": {},
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": STAMP,
            "labels": labels,
            "managedFields": [
                _managed(
                    "grove-operator",
                    {
                        "f:metadata": {"f:labels": {".": {}, "f:grove.io/podgang": {}}},
                        "f:spec": {"f:containers": {'k:{"name":"worker"}': {".": {}}}},
                    },
                ),
            ],
        },
        "spec": spec,
        "status": {"phase": phase, "qosClass": "Burstable"},
    }


def running_status(node_name: str, index: int) -> dict[str, Any]:
    """What a kubelet writes once the pod's container started."""
    kinds = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    conditions = [{"type": k, "status": "True", "lastProbeTime": None, "lastTransitionTime": STAMP} for k in kinds]
    return {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": f"10.0.0.{index % 250}",
        "podIP": f"10.1.{index // 250 % 250}.{index % 250}",
        "startTime": STAMP,
        "qosClass": "Burstable",
        "containerStatuses": [
            {
                "name": "worker",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                "imageID": "sha256:0",
                "containerID": f"containerd://{index:064x}",
                "state": {"running": {"startedAt": STAMP}},
            }
        ],
    }


def podgang(name: str, pods: list[str], *, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": STAMP},
        "spec": {
            "podgroups": [
                {
                    "name": f"{name}-worker",
                    "minReplicas": len(pods),
                    "podReferences": [{"namespace": namespace, "name": p} for p in pods],
                }
            ],
            "topologyConstraint": {"packConstraint": {"required": CLIQUE}},
        },
        "status": {"phase": "Pending"},
    }


def gang_workload(*, gangs: int, pods_per_gang: int, gpus_per_pod: int) -> list[tuple[str, dict[str, Any]]]:
    """(kind, object) of ``gangs`` pending PodGangs and their pods, gang by gang."""
    out: list[tuple[str, dict[str, Any]]] = []
    for g in range(gangs):
        gang = f"gang-{g:05d}"
        names = [f"{gang}-w{k}" for k in range(pods_per_gang)]
        out.append(("PodGang", podgang(gang, names)))
        out.extend(("Pod", pod(n, gang=gang, gpus=gpus_per_pod)) for n in names)
    return out
