"""Write the bundled demo snapshot, ``benchmarks/snapshots/demo.json``. Seeded: same seed, same bytes.

The cluster: two GB200 NVL72 racks (18 compute trays × 4 GPUs, one ``nvidia.com/gpu.clique`` per rack) and eight
DGX H100 nodes (8 GPUs) under two leaf switches, labelled as GPU Feature Discovery and Topograph (v0.3 keys)
label real nodes. A running training gang and a few standalone pods use some GPUs. Three Grove gangs wait, shaped
as the Grove operator creates them (names, labels, PodGangs with node-label pack constraints), ungated and
``schedulerName: grove``:

- ``disagg-serve-0``: a disaggregated inference replica — a CPU frontend, a prefill and a decode instance
  (leader + workers, 4 GPUs each); each instance must stay inside one NVLink domain (rack).
- ``train-h100-0``: four 8-GPU trainers that must share one leaf switch.
- ``infer-small-0``: four 2-GPU replicas, two guaranteed, preferring one host.

    python benchmarks/make_demo.py [--seed N] [--out PATH]
"""

from __future__ import annotations

import argparse
import random
import string
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from api.core import GPU
from api.grove import (
    GROVE_API_VERSION,
    LABEL_PCS_REPLICA_INDEX,
    LABEL_PCSG,
    LABEL_PCSG_REPLICA_INDEX,
    LABEL_POD_INDEX,
    LABEL_PODCLIQUE,
    LABEL_PODGANG,
    LABEL_SCHEDULER_NAME,
    LABEL_TEMPLATE_HASH,
    SCHEDULER_API_VERSION,
)
from scheduler.snapshot import DURATION_ANNOTATION, dump_snapshot

DEFAULT_OUT = Path(__file__).resolve().parent / "snapshots" / "demo.json"
SEED = 20261125
EPOCH = datetime(2026, 11, 25, 20, 0, 0, tzinfo=UTC)

NET = "network.topology.nvidia.com"
CLIQUE = "nvidia.com/gpu.clique"


class Demo:
    """Accumulates the snapshot's items; every random choice goes through one seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.items: list[dict[str, Any]] = []
        self.nodes: dict[str, dict[str, Any]] = {}

    def uid(self) -> str:
        hexes = "".join(self.rng.choice("0123456789abcdef") for _ in range(32))
        return f"{hexes[:8]}-{hexes[8:12]}-{hexes[12:16]}-{hexes[16:20]}-{hexes[20:]}"

    def suffix(self) -> str:
        return "".join(self.rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))

    @staticmethod
    def stamp(minutes: float) -> str:
        return (EPOCH + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")

    # --- nodes ---------------------------------------------------------------------------------------------

    def node(self, name: str, *, labels: dict[str, str], allocatable: dict[str, str]) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "uid": self.uid(),
                "creationTimestamp": self.stamp(-60 * 24 * 30),
                "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **labels},
            },
            "spec": {},
            "status": {"capacity": dict(allocatable), "allocatable": dict(allocatable)},
        }
        self.nodes[name] = node
        self.items.append(node)

    def gb200_racks(self) -> None:
        for rack in range(2):
            cluster_uuid = self.uid()
            for tray in range(18):
                name = f"gb200-r{rack}-t{tray:02d}"
                labels = {
                    "kubernetes.io/arch": "arm64",
                    "node.kubernetes.io/instance-type": "gb200-nvl72-tray",
                    "topology.kubernetes.io/region": "us-east",
                    "topology.kubernetes.io/zone": "us-east-1a",
                    "nvidia.com/gpu.product": "NVIDIA-GB200",
                    "nvidia.com/gpu.count": "4",
                    "nvidia.com/gpu.memory": "189471",
                    "nvidia.com/gpu.family": "blackwell",
                    CLIQUE: f"{cluster_uuid}.1",
                    f"{NET}/accelerator": f"nvl72-r{rack}",
                    f"{NET}/leaf": f"leaf-gb-{rack}",
                    f"{NET}/spine": "spine-1",
                    f"{NET}/core": "core-1",
                }
                allocatable = {"cpu": "140", "memory": "880Gi", "pods": "110", GPU: "4"}
                self.node(name, labels=labels, allocatable=allocatable)

    def dgx_h100(self) -> None:
        for index in range(8):
            name = f"dgx-h100-{index:02d}"
            labels = {
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "dgx-h100",
                "topology.kubernetes.io/region": "us-east",
                "topology.kubernetes.io/zone": "us-east-1a",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": "8",
                "nvidia.com/gpu.memory": "81559",
                "nvidia.com/gpu.family": "hopper",
                f"{NET}/leaf": f"leaf-h100-{'ab'[index // 4]}",
                f"{NET}/spine": "spine-1",
                f"{NET}/core": "core-1",
            }
            allocatable = {"cpu": "220", "memory": "1900Gi", "pods": "110", GPU: "8"}
            self.node(name, labels=labels, allocatable=allocatable)

    # --- pods ----------------------------------------------------------------------------------------------

    def pod(
        self,
        name: str,
        *,
        gpus: int,
        cpu: str,
        memory: str,
        labels: dict[str, str],
        created: float,
        node: str | None = None,
        extra_spec: dict[str, Any] | None = None,
        image: str = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1",
    ) -> dict[str, Any]:
        resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
        if gpus:
            resources["requests"][GPU] = str(gpus)
            resources["limits"] = {GPU: str(gpus)}
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": self.uid(),
                "creationTimestamp": self.stamp(created),
                "labels": labels,
            },
            "spec": {
                "schedulerName": "grove",
                "containers": [{"name": "main", "image": image, "resources": resources}],
                "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
                **(extra_spec or {}),
            },
            "status": {"phase": "Pending"},
        }
        if node is not None:
            pod["spec"]["nodeName"] = node
            pod["status"] = {"phase": "Running", "startTime": self.stamp(created + 1)}
        self.items.append(pod)
        return pod


def _constraint(required: str | None = None, preferred: str | None = None) -> dict[str, Any]:
    pack = {key: value for key, value in (("required", required), ("preferred", preferred)) if value}
    return {"packConstraint": pack}


class GroveGang:
    """One PodCliqueSet replica's base PodGang and its pods, named and labelled as the Grove operator does."""

    def __init__(self, demo: Demo, *, pcs: str, replica: int = 0, created: float, duration: int) -> None:
        self.demo = demo
        self.pcs = pcs
        self.replica = replica
        self.name = f"{pcs}-{replica}"
        self.created = created
        self.duration = duration
        self.podgroups: list[dict[str, Any]] = []
        self.group_configs: list[dict[str, Any]] = []
        self.template_hash = demo.suffix() + demo.suffix()[:3]

    def clique(
        self,
        clique: str,
        *,
        replicas: int,
        min_available: int | None = None,
        gpus: int,
        cpu: str,
        memory: str,
        pcsg: tuple[str, int] | None = None,
        nodes: list[str] | None = None,
        constraint: dict[str, Any] | None = None,
    ) -> str:
        """Add a PodClique's pods and its PodGroup; returns the PodClique FQN. ``nodes`` binds the pods."""
        fqn = f"{self.name}-{pcsg[0]}-{pcsg[1]}-{clique}" if pcsg else f"{self.name}-{clique}"
        labels = {
            "app.kubernetes.io/managed-by": "grove-operator",
            "app.kubernetes.io/part-of": self.pcs,
            "app.kubernetes.io/name": fqn,
            "app.kubernetes.io/component": "pcsg-podclique" if pcsg else "pcs-podclique",
            LABEL_PCS_REPLICA_INDEX: str(self.replica),
            LABEL_PODGANG: self.name,
            LABEL_PODCLIQUE: fqn,
            LABEL_TEMPLATE_HASH: self.template_hash,
        }
        if pcsg:
            labels[LABEL_PCSG] = f"{self.name}-{pcsg[0]}"
            labels[LABEL_PCSG_REPLICA_INDEX] = str(pcsg[1])
        names = []
        for index in range(replicas):
            pod_name = f"{fqn}-{self.demo.suffix()}"
            names.append(pod_name)
            self.demo.pod(
                pod_name,
                gpus=gpus,
                cpu=cpu,
                memory=memory,
                labels={**labels, LABEL_POD_INDEX: str(index)},
                created=self.created + 0.5,
                node=nodes[index] if nodes else None,
                extra_spec={"hostname": f"{fqn}-{index}", "subdomain": self.name},
            )
        group: dict[str, Any] = {
            "name": fqn,
            "podReferences": [{"namespace": "default", "name": n} for n in sorted(names)],
            "minReplicas": replicas if min_available is None else min_available,
        }
        if constraint:
            group["topologyConstraint"] = constraint
        self.podgroups.append(group)
        return fqn

    def group_config(self, pcsg: str, index: int, members: list[str], constraint: dict[str, Any]) -> None:
        self.group_configs.append(
            {"name": f"{self.name}-{pcsg}-{index}", "podGroupNames": members, "topologyConstraint": constraint}
        )

    def podgang(self, *, constraint: dict[str, Any] | None = None, running: bool = False) -> None:
        spec: dict[str, Any] = {"podgroups": self.podgroups}
        if constraint:
            spec["topologyConstraint"] = constraint
        if self.group_configs:
            spec["topologyConstraintGroupConfigs"] = self.group_configs
        created = self.demo.stamp(self.created)
        # Grove's CRD makes every metav1.Condition field but observedGeneration required: an API server would
        # refuse a status without reason and message, so a snapshot must not hold one either.
        conditions = [
            {
                "type": "Initialized",
                "status": "True",
                "reason": "PodGangPodsCreated",
                "message": "all pods of the PodGang have been created",
                "lastTransitionTime": created,
            }
        ]
        if running:
            conditions.append(
                {
                    "type": "Scheduled",
                    "status": "True",
                    "reason": "GuaranteedPodsBound",
                    "message": "every guaranteed pod is bound to its planned node",
                    "lastTransitionTime": created,
                }
            )
        self.demo.items.append(
            {
                "apiVersion": SCHEDULER_API_VERSION,
                "kind": "PodGang",
                "metadata": {
                    "name": self.name,
                    "namespace": "default",
                    "uid": self.demo.uid(),
                    "creationTimestamp": created,
                    "labels": {
                        "app.kubernetes.io/managed-by": "grove-operator",
                        "app.kubernetes.io/part-of": self.pcs,
                        "app.kubernetes.io/component": "podgang",
                        LABEL_SCHEDULER_NAME: "grove",
                    },
                    "annotations": {DURATION_ANNOTATION: str(self.duration)},
                    "ownerReferences": [
                        {
                            "apiVersion": GROVE_API_VERSION,
                            "kind": "PodCliqueSet",
                            "name": self.pcs,
                            "uid": self.demo.uid(),
                            "controller": True,
                        }
                    ],
                },
                "spec": spec,
                "status": {"phase": "Running" if running else "Pending", "conditions": conditions},
            }
        )


def _running_workload(demo: Demo) -> None:
    """What already holds GPUs: a bound training gang on rack 0 and on leaf A, and some standalone pods."""
    rack0 = [f"gb200-r0-t{t:02d}" for t in range(18)]
    busy_trays = sorted(demo.rng.sample(rack0, 7))
    train = GroveGang(demo, pcs="pretrain-gb200", created=-240, duration=6 * 3600)
    train.clique("trainer", replicas=len(busy_trays), gpus=4, cpu="64", memory="400Gi", nodes=busy_trays)
    train.podgang(constraint=_constraint(required=CLIQUE), running=True)
    for index, node in enumerate(["dgx-h100-00", "dgx-h100-01", "dgx-h100-02"]):
        gpus = demo.rng.choice([2, 4, 8])
        demo.pod(
            f"notebook-{index}-{demo.suffix()}",
            gpus=gpus,
            cpu="16",
            memory="128Gi",
            labels={"app": "notebook"},
            created=-90 + index,
            node=node,
            image="nvcr.io/nvidia/pytorch:25.10-py3",
        )
    rack1 = [f"gb200-r1-t{t:02d}" for t in range(18)]
    for index, node in enumerate(sorted(demo.rng.sample(rack1, 3))):
        demo.pod(
            f"eval-{index}-{demo.suffix()}",
            gpus=demo.rng.choice([1, 2]),
            cpu="8",
            memory="64Gi",
            labels={"app": "eval"},
            created=-30 + index,
            node=node,
        )


def _pending_gangs(demo: Demo) -> None:
    serve = GroveGang(demo, pcs="disagg-serve", created=2, duration=2 * 3600)
    serve.clique("frontend", replicas=1, gpus=0, cpu="4", memory="16Gi")
    # Clique names are unique across a PodCliqueSet, so each scaling group has its own leader and worker.
    for pcsg, role, workers in (("prefill", "p", 3), ("decode", "d", 3)):
        leader = serve.clique(f"{role}leader", replicas=1, gpus=4, cpu="32", memory="256Gi", pcsg=(pcsg, 0))
        worker = serve.clique(f"{role}worker", replicas=workers, gpus=4, cpu="32", memory="256Gi", pcsg=(pcsg, 0))
        serve.group_config(pcsg, 0, [leader, worker], _constraint(required=CLIQUE))
    serve.podgang(constraint=_constraint(preferred=f"{NET}/spine"))

    train = GroveGang(demo, pcs="train-h100", created=5, duration=4 * 3600)
    train.clique("trainer", replicas=4, gpus=8, cpu="200", memory="1600Gi")
    train.podgang(constraint=_constraint(required=f"{NET}/leaf"))

    infer = GroveGang(demo, pcs="infer-small", created=7, duration=1800)
    infer.clique(
        "worker",
        replicas=4,
        min_available=2,
        gpus=2,
        cpu="16",
        memory="64Gi",
        constraint=_constraint(preferred="kubernetes.io/hostname"),
    )
    infer.podgang()


def build_items(seed: int = SEED) -> list[dict[str, Any]]:
    demo = Demo(seed)
    demo.gb200_racks()
    demo.dgx_h100()
    _running_workload(demo)
    _pending_gangs(demo)
    return demo.items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    dump_snapshot(build_items(args.seed), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
