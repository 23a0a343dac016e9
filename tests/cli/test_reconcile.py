"""``grove-extender reconcile --dry-run``: the List of objects it would create, with no cluster."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.sim.fakeapi import running
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
    # 2 PodCliqueScalingGroups (prefill, decode); PodCliques: 2 prefill replicas × 2 + 1 decode replica × 2 = 6;
    # Grove's ServiceAccount, Role and RoleBinding for every PodCliqueSet (no startup order: no token Secret)
    assert kinds == {
        "Pod": 13,
        "PodGang": 2,
        "Service": 1,
        "PodClique": 6,
        "PodCliqueScalingGroup": 2,
        "ServiceAccount": 1,
        "Role": 1,
        "RoleBinding": 1,
    }
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
    # 8 pods, 1 Service, 2 PodGangs, 1 PodCliqueScalingGroup, 2 group replicas × 2 PodCliques; ServiceAccount,
    # Role, RoleBinding
    assert len(first["items"]) == len(second["items"]) == 19
    assert first != second  # only the pod-name suffixes differ


def test_dry_run_refuses_an_invalid_pcs_naming_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    document = example("multinode-aggregated")
    document["spec"]["template"]["cliques"][0]["spec"]["replicas"] = -1
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    code, out, err = _dry_run(capsys, "-f", str(path))
    assert code == 2 and out == ""
    assert "spec.template.cliques[0].spec.replicas: must be > 0" in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        pytest.param([], 2, "-f PCS.yaml is required", id="no-file"),
        pytest.param(["-f", "/nonexistent.yaml"], 2, "No such file", id="missing-file"),
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


def _set(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    target: Any = document
    *parents, last = path.split(".")
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    target[int(last) if last.isdigit() else last] = value
    return document


_CLIQUE = "spec.template.cliques.0.spec"
_CONTAINER = f"{_CLIQUE}.podSpec.containers.0.resources"


# Issue 10's bad PodCliqueSet files: each hung, ran out of memory, crashed with a traceback or was accepted.
@pytest.mark.parametrize(
    ("content", "named"),
    [
        pytest.param(lambda d: _set(d, "spec.replicas", 1_000_000_000), "spec.replicas: must be ≤ 10000", id="pcs-1e9"),
        pytest.param(
            lambda d: _set(d, f"{_CLIQUE}.replicas", 1_000_000_000),
            "spec.template.cliques[0].spec.replicas: must be ≤ 10000",
            id="clique-1e9",
        ),
        pytest.param(
            lambda d: _set(d, "spec.template.podCliqueScalingGroups.0.replicas", 10**6),
            "spec.template.podCliqueScalingGroups[0].replicas: must be ≤ 10000",
            id="group-1e6",
        ),
        pytest.param(lambda d: {"apiVersion": "v1", "kind": "List", "items": 5}, "items must be a list", id="items-5"),
        pytest.param(
            lambda d: _set(d, "metadata", None),
            "items[0] (PodCliqueSet): metadata: must be an object",
            id="metadata-null",
        ),
        pytest.param(
            lambda d: _set(d, f"{_CONTAINER}.requests", {"cpu": "4x"}),
            "spec.template.cliques[0].spec.podSpec.containers[0].resources.requests.cpu: '4x' is not a quantity",
            id="cpu-4x",
        ),
        pytest.param(
            lambda d: _set(d, f"{_CONTAINER}.requests", {"memory": "1e400"}),
            "spec.template.cliques[0].spec.podSpec.containers[0].resources.requests.memory: '1e400'",
            id="memory-1e400",
        ),
        pytest.param(
            lambda d: _set(d, f"{_CONTAINER}.limits", {"nvidia.com/gpu": "9Ei"}),
            "resources.limits.nvidia.com/gpu: '9Ei' must be between 0 and the int64 maximum",
            id="gpu-beyond-int64",
        ),
        pytest.param(
            lambda d: _set(d, "spec.replicas", True),
            "spec.replicas: Input should be a valid integer",
            id="replicas-true",
        ),
        pytest.param(
            lambda d: _set(d, f"{_CLIQUE}.minAvailable", "2"),
            "spec.minAvailable: Input should be a valid",
            id="min-available-string",
        ),
    ],
)
def test_bad_pcs_file_exits_2_with_one_line_naming_the_item_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: Any, named: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(content(example("multinode-aggregated"))))
    code, out, err = _dry_run(capsys, "-f", str(path))
    assert (code, out) == (2, "")
    assert named in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        pytest.param(b"kind: PodCliqueSet\nmetadata: {name: \xff\xfe}\n", "not UTF-8 text", id="not-utf8"),
        pytest.param(b"[" * 50_000 + b"]" * 50_000, "nested too deeply", id="deep-yaml"),
        pytest.param(b"kind: [unclosed", "not valid JSON or YAML", id="broken-yaml"),
        pytest.param(
            b"kind: PodCliqueSet\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + b"".join(b"%c: &%c [" % (c, c) + b", ".join([b"*%c" % (c - 1)] * 10) + b"]\n" for c in b"bcdefgh")
            + b"spec: *h\n",
            "aliases expand to more than",
            id="alias-bomb",  # 10^8 nodes once expanded, from a 500-byte file: it hung before
        ),
        pytest.param(b"- 1\n- 2\n", "must be a Kubernetes object", id="a-list-not-an-object"),
    ],
)
def test_unreadable_pcs_file_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, raw: bytes, named: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(raw)
    code, out, err = _dry_run(capsys, "-f", str(path))
    assert (code, out) == (2, "")
    assert named in err and err.count("\n") == 1 and "Traceback" not in err


def test_limits_are_configurable(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "pcs.yaml"
    path.write_text(yaml.safe_dump(_set(example("multinode-aggregated"), "spec.replicas", 3)))
    code, _, err = _dry_run(capsys, "-f", str(path), "--max-replicas", "2")
    assert code == 2 and "spec.replicas: must be ≤ 2 (got 3)" in err
    # 3 replicas × 2 group replicas × (1 leader + 3 workers) = 24 pods > 20
    code, _, err = _dry_run(capsys, "-f", str(path), "--max-pods", "20")
    assert code == 2 and "would have 24 pods; the reconciler's limit is 20" in err


def test_mnnvl_without_the_compute_domain_crd_exits_at_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Grove's mnnvl/preflight.go: the operator does not start with MNNVL on and no ComputeDomain CRD served.
    with running() as server:  # a fake API server that serves no resource.nvidia.com group
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        code = main(["reconcile", "--mnnvl", "--kubeconfig", str(kubeconfig)])
    assert code == 1
    assert "computedomains.resource.nvidia.com" in capsys.readouterr().err


def test_dry_run_keeps_groves_mnnvl_and_dra_fields(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Nothing is dropped: the ComputeDomains, the shared ResourceClaims and every pod's claims are in the List.
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    document["metadata"]["annotations"] = {"grove.io/mnnvl-group": "nvl"}
    requests = {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}
    document["spec"]["template"]["resourceClaimTemplates"] = [{"name": "scratch", "templateSpec": {"spec": requests}}]
    document["spec"]["template"]["resourceSharing"] = [{"name": "scratch", "scope": "PerReplica"}]
    path = tmp_path / "pcs.yaml"
    path.write_text(yaml.safe_dump(document))
    code, out, err = _dry_run(capsys, "-f", str(path), "-o", "json")
    assert code == 2 and "MNNVL is not enabled" in err  # off by default, as in Grove
    code, out, _ = _dry_run(capsys, "--mnnvl", "-f", str(path), "-o", "json")
    assert code == 0
    items = json.loads(out)["items"]
    assert [i["metadata"]["name"] for i in items if i["kind"] == "ComputeDomain"] == ["training-0-nvl"]
    assert [i["metadata"]["name"] for i in items if i["kind"] == "ResourceClaim"] == ["training-0-scratch"]
    workers = [i for i in items if i["kind"] == "Pod" and "-worker-" in i["metadata"]["name"]]
    assert workers and all(
        [c["name"] for c in p["spec"]["resourceClaims"]] == ["mnnvl-claim", "training-0-scratch"] for p in workers
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--workers", "0"], "--workers must be at least 1", id="no-worker"),
        pytest.param(["--concurrent-writes", "0"], "--concurrent-writes must be at least 1", id="no-write"),
        pytest.param(["--qps", "0"], "--qps must be positive", id="no-rate"),
        pytest.param(["--burst", "0"], "--burst must be at least 1", id="no-burst"),
    ],
)
def test_a_reconciler_that_could_never_send_a_request_is_refused_at_start(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert main(["reconcile", "--kubeconfig", "/nonexistent", *flags]) == 2
    assert message in capsys.readouterr().err
