"""``grove-extender record`` from the live cluster, as a user runs it (their own kubeconfig), gives a snapshot that
``plan`` and ``bench`` accept: the recorded cluster's nodes and bound gangs are capacity, its pending gangs the
workload, and every pending gang that fits is planned."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.install import grove_extender
from benchmarks.controlplane.nodes import CLIQUE
from benchmarks.controlplane.workload import Gang, create_gangs
from tests.e2e.reads import all_whole, wait_for


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([grove_extender(), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def test_a_recorded_cluster_is_a_snapshot_plan_and_bench_accept(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    create_gangs(control_plane.api, namespace, [Gang("running", 8, required=CLIQUE)])
    wait_for(lambda: all_whole(control_plane, namespace, expected_gangs=1), timeout=60, what="the gang bound")
    # Two gangs kube-scheduler will never place (no profile of that name): pending in the recording.
    create_gangs(control_plane.api, namespace, [Gang(f"waiting-{i}", 16, required=CLIQUE,
                                                     scheduler="e2e-nobody") for i in range(2)])  # fmt: skip
    snapshot = tmp_path / "cluster.json.gz"
    _run("record", "--kubeconfig", str(control_plane.kubeconfigs["admin"]), "-o", str(snapshot))

    summary = json.loads(_run("snapshot", "inspect", str(snapshot), "--json").stdout)
    assert summary["nodes"] == len(control_plane.api.items("/api/v1/nodes"))
    assert summary["bound_pods"] >= 8
    pending = {g["gang"].split("/")[1] for g in summary["pending_gangs"] if g["gang"].startswith(f"{namespace}/")}
    assert pending == {"waiting-0", "waiting-1"}

    plans = json.loads(_run("plan", "--snapshot", str(snapshot), "--json").stdout)["gangs"]
    ours = {g["name"]: g for g in plans if g["namespace"] == namespace}
    assert {ours[n]["status"] for n in pending} == {"Placed"}
    for gang in (ours[n] for n in pending):
        assert len(gang["placement"]) == 16

    report = tmp_path / "bench.json"
    _run(
        "bench",
        "--snapshot",
        str(snapshot),
        "--policy",
        "cpsat,topology-greedy",
        "--duration",
        "3600",
        "--json",
        str(report),
    )
    policies = json.loads(report.read_text())["policies"]
    assert set(policies) == {"cpsat", "topology-greedy"}
