"""kube-scheduler in real time over HTTP, for the end-to-end bench: the one model (``scheduler``: its queue, backoff
and assume cache) on a real event loop, as fast as it goes, with transports that speak HTTP.

- With an extender: ``filter`` with every feasible node name (node-names mode, ``percentageOfNodesToScore:
  100``) on one keep-alive connection, ``prioritize`` only if more than one node is left, and ``bind`` from the
  binding cycles, beside the next pods (``HttpExtender``).
- Alone: its own score (least allocated, as the default profile) and a ``pods/binding`` POST to the API server
  (``ApiBinder``).

The informer (``HttpInformer``) lists Nodes and Pods once at start and then follows only the stand-in's own pods:
the pods of other schedulers churn on CPU alone, and decoding the watch stream in Python would slow the baseline
that kube-scheduler's Go informers barely feel, flattering the ratio. One exception, through the extender only: the
extender binds a gang's ready members itself (issue 9) and answers their earlier bind calls ``Error``, so the
stand-in watches its own pods (``spec.schedulerName=grove``) as kube-scheduler's informer does: a pod seen bound
is counted bound then, takes its node's capacity, and leaves the back-off queue instead of coming back through
filter. (Its decoding is the stand-in's CPU, on the extender's side of the ratio: conservative.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from api.core import Node, Pod
from api.extender import ExtenderBindingResult, ExtenderFilterResult, HostPriority, HostPriorityList
from benchmarks.e2e.loopback import Connection, Pool
from benchmarks.sim.kubescheduler.scheduler import SCHEDULER_NAME, ExtenderDown, KubeScheduler, PodInfo

__all__ = ["ApiBinder", "HttpExtender", "HttpInformer", "StandIn", "StandInOutcome"]

API_CONNECTIONS = 16
_DOWN = (OSError, asyncio.IncompleteReadError)  # refused, reset, cut mid-answer: kube-scheduler sees an error


def _key(raw: dict[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


class HttpInformer:
    """Nodes and Pods from one list (parsed here, before the clock starts), then the stand-in's own pods' watch."""

    def __init__(self, *, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], resource_version: str) -> None:
        self._resource_version = resource_version  # of the pod list: the watch resumes there
        self._nodes = [(node["metadata"]["name"], Node.model_validate(node).allocatable()) for node in nodes]
        self._pods: dict[str, PodInfo] = {}
        self.wire: dict[str, bytes] = {}  # the stand-in's pods as kube-scheduler sends them (managedFields stripped)
        for raw in pods:
            self._add(raw)

    def pod(self, key: str) -> PodInfo | None:
        return self._pods.get(key)

    def pending(self) -> list[str]:
        """Our pods the scheduler has to place: unbound, ungated, not finished."""
        return [
            key
            for key, pod in self._pods.items()
            if pod.scheduler == SCHEDULER_NAME and not pod.node and not pod.gated and not pod.terminal
        ]

    def start(self, scheduler: KubeScheduler) -> None:
        for name, allocatable in self._nodes:
            scheduler.node_changed(name, allocatable)
        for pod in self._pods.values():
            scheduler.pod_changed("ADDED", pod)
        scheduler.start()

    async def follow(self, api: tuple[str, int], scheduler: KubeScheduler) -> None:
        """Watch our pods from the listed resourceVersion; each event is one chunk of the chunked response."""
        host, port = api
        reader, writer = await asyncio.open_connection(host, port)
        query = f"watch=true&fieldSelector=spec.schedulerName%3D{SCHEDULER_NAME}&timeoutSeconds=3600"
        query += f"&resourceVersion={self._resource_version}"
        try:
            writer.write(f"GET /api/v1/pods?{query} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            while (await reader.readline()) not in (b"\r\n", b""):
                pass  # status line and headers
            while size := int((await reader.readline()).strip() or b"0", 16):
                event = json.loads((await reader.readexactly(size + 2))[:-2])
                self._changed(event.get("type"), event.get("object") or {}, scheduler)
        finally:
            writer.close()

    def _changed(self, event_type: str, raw: dict[str, Any], scheduler: KubeScheduler) -> None:
        key = _key(raw)
        if event_type == "DELETED":
            gone = self._pods.pop(key, None)
            if gone is not None:
                scheduler.pod_changed("DELETED", gone)
            return
        if event_type not in ("ADDED", "MODIFIED"):
            return  # a bookmark or an error: nothing of ours changed
        known = self._pods.get(key)
        meta = raw.get("metadata") or {}
        if known is None or known.uid != meta.get("uid"):
            pod = self._add(raw)
        else:  # decoded once at the list: a binding or a status change moves only these
            node = (raw.get("spec") or {}).get("nodeName") or ""
            phase = (raw.get("status") or {}).get("phase")
            pod = dataclasses.replace(
                known, version=meta.get("resourceVersion", ""), node=node, terminal=phase in ("Succeeded", "Failed")
            )
            self._pods[key] = pod
        scheduler.pod_changed("ADDED" if known is None else "MODIFIED", pod)

    def _add(self, raw: dict[str, Any]) -> PodInfo:
        pod = self._pods[_key(raw)] = PodInfo.of(Pod.model_validate(raw))
        if pod.scheduler == SCHEDULER_NAME:
            meta = {k: v for k, v in raw["metadata"].items() if k != "managedFields"}
            self.wire[pod.key] = json.dumps({**raw, "metadata": meta}).encode()
        return pod


class HttpExtender:
    """kube-scheduler's calls to the extender over HTTP/1.1: filter and prioritize on one kept-alive connection
    (the scheduling cycle is sequential), binds on a pool (binding cycles run side by side)."""

    def __init__(self, address: tuple[str, int], *, wire: dict[str, bytes]) -> None:
        self._address = address
        self._wire = wire
        self._calls: Connection | None = None
        self._binds = Pool(*address)

    async def open(self) -> None:
        self._calls = await Connection.open(*self._address)

    def close(self) -> None:
        if self._calls is not None:
            self._calls.close()
        self._binds.close()

    async def filter(self, pod: PodInfo, nodes: list[str]) -> ExtenderFilterResult:
        status, payload = await self._call("/filter", self._args(pod, nodes))
        if status != 200:
            return ExtenderFilterResult(Error=f"HTTP {status}")
        return ExtenderFilterResult.model_validate_json(payload)

    async def prioritize(self, pod: PodInfo, nodes: list[str]) -> Sequence[HostPriority]:
        status, payload = await self._call("/prioritize", self._args(pod, nodes))
        return HostPriorityList.model_validate_json(payload).root if status == 200 else []

    async def bind(self, pod: PodInfo, node: str) -> ExtenderBindingResult:
        body = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node}
        try:
            status, payload = await self._binds.request("POST", "/bind", json.dumps(body).encode())
        except _DOWN as err:
            raise ExtenderDown(str(err)) from err
        if status != 200:
            return ExtenderBindingResult(Error=f"HTTP {status}")
        return ExtenderBindingResult.model_validate_json(payload)

    def _args(self, pod: PodInfo, nodes: list[str]) -> bytes:
        wire = self._wire.get(pod.key)
        if wire is None:  # a pod the informer never saw whole: name it, as a PodRef does
            wire = json.dumps({"metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}}).encode()
        return b'{"Pod":' + wire + b',"Nodes":null,"NodeNames":' + json.dumps(nodes).encode() + b"}"

    async def _call(self, path: str, body: bytes) -> tuple[int, bytes]:
        assert self._calls is not None, "open() first"
        try:
            return await self._calls.request("POST", path, body)
        except _DOWN as err:
            raise ExtenderDown(str(err)) from err


class ApiBinder:
    """The default binder: ``pods/binding`` to the API server, over a few connections (kube-scheduler's share one
    HTTP/2 connection, which a small pool stands in for)."""

    def __init__(self, address: tuple[str, int]) -> None:
        self._pool = Pool(*address, limit=API_CONNECTIONS)

    def close(self) -> None:
        self._pool.close()

    async def bind(self, pod: PodInfo, node: str) -> str:
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod.name, "uid": pod.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
        status, payload = await self._pool.request("POST", path, json.dumps(body).encode())
        return "" if status in (200, 201) else payload.decode(errors="replace")


@dataclass
class StandInOutcome:
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
    """Schedules every pending pod of ours in ``pods`` (a list of the cluster's Pods, at ``resource_version``) onto
    ``nodes``, through the extender at ``extender`` or alone, binding through the API server at ``api``; ends when
    all are bound or after ``deadline_seconds``. ``on_bound``, when set, hears of each pod bound."""

    def __init__(
        self,
        *,
        nodes: list[dict[str, Any]],
        pods: list[dict[str, Any]],
        api: tuple[str, int],
        extender: tuple[str, int] | None,
        deadline_seconds: float,
        resource_version: str = "",
    ) -> None:
        self._informer = HttpInformer(nodes=nodes, pods=pods, resource_version=resource_version)
        self._api = api
        self._extender = extender
        self._deadline = deadline_seconds
        self.on_bound: Callable[[], None] | None = None
        self._pending = set(self._informer.pending())
        self.outcome = StandInOutcome(total=len(self._pending))
        self._all_bound = asyncio.Event()
        self._last_bound = 0.0

    async def run(self) -> StandInOutcome:
        extender = HttpExtender(self._extender, wire=self._informer.wire) if self._extender else None
        binder = None if extender else ApiBinder(self._api)
        if extender is not None:
            await extender.open()
        scheduler = KubeScheduler(
            lister=self._informer, extender=extender, binder=binder, cycle_seconds=0.0, on_bound=self._bound
        )
        started, cpu = time.perf_counter(), time.process_time()
        self._last_bound = started
        self._informer.start(scheduler)
        if not self._pending:
            self._all_bound.set()
        follower = asyncio.create_task(self._informer.follow(self._api, scheduler)) if extender else None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._all_bound.wait(), timeout=self._deadline)
        scheduler.stop()
        if follower is not None:
            follower.cancel()
        self.outcome.elapsed = self._last_bound - started
        self.outcome.cpu_seconds = time.process_time() - cpu
        stats = scheduler.stats
        self.outcome.bind_errors = stats.bind_errors
        self.outcome.filtered_out = stats.filter_errors + stats.filter_refusals
        self.outcome.cycles = stats.cycles
        self.outcome.first_errors = list(stats.first_errors)
        for transport in (extender, binder):
            if transport is not None:
                transport.close()
        return self.outcome

    def _bound(self, key: str) -> None:
        if key not in self._pending:
            return  # bound before we listed it
        self._pending.discard(key)
        self.outcome.bound += 1
        self._last_bound = time.perf_counter()
        if self.on_bound is not None:
            self.on_bound()
        if not self._pending:
            self._all_bound.set()
