"""The live path end to end: fake API server → watches → store → coordinator → HTTP app → bindings and status
written back over HTTP, with the Lease deciding readiness; and ``serve``'s choice of mode."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.sim.fakeapi import LEASES, NODES, PODGANGS, PODS, FakeApiServer, running
from scheduler.cli import main
from scheduler.cli.serve import build_service
from scheduler.extender.coordinator import CoordinatorConfig
from scheduler.extender.state import ClusterStore
from scheduler.extender.translation.cluster_view import choose_levels
from scheduler.kube.live import LiveCluster, connect_live, default_namespace, wants_in_cluster
from tests.extender_support import bind_body, filter_one, run
from tests.kube import objects as k

CLIQUE = "nvidia.com/gpu.clique"


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    seed = [(NODES, k.node(f"gpu-{i}", labels={CLIQUE: "cluster-1.0"})) for i in range(3)]
    seed += [(PODS, k.pod(f"w-{i}", gang="g", gpus=8)) for i in range(2)]
    seed.append((PODGANGS, k.podgang("g", pods=["w-0", "w-1"])))
    with running(seed=seed) as server:
        yield server


def wait_for(predicate: Any, *, timeout: float = 60.0) -> None:
    # Waiting for something that will happen: generous, so a loaded machine never fails the test.
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def live(fake: FakeApiServer, tmp_path: Path, identity: str) -> LiveCluster:
    kubeconfig = fake.write_kubeconfig(tmp_path / f"kubeconfig-{identity}")
    return connect_live(kubeconfig=str(kubeconfig), lease_namespace="grove-system", identity=identity)


def test_a_gang_is_planned_bound_and_reported_through_the_api(fake: FakeApiServer, tmp_path: Path) -> None:
    cluster, standby = live(fake, tmp_path, "replica-a"), live(fake, tmp_path, "replica-b")
    store = ClusterStore()
    service = build_service(
        store=store,
        writer=cluster.writer,
        leadership=cluster.elector,
        # Both members do reach bind: the first must still be waiting when the second completes the gang, however
        # slow the machine (had it answered first, the release would still bind it, but this test reads the answers).
        config=CoordinatorConfig(bind_wait_seconds=60.0),
        levels=choose_levels(levels_file=None, bindings=[]),
    )
    cluster.start(store)
    service.worker.start()
    service.coordinator.add_liveness("planner", service.worker.alive)
    service.coordinator.add_liveness("watches", cluster.alive)
    try:
        wait_for(service.coordinator.ready)
        assert service.coordinator.healthy()
        assert not standby.elector.step(), "the second replica must stand by"
        pods = [store.pod(f"default/w-{i}") for i in range(2)]

        def status() -> dict[str, Any]:
            gang = fake.get(PODGANGS, "g", "default") or {}
            found: dict[str, Any] = gang.get("status") or {}
            return found

        async def schedule() -> list[dict[str, Any]]:
            transport = httpx.ASGITransport(app=service.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://extender") as client:
                assert (await client.get("/readyz")).status_code == 200

                async def one(index: int) -> dict[str, Any]:
                    pod = pods[index]
                    assert pod is not None
                    reply = await filter_one(client, pod, ["gpu-0", "gpu-1", "gpu-2"])
                    assert len(reply["NodeNames"]) == 1, reply
                    bound = await client.post("/bind", json=bind_body(pod, reply["NodeNames"][0]))
                    result: dict[str, Any] = bound.json()
                    return result

                results = list(await asyncio.gather(one(0), one(1)))
                # The status is written in the background on this loop, after the binds are answered.
                deadline = time.monotonic() + 60
                while status().get("phase") != "Starting" and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                return results

        assert run(schedule) == [{"Error": ""}, {"Error": ""}]
        nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in fake.objects(PODS)}
        assert set(nodes) == {"w-0", "w-1"} and len(set(nodes.values())) == 2, "8-GPU pods on two nodes"
        bindings = fake.requests_to("POST", r"/binding$")
        assert {r.body["metadata"]["uid"] for r in bindings} == {p.metadata.uid for p in pods if p}

        assert status().get("phase") == "Starting"
        assert [c["type"] for c in status()["conditions"]] == ["Scheduled"]
        assert 0 < status()["placementScore"] <= 1
        # the watch brings the bindings back into the store: bound pods are facts now
        wait_for(lambda: all((store.pod(f"default/w-{i}") or pods[0]).spec.nodeName for i in range(2)))  # type: ignore[union-attr]
    finally:
        service.worker.stop()
        cluster.close()
        standby.close()
    assert not service.coordinator.healthy(), "a stopped planner and closed watches are not healthy"
    lease = fake.get(LEASES, "grove-extender", "grove-system")
    assert lease is not None and lease["spec"]["holderIdentity"] == "", "released on close"


def test_serve_needs_a_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["serve"]) == 2
    assert "--snapshot FILE, --kubeconfig FILE or --in-cluster is required" in capsys.readouterr().err
    assert main(["serve", "--snapshot", "x.json", "--kubeconfig", "kc"]) == 2
    assert "not both" in capsys.readouterr().err


def test_serve_in_cluster_outside_a_pod_says_what_to_pass(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["serve", "--in-cluster"]) == 2
    assert "pass --kubeconfig FILE" in capsys.readouterr().err


def test_in_cluster_is_the_default_inside_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert not wants_in_cluster(in_cluster_flag=False)
    assert wants_in_cluster(in_cluster_flag=True)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert wants_in_cluster(in_cluster_flag=False)


def test_the_lease_lives_in_the_pods_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "grove-system")
    assert default_namespace() == "grove-system"
