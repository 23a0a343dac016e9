"""What one pod's two calls cost the extender's event loop over mTLS and HTTP/2, as kube-scheduler makes them.

With kube-scheduler trying the planned node alone (``status.nominatedNodeName``), each pod costs the extender one
``filter`` with a single node name and one ``bind``, both streams of one long-lived HTTP/2 connection over mutual
TLS (``api.http.http2``, ``api.http.tls``). On the real harness most of the extender's event-loop CPU went there,
not into the extender's own decisions. This measures that part alone: ``api.http.server.serve_listeners`` with a TLS
listener (client certificates required) in a subprocess, serving ``api.http.app.create_app`` over a stub extender
that answers at once (``benchmarks.bench_http.StubExtender``), driven by one HTTP/2 client connection (httpx, in
this process) the way kube-scheduler drives it: one filter at a time, each pod's bind left in flight beside the next
filters (at most ``--binds-in-flight``). The bodies are a real kube-scheduler v1.36's filter (cut to one node name)
and bind, from ``tests/fixtures``. httpx ends each request with an empty DATA frame of its own, often in a read of its
own; Go's client (kube-scheduler's) sets END_STREAM on the last DATA frame of a body whose length it knows.

Per pod, from ``/proc`` of the server process: CPU (user + system, all threads: 10 ms ticks, so thousands of pods
keep the error near 1 %), and the write and read system calls (``syscw``/``syscr``: each write is a TLS record or
more and one send; each read one receive). The client's CPU is not counted. Several rounds; the least CPU is the
figure (other work on a shared machine only ever adds to it).

With ``--servers builtin,hypercorn`` (the default) the same is measured of hypercorn serving the same app
(``api.http.hypercorn_server``), each server in a subprocess of its own, the rounds taken in turn.

    .venv/bin/python -m benchmarks.bench_http2 [--pods 3000] [--rounds 5] [--binds-in-flight 8] [--servers builtin]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvloop
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import DataReceived, StreamEnded

from api.http.app import create_app
from api.http.http2 import Http2Protocol
from api.http.hypercorn_server import serve_with_hypercorn
from api.http.server import Listener, serve_listeners
from api.http.tls import TlsConfig
from benchmarks.bench_http import StubExtender
from benchmarks.e2e.processes import cpu_seconds, free_port, io_calls
from scheduler.cli.certs import issue

RECORDED = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "kube-scheduler-v1.36" / "node-names"


def recorded_bodies() -> tuple[bytes, bytes]:
    """kube-scheduler's own filter (its node names cut to the first, as for a nominated node) and bind bodies."""
    filter_args = json.loads((RECORDED / "000-filter.json").read_text())["request"]
    filter_args["NodeNames"] = filter_args["NodeNames"][:1]
    bind_args = json.loads((RECORDED / "002-bind.json").read_text())["request"]
    return json.dumps(filter_args).encode(), json.dumps(bind_args).encode()


# --- in process --------------------------------------------------------------------------------------------------


class _Transport(asyncio.Transport):
    """Keeps what the server writes, and counts the writes."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = bytearray()
        self.writes = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.extend(data)
        self.writes += 1

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else default


class _ServerState:
    def __init__(self) -> None:
        self.connections: set[Any] = set()
        self.tasks: set[asyncio.Task[None]] = set()


async def _in_process_round(pods: int, bodies: tuple[bytes, bytes]) -> tuple[float, float]:
    """(CPU s, writes) of ``pods`` pods' filter and bind through ``Http2Protocol`` and the app, counting only the
    server's side: the client (h2's own state machine) makes each request's frames and reads the replies outside
    the measured spans."""
    transport = _Transport()
    server = Http2Protocol(
        app=create_app(StubExtender()),
        server_state=_ServerState(),
        request_timeout=10.0,
        keep_alive=120.0,
        max_header_bytes=65536,
    )
    server.connection_made(transport)
    client = H2Connection(H2Configuration(client_side=True, header_encoding=None))
    client.initiate_connection()

    async def settle() -> None:  # the request's task, its reply and the write at the end of the loop's turn
        for _ in range(8):
            await asyncio.sleep(0)

    def frames(path: bytes, body: bytes) -> bytes:
        stream = client.get_next_available_stream_id()
        headers = [
            (b":method", b"POST"), (b":path", path), (b":scheme", b"https"), (b":authority", b"localhost:8443"),
            (b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
            (b"accept-encoding", b"gzip"), (b"user-agent", b"kube-scheduler/v1.36.2 (linux/amd64)"),
        ]  # fmt: skip
        client.send_headers(stream, headers)
        client.send_data(stream, body, end_stream=True)
        return client.data_to_send()

    def answered() -> int:
        replies, transport.sent = bytes(transport.sent), bytearray()
        events = client.receive_data(replies) if replies else []
        for event in events:
            if isinstance(event, DataReceived) and event.flow_controlled_length and event.stream_id:
                client.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        return sum(isinstance(event, StreamEnded) for event in events)

    await settle()
    server.data_received(client.data_to_send())
    await settle()
    answered()
    filter_body, bind_body = bodies
    cpu = 0.0
    writes = transport.writes
    for _ in range(pods):
        requests = frames(b"/filter", filter_body), frames(b"/bind", bind_body)
        started = time.thread_time()
        for request in requests:
            server.data_received(request)
            await settle()
        cpu += time.thread_time() - started
        if answered() != 2:
            raise SystemExit("bench: a call went unanswered in process")
    return cpu, transport.writes - writes


def in_process(pods: int, rounds: int) -> tuple[float, float]:
    """µs of CPU and writes per pod through ``Http2Protocol`` without TLS or sockets, the least of ``rounds``."""
    bodies = recorded_bodies()
    results = [uvloop.run(_in_process_round(pods, bodies)) for _ in range(rounds + 1)][1:]  # the first warms
    cpu, writes = min(results)
    return 1e6 * cpu / pods, writes / pods


# --- over mTLS --------------------------------------------------------------------------------------------------


def _serve(pki: Path, port: int, server: str) -> int:
    tls = TlsConfig(cert=str(pki / "server_cert.pem"), key=str(pki / "server_key.pem"), client_ca=str(pki / "ca.pem"))
    listeners = [Listener(name="extender", app=create_app(StubExtender()), host="127.0.0.1", port=port, tls=tls)]
    if server == "hypercorn":
        serve_with_hypercorn(listeners, log_level="warning")
    else:
        serve_listeners(listeners, log_level="warning")
    return 0


@dataclass(frozen=True)
class Counts:
    cpu: float
    writes: int
    reads: int

    @classmethod
    def of(cls, pid: int) -> Counts:
        reads, writes = io_calls(pid)
        return cls(cpu_seconds(pid), writes, reads)

    def __sub__(self, other: Counts) -> Counts:
        return Counts(self.cpu - other.cpu, self.writes - other.writes, self.reads - other.reads)


async def _drive(client: httpx.AsyncClient, url: str, bodies: tuple[bytes, bytes], *, pods: int, binds: int) -> None:
    filter_body, bind_body = bodies
    headers = {"content-type": "application/json"}
    slots = asyncio.Semaphore(binds)
    in_flight: set[asyncio.Task[None]] = set()

    async def bind() -> None:
        try:
            reply = await client.post(url + "/bind", content=bind_body, headers=headers)
            if reply.status_code != 200 or reply.json().get("Error"):
                raise SystemExit(f"bench: bind answered {reply.status_code} {reply.text}")
        finally:
            slots.release()

    for _ in range(pods):
        reply = await client.post(url + "/filter", content=filter_body, headers=headers)
        if reply.status_code != 200 or not reply.json().get("NodeNames"):
            raise SystemExit(f"bench: filter answered {reply.status_code} {reply.text}")
        await slots.acquire()
        task = asyncio.create_task(bind())
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
    await asyncio.gather(*in_flight)


SERVERS = ("builtin", "hypercorn")
"""``serve --http-server``'s choices: the hand-written listener (``api.http.server``) and hypercorn's."""


async def _client(pki: Path, port: int) -> httpx.AsyncClient:
    """One HTTP/2 connection over mTLS to the server on ``port``, once it listens, warmed by 500 pods (imports,
    caches, the connection itself) so that no round pays for them."""
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    context.load_cert_chain(str(pki / "client_cert.pem"), str(pki / "client_key.pem"))
    client = httpx.AsyncClient(http2=True, verify=context, timeout=30.0)
    url = f"https://localhost:{port}"
    for _ in range(600):  # until the server listens
        try:
            await client.get(url + "/healthz")
            break
        except httpx.TransportError:
            await asyncio.sleep(0.1)
    return client


async def _rounds(
    servers: dict[str, tuple[int, int]], pki: Path, *, pods: int, rounds: int, binds: int
) -> dict[str, list[Counts]]:
    """Rounds taken in turn, one server after the other, so that a busier spell of the machine falls on both."""
    bodies = recorded_bodies()
    clients = {name: await _client(pki, port) for name, (_, port) in servers.items()}
    try:
        for name, client in clients.items():
            await _drive(client, f"https://localhost:{servers[name][1]}", bodies, pods=min(pods, 500), binds=binds)
        measured: dict[str, list[Counts]] = {name: [] for name in servers}
        for _ in range(rounds):
            for name, (pid, port) in servers.items():
                before = Counts.of(pid)
                await _drive(clients[name], f"https://localhost:{port}", bodies, pods=pods, binds=binds)
                measured[name].append(Counts.of(pid) - before)
    finally:
        for client in clients.values():
            await client.aclose()
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=3000, help="pods per round: a filter and a bind each")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--binds-in-flight", type=int, default=8, help="binds left open beside the next filters")
    parser.add_argument(
        "--servers",
        default=",".join(SERVERS),
        help=f"comma-separated, from {', '.join(SERVERS)} (default: both, side by side in one run)",
    )
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the server subprocess: its PKI folder
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--server", choices=SERVERS, default="builtin", help=argparse.SUPPRESS)
    parser.add_argument("--in-process-only", action="store_true", help="skip the part over mTLS")
    args = parser.parse_args(argv)
    if args.serve:
        return _serve(args.serve, args.port, args.server)
    chosen = [name for name in args.servers.split(",") if name]
    if unknown := sorted(set(chosen) - set(SERVERS)):
        parser.error(f"--servers: unknown {', '.join(unknown)}; choose from {', '.join(SERVERS)}")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    micros, writes = in_process(args.pods, args.rounds)
    print(f"load average: {load}")
    print(f"in process, no TLS (Http2Protocol and the app, this thread's CPU, least of {args.rounds} rounds):")
    print(f"  {micros:.0f} µs per pod, {writes:.2f} writes per pod")
    if args.in_process_only:
        return 0
    with tempfile.TemporaryDirectory() as folder:
        pki = Path(folder)
        issue(server_names=["localhost"], days=1).write_pems(pki)
        children: dict[str, subprocess.Popen[bytes]] = {}
        ports: dict[str, int] = {}
        try:
            for name in chosen:
                ports[name] = free_port()
                command = [sys.executable, "-m", "benchmarks.bench_http2", "--serve", str(pki)]
                children[name] = subprocess.Popen([*command, "--port", str(ports[name]), "--server", name])
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            started = time.perf_counter()
            servers = {name: (children[name].pid, ports[name]) for name in chosen}
            measured = asyncio.run(
                _rounds(servers, pki, pods=args.pods, rounds=args.rounds, binds=args.binds_in_flight)
            )
            wall = time.perf_counter() - started
        finally:
            for child in children.values():
                child.terminate()
                child.wait(timeout=30)
    end = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"load average: {load} before, {end} after ({wall:.0f} s)")
    print(f"{args.pods} pods per round (a filter with one node name and a bind), mTLS + HTTP/2, one connection")
    least: dict[str, float] = {}
    for name in chosen:
        print(f"  {name:<10} server CPU µs/pod   writes/pod   reads/pod")
        for counts in sorted(measured[name], key=lambda c: c.cpu):
            per = 1 / args.pods
            print(
                f"  {'':<10} {1e6 * counts.cpu * per:14.0f}   {counts.writes * per:10.2f}   {counts.reads * per:9.2f}"
            )
        least[name] = 1e6 * min(c.cpu for c in measured[name]) / args.pods
    print("least: " + ", ".join(f"{name} {micros:.0f} µs of server CPU per pod" for name, micros in least.items()))
    if "builtin" in least and len(least) > 1:
        for name, micros in least.items():
            if name != "builtin":
                print(f"  {name} / builtin: {micros / least['builtin']:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
