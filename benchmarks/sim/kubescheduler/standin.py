"""A kube-scheduler stand-in: the scheduling loop of kube-scheduler v1.36 as far as throughput goes.

One pod at a time (the scheduling cycle is sequential): its own resource-fit filter over every node (the cache
holds each node's allocatable and what its bound and assumed pods use), then either

- with an extender: ``filter`` with every feasible node name (node-names mode, ``percentageOfNodesToScore:
  100``) on one keep-alive connection, ``prioritize`` only if more than one node is left, and ``bind`` sent to
  the extender without waiting (the binding cycle runs beside the next pods);
- alone: its own score (least allocated, as the default profile) and a ``pods/binding`` POST to the API server,
  again without waiting.

The chosen node is *assumed* at once (its capacity taken in the cache), as kube-scheduler does before binding.
A bind answered with an error, or a pod the extender filters out, is forgotten from the cache and retried
through filter after a per-pod back-off of 1 s doubling to 10 s, as kube-scheduler's backoff queue does.

The cache is filled from one list at start and then follows only the stand-in's own decisions: the pods of
other schedulers churn on CPU alone, and decoding the watch stream in Python would slow the baseline that
kube-scheduler's Go informers barely feel, flattering the ratio. One exception, through the extender only: the
extender binds a gang's ready members itself (issue 9) and answers their earlier bind calls ``Error``, so the
stand-in watches its own pods (``spec.schedulerName=grove``) as kube-scheduler's informer does: a pod seen bound
is counted bound then, takes its node's capacity, and leaves the back-off queue instead of coming back through
filter. (Its decoding is the stand-in's CPU, on the extender's side of the ratio: conservative.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from api.quantity import resource_units
from benchmarks.e2e.loopback import Connection, Pool

__all__ = ["Cache", "Outcome", "StandIn", "pod_requests"]

RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "pods")
BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 10.0
API_CONNECTIONS = 16


def pod_requests(pod: dict[str, Any]) -> np.ndarray:
    """cpu (milli), memory (bytes), GPUs and one pod slot: the resources the stand-in's fit filter checks."""
    total = np.zeros(len(RESOURCES), dtype=np.int64)
    for container in pod["spec"].get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        for i, name in enumerate(RESOURCES[:-1]):
            if name in requests:
                total[i] += resource_units(name, requests[name])
    total[-1] = 1
    return total


@dataclass
class Cache:
    names: list[str]
    allocatable: np.ndarray  # [node, resource]
    used: np.ndarray
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {name: i for i, name in enumerate(self.names)}

    @classmethod
    def from_lists(cls, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Cache:
        names = [node["metadata"]["name"] for node in nodes]
        allocatable = np.array(
            [[resource_units(r, node["status"]["allocatable"].get(r, "0")) for r in RESOURCES] for node in nodes],
            dtype=np.int64,
        )
        used = np.zeros_like(allocatable)
        index = {name: i for i, name in enumerate(names)}
        for pod in pods:
            bound = pod["spec"].get("nodeName")
            if bound in index and pod["status"].get("phase") not in ("Succeeded", "Failed"):
                used[index[bound]] += pod_requests(pod)
        return cls(names, allocatable, used)


@dataclass
class _Pending:
    namespace: str
    name: str
    uid: str
    requests: np.ndarray
    wire: bytes  # the Pod as kube-scheduler sends it to an extender (managedFields stripped)
    attempts: int = 0
    node: int | None = None  # the node whose capacity the cache holds for it (assumed, or seen bound)
    bound: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Outcome:
    bound: int = 0
    total: int = 0
    elapsed: float = 0.0
    cpu_seconds: float = 0.0  # the stand-in's own
    bind_errors: int = 0
    filtered_out: int = 0
    cycles: int = 0
    first_errors: list[str] = field(default_factory=list)

    @property
    def pods_per_second(self) -> float:
        return self.bound / self.elapsed if self.elapsed else 0.0


class StandIn:
    def __init__(
        self,
        *,
        cache: Cache,
        pods: list[dict[str, Any]],
        api: tuple[str, int],
        extender: tuple[str, int] | None,
        deadline_seconds: float,
        resource_version: str = "",
        on_bound: Any = None,
    ) -> None:
        self._cache = cache
        self._api = api
        self._extender = extender
        self._deadline = deadline_seconds
        self._resource_version = resource_version  # of the list the cache was filled from: the watch resumes there
        self._on_bound = on_bound
        self._queue: asyncio.Queue[_Pending | None] = asyncio.Queue()
        self._pending = []
        for pod in pods:
            meta = pod["metadata"]
            wire = {**pod, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
            self._pending.append(
                _Pending(
                    meta["namespace"], meta["name"], meta.get("uid", ""), pod_requests(pod), json.dumps(wire).encode()
                )
            )
        self._by_key = {pending.key: pending for pending in self._pending}
        self.outcome = Outcome(total=len(self._pending))
        self._binds: set[asyncio.Task[None]] = set()
        self._last_bound = 0.0

    async def run(self) -> Outcome:
        for pending in self._pending:
            self._queue.put_nowait(pending)
        binds = Pool(*self._extender) if self._extender else Pool(*self._api, limit=API_CONNECTIONS)
        filters = await Connection.open(*self._extender) if self._extender else None
        started, cpu = time.perf_counter(), time.process_time()
        self._last_bound = started
        informer = asyncio.create_task(self._follow_binds()) if self._extender else None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._loop(filters, binds), timeout=self._deadline)
        if informer is not None:
            informer.cancel()
        self.outcome.elapsed = self._last_bound - started
        self.outcome.cpu_seconds = time.process_time() - cpu
        for task in list(self._binds):
            task.cancel()
        if filters is not None:
            filters.close()
        binds.close()
        return self.outcome

    async def _loop(self, filters: Connection | None, binds: Pool) -> None:
        while (pod := await self._queue.get()) is not None:
            if pod.bound:
                continue  # bound by someone else while it waited (the informer saw it): nothing to schedule
            self.outcome.cycles += 1
            fits = np.flatnonzero(np.all(self._cache.used + pod.requests <= self._cache.allocatable, axis=1))
            if not len(fits):
                self._retry(pod, "no node fits")
                continue
            node = await self._extender_choice(filters, pod, fits) if filters is not None else self._best(pod, fits)
            if node is None:
                continue
            self._cache.used[node] += pod.requests  # assume
            pod.node = node
            task = asyncio.create_task(self._bind(binds, pod, node))
            self._binds.add(task)
            task.add_done_callback(self._binds.discard)

    def _best(self, pod: _Pending, fits: np.ndarray) -> int:
        # LeastAllocated over cpu, memory and GPUs, kube-scheduler's default scoring.
        allocatable = np.maximum(self._cache.allocatable[fits, :3], 1)
        free = (allocatable - self._cache.used[fits, :3] - pod.requests[:3]) / allocatable
        return int(fits[int(np.argmax(free.sum(axis=1)))])

    async def _extender_choice(self, filters: Connection, pod: _Pending, fits: np.ndarray) -> int | None:
        names = [self._cache.names[i] for i in fits]
        body = b'{"Pod":' + pod.wire + b',"Nodes":null,"NodeNames":' + json.dumps(names).encode() + b"}"
        status, payload = await filters.request("POST", "/filter", body)
        reply = json.loads(payload) if status == 200 else {"Error": f"HTTP {status}"}
        chosen = reply.get("NodeNames") or []
        if not chosen:
            self.outcome.filtered_out += 1
            reason = reply.get("Error") or next(iter((reply.get("FailedNodes") or {}).values()), "no node")
            self._retry(pod, reason)
            return None
        if len(chosen) > 1:
            body = b'{"Pod":' + pod.wire + b',"Nodes":null,"NodeNames":' + json.dumps(chosen).encode() + b"}"
            _, payload = await filters.request("POST", "/prioritize", body)
            scores = {entry["Host"]: entry["Score"] for entry in json.loads(payload)}
            chosen = sorted(chosen, key=lambda name: -scores.get(name, 0))
        return self._cache.index[chosen[0]]

    async def _bind(self, binds: Pool, pod: _Pending, node: int) -> None:
        name = self._cache.names[node]
        if self._extender is not None:
            body = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": name}
            status, payload = await binds.request("POST", "/bind", json.dumps(body).encode())
            error = (json.loads(payload).get("Error") or "") if status == 200 else f"HTTP {status}"
        else:
            body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod.name, "uid": pod.uid},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": name}}  # fmt: skip
            path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
            status, payload = await binds.request("POST", path, json.dumps(body).encode())
            error = "" if status in (200, 201) else payload.decode(errors="replace")
        if error:
            self.outcome.bind_errors += 1
            if pod.bound:
                return  # the informer already saw the extender bind it
            self._cache.used[node] -= pod.requests  # forget the assumed pod
            pod.node = None
            self._retry(pod, error)
            return
        self._bound(pod)

    def _bound(self, pod: _Pending) -> None:
        if pod.bound:
            return
        pod.bound = True
        self.outcome.bound += 1
        self._last_bound = time.perf_counter()
        if self._on_bound is not None:
            self._on_bound()
        if self.outcome.bound == self.outcome.total:
            self._queue.put_nowait(None)

    def _seen_bound(self, pod: _Pending, node_name: str) -> None:
        """kube-scheduler's informer saw the pod bound: its node holds it, whoever bound it."""
        node = self._cache.index.get(node_name)
        if node is not None and pod.node != node:
            if pod.node is not None:
                self._cache.used[pod.node] -= pod.requests
            self._cache.used[node] += pod.requests
            pod.node = node
        self._bound(pod)

    async def _follow_binds(self) -> None:
        """Watch our pods from the listed resourceVersion; each event is one chunk of the chunked response."""
        host, port = self._api
        reader, writer = await asyncio.open_connection(host, port)
        query = "watch=true&fieldSelector=spec.schedulerName%3Dgrove&timeoutSeconds=3600"
        query += f"&resourceVersion={self._resource_version}"
        try:
            writer.write(f"GET /api/v1/pods?{query} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            while (await reader.readline()) not in (b"\r\n", b""):
                pass  # status line and headers
            while size := int((await reader.readline()).strip() or b"0", 16):
                event = json.loads((await reader.readexactly(size + 2))[:-2])
                obj = event.get("object") or {}
                meta, node_name = obj.get("metadata") or {}, (obj.get("spec") or {}).get("nodeName")
                pod = self._by_key.get(f"{meta.get('namespace')}/{meta.get('name')}")
                if pod is not None and node_name and event.get("type") in ("ADDED", "MODIFIED"):
                    self._seen_bound(pod, node_name)
        finally:
            writer.close()

    def _retry(self, pod: _Pending, reason: str) -> None:
        if len(self.outcome.first_errors) < 3:
            self.outcome.first_errors.append(f"{pod.namespace}/{pod.name}: {reason}")
        pod.attempts += 1
        delay = min(BACKOFF_MAX, BACKOFF_INITIAL * 2 ** (pod.attempts - 1))
        asyncio.get_running_loop().call_later(delay, self._queue.put_nowait, pod)
