"""``grove-extender record`` against the fake API server: a snapshot that loads back and leaks nothing."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.sim.fakeapi import NODES, PODGANGS, PODS, FakeApiServer, running
from scheduler.cli import main
from scheduler.snapshot import load_snapshot
from tests.kube import objects as k

SECRET_VALUES = ("hf_secret_value", "s3cr3t-password", "--token=abc123", "last-applied-body")


def podcliqueset() -> dict[str, Any]:
    pod_spec = {
        "containers": [
            {
                "name": "worker",
                "image": "vllm",
                "args": ["--token=abc123"],
                "env": [{"name": "DB_PASSWORD", "value": "s3cr3t-password"}],
            }
        ]
    }
    clique = {"name": "worker", "spec": {"roleName": "worker", "replicas": 2, "podSpec": pod_spec}}
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "infer", "namespace": "default"},
        "spec": {"replicas": 1, "template": {"cliques": [clique]}},
    }


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with running() as server:
        node = k.node("gpu-0")
        node["metadata"]["managedFields"] = [{"manager": "kubelet", "fieldsV1": {}}]
        node["metadata"]["annotations"] = {
            "kubectl.kubernetes.io/last-applied-configuration": "last-applied-body",
            "node.alpha.kubernetes.io/ttl": "0",
        }
        node["status"]["images"] = [{"names": ["nvcr.io/nvidia/pytorch:24.01"], "sizeBytes": 1}]
        server.put(NODES, node)
        server.put(NODES, k.node("gpu-1"))
        server.put(PODS, k.pod("w-0", gang="g", node_name="gpu-0", phase="Running"))
        server.put(PODS, k.pod("w-1", gang="g"))
        server.put(PODS, k.pod("done", node_name="gpu-1", phase="Succeeded"))
        server.put(PODGANGS, k.podgang("g", pods=["w-0", "w-1"]))
        server.put("grove.io/v1alpha1/podcliquesets", podcliqueset())
        binding = {"metadata": {"name": "default"}, "spec": {"levels": [{"domain": "rack", "key": "rack"}]}}
        server.put("grove.io/v1alpha1/clustertopologybindings", binding)
        server.put("v1/secrets", {"metadata": {"name": "hf", "namespace": "default"}, "data": {"token": "aGY="}})
        yield server


def run_record(fake: FakeApiServer, tmp_path: Path, output: str) -> Path:
    kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
    target = tmp_path / output
    assert main(["record", "--kubeconfig", str(kubeconfig), "-o", str(target)]) == 0
    return target


@pytest.mark.parametrize("output", ["snap.json", "snap.json.gz", "snap.yaml"])
def test_record_round_trips_through_load_snapshot(fake: FakeApiServer, tmp_path: Path, output: str) -> None:
    snapshot = load_snapshot(run_record(fake, tmp_path, output))
    assert snapshot.node_names() == {"gpu-0", "gpu-1"}
    assert {p.key for p in snapshot.pods} == {"default/w-0", "default/w-1"}, "finished pods hold no capacity"
    assert [g.key for g in snapshot.podgangs] == ["default/g"]
    assert [p.key for p in snapshot.podcliquesets] == ["default/infer"]
    assert [b.metadata.name for b in snapshot.topology_bindings] == ["default"]
    bound = next(p for p in snapshot.pods if p.key == "default/w-0")
    assert bound.spec.nodeName == "gpu-0" and bound.requests()["nvidia.com/gpu"] == 4


def test_record_leaks_no_secret_and_never_reads_secrets(fake: FakeApiServer, tmp_path: Path) -> None:
    raw = gzip.decompress(run_record(fake, tmp_path, "snap.json.gz").read_bytes()).decode()
    for value in SECRET_VALUES:
        assert value not in raw
    assert "managedFields" not in raw and "sizeBytes" not in raw
    assert fake.requests_to("GET", r"secrets") == []
    document = json.loads(raw)
    pod = next(i for i in document["items"] if i["kind"] == "Pod")
    assert pod["spec"]["containers"][0]["env"] == [{"name": "HF_TOKEN"}, {"name": "MODE"}], "names stay"
    node = next(i for i in document["items"] if i["metadata"]["name"] == "gpu-0")
    assert node["metadata"]["annotations"] == {}, "no annotation placement reads (tests/snapshot/test_record_scrub.py)"


def test_record_round_trips_through_snapshot_inspect(
    fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = run_record(fake, tmp_path, "snap.json")
    capsys.readouterr()
    assert main(["snapshot", "inspect", str(target), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["nodes"] == 2 and summary["gpus"] == {"total": 16, "free": 12} and summary["bound_pods"] == 1
    assert [g["gang"] for g in summary["pending_gangs"]] == ["default/g"]


def test_missing_grove_crds_are_skipped_not_fatal(fake: FakeApiServer, tmp_path: Path) -> None:
    fake.fail("GET", r"/podcliquesets$", 404, reason="NotFound")
    fake.fail("GET", r"/clustertopologybindings$", 403, reason="Forbidden")
    snapshot = load_snapshot(run_record(fake, tmp_path, "snap.json"))
    assert snapshot.podcliquesets == [] and snapshot.topology_bindings == []
    assert len(snapshot.nodes) == 2


def test_nodes_unreadable_is_an_error_naming_the_resource(
    fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = 'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope'
    fake.fail("GET", r"^/api/v1/nodes$", 403, reason="Forbidden", message=refused)
    kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
    assert main(["record", "--kubeconfig", str(kubeconfig), "-o", str(tmp_path / "x.json")]) == 1
    # The API server's message says what RBAC refused, to whom: what the operator must grant (make e2e's RBAC checks
    # found the extender's Lease and watch failures logging only "HTTP 403 Forbidden").
    assert f"listing nodes failed: HTTP 403 Forbidden: {refused}" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_a_pod_on_a_vanished_node_is_left_out(fake: FakeApiServer, tmp_path: Path) -> None:
    fake.put(PODS, k.pod("orphan", node_name="gone-node", phase="Running"))
    snapshot = load_snapshot(run_record(fake, tmp_path, "snap.json"))
    assert "default/orphan" not in {p.key for p in snapshot.pods}


def test_no_kubeconfig_outside_a_cluster_says_what_to_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["record", "-o", str(tmp_path / "x.json")]) == 2
    assert "pass --kubeconfig FILE" in capsys.readouterr().err
