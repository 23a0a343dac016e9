"""Drive a running ``grove-extender serve`` the way kube-scheduler does, over loopback.

A generated 1,000-node cluster (8-GPU nodes in NVLink domains of 8 nodes) with many pending gangs (8 pods of
2 GPUs each, packed into one ``nvidia.com/gpu.clique``) is written as a snapshot; the server is started on it as
a subprocess (uvicorn, keep-alive) and left to plan ahead. Then, like kube-scheduler in node-names mode with
``percentageOfNodesToScore: 100``: filter is called for each pod in turn on one connection (every node name in
the body), and each pod's bind is sent without waiting, so a gang's binds run concurrently. A pod whose filter or
bind answers ``Error`` is offered again after kube-scheduler's backoff (1 s … 10 s), until it is bound by its own
call or by the extender's release. Prints filter latency (median, p99) and gang pods bound per second. With
``--mtls`` the verbs are served over mTLS as in the shipped Deployment (certificates from ``grove-extender certs``'s
issuer; connections kept alive, so a handshake is paid once per connection, as kube-scheduler's Go client does).

    .venv/bin/python -m benchmarks.bench_extender [--nodes 1000] [--gangs 100] [--pods-per-gang 8] [--mtls]
    .venv/bin/python -m benchmarks.bench_extender --gang-size 2400     # one gang of 2,400 one-GPU pods

Targets (ARCHITECTURE.md): filter p99 ≤ 5 ms for a planned pod; ≥ 500 gang pods bound per second. ``--gang-size``
reports the time until the one large gang is bound whole: kube-scheduler offers its members one at a time, so it
can be no shorter than (members) / (filter round trips per second).
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from rich.progress import Progress

from api.core import GPU
from api.grove import LABEL_PODCLIQUE, LABEL_PODGANG, SCHEDULER_API_VERSION
from api.http.tls import MAX_CONNECTIONS
from benchmarks.e2e.loopback import Connection
from benchmarks.e2e.processes import free_port
from scheduler.cli.certs import issue
from scheduler.snapshot import dump_snapshot

CLIQUE = "nvidia.com/gpu.clique"


def make_cluster(
    *, nodes: int, gangs: int, pods_per_gang: int, gpus_per_pod: int, pack: bool = True
) -> list[dict[str, Any]]:
    """``pack``: each gang must fit one NVLink domain (8 nodes × 8 GPUs), as small inference gangs do."""
    items: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"node-{i:04d}"
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        CLIQUE: f"cluster-1.{i // 8}",
                        "network.topology.nvidia.com/leaf": f"leaf-{i // 32}",
                        "topology.kubernetes.io/zone": "zone-a",
                    },
                },
                "status": {"allocatable": {"cpu": "96", "memory": "1000Gi", "pods": "110", GPU: "8"}},
            }
        )
    for g in range(gangs):
        gang = f"bench-{g:04d}"
        names = [f"{gang}-w{k}" for k in range(pods_per_gang)]
        items.append(
            {
                "apiVersion": SCHEDULER_API_VERSION,
                "kind": "PodGang",
                "metadata": {"name": gang, "namespace": "default"},
                "spec": {
                    "podgroups": [
                        {
                            "name": f"{gang}-worker",
                            "minReplicas": pods_per_gang,
                            "podReferences": [{"namespace": "default", "name": n} for n in names],
                        }
                    ],
                    **({"topologyConstraint": {"packConstraint": {"required": CLIQUE}}} if pack else {}),
                },
            }
        )
        items.extend(_pod(name, gang, gpus_per_pod) for name in names)
    return items


def _pod(name: str, gang: str, gpus: int) -> dict[str, Any]:
    # Shaped like what kube-scheduler sends (see the fixtures): the fields we ignore cost parse time too.
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": {
                LABEL_PODGANG: gang,
                LABEL_PODCLIQUE: f"{gang}-worker",
                "app.kubernetes.io/part-of": gang,
                "app.kubernetes.io/managed-by": "grove-operator",
            },
        },
        "spec": {
            "schedulerName": "grove",
            "containers": [
                {
                    "name": "worker",
                    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                    "resources": {
                        "limits": {GPU: str(gpus)},
                        "requests": {"cpu": "8", "memory": "64Gi", GPU: str(gpus)},
                    },
                    "terminationMessagePath": "/dev/termination-log",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
            "priority": 0,
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def _wait_planned(
    probe_base: str, debug_base: str, gangs: int, *, server: subprocess.Popen[bytes], deadline_seconds: float
) -> float:
    started = time.perf_counter()
    with (
        httpx.Client(base_url=probe_base, timeout=10) as client,
        httpx.Client(base_url=debug_base, timeout=10) as debug,
    ):
        while time.perf_counter() - started < deadline_seconds:
            if server.poll() is not None:
                raise SystemExit(f"bench: the server exited with {server.returncode}")
            try:
                if client.get("/readyz").status_code == 200:
                    states = [g["state"] for g in debug.get("/debug/gangs").json()["gangs"]]
                    if sum(1 for s in states if s in ("Planned", "Infeasible")) >= gangs:
                        return time.perf_counter() - started
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    raise SystemExit(f"bench: gangs not planned within {deadline_seconds}s")


class _Connection:
    """``loopback.Connection`` answering decoded JSON, and stopping the bench on anything but a 200."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    @classmethod
    async def open(cls, port: int, tls: ssl.SSLContext | None = None) -> _Connection:
        return cls(await Connection.open("127.0.0.1", port, tls=tls))

    async def request(self, method: str, path: str, body: bytes = b"") -> Any:
        status, payload = await self._connection.request(method, path, body)
        if status != 200:
            raise SystemExit(f"bench: {path} answered {status}: {payload[:200]!r}")
        return json.loads(payload) if path != "/metrics" else payload.decode()

    def close(self) -> None:
        self._connection.close()


class _Backoff:
    """kube-scheduler's per-pod retry after an ``Error`` or a refusal: 1 s, 2 s, 4 s … capped at 10 s, counted by
    attempts; pods never tried go before pods retried."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self._fresh = list(range(len(pods)))[::-1]  # a stack: pop() gives them in order
        self._retry: list[tuple[float, int]] = []  # (due, pod index), a heap
        self._attempts = [0] * len(pods)

    def next(self, now: float) -> tuple[int | None, float]:
        """The next pod to offer, or None and how long until one is due (0 when nothing is left)."""
        if self._fresh:  # queued before any retry failed: first in kube-scheduler's activeQ
            return self._fresh.pop(), 0.0
        if self._retry and self._retry[0][0] <= now:
            return heapq.heappop(self._retry)[1], 0.0
        return None, (self._retry[0][0] - now) if self._retry else 0.0

    def failed(self, index: int, now: float) -> None:
        self._attempts[index] += 1
        heapq.heappush(self._retry, (now + min(10.0, 2.0 ** (self._attempts[index] - 1)), index))


BIND_CONNECTIONS = MAX_CONNECTIONS // 2
"""Bind connections the bench keeps open at most: half the listener's cap, the rest for filter and the probes."""


async def _drive(
    port: int, debug_port: int, pods: list[dict[str, Any]], names: list[str], tls: ssl.SSLContext | None
) -> dict[str, Any]:
    """Offer every pod as kube-scheduler does: filter one at a time on one connection, then bind without waiting
    (binds run concurrently); a pod whose filter or bind answered an error is offered again after its backoff,
    until it is bound — by its own bind call, or by the extender's release (which kube-scheduler learns from its
    watch; here from ``/debug/gangs``, asked only while some pod waits for a retry)."""
    filter_ms: list[float] = []
    errors: list[str] = []
    done = [False] * len(pods)
    left = len(pods)
    calls = {"filter": 0, "bind": 0, "bind_error": 0}
    # Encoded up front: kube-scheduler's encoding is not what we measure.
    bodies = [json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode() for pod in pods]
    gang_of = [pod["metadata"]["labels"][LABEL_PODGANG] for pod in pods]
    filters = await _Connection.open(port, tls)  # kube-scheduler's filter path is sequential: one connection
    watch = await _Connection.open(debug_port)  # /debug/gangs and /metrics live on the debug port only
    idle: list[_Connection] = []  # binds run concurrently, each on a pooled connection
    # At most this many at once: the TLS listener closes connections past its cap unread (``MAX_CONNECTIONS``), and
    # a bind holds its connection until its gang is released. kube-scheduler multiplexes its calls over HTTP/2; over
    # HTTP/1.1 a pool bounded like this one is what keeps a client under the cap.
    opening = asyncio.Semaphore(BIND_CONNECTIONS)
    queue = _Backoff(pods)
    in_flight: set[int] = set()
    retrying: set[int] = set()
    started = time.perf_counter()

    def finished(index: int) -> None:
        nonlocal left
        if not done[index]:
            done[index] = True
            left -= 1
            retrying.discard(index)
            progress.advance(task)

    def failed(index: int) -> None:
        retrying.add(index)
        queue.failed(index, time.perf_counter() - started)

    async def bind(index: int, node: str) -> None:
        meta = pods[index]["metadata"]
        body = {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"], "Node": node}
        async with opening:
            connection = idle.pop() if idle else await _Connection.open(port, tls)
            calls["bind"] += 1
            reply = await connection.request("POST", "/bind", json.dumps(body).encode())
            idle.append(connection)
        in_flight.discard(index)
        if reply.get("Error"):
            calls["bind_error"] += 1
            errors.append(reply["Error"])
            failed(index)
        else:
            finished(index)

    async def follow_gangs() -> None:
        """What kube-scheduler's informer tells it: pods bound by someone else (the release) leave its queue."""
        while left:
            await asyncio.sleep(0.5)
            if not retrying:
                continue
            gangs = await watch.request("GET", "/debug/gangs")
            bound = {gang["gang"].split("/", 1)[1] for gang in gangs["gangs"] if gang["state"] == "Bound"}
            for index in [i for i in retrying if gang_of[i] in bound]:
                finished(index)

    pending: list[asyncio.Task[None]] = []
    with Progress(transient=True) as progress:
        task = progress.add_task("filter → bind", total=len(pods))
        follower = asyncio.create_task(follow_gangs())
        while left:
            index, wait = queue.next(time.perf_counter() - started)
            if index is None:
                await asyncio.sleep(wait or 0.05)
                continue
            if done[index] or index in in_flight:
                continue
            sent = time.perf_counter()
            calls["filter"] += 1
            reply = await filters.request("POST", "/filter", bodies[index])
            filter_ms.append((time.perf_counter() - sent) * 1000)
            chosen = reply.get("NodeNames") or []
            if chosen:
                in_flight.add(index)
                pending.append(asyncio.create_task(bind(index, chosen[0])))
            else:
                errors.append(reply.get("Error") or next(iter(reply.get("FailedNodes", {}).values()), ""))
                failed(index)
        elapsed = time.perf_counter() - started
        await asyncio.gather(*pending)
        follower.cancel()
    metrics = await watch.request("GET", "/metrics")
    for connection in [filters, watch, *idle]:
        connection.close()
    return {
        "filter_ms": filter_ms,
        "bound": sum(done),
        "errors": errors,
        "elapsed": elapsed,
        "calls": calls,
        "server": _server_side(metrics),
    }


def _server_side(metrics: str) -> dict[str, float]:
    """As the server measured it (no client or loopback time): mean seconds per verb, and the bucket bound under
    which 99% of filter calls finished (``filter_p99_bound``)."""
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    filter_buckets: list[tuple[float, float]] = []
    result_counts: dict[str, float] = {}
    for line in metrics.splitlines():
        for suffix, into in (("_sum", sums), ("_count", counts)):
            prefix = f'grove_extender_request_seconds{suffix}{{verb="'
            if line.startswith(prefix):
                verb = line[len(prefix) :].split('"', 1)[0]
                into[verb] = float(line.rsplit(" ", 1)[1])
        if line.startswith(("grove_extender_replans_total{", "grove_extender_bind_waits_expired_total ")):
            name = "replans" if "replans" in line else "bind_waits_expired"
            result_counts[name] = result_counts.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        if line.startswith("grove_extender_request_seconds_bucket{") and 'verb="filter"' in line:
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            filter_buckets.append((float(bound), float(line.rsplit(" ", 1)[1])))
    result = {verb: sums[verb] / counts[verb] for verb in sums if counts.get(verb)}
    result.update(result_counts)
    total = counts.get("filter", 0.0)
    for bound, cumulative in sorted(filter_buckets):
        if total and cumulative >= 0.99 * total:
            result["filter_p99_bound"] = bound
            break
    return result


def _pki(folder: Path) -> tuple[list[str], ssl.SSLContext]:
    """The server's flags and the client's context for mTLS over loopback (certificates for ``localhost``)."""
    pems = issue(server_names=["localhost"], days=1).write_pems(folder)
    context = ssl.create_default_context(cafile=str(pems["ca"]))
    context.load_cert_chain(str(pems["client_cert"]), str(pems["client_key"]))
    flags = [f"--tls-cert={pems['server_cert']}", f"--tls-key={pems['server_key']}", f"--client-ca={pems['ca']}"]
    return flags, context


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--pods-per-gang", type=int, default=8)
    parser.add_argument("--gpus-per-pod", type=int, default=2)
    parser.add_argument("--mtls", action="store_true", help="serve the verbs over mTLS, as the Deployment does")
    parser.add_argument("--batch-size", type=int, default=16, help="serve --batch-size (1: one gang at a time)")
    parser.add_argument(
        "--gang-size", type=int, help="instead: one gang of this many one-GPU pods (no pack constraint)"
    )
    args = parser.parse_args(argv)
    if args.gang_size:
        args.gangs, args.pods_per_gang, args.gpus_per_pod = 1, args.gang_size, 1
    items = make_cluster(
        nodes=args.nodes,
        gangs=args.gangs,
        pods_per_gang=args.pods_per_gang,
        gpus_per_pod=args.gpus_per_pod,
        pack=not args.gang_size,
    )
    pods = [item for item in items if item["kind"] == "Pod"]
    names = [item["metadata"]["name"] for item in items if item["kind"] == "Node"]
    port, probe_port, debug_port = free_port(), free_port(), free_port()
    with tempfile.TemporaryDirectory() as folder:
        snapshot = Path(folder) / "bench.json"
        dump_snapshot(items, snapshot)
        tls_flags, tls = _pki(Path(folder)) if args.mtls else ([], None)
        command = [
            sys.executable,
            "-c",
            "import sys; from scheduler.cli import main; sys.exit(main(sys.argv[1:]))",
            "serve",
            "--snapshot",
            str(snapshot),
            "--port",
            str(port),
            "--probe-port",
            str(probe_port),
            "--debug-port",
            str(debug_port),
            *tls_flags,
            "--batch-size",
            str(args.batch_size),
            "--log-level",
            "warning",
        ]
        server = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            planning = _wait_planned(
                f"http://127.0.0.1:{probe_port}",
                f"http://127.0.0.1:{debug_port}",
                args.gangs,
                server=server,
                deadline_seconds=600,
            )
            result = asyncio.run(_drive(port, debug_port, pods, names, tls))
        finally:
            server.terminate()
            server.wait(timeout=10)
    latencies = sorted(result["filter_ms"])
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    rate = result["bound"] / result["elapsed"]
    transport = "mTLS" if args.mtls else "plain HTTP"
    print(f"cluster: {args.nodes} nodes, {args.gangs} gangs × {args.pods_per_gang} pods (node-names mode, {transport})")
    print(f"planned ahead: {args.gangs} gangs in {planning:.1f} s (batch size {args.batch_size})")
    print(f"filter latency: median {statistics.median(latencies):.2f} ms, p99 {p99:.2f} ms, max {latencies[-1]:.2f} ms")
    print(f"bound: {result['bound']} of {len(pods)} pods in {result['elapsed']:.2f} s = {rate:.0f} pods/s")
    calls = result["calls"]
    if args.gang_size:
        print(
            f"one gang of {args.gang_size} pods bound whole in {result['elapsed']:.2f} s "
            f"({calls['filter']} filter calls, {calls['bind']} bind calls, {calls['bind_error']} answered Error: "
            "ready members the extender bound when the gang completed)"
        )
    server = dict(result["server"])
    p99_bound = server.pop("filter_p99_bound", float("nan"))
    replans, expired = server.pop("replans", 0.0), server.pop("bind_waits_expired", 0.0)
    means = ", ".join(f"{verb} {seconds * 1000:.2f} ms" for verb, seconds in sorted(server.items()))
    print(f"server-side: mean per call {means}; 99% of filters under {p99_bound * 1000:g} ms")
    print(f"re-plans during the drive: {replans:g}; bind calls answered while the gang gathered: {expired:g}")
    if result["errors"]:
        print(f"errors: {len(result['errors'])}, first: {result['errors'][0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
