"""``grove-extender reconcile --dry-run``: the List of objects it would create, with no cluster."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from scheduler.cli import main
from tests.reconcile.examples import EXAMPLES, example


def _dry_run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["reconcile", "--dry-run", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_dry_run_prints_the_list_it_would_create(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _dry_run(capsys, "-f", str(EXAMPLES / "multinode-disaggregated.yaml"), "-o", "json")
    assert code == 0
    document = json.loads(out)
    assert document["kind"] == "List"
    kinds = Counter(item["kind"] for item in document["items"])
    # 2 PodCliqueScalingGroups (prefill, decode); PodCliques: 2 prefill replicas × 2 + 1 decode replica × 2 = 6
    assert kinds == {"Pod": 13, "PodGang": 2, "Service": 1, "PodClique": 6, "PodCliqueScalingGroup": 2}
    pods = [item for item in document["items"] if item["kind"] == "Pod"]
    assert all(pod["spec"]["schedulingGates"] == [{"name": "grove.io/podgang-pending-creation"}] for pod in pods)
    gangs = {item["metadata"]["name"]: item for item in document["items"] if item["kind"] == "PodGang"}
    listed = {
        ref["name"] for gang in gangs.values() for group in gang["spec"]["podgroups"] for ref in group["podReferences"]
    }
    assert listed == {pod["metadata"]["name"] for pod in pods}  # every pod is in its gang at creation
    code, again, _ = _dry_run(capsys, "-f", str(EXAMPLES / "multinode-disaggregated.yaml"), "-o", "json")
    assert again == out  # deterministic for a given --seed


def test_dry_run_yaml_and_seed(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "multinode-aggregated.yaml")
    code, out, _ = _dry_run(capsys, "-f", path)
    other_code, other, _ = _dry_run(capsys, "-f", path, "--seed", "5")
    assert code == other_code == 0
    first, second = yaml.safe_load(out), yaml.safe_load(other)
    # 8 pods, 1 Service, 2 PodGangs, 1 PodCliqueScalingGroup, 2 group replicas × 2 PodCliques
    assert len(first["items"]) == len(second["items"]) == 16
    assert first != second  # only the pod-name suffixes differ


def test_dry_run_refuses_an_invalid_pcs_naming_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    document = example("multinode-aggregated")
    document["spec"]["template"]["cliques"][0]["spec"]["replicas"] = -1
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    code, out, err = _dry_run(capsys, "-f", str(path))
    assert code == 1 and out == ""
    assert "spec.template.cliques[0].spec.replicas: must be > 0" in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        pytest.param([], 2, "-f PCS.yaml is required", id="no-file"),
        pytest.param(["-f", "/nonexistent.yaml"], 1, "No such file", id="missing-file"),
    ],
)
def test_dry_run_usage_errors(capsys: pytest.CaptureFixture[str], args: list[str], code: int, message: str) -> None:
    got, _, err = _dry_run(capsys, *args)
    assert got == code and message in err


def test_dry_run_with_a_topology_binding_translates_domains(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    document = example("multinode-aggregated")
    document["spec"]["template"]["topologyConstraint"] = {
        "topologyName": "grove-topology",
        "pack": {"required": "rack"},
    }
    binding = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": "grove-topology"},
        "spec": {"levels": [{"domain": "rack", "key": "nvidia.com/gpu.clique"}]},
    }
    path = tmp_path / "pcs.yaml"
    path.write_text(yaml.safe_dump_all([binding, document]))
    code, out, err = _dry_run(capsys, "-f", str(path), "-o", "json")
    assert code == 0, err
    gangs = [item for item in json.loads(out)["items"] if item["kind"] == "PodGang"]
    assert all(
        g["spec"]["topologyConstraint"] == {"packConstraint": {"required": "nvidia.com/gpu.clique"}} for g in gangs
    )
    assert all(g["metadata"]["annotations"]["grove.io/topology-name"] == "grove-topology" for g in gangs)
