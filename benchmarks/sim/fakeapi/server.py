"""The fake Kubernetes API server tests start: real HTTP on 127.0.0.1 over ``Store``, plus what tests steer.

Tests seed and inspect state directly (``put``, ``apply``, ``get``, ``objects``, ``delete``), make history vanish
(``compact``, ``expire_watches``, ``bookmark``), inject faults (``fail``, ``drop``), latency (``delay``) and races
(``gate``), and read every request back (``requests``, ``requests_to``). Serves HTTPS when given a server
``ssl.SSLContext`` (``running(tls=...)``). Not implemented, on purpose: auth (tokens are only recorded), server-side
apply, strategic merge and JSON patch.
"""

from __future__ import annotations

import copy
import functools
import re
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient

from benchmarks.sim.fakeapi.http import Dropped, QuietServer, Request, Throttled, handler_for
from scheduler.kube.connect import load_api_client
from scheduler.kube.memory.resources import StatusError
from scheduler.kube.memory.store import Store

__all__ = ["FakeApiServer", "connected", "running"]

GATE_SECONDS = 60.0
"""How long a gate holds requests for the other parties: it waits for something that will happen, so it is long
enough that a loaded machine never breaks it; reaching it means the test hung."""


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    reason: str
    message: str
    times: int


@dataclass
class _Gate:
    method: str
    pattern: re.Pattern[str]
    barrier: threading.Barrier
    taken: int = 0


class FakeApiServer:
    def __init__(self, *, tls: ssl.SSLContext | None = None) -> None:
        self.store = Store()
        self._faults: list[_Fault] = []
        self._drops: list[tuple[str, re.Pattern[str]]] = []
        self._throttles: list[list[Any]] = []  # [method, pattern, Retry-After, times left]
        self._delays: list[tuple[str, re.Pattern[str], float]] = []
        self._gates: list[_Gate] = []
        self.requests: list[Request] = []
        self._server = QuietServer(("127.0.0.1", 0), handler_for(self))
        self.tls = tls is not None
        if tls is not None:  # the handshake runs as each connection is accepted
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=functools.partial(self._server.serve_forever, poll_interval=0.05), name="fake-apiserver", daemon=True
        )

    # --- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> FakeApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """End open watches and stop serving; safe on a server that never started (its port is just closed)."""
        with self.store.cond:
            self.store.closing = True
            self.store.cond.notify_all()
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=60)
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host!s}:{port}"

    def write_kubeconfig(
        self, path: Path, *, token: str = "test-token", ca: Path | None = None, server: str | None = None
    ) -> Path:
        """A kubeconfig for this server (or ``server``, a URL), trusting the CA certificate ``ca`` when given."""
        cluster: dict[str, Any] = {"server": server or self.url}
        if ca is not None:
            cluster["certificate-authority"] = str(ca)
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": cluster}],
            "users": [{"name": "fake", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }
        path.write_text(yaml.safe_dump(document))
        return path

    # --- data ------------------------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self.store.cond:
            return self.store.rv

    def put(self, resource: str, obj: dict[str, Any], *, silent: bool = False) -> dict[str, Any]:
        """Create or replace an object whole (no version check), emitting ADDED or MODIFIED — or, with ``silent``,
        a change no watcher will ever be told about (as if its event was compacted away before delivery)."""
        return copy.deepcopy(self.store.save(resource, copy.deepcopy(obj), silent=silent))

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``kubectl apply`` of a manifest (resource from its apiVersion and kind): status is kept."""
        return copy.deepcopy(self.store.apply(obj))

    def get(self, resource: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        with self.store.cond:
            found = self.store.objects.get(resource, {}).get((namespace, name))
            return copy.deepcopy(found) if found else None

    def objects(self, resource: str) -> list[dict[str, Any]]:
        with self.store.cond:
            return [copy.deepcopy(o) for _, o in sorted(self.store.objects.get(resource, {}).items())]

    def delete(self, resource: str, name: str, namespace: str = "", *, silent: bool = False) -> None:
        self.store.remove(resource, namespace, name, silent=silent)

    def bind(self, name: str, namespace: str, node: str) -> None:
        """What kube-scheduler's binding does (``pods/binding``), with the API server's refusals."""
        with self.store.cond:
            self.store.bind(
                self.store.find("v1/pods", namespace, name),
                {"kind": "Binding", "target": {"kind": "Node", "name": node}},
            )

    def compact(self) -> None:
        """Forget history: watches from any resourceVersion up to now get 410 Gone."""
        self.store.compact()

    def expire_watches(self, resource: str) -> None:
        """Send 410 Gone to open watches of ``resource`` and compact, as etcd compaction does."""
        with self.store.cond:
            self.store.expire(resource)
            self.compact()

    def bookmark(self, resource: str) -> None:
        self.store.bookmark(resource)

    # --- steering ------------------------------------------------------------------------------------------------

    def fail(self, method: str, path: str, status: int, *, reason: str = "", message: str = "", times: int = 1) -> None:
        """Answer the next ``times`` requests whose path matches the regex ``path`` with an error Status."""
        with self.store.cond:
            self._faults.append(_Fault(method, re.compile(path), status, reason, message or reason, times))

    def throttle(self, method: str, path: str, *, retry_after: int = 1, times: int = 1) -> None:
        """Turn away the next ``times`` requests whose path matches ``path`` as a full priority level does (429 with
        a ``Retry-After``), before they are read."""
        with self.store.cond:
            self._throttles.append([method, re.compile(path), retry_after, times])

    def drop(self, method: str, path: str) -> None:
        """Reset the connection of the next request whose path matches ``path`` instead of answering it."""
        with self.store.cond:
            self._drops.append((method, re.compile(path)))

    def delay(self, method: str, path: str, seconds: float) -> None:
        with self.store.cond:
            self._delays.append((method, re.compile(path), seconds))

    def gate(self, method: str, path: str, parties: int) -> None:
        """Hold the answers to the next ``parties`` matching requests until all of them have been handled, then send
        them: two clients are guaranteed to read the same state before either can write. One-shot. The wait is long
        (``GATE_SECONDS``): the other parties will come, however loaded the machine is."""
        with self.store.cond:
            self._gates.append(_Gate(method, re.compile(path), threading.Barrier(parties, timeout=GATE_SECONDS)))

    def requests_to(self, method: str, path: str) -> list[Request]:
        pattern = re.compile(path)
        with self.store.cond:
            return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    def before(self, request: Request) -> list[threading.Barrier]:
        """Called by the handler for every request: log it, apply any delay and fault that matches, and return the
        gates it must pass (``pass_gates``) once its answer is ready and before it is sent."""
        method, path = request.method, request.path
        with self.store.cond:
            self.requests.append(request)
            fault = next((f for f in self._faults if f.method == method and f.pattern.search(path) and f.times), None)
            if fault is not None:
                fault.times -= 1
            throttled = next((t for t in self._throttles if t[0] == method and t[1].search(path) and t[3]), None)
            if throttled is not None:
                throttled[3] -= 1
                raise Throttled(throttled[2])
            drop = next((d for d in self._drops if d[0] == method and d[1].search(path)), None)
            if drop is not None:
                self._drops.remove(drop)
            pause = sum(s for m, p, s in self._delays if m == method and p.search(path))
            gates = [g for g in self._gates if g.method == method and g.pattern.search(path)]
            for gate in gates:
                gate.taken += 1
            # One-shot: the first ``parties`` requests take the gate; later ones pass freely.
            self._gates = [g for g in self._gates if g.taken < g.barrier.parties]
        if pause:
            time.sleep(pause)
        if drop is not None:
            raise Dropped(path)
        if fault is not None:
            raise StatusError(fault.status, fault.reason, fault.message)
        return [gate.barrier for gate in gates]

    @staticmethod
    def pass_gates(gates: list[threading.Barrier]) -> None:
        for barrier in gates:
            barrier.wait()


@contextmanager
def connected(server: FakeApiServer, directory: Path) -> Iterator[ApiClient]:
    """The real client, configured the way users do it: a kubeconfig file (here pointing at the fake)."""
    client = load_api_client(str(server.write_kubeconfig(directory / "kubeconfig")))
    try:
        yield client
    finally:
        client.close()


@contextmanager
def running(
    seed: Iterable[tuple[str, dict[str, Any]]] = (), *, tls: ssl.SSLContext | None = None
) -> Iterator[FakeApiServer]:
    """A started fake holding ``seed`` (resource, object) pairs, over HTTPS with ``tls``; stopped on exit."""
    server = FakeApiServer(tls=tls).start()
    for resource, obj in seed:
        server.put(resource, obj)
    try:
        yield server
    finally:
        server.stop()
