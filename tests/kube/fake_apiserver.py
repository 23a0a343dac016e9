"""A small Kubernetes API server for tests: real HTTP on 127.0.0.1, just the endpoints grove-extender uses.

It keeps objects per resource with a global resourceVersion, an event log for watches (chunked
newline-delimited JSON, bookmarks on request, 410 Gone for a resourceVersion older than the last ``compact()``),
paginated lists, the ``pods/binding`` and ``/status`` subresources, optimistic concurrency on PUT, and injected
faults (``fail``) and delays (``delay``). Every request is recorded so tests can check the shapes the real client
sends. Not implemented, on purpose: auth, label selectors, server-side apply, strategic merge patch.
"""

from __future__ import annotations

import copy
import functools
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient

from scheduler.kube.connect import load_api_client
from tests.kube.fake_http import (
    CORE,
    EVENTS,
    KINDS,
    LEASES,
    NODES,
    PODGANGS,
    PODS,
    QuietServer,
    Request,
    handler_for,
    matches,
    status_body,
)

# Tests name resources by these keys ("<apiVersion>/<plural>").
__all__ = ["CORE", "EVENTS", "KINDS", "LEASES", "NODES", "PODGANGS", "PODS", "FakeApiServer", "connected", "running"]


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    reason: str
    message: str
    times: int


@dataclass
class _Entry:
    """One line of the watch log: an object change, a bookmark, or an error for open watches."""

    rv: int
    resource: str
    type: str
    obj: dict[str, Any]


@dataclass
class _State:
    objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(default_factory=dict)
    log: list[_Entry] = field(default_factory=list)
    rv: int = 100
    compacted: int = 0


class FakeApiServer:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._state = _State()
        self._faults: list[_Fault] = []
        self._delays: list[tuple[str, re.Pattern[str], float]] = []
        self._gates: list[tuple[str, re.Pattern[str], threading.Barrier]] = []
        self._closing = False
        self.requests: list[Request] = []
        self._server = QuietServer(("127.0.0.1", 0), handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=functools.partial(self._server.serve_forever, poll_interval=0.05), name="fake-apiserver", daemon=True
        )

    # --- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> FakeApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def write_kubeconfig(self, path: Path) -> Path:
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "test-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }
        path.write_text(yaml.safe_dump(document))
        return path

    # --- data ------------------------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self._cond:
            return self._state.rv

    def put(self, resource: str, obj: dict[str, Any], *, silent: bool = False) -> dict[str, Any]:
        """Create or replace an object (no version check), emitting ADDED or MODIFIED — or, with ``silent``, a
        change no watcher will ever be told about (as if its event was compacted away before delivery)."""
        with self._cond:
            return self._store(resource, copy.deepcopy(obj), silent=silent)

    def get(self, resource: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        with self._cond:
            found = self._state.objects.get(resource, {}).get((namespace, name))
            return copy.deepcopy(found) if found else None

    def objects(self, resource: str) -> list[dict[str, Any]]:
        with self._cond:
            return [copy.deepcopy(o) for o in self._state.objects.get(resource, {}).values()]

    def delete(self, resource: str, name: str, namespace: str = "", *, silent: bool = False) -> None:
        with self._cond:
            self._remove(resource, namespace, name, silent=silent)

    def compact(self) -> None:
        """Forget history: watches from any resourceVersion up to now get 410 Gone."""
        with self._cond:
            self._state.compacted = self._state.rv
            self._state.log = []  # open watches notice the new list and end once they drained the old one

    def expire_watches(self, resource: str) -> None:
        """Send 410 Gone to open watches of ``resource`` and compact, as etcd compaction does."""
        with self._cond:
            self._append(resource, "ERROR", status_body(410, "Expired", "too old resource version"))
            self.compact()

    def bookmark(self, resource: str) -> None:
        with self._cond:
            kind, _ = KINDS[resource]
            meta = {"resourceVersion": str(self._state.rv)}
            self._append(
                resource, "BOOKMARK", {"kind": kind, "apiVersion": resource.rsplit("/", 1)[0], "metadata": meta}
            )

    def fail(self, method: str, path: str, status: int, *, reason: str = "", message: str = "", times: int = 1) -> None:
        """Answer the next ``times`` requests whose path matches the regex ``path`` with an error Status."""
        with self._cond:
            self._faults.append(_Fault(method, re.compile(path), status, reason, message or reason, times))

    def delay(self, method: str, path: str, seconds: float) -> None:
        with self._cond:
            self._delays.append((method, re.compile(path), seconds))

    def requests_to(self, method: str, path: str) -> list[Request]:
        pattern = re.compile(path)
        with self._cond:
            return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    # --- internals (hold self._cond) ---------------------------------------------------------------------------

    def _store(self, resource: str, obj: dict[str, Any], *, silent: bool = False) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        key = (meta.get("namespace", ""), meta["name"])
        bucket = self._state.objects.setdefault(resource, {})
        existed = key in bucket
        self._state.rv += 1
        meta["resourceVersion"] = str(self._state.rv)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        kind, _ = KINDS[resource]
        obj.setdefault("kind", kind)
        obj.setdefault("apiVersion", resource.rsplit("/", 1)[0])
        bucket[key] = obj
        if not silent:
            self._append(resource, "MODIFIED" if existed else "ADDED", obj)
        return copy.deepcopy(obj)

    def _remove(self, resource: str, namespace: str, name: str, *, silent: bool = False) -> dict[str, Any] | None:
        obj = self._state.objects.get(resource, {}).pop((namespace, name), None)
        if obj is not None:
            self._state.rv += 1
            obj["metadata"]["resourceVersion"] = str(self._state.rv)
            if not silent:
                self._append(resource, "DELETED", obj)
        return obj

    def _append(self, resource: str, event_type: str, obj: dict[str, Any]) -> None:
        self._state.log.append(_Entry(self._state.rv, resource, event_type, copy.deepcopy(obj)))
        self._cond.notify_all()

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        for fault in self._faults:
            if fault.method == method and fault.pattern.search(path) and fault.times > 0:
                fault.times -= 1
                return fault
        return None

    def gate(self, method: str, path: str, parties: int) -> None:
        """Hold the next ``parties`` matching requests until all have arrived, then serve them: two clients are
        guaranteed to read the same state before either writes. One-shot."""
        with self._cond:
            self._gates.append((method, re.compile(path), threading.Barrier(parties, timeout=5)))

    def wait_at_gates(self, method: str, path: str) -> None:
        with self._cond:
            gates = [b for m, p, b in self._gates if m == method and p.search(path) and not b.broken]
        for barrier in gates:
            if barrier.wait() == 0:  # one-shot: later requests pass freely
                with self._cond:
                    self._gates = [g for g in self._gates if g[2] is not barrier]

    def _delay_for(self, method: str, path: str) -> float:
        return sum(s for m, p, s in self._delays if m == method and p.search(path))

    # --- watch -------------------------------------------------------------------------------------------------

    def watch_lines(
        self, *, resource: str, since: int, selector: str | None, bookmarks: bool, timeout: float
    ) -> Iterator[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            expired = since < self._state.compacted
            log = self._state.log
            position = next((i for i, e in enumerate(log) if e.rv > since), len(log))
        if expired:
            yield {"type": "ERROR", "object": status_body(410, "Expired", "too old resource version")}
            return
        while True:
            with self._cond:
                pending = log[position:]
                position = len(log)
                if not pending:
                    if log is not self._state.log or self._closing:
                        return
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._cond.wait(min(remaining, 0.2))
                    continue
            for entry in pending:
                if entry.resource != resource:
                    continue
                if entry.type == "ERROR":
                    yield {"type": "ERROR", "object": entry.obj}
                    return
                if entry.type == "BOOKMARK":
                    if bookmarks:
                        yield {"type": "BOOKMARK", "object": entry.obj}
                    continue
                event_type = entry.type if matches(entry.obj, selector) else "DELETED"
                yield {"type": event_type, "object": entry.obj}


@contextmanager
def connected(server: FakeApiServer, directory: Path) -> Iterator[ApiClient]:
    """The real client, configured the way users do it: a kubeconfig file (here pointing at the fake)."""
    client = load_api_client(str(server.write_kubeconfig(directory / "kubeconfig")))
    try:
        yield client
    finally:
        client.close()


@contextmanager
def running(seed: Iterable[tuple[str, dict[str, Any]]] = ()) -> Iterator[FakeApiServer]:
    """A started fake holding ``seed`` (resource, object) pairs; stopped on exit."""
    server = FakeApiServer().start()
    for resource, obj in seed:
        server.put(resource, obj)
    try:
        yield server
    finally:
        server.stop()
