"""The extender's HTTP stack alone: what the server, routing, body reading, decoding and encoding cost per call.

kube-scheduler calls ``filter`` then ``bind`` for every pod; whatever the HTTP stack spends on them is spent on
every pod, before the extender decides anything. Two measurements, in one run:

1. **In process**: decoding a kube-scheduler-shaped filter body (a ~2 KB Pod and every node name) and a bind body,
   and encoding the replies; then a whole call through ``api.http.app.create_app`` over a stub extender that answers
   at once (filter: the first node; bind: bound), called as uvicorn calls it (ASGI scope, receive, send) with no
   server or socket: routing, body reading, decoding, encoding. CPU µs per call of this thread, the least of 11
   rounds of many calls (thread CPU time, not wall time: other work on a shared machine would inflate that).
2. **Over loopback**: ``api.http.server.serve_listeners`` (uvicorn, httptools, uvloop, the per-request deadline) in a
   subprocess, serving either a no-op ASGI app (the server's own floor) or ``api.http.app.create_app`` over the stub,
   driven by one keep-alive connection the way kube-scheduler drives filter. The server's CPU per request comes
   from ``/proc`` (10 ms ticks: thousands of requests keep the error near 1 %); wall time per request includes the
   client. On a shared machine this part moves with the load; the in-process part much less.

    .venv/bin/python -m benchmarks.bench_http [--nodes 1008] [--requests 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
from pydantic import BaseModel, ConfigDict

from api.core import Pod
from api.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
)
from api.http.app import create_app
from api.http.server import Listener, serve_listeners
from benchmarks.e2e import objects
from benchmarks.e2e.loopback import Connection
from benchmarks.e2e.processes import cpu_seconds, free_port

APPS = ("floor", "extender")


class StubExtender:
    """Answers at once, as for a pod planned ahead: what is left is the HTTP stack's own cost."""

    async def filter(self, args: ExtenderArgs) -> ExtenderFilterResult:
        return ExtenderFilterResult(NodeNames=args.candidate_names()[:1])

    async def prioritize(self, args: ExtenderArgs) -> Sequence[HostPriority]:
        return []

    async def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        return ExtenderBindingResult()

    async def preempt(self, args: ExtenderPreemptionArgs) -> ExtenderPreemptionResult:
        return ExtenderPreemptionResult()

    def healthy(self) -> bool:
        return True

    def ready(self) -> bool:
        return True

    def debug_gangs(self) -> Sequence[Mapping[str, Any]]:
        return []


async def _noop(scope: Any, receive: Any, send: Any) -> None:
    """The server's floor: read the body, answer ``{}``."""
    if scope["type"] != "http":
        return
    message = await receive()
    while message.get("more_body"):
        message = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})


def _serve(app_name: str, port: int) -> int:
    app = _noop if app_name == "floor" else create_app(StubExtender())
    serve_listeners([Listener(name=app_name, app=app, host="127.0.0.1", port=port)], log_level="warning")
    return 0


# --- bodies ------------------------------------------------------------------------------------------------------


def filter_body(nodes: int) -> bytes:
    pod = objects.pod("gang-00001-w3", gang="gang-00001")
    pod["metadata"]["uid"] = "4b132dff-8aa7-4e38-b639-723455785ce8"
    names = [f"node-{i:05d}" for i in range(nodes)]
    return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode()


BIND_BODY = json.dumps(
    {"PodName": "gang-00001-w3", "PodNamespace": "default", "PodUID": "4b132dff", "Node": "node-00001"}
).encode()


class WholePodArgs(BaseModel):
    """A filter body with the whole Pod model, as ``ExtenderArgs`` decoded it before the extender read only the
    Pod's identity (issue 11): measured here only, for the comparison."""

    model_config = ConfigDict(extra="ignore")
    Pod: Pod
    NodeNames: list[str] | None = None


class _IdentityStruct(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] | None = None


class _IdentityPodStruct(msgspec.Struct):
    metadata: _IdentityStruct = msgspec.field(default_factory=_IdentityStruct)


class _IdentityArgsStruct(msgspec.Struct):
    """What ``ExtenderArgs`` reads, as a msgspec struct (the decoder the watch already uses)."""

    Pod: _IdentityPodStruct
    NodeNames: list[str] | None = None


_IDENTITY = msgspec.json.Decoder(_IdentityArgsStruct)


# --- in process --------------------------------------------------------------------------------------------------


def _best_us(call: Callable[[], object], *, calls: int) -> float:
    """This thread's CPU µs per call, the least of 11 rounds: on a machine shared with other work even thread CPU
    time swings from round to round, and the least disturbed round is the cost of the code."""
    call()
    samples = []
    for _ in range(11):
        started = time.thread_time()
        for _ in range(calls):
            call()
        samples.append((time.thread_time() - started) / calls)
    return 1e6 * min(samples)


def in_process(nodes: int) -> list[tuple[str, float]]:
    body = filter_body(nodes)
    names = [f"node-{i:05d}" for i in range(nodes)]
    refusal = ExtenderFilterResult(NodeNames=[], FailedNodes=dict.fromkeys(names, "gang default/g: waiting"))

    def decode_args() -> object:
        return ExtenderArgs.model_validate_json(body)

    def decode_whole_pod() -> object:
        return WholePodArgs.model_validate_json(body)

    def decode_identity_msgspec() -> object:
        return _IDENTITY.decode(body)

    def decode_bind() -> object:
        return ExtenderBindingArgs.model_validate_json(BIND_BODY)

    def encode_accept() -> object:
        return ExtenderFilterResult(NodeNames=["node-00001"]).model_dump_json()

    def encode_bind() -> object:
        return ExtenderBindingResult().model_dump_json()

    return [
        (f"decode filter body: ExtenderArgs, Pod identity + {nodes} names", _best_us(decode_args, calls=500)),
        ("  the same with the whole Pod model (as before)", _best_us(decode_whole_pod, calls=500)),
        ("  the same as ExtenderArgs with msgspec", _best_us(decode_identity_msgspec, calls=500)),
        ("decode bind body (ExtenderBindingArgs)", _best_us(decode_bind, calls=5000)),
        ("encode filter reply, one node", _best_us(encode_accept, calls=5000)),
        (f"encode filter refusal, {nodes} failed nodes", _best_us(refusal.model_dump_json, calls=500)),
        ("encode bind reply", _best_us(encode_bind, calls=5000)),
    ]


def _asgi_call(app: Any, path: str, body: bytes) -> Callable[[], object]:
    """One POST through ``app`` as uvicorn makes it, on a loop of its own; checks the answer was a 200."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(b"host", b"extender"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8888),
    }  # fmt: skip
    request = {"type": "http.request", "body": body, "more_body": False}
    loop = asyncio.new_event_loop()
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return request

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    def call() -> object:
        status.clear()
        loop.run_until_complete(app(dict(scope), receive, send))
        if status != [200]:
            raise SystemExit(f"bench: {path} answered {status}")
        return None

    return call


def asgi_in_process(nodes: int) -> list[tuple[str, float]]:
    """A whole call through ``create_app`` and, for the floor of calling any ASGI app this way, through the no-op."""
    app = create_app(StubExtender())
    rows = []
    for verb, body, calls in (("filter", filter_body(nodes), 500), ("bind", BIND_BODY, 2000)):
        floor = _best_us(_asgi_call(_noop, f"/{verb}", body), calls=calls)
        micros = _best_us(_asgi_call(app, f"/{verb}", body), calls=calls)
        rows.append((f"{verb} through create_app, no server (no-op ASGI app: {floor:.1f})", micros))
    return rows


# --- over loopback -----------------------------------------------------------------------------------------------


async def _drive(port: int, path: str, body: bytes, requests: int) -> None:
    connection = await Connection.open("127.0.0.1", port)
    try:
        for _ in range(requests):
            status, _ = await connection.request("POST", path, body)
            if status != 200:
                raise SystemExit(f"bench: {path} answered {status}")
    finally:
        connection.close()


def _wait_up(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"bench: the server exited with {server.returncode}")
        try:
            asyncio.run(_drive(port, "/bind", BIND_BODY, 1))
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("bench: the server did not start")


def over_loopback(app_name: str, *, nodes: int, requests: int) -> list[tuple[str, float, float]]:
    """(call, server CPU µs per request, wall µs per request) for filter and bind."""
    port = free_port()
    command = [sys.executable, "-m", "benchmarks.bench_http", "--serve", app_name, "--port", str(port)]
    server = subprocess.Popen(command)
    rows = []
    try:
        _wait_up(port, server)
        for path, body in (("/filter", filter_body(nodes)), ("/bind", BIND_BODY)):
            asyncio.run(_drive(port, path, body, 200))  # warm: imports, caches, the connection
            cpu, wall = cpu_seconds(server.pid), time.perf_counter()
            asyncio.run(_drive(port, path, body, requests))
            cpu, wall = cpu_seconds(server.pid) - cpu, time.perf_counter() - wall
            rows.append((path.lstrip("/"), 1e6 * cpu / requests, 1e6 * wall / requests))
    finally:
        server.terminate()
        server.wait(timeout=30)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1008, help="node names in each filter body")
    parser.add_argument("--requests", type=int, default=5000, help="requests per verb and app over loopback")
    parser.add_argument("--serve", choices=APPS, help=argparse.SUPPRESS)  # the server subprocess
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return _serve(args.serve, args.port)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"load average before: {load}; filter bodies: a ~2 KB Pod and {args.nodes} node names")
    print("in process, CPU µs per call (least of 11 rounds):")
    for what, micros in in_process(args.nodes) + asgi_in_process(args.nodes):
        print(f"  {micros:7.1f}  {what}")
    print(f"over loopback, {args.requests} requests per row, one keep-alive connection:")
    print("  app       verb     server CPU µs/request   wall µs/request")
    floor: dict[str, float] = {}
    for app_name in APPS:
        for verb, cpu, wall in over_loopback(app_name, nodes=args.nodes, requests=args.requests):
            over = f" (floor + {cpu - floor[verb]:.0f})" if verb in floor else ""
            floor.setdefault(verb, cpu)
            print(f"  {app_name:9} {verb:8} {cpu:8.1f}{over:16} {wall:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
