"""What one ``pods/binding`` costs the extender's process, by HTTP client, against the fake API server.

The extender binds every pod it schedules itself. Until issue 11's third phase ``KubeClusterWriter.bind`` went
through the official client (``CoreV1Api.create_namespaced_pod_binding``: model objects, serialisation, urllib3)
on a worker thread (``asyncio.to_thread``); ``bench_e2e`` put those threads at 1.0–1.4 ms of CPU per bound pod
with PodGang status and Events. This measures the binding alone, ``--concurrency`` binds in flight from one event
loop, as a gang's binds are, and the CPU the calling process spends per bind (``time.process_time``: every thread
of it; the fake API server runs in a process of its own and is not counted):

- **KubeClusterWriter**: the extender's writer as it is (its own kept-alive connections on the caller's loop,
  ``scheduler.kube.connections``: llhttp parses the answers);
- **KubeClusterWriter, blocking**: its Event write from a thread without a loop, one at a time, as the background
  worker writes status and Events (a POST of about the same size);
- **official client, worker threads**: ``create_namespaced_pod_binding`` through ``asyncio.to_thread`` (before);
- **official client, this thread**: the same calls one after another, no hand-off (what the threads add);
- **urllib3, worker threads**: the Binding's JSON POSTed through the same ``ApiClient``'s urllib3 pool;
- **raw async, pooled**: a bare HTTP/1.1 client on the event loop over kept-alive connections
  (``benchmarks.e2e.loopback.Pool``, at most ``--concurrency`` of them): no thread, no model objects;
- **httpx async, pooled**: ``httpx.AsyncClient`` (HTTP/1.1, kept-alive), a well-kept library doing the same;
- **aiohttp, pooled**: a bare ``aiohttp.ClientSession`` (HTTP/1.1 with its C parser, kept-alive): what the writer
  went through before it kept its own connections.

    .venv/bin/python -m benchmarks.bench_bind_client [--binds 2000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import aiohttp
import httpx
from kubernetes.client import ApiClient, CoreV1Api, V1Binding, V1ObjectMeta, V1ObjectReference

from benchmarks.e2e.loopback import Pool
from benchmarks.e2e.processes import cpu_seconds
from scheduler.kube.connect import WRITE_TIMEOUT, load_api_client
from scheduler.kube.writer import KubeClusterWriter

PODS_PER_GANG = 8
TOKEN = "bench"


@contextmanager
def fake_api(pods: int) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """The fake API server process holding ``pods`` pending pods (``gang-NNNNN-wK`` in ``default``), quiet: no
    heartbeats, churn or kubelet during the run."""
    gangs = -(-pods // PODS_PER_GANG)
    command = [sys.executable, "-m", "benchmarks.e2e.apiserver", "--nodes", "64", "--gangs", str(gangs),
               "--pods-per-gang", str(PODS_PER_GANG), "--other-pods-per-node", "0", "--heartbeat-seconds", "0",
               "--churn", "0", "--kubelet-delay", "86400"]  # fmt: skip
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    try:
        line = process.stdout.readline()
        if not line.startswith("url="):
            raise SystemExit(f"bench: the fake API server did not start ({line!r})")
        yield line.strip().removeprefix("url="), process
    finally:
        process.stdin.close()
        process.stdout.read()
        process.wait(timeout=60)


def _api_client(url: str, folder: Path) -> ApiClient:
    kubeconfig = folder / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "fake", "user": {"token": TOKEN}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
    }))  # fmt: skip
    return load_api_client(str(kubeconfig))


def _names(start: int, count: int) -> list[str]:
    return [f"gang-{i // PODS_PER_GANG:05d}-w{i % PODS_PER_GANG}" for i in range(start, start + count)]


def _path(name: str) -> str:
    return f"/api/v1/namespaces/default/pods/{name}/binding"


def _binding(name: str, node: str) -> bytes:
    return json.dumps({
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": "default"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }).encode()  # fmt: skip


_AUTH = {"Authorization": f"Bearer {TOKEN}"}
_HEADERS = {"Content-Type": "application/json", "Accept": "application/json", **_AUTH}


async def _in_flight(names: list[str], concurrency: int, bind: Callable[[str, str], Awaitable[None]]) -> None:
    slots = asyncio.Semaphore(concurrency)

    async def one(index: int, name: str) -> None:
        async with slots:
            await bind(name, f"node-{index % 64:05d}")

    await asyncio.gather(*(one(i, name) for i, name in enumerate(names)))


def writer_now(api_client: ApiClient, base: str, names: list[str], concurrency: int) -> None:
    writer = KubeClusterWriter(api_client, instance="bench")

    async def bind(name: str, node: str) -> None:
        await writer.bind(namespace="default", name=name, uid="", node=node)

    async def main() -> None:
        try:
            await _in_flight(names, concurrency, bind)
        finally:
            await writer.aclose()

    asyncio.run(main())


def writer_blocking(api_client: ApiClient, base: str, names: list[str], concurrency: int) -> None:
    """The background worker's writes (status, Events): one at a time from a thread without a loop."""
    writer = KubeClusterWriter(api_client, instance="bench")
    try:
        for name in names:
            writer.record_event(namespace="default", kind="Pod", name=name, uid="", reason="Bench", message="bench")
    finally:
        writer.close()


def _official_bind(core: CoreV1Api, name: str, node: str) -> None:
    """What ``KubeClusterWriter.bind`` did before: model objects through the official client."""
    body = V1Binding(
        api_version="v1",
        kind="Binding",
        metadata=V1ObjectMeta(name=name, namespace="default"),
        target=V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    response = core.create_namespaced_pod_binding(
        name=name, namespace="default", body=body, _preload_content=False, _request_timeout=WRITE_TIMEOUT
    )
    response.drain_conn()
    response.release_conn()


def official_threads(api_client: ApiClient, base: str, names: list[str], concurrency: int) -> None:
    core = CoreV1Api(api_client)

    async def bind(name: str, node: str) -> None:
        await asyncio.to_thread(_official_bind, core, name, node)

    asyncio.run(_in_flight(names, concurrency, bind))


def official_here(api_client: ApiClient, base: str, names: list[str], concurrency: int) -> None:
    core = CoreV1Api(api_client)
    for i, name in enumerate(names):
        _official_bind(core, name, f"node-{i % 64:05d}")


def urllib3_threads(api_client: ApiClient, base: str, names: list[str], concurrency: int) -> None:
    pool = api_client.rest_client.pool_manager

    def post(name: str, node: str) -> None:
        response = pool.request(
            "POST", f"{base}{_path(name)}", body=_binding(name, node), headers=_HEADERS, timeout=WRITE_TIMEOUT[1]
        )
        if response.status != 201:
            raise SystemExit(f"bench: binding {name} answered {response.status}")

    async def bind(name: str, node: str) -> None:
        await asyncio.to_thread(post, name, node)

    asyncio.run(_in_flight(names, concurrency, bind))


def raw_async(api_client: ApiClient, base: str, names: list[str], concurrency: int) -> None:
    parsed = urlparse(base)

    async def main() -> None:
        pool = Pool(parsed.hostname or "127.0.0.1", parsed.port or 80, limit=concurrency)

        async def bind(name: str, node: str) -> None:
            status, _ = await pool.request("POST", _path(name), _binding(name, node), headers=_AUTH)
            if status != 201:
                raise SystemExit(f"bench: binding {name} answered {status}")

        try:
            await _in_flight(names, concurrency, bind)
        finally:
            pool.close()

    asyncio.run(main())


def httpx_async(api_client: ApiClient, base: str, names: list[str], concurrency: int) -> None:
    async def main() -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=base, headers=_HEADERS, limits=limits, timeout=10) as client:

            async def bind(name: str, node: str) -> None:
                response = await client.post(_path(name), content=_binding(name, node))
                if response.status_code != 201:
                    raise SystemExit(f"bench: binding {name} answered {response.status_code}")

            await _in_flight(names, concurrency, bind)

    asyncio.run(main())


def aiohttp_async(api_client: ApiClient, base: str, names: list[str], concurrency: int) -> None:
    async def main() -> None:
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(base, connector=connector, headers=_HEADERS) as session:

            async def bind(name: str, node: str) -> None:
                async with session.post(_path(name), data=_binding(name, node)) as response:
                    await response.read()
                    if response.status != 201:
                        raise SystemExit(f"bench: binding {name} answered {response.status}")

            await _in_flight(names, concurrency, bind)

    asyncio.run(main())


CLIENTS: list[tuple[str, Callable[[ApiClient, str, list[str], int], None]]] = [
    ("KubeClusterWriter (now: its connections on this loop)", writer_now),
    ("KubeClusterWriter, blocking Event writes, one at a time (private loop)", writer_blocking),
    ("official client, worker threads (before)", official_threads),
    ("official client, this thread", official_here),
    ("urllib3 POST, worker threads", urllib3_threads),
    ("raw async, pooled connections", raw_async),
    ("httpx async, pooled connections", httpx_async),
    ("aiohttp, pooled connections", aiohttp_async),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binds", type=int, default=2000, help="bindings per client")
    parser.add_argument("--concurrency", type=int, default=8, help="bindings in flight (a gang of 8)")
    args = parser.parse_args(argv)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    warm = 50
    per_client = args.binds + warm
    print(f"load average before: {load}; {args.binds} bindings per client, {args.concurrency} in flight")
    print("  client CPU ms/bind   fake API CPU ms/bind   wall ms/bind   client")
    with tempfile.TemporaryDirectory() as folder, fake_api(per_client * len(CLIENTS)) as (url, server):
        api_client = _api_client(url, Path(folder))
        try:
            for index, (label, run) in enumerate(CLIENTS):
                names = _names(index * per_client, per_client)
                run(api_client, url, names[:warm], args.concurrency)  # connections, imports, caches
                cpu, api, wall = time.process_time(), cpu_seconds(server.pid), time.perf_counter()
                run(api_client, url, names[warm:], args.concurrency)
                cpu, api, wall = time.process_time() - cpu, cpu_seconds(server.pid) - api, time.perf_counter() - wall
                per = 1000 / args.binds
                print(f"  {cpu * per:18.3f}   {api * per:20.3f}   {wall * per:12.3f}   {label}")
        finally:
            api_client.close()  # type: ignore[no-untyped-call]
    return 0


if __name__ == "__main__":
    sys.exit(main())
