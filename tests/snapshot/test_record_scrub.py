"""``record`` keeps what scheduling needs and nothing else: secrets planted in every place a cluster can hold them
never reach the snapshot, and the snapshot still plans exactly as the unscrubbed objects do."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.sim.fakeapi import NODES, PODGANGS, PODS, FakeApiServer, running
from placement import SolveOptions
from scheduler.cli import main
from scheduler.cli.plan import plan_snapshot
from scheduler.cli.snapshot_summary import summarise
from scheduler.extender.translation.cluster_view import snapshot_view
from scheduler.snapshot import Snapshot, load_snapshot, parse_snapshot
from scheduler.snapshot.scrub import KEPT_ANNOTATIONS, scrub
from tests.kube import objects as k

PODCLIQUESETS = "grove.io/v1alpha1/podcliquesets"
BINDINGS = "grove.io/v1alpha1/clustertopologybindings"

# Annotation keys real clusters and tools use for credentials, and innocent-looking ones (deny by default).
ANNOTATION_KEYS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "example.com/apikey",
    "example.com/api-key",
    "auth",
    "passwd",
    "private-key",
    "bearer",
    "aws-access-key-id",
    "token",
    "client-secret",
    "db-password",
    "credential",
    "notes",
)


class Planter:
    """Hands out unique secret values and remembers each with the place it was planted."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self.planted: dict[str, str] = {}

    def __call__(self, where: str) -> str:
        value = f"SECRET{next(self._numbers):03d}"
        self.planted[value] = where
        return value


def annotations(plant: Planter, where: str) -> dict[str, str]:
    planted = {key: plant(f"{where} annotation {key}") for key in ANNOTATION_KEYS}
    return {**planted, "grove-extender/duration-seconds": "600"}


def container(plant: Planter, where: str, *, gpus: int = 0) -> dict[str, Any]:
    def handler(kind: str) -> dict[str, Any]:
        return {
            "exec": {"command": ["sh", "-c", f"login {plant(f'{where} {kind} exec')}"]},
            "httpGet": {
                "path": f"/health?token={plant(f'{where} {kind} httpGet path')}",
                "port": 8080,
                "httpHeaders": [{"name": "Authorization", "value": plant(f"{where} {kind} httpHeaders")}],
            },
        }

    requests = {"cpu": "2", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {
        "name": "main",
        "image": f"registry.example.com/{plant(f'{where} image')}:1",
        "command": ["run", plant(f"{where} command")],
        "args": [f"--token={plant(f'{where} args')}"],
        "workingDir": f"/{plant(f'{where} workingDir')}",
        "env": [
            {"name": "HF_TOKEN", "value": plant(f"{where} env value")},
            {"name": "DB", "valueFrom": {"secretKeyRef": {"name": plant(f"{where} env secretKeyRef"), "key": "k"}}},
        ],
        "envFrom": [{"secretRef": {"name": plant(f"{where} envFrom")}}],
        "resources": {"requests": requests, "limits": dict(requests)},
        "livenessProbe": handler("livenessProbe"),
        "readinessProbe": handler("readinessProbe"),
        "startupProbe": handler("startupProbe"),
        "lifecycle": {"postStart": handler("postStart"), "preStop": handler("preStop")},
        "volumeMounts": [{"name": "data", "mountPath": "/d", "subPath": plant(f"{where} volumeMounts subPath")}],
        "futureField": plant(f"{where} unknown container field"),
    }


def volumes(plant: Planter, where: str) -> list[dict[str, Any]]:
    return [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {
            "name": "csi",
            "csi": {
                "driver": "secrets-store.csi.k8s.io",
                "volumeAttributes": {"secretProviderClass": plant(f"{where} csi volumeAttributes")},
                "nodePublishSecretRef": {"name": plant(f"{where} csi nodePublishSecretRef")},
            },
        },
        {
            "name": "flex",
            "flexVolume": {
                "driver": "example/flex",
                "options": {"password": plant(f"{where} flexVolume options")},
                "secretRef": {"name": plant(f"{where} flexVolume secretRef")},
            },
        },
        {"name": "git", "gitRepo": {"repository": f"https://{plant(f'{where} gitRepo repository')}@git.example.com"}},
        {
            "name": "iscsi",
            "iscsi": {"targetPortal": "t", "iqn": "i", "lun": 0, "initiatorName": plant(f"{where} iscsi")},
        },
        {"name": "secret", "secret": {"secretName": plant(f"{where} secret volume")}},
        {"name": "cephfs", "cephfs": {"monitors": ["m"], "secretFile": plant(f"{where} cephfs secretFile")}},
        {"name": "host", "hostPath": {"path": f"/{plant(f'{where} hostPath')}"}},
    ]


def pod_spec(plant: Planter, where: str, *, gpus: int) -> dict[str, Any]:
    return {
        "schedulerName": "grove",
        "containers": [container(plant, f"{where} container", gpus=gpus)],
        "initContainers": [container(plant, f"{where} initContainer")],
        "ephemeralContainers": [{"name": "debug", "env": [{"name": "X", "value": plant(f"{where} ephemeral env")}]}],
        "volumes": volumes(plant, where),
        "imagePullSecrets": [{"name": plant(f"{where} imagePullSecrets")}],
        "serviceAccountName": plant(f"{where} serviceAccountName"),
        "hostAliases": [{"ip": "10.0.0.1", "hostnames": [plant(f"{where} hostAliases")]}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "futureField": plant(f"{where} unknown spec field"),
    }


def metadata(plant: Planter, where: str, name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": "default",
        "annotations": annotations(plant, where),
        "managedFields": [{"manager": "kubectl", "fieldsV1": {plant(f"{where} managedFields"): {}}}],
        **extra,
    }


def planted_cluster(plant: Planter) -> list[tuple[str, dict[str, Any]]]:
    """Two GPU nodes, a bound pod, a pending gang of two, its PodGang, a PodCliqueSet and a topology binding."""
    objects: list[tuple[str, dict[str, Any]]] = []
    for index in range(2):
        node = k.node(f"gpu-{index}", labels={"nvidia.com/gpu.clique": "c0"})
        node["metadata"].update(metadata(plant, f"node {index}", f"gpu-{index}"))
        del node["metadata"]["namespace"]
        node["status"]["addresses"] = [{"type": "InternalIP", "address": plant(f"node {index} address")}]
        node["status"]["nodeInfo"] = {"machineID": plant(f"node {index} nodeInfo")}
        node["status"]["images"] = [{"names": [plant(f"node {index} images")], "sizeBytes": 1}]
        objects.append((NODES, node))
    for name, node_name in (("bound", "gpu-0"), ("w-0", ""), ("w-1", "")):
        gang = None if name == "bound" else "g"
        pod = k.pod(name, node_name=node_name, gang=gang, phase="Running" if node_name else "Pending")
        labels = pod["metadata"]["labels"]
        pod["metadata"] = metadata(plant, f"pod {name}", name, labels=labels)
        pod["spec"] = {**pod_spec(plant, f"pod {name}", gpus=4), **({"nodeName": node_name} if node_name else {})}
        pod["status"]["message"] = plant(f"pod {name} status message")
        pod["status"]["containerStatuses"] = [{"name": "main", "image": plant(f"pod {name} containerStatuses")}]
        objects.append((PODS, pod))
    gang = k.podgang("g", pods=["w-0", "w-1"])
    gang["metadata"] = metadata(plant, "podgang", "g", creationTimestamp="2026-11-25T00:00:00Z")
    gang["spec"]["futureField"] = plant("podgang unknown spec field")
    gang["status"] = {"phase": "Pending", "conditions": [{"type": "Initialized", "status": "True", "message": ""}]}
    gang["status"]["conditions"][0]["message"] = plant("podgang condition message")
    objects.append((PODGANGS, gang))
    clique = {
        "name": "worker",
        "annotations": annotations(plant, "clique template"),
        "labels": {"role": "worker"},
        "spec": {"roleName": "worker", "replicas": 2, "podSpec": pod_spec(plant, "clique podSpec", gpus=4)},
    }
    group = {
        "name": "workers",
        "cliqueNames": ["worker"],
        "annotations": annotations(plant, "scaling group"),
        "replicas": 1,
    }
    pcs = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": metadata(plant, "podcliqueset", "infer"),
        "spec": {"replicas": 1, "template": {"cliques": [clique], "podCliqueScalingGroups": [group]}},
        "status": {"conditions": [{"type": "SpecValid", "message": plant("podcliqueset status")}]},
    }
    objects.append((PODCLIQUESETS, pcs))
    binding = {
        "metadata": {"name": "default", "annotations": annotations(plant, "topology binding")},
        "spec": {"levels": [{"domain": "rack", "key": "nvidia.com/gpu.clique"}]},
    }
    objects.append((BINDINGS, binding))
    return objects


@pytest.fixture
def planted() -> tuple[Planter, list[tuple[str, dict[str, Any]]]]:
    plant = Planter()
    return plant, planted_cluster(plant)


@pytest.fixture
def fake(planted: tuple[Planter, list[tuple[str, dict[str, Any]]]]) -> Iterator[FakeApiServer]:
    with running(seed=copy.deepcopy(planted[1])) as server:
        yield server


def record_to(fake: FakeApiServer, tmp_path: Path) -> Path:
    target = tmp_path / "snap.json"
    assert main(["record", "--kubeconfig", str(fake.write_kubeconfig(tmp_path / "kubeconfig")), "-o", str(target)]) == 0
    return target


def test_secrets_planted_everywhere_are_all_planted(planted: tuple[Planter, list[Any]]) -> None:
    plant, _ = planted
    assert len(plant.planted) >= 64
    for place in ("exec", "httpHeaders", "last-applied", "apikey", "volumeAttributes", "flexVolume options"):
        assert any(place in where for where in plant.planted.values()), place
    assert any(w.startswith("clique template annotation") for w in plant.planted.values())
    assert any(w.startswith("scaling group annotation") for w in plant.planted.values())


def test_no_planted_secret_survives_record(
    fake: FakeApiServer, planted: tuple[Planter, list[Any]], tmp_path: Path
) -> None:
    plant, _ = planted
    text = record_to(fake, tmp_path).read_text()
    survivors = {value: where for value, where in plant.planted.items() if value in text}
    assert survivors == {}
    assert "managedFields" not in text
    assert fake.requests_to("GET", r"secrets") == []


def test_what_scheduling_needs_is_kept(fake: FakeApiServer, tmp_path: Path) -> None:
    document = json.loads(record_to(fake, tmp_path).read_text())
    pod = next(i for i in document["items"] if i["metadata"]["name"] == "w-0")
    assert pod["metadata"]["labels"] == {"grove.io/podgang": "g"}
    assert pod["metadata"]["annotations"] == {"grove-extender/duration-seconds": "600"}
    (main_container,) = pod["spec"]["containers"]
    assert main_container["resources"]["requests"] == {"cpu": "2", "nvidia.com/gpu": "4"}
    assert [e["name"] for e in main_container["env"]] == ["HF_TOKEN", "DB"], "names stay: the workload's shape"
    assert pod["spec"]["tolerations"] and pod["spec"]["schedulerName"] == "grove"
    kinds = {v["name"]: sorted(set(v) - {"name"}) for v in pod["spec"]["volumes"]}
    assert kinds["csi"] == ["csi"] and kinds["flex"] == ["flexVolume"] and kinds["data"] == ["persistentVolumeClaim"]
    assert next(v for v in pod["spec"]["volumes"] if v["name"] == "csi")["csi"] == {
        "driver": "secrets-store.csi.k8s.io"
    }
    pcs = next(i for i in document["items"] if i["kind"] == "PodCliqueSet")
    (clique,) = pcs["spec"]["template"]["cliques"]
    assert clique["spec"]["podSpec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "4"
    assert set(clique["annotations"]) <= KEPT_ANNOTATIONS


def _plans(snapshot: Snapshot) -> list[dict[str, Any]]:
    view = snapshot_view(snapshot)
    gangs = plan_snapshot(snapshot, view, SolveOptions(policy="topology-greedy"))
    return [{key: gang[key] for key in ("name", "status", "placement", "placementScore")} for gang in gangs]


def test_the_scrubbed_snapshot_plans_and_summarises_as_the_original(
    fake: FakeApiServer, planted: tuple[Planter, list[tuple[str, dict[str, Any]]]], tmp_path: Path
) -> None:
    kinds = {NODES: "Node", PODS: "Pod", PODGANGS: "PodGang", PODCLIQUESETS: "PodCliqueSet"}
    raw = [{"kind": kinds.get(resource, "ClusterTopologyBinding"), **obj} for resource, obj in planted[1]]
    original = parse_snapshot({"kind": "List", "items": raw})
    recorded = load_snapshot(record_to(fake, tmp_path))
    assert _plans(recorded) == _plans(original)
    assert [g["status"] for g in _plans(recorded)] == ["Placed"]
    assert summarise(recorded) == summarise(original)


def test_scrub_copies_and_refuses_what_is_not_the_expected_shape() -> None:
    plant = Planter()
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec(plant, "pod", gpus=1)}
    before = copy.deepcopy(pod)
    scrub(pod)
    assert pod == before, "scrub copies; the input is not modified"
    odd = {
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": plant("annotations as a string")},
        "spec": {"containers": {"as": plant("containers as an object")}, "volumes": [plant("a volume as text")]},
    }
    assert not any(value in json.dumps(scrub(odd)) for value in plant.planted)
    unknown = {"kind": "Secret", "metadata": {"name": "s"}, "data": {"k": plant("an unknown kind's data")}}
    assert scrub(unknown) == {"kind": "Secret", "metadata": {"name": "s"}}
