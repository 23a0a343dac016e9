"""``bench_e2e --real --mix``: a queue shaped like users' rather than 375 uniform gangs on an empty cluster.

The uniform benchmark is the one case where every plan meets its lower bound and no CP-SAT model is built. Here:

- **the cluster is already ``used_share`` used** (60 % of its GPUs) by pods of another scheduler, bound before the
  run in their own namespace (``USED``) and kept through both phases: mostly whole nodes (a 4-GPU pod), some nodes
  partly (1- and 2-GPU pods), so NVLink domains are left with uneven room;
- **the queue** holds gangs of 1 to 64 pods until their guaranteed GPUs reach ``queue_share`` of what is free:
  training (one group; a required or preferred NVLink domain, or a required block preferring one domain when it is
  large), leader + workers (two groups) and disaggregated serving (router, prefill with best-effort extras, a decode
  leader and workers that must share one NVLink domain; the gang prefers one block). Gang shapes come from
  ``benchmarks.generate.shapes``, as the shipped snapshots'.

Every draw comes from ``seed``, so two runs (and both phases of one) see the same cluster and queue. A gang that no
domain can hold stays unbound through the extender (it is all or nothing) while kube-scheduler alone binds its pods
anywhere: the report counts gangs bound whole in each phase beside the pods per second.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from benchmarks.controlplane.nodes import BLOCK, CLIQUE, GPU, NodeSpec
from benchmarks.controlplane.rest import Api
from benchmarks.generate.objects import gang_objects
from benchmarks.generate.shapes import GangShape, Pack, disaggregated, leader_workers, training
from benchmarks.generate.workload import weighted

__all__ = ["USED", "Mix", "mix_workload"]

USED = "bench-used"  # the other tenants' namespace
_START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Mix:
    """The used cluster's pods and the queue's PodGangs and pods, as the API takes them."""

    used: list[dict[str, Any]] = field(default_factory=list)
    podgangs: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)  # gangs by shape

    @property
    def size(self) -> int:
        return len(self.pods)

    def guaranteed(self) -> dict[str, list[tuple[set[str], int]]]:
        """Each gang's groups (their pods and ``minReplicas``), by PodGang name."""
        return {
            gang["metadata"]["name"]: [
                ({ref["name"] for ref in group["podReferences"]}, group["minReplicas"])
                for group in gang["spec"]["podgroups"]
            ]
            for gang in self.podgangs
        }

    def create_used(self, api: Api) -> None:
        api.many([_post(api, f"/api/v1/namespaces/{USED}/pods", pod) for pod in self.used])

    def create_queue(self, api: Api, namespace: str, *, scheduler: str, podgangs: bool = True) -> None:
        """The PodGangs (unless they exist already), then every pod, for ``scheduler``."""
        if podgangs:
            path = f"/apis/scheduler.grove.io/v1alpha1/namespaces/{namespace}/podgangs"
            api.many([_post(api, path, gang) for gang in self.podgangs])
        pods = []
        for pod in self.pods:
            mine = copy.deepcopy(pod)
            mine["spec"]["schedulerName"] = scheduler
            pods.append(mine)
        api.many([_post(api, f"/api/v1/namespaces/{namespace}/pods", pod) for pod in pods])


def _post(api: Api, path: str, body: dict[str, Any]) -> Any:
    return lambda: api.acall("POST", path, body)


def mix_workload(
    nodes: Sequence[NodeSpec], *, seed: int, namespace: str, used_share: float = 0.6, queue_share: float = 0.8
) -> Mix:
    rng = random.Random(seed)
    mix = Mix(used=_used_pods(rng, nodes, used_share))
    total = sum(spec.gpus for spec in nodes)
    free = total - sum(int(p["spec"]["containers"][0]["resources"]["requests"][GPU]) for p in mix.used)
    queued = 0
    while queued < queue_share * free:
        shape = _shape(rng)
        objects = gang_objects(
            shape, pcs=f"mix-{len(mix.podgangs):04d}", namespace=namespace, start=_START, arrival_seconds=0,
            duration_seconds=3600,
        )  # fmt: skip
        gang, *pods = (_as_created(obj) for obj in objects)
        mix.podgangs.append(gang)
        mix.pods.extend(pods)
        mix.kinds[shape.kind] = mix.kinds.get(shape.kind, 0) + 1
        queued += shape.guaranteed_gpus
    return mix


def _as_created(obj: dict[str, Any]) -> dict[str, Any]:
    """What a client sends: the API server sets uid, creation time and status itself."""
    found = copy.deepcopy(obj)
    for key in ("uid", "creationTimestamp"):
        found["metadata"].pop(key, None)
    found.pop("status", None)
    for container in found.get("spec", {}).get("containers", []):
        container.setdefault("image", "nvcr.io/nvidia/pytorch:25.01-py3")  # the API server requires one
    return found


def _shape(rng: random.Random) -> GangShape:
    draw = rng.random()
    if draw < 0.45:
        pods = weighted(rng, {1: 0.1, 2: 0.15, 4: 0.25, 8: 0.25, 16: 0.12, 32: 0.08, 64: 0.05})
        gpus = (
            1
            if pods >= 32
            else weighted(rng, {1: 0.3, 2: 0.3, 4: 0.4})
            if pods >= 16
            else weighted(rng, {1: 0.2, 2: 0.2, 4: 0.6})
        )
        # What one NVLink domain (18 nodes × 4 GPUs) has free on a cluster this used is ~30 GPUs: a larger gang must
        # span domains, and is asked to stay in one block instead.
        if pods * gpus > 24:
            pack = Pack(required=BLOCK, preferred=CLIQUE) if pods * gpus <= 64 else Pack(preferred=BLOCK)
        else:
            pack = Pack(required=CLIQUE) if rng.random() < 0.5 else Pack(preferred=CLIQUE)
        return training(workers=pods, gpus=gpus, pack=pack)
    if draw < 0.75:
        workers = weighted(rng, {1: 0.3, 3: 0.35, 7: 0.25, 15: 0.1})
        small = workers <= 3
        if small:
            pack = Pack(required=CLIQUE) if rng.random() < 0.5 else Pack(preferred=CLIQUE)
        else:
            pack = Pack(required=BLOCK, preferred=CLIQUE)
        return leader_workers(workers=workers, gpus=4, pack=pack)
    return disaggregated(
        prefill=weighted(rng, {1: 0.4, 2: 0.4, 4: 0.2}),
        prefill_gpus=weighted(rng, {1: 0.5, 2: 0.5}),
        decode_workers=weighted(rng, {0: 0.3, 1: 0.4, 3: 0.3}),
        decode_gpus=weighted(rng, {2: 0.5, 4: 0.5}),
        extra_prefill=weighted(rng, {0: 0.5, 1: 0.3, 2: 0.2}),
        scope=CLIQUE,
        gang=Pack(preferred=BLOCK),
    )


def _used_pods(rng: random.Random, nodes: Sequence[NodeSpec], share: float) -> list[dict[str, Any]]:
    """Pods of another scheduler, bound, until ``share`` of the GPUs are taken: 70 % of the nodes they touch whole
    (one 4-GPU pod), the rest partly (1- and 2-GPU pods), on nodes drawn at random."""
    total = sum(spec.gpus for spec in nodes)
    used, pods = 0, []
    for spec in rng.sample(list(nodes), len(nodes)):
        if used >= share * total:
            break
        sizes = [spec.gpus] if rng.random() < 0.7 else [rng.choice((1, 2)) for _ in range(rng.randint(1, 2))]
        for gpus in sizes:
            pods.append(_used_pod(f"used-{len(pods):05d}", spec.name, gpus))
            used += gpus
    return pods


def _used_pod(name: str, node: str, gpus: int) -> dict[str, Any]:
    requests = {"cpu": str(16 * gpus), "memory": f"{128 * gpus}Gi", GPU: str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": USED, "labels": {"app": "other-tenant"}},
        "spec": {
            "schedulerName": "default-scheduler",
            "nodeName": node,
            "containers": [{"name": "work", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                            "resources": {"requests": requests, "limits": dict(requests)}}],
        },
    }  # fmt: skip
