"""The kube-scheduler model in real time over HTTP (the e2e bench's stand-in), alone: it lists the fake API
server, places every pending pod of ours through its own fit and score, and binds them with ``pods/binding``. What
the API server then holds is checked, not what the stand-in says it did."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urlparse

from api.core import Node, Pod
from benchmarks.e2e.loopback import Connection
from benchmarks.sim.fakeapi import NODES, PODS, FakeApiServer, running
from benchmarks.sim.kubescheduler.standin import StandIn
from tests.kube import objects as k


async def _listed(address: tuple[str, int], path: str) -> dict[str, object]:
    connection = await Connection.open(*address)
    try:
        _, payload = await connection.request("GET", path)
    finally:
        connection.close()
    document: dict[str, object] = json.loads(payload)
    return document


async def _drive(fake: FakeApiServer) -> tuple[int, int]:
    url = urlparse(fake.url)
    address = (url.hostname or "127.0.0.1", url.port or 80)
    nodes, pods = await _listed(address, "/api/v1/nodes"), await _listed(address, "/api/v1/pods")
    standin = StandIn(
        nodes=nodes["items"],  # type: ignore[arg-type]
        pods=pods["items"],  # type: ignore[arg-type]
        api=address,
        extender=None,
        deadline_seconds=30,
        resource_version=pods["metadata"]["resourceVersion"],  # type: ignore[index]
    )
    outcome = await standin.run()
    return outcome.bound, outcome.total


def test_alone_every_pending_pod_is_bound_within_each_nodes_room() -> None:
    # 3 nodes × 8 GPUs, one running pod of 4 GPUs on gpu-0, and 10 pending pods of 2 GPUs (20 GPUs of the 20 left).
    seed = [(NODES, k.node(f"gpu-{i}")) for i in range(3)]
    seed.append((PODS, k.pod("running", node_name="gpu-0", phase="Running", gpus=4)))
    seed += [(PODS, k.pod(f"w-{i}", gpus=2)) for i in range(10)]
    gated = k.pod("gated", gpus=2)
    gated["spec"]["schedulingGates"] = [{"name": "grove.io/podgang-pending-creation"}]
    seed.append((PODS, gated))
    with running(seed) as fake:
        bound, total = asyncio.run(_drive(fake))
        assert (bound, total) == (10, 10)  # the gated pod is not the scheduler's to place
        pods = [Pod.model_validate(p) for p in fake.objects(PODS)]
        allocatable = {n.name: n.allocatable() for n in (Node.model_validate(raw) for raw in fake.objects(NODES))}
    assert all(p.spec.nodeName for p in pods if p.metadata.name != "gated")
    for node, room in allocatable.items():
        used = sum(p.requests().get("nvidia.com/gpu", 0) for p in pods if p.spec.nodeName == node)
        assert used <= room["nvidia.com/gpu"], f"{node}: {used} GPUs bound on {room['nvidia.com/gpu']}"
