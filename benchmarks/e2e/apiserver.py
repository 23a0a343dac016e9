"""The fake API server (``benchmarks.sim.fakeapi``) as a process of its own, holding a generated cluster and streaming
the watch events a real one would while kube-scheduler works:

- every Node's status heartbeat (each condition's ``lastHeartbeatTime``) every ``--heartbeat-seconds``;
- a kubelet: each pod that gets bound turns Running ``--kubelet-delay`` seconds later (a status MODIFIED);
- pods of other schedulers: ``--other-pods-per-node`` running from the start, and ``--churn`` pods per second
  created, bound by "their" scheduler, run by the kubelet and deleted after ``--churn-lifetime`` seconds;
- history trimmed as etcd compacts, so a long run holds a bounded log (open watches re-watch; none relists).

It prints ``url=<base URL>`` once ready, then ``stats ...`` when its stdin closes (how the bench ends it).

    python -m benchmarks.e2e.apiserver --nodes 1008 --gangs 375
"""

from __future__ import annotations

import argparse
import copy
import heapq
import itertools
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from benchmarks.e2e import objects
from benchmarks.sim.fakeapi import NODES, PODGANGS, PODS, FakeApiServer
from scheduler.kube.memory.resources import StatusError, parse_path

__all__ = ["main"]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Load:
    """The threads that make the cluster move; ``stop`` ends them."""

    def __init__(self, server: FakeApiServer, args: argparse.Namespace, node_names: list[str]) -> None:
        self.server = server
        self.args = args
        self.nodes = node_names
        self.stop = threading.Event()
        self.counts: Counter[str] = Counter()
        self._due: list[tuple[float, int, str, str, str]] = []  # (when, seq, action, namespace, name)
        self._due_lock = threading.Lock()
        self._seq = itertools.count()

    def start(self) -> None:
        since = self.server.resource_version
        for target in (self._heartbeats, self._churn, self._trim, self._timers):
            threading.Thread(target=target, daemon=True).start()
        threading.Thread(target=self._kubelet, args=(since,), daemon=True).start()

    def _later(self, seconds: float, action: str, namespace: str, name: str) -> None:
        with self._due_lock:
            heapq.heappush(self._due, (time.monotonic() + seconds, next(self._seq), action, namespace, name))

    def _heartbeats(self) -> None:
        if not self.nodes or self.args.heartbeat_seconds <= 0:
            return
        interval = self.args.heartbeat_seconds / len(self.nodes)
        store, following = self.server.store, time.monotonic()
        for name in itertools.cycle(self.nodes):
            following += interval
            if self.stop.wait(max(0.0, following - time.monotonic())):
                return
            with store.cond:
                current = store.find(NODES, "", name)
                store.patch(
                    NODES, current, {"status": {"conditions": objects.node_conditions(_now())}}, subresource="status"
                )
            self.counts["node heartbeats"] += 1

    def _kubelet(self, since: int) -> None:
        """Follow pod events as a kubelet would (in process, no HTTP): a pod bound now runs a moment later."""
        store = self.server.store
        while not self.stop.is_set():
            for event in store.watch(resource=PODS, since=since, fields=None, labels=None, bookmarks=False, timeout=5):
                obj = event["object"]
                if event["type"] == "ERROR":  # trimmed past us: carry on from what is left
                    since = store.compacted
                    break
                meta = obj["metadata"]
                since = max(since, int(meta["resourceVersion"]))
                if (
                    event["type"] == "MODIFIED"
                    and obj["spec"].get("nodeName")
                    and obj["status"].get("phase") == "Pending"
                ):
                    self._later(self.args.kubelet_delay, "run", meta["namespace"], meta["name"])
                if self.stop.is_set():
                    return

    def _timers(self) -> None:
        store = self.server.store
        index = itertools.count()
        while not self.stop.wait(0.02):
            now = time.monotonic()
            while True:
                with self._due_lock:
                    if not self._due or self._due[0][0] > now:
                        break
                    _, _, action, namespace, name = heapq.heappop(self._due)
                with store.cond:
                    current = store.objects.get(PODS, {}).get((namespace, name))
                    if current is None:
                        continue
                    if action == "run":
                        status = objects.running_status(current["spec"]["nodeName"], next(index))
                        store.patch(PODS, current, {"status": status}, subresource="status")
                        self.counts["pods run by the kubelet"] += 1
                    else:
                        store.remove(PODS, namespace, name)
                        self.counts["other pods deleted"] += 1

    def _churn(self) -> None:
        """Pods of another scheduler: created, bound at once by it, run, deleted after their lifetime."""
        if self.args.churn <= 0:
            return
        store, interval, following = self.server.store, 1.0 / self.args.churn, time.monotonic()
        for i in itertools.count():
            following += interval
            if self.stop.wait(max(0.0, following - time.monotonic())):
                return
            name = f"web-{i:07d}"
            store.create(
                PODS, "web", objects.pod(name, namespace="web", scheduler="default-scheduler", gpus=0, cpu="1")
            )
            self.server.bind(name, "web", self.nodes[i * 7919 % len(self.nodes)])
            self._later(self.args.churn_lifetime, "delete", "web", name)
            self.counts["other pods created"] += 1

    def _trim(self) -> None:
        """Keep the last ``--history`` events, as etcd compaction does; watches that are caught up just resume."""
        store = self.server.store
        while not self.stop.wait(5.0):
            with store.cond:
                if len(store.log) > self.args.history:
                    store.compact(keep=self.args.history)


def seed(server: FakeApiServer, args: argparse.Namespace) -> list[str]:
    """Put the cluster in place without events (as if it existed before anyone watched)."""
    store = server.store
    names = []
    for i in range(args.nodes):
        node = objects.node(i, gpus=args.gpus_per_node)
        names.append(node["metadata"]["name"])
        store.save(NODES, node, silent=True)
    template = objects.pod("other", namespace="web", scheduler="default-scheduler", gpus=0, cpu="1", phase="Running")
    for i in range(args.nodes * args.other_pods_per_node):
        other = copy.deepcopy(template)
        other["metadata"]["name"] = f"other-{i:07d}"
        other["spec"]["nodeName"] = names[i % len(names)]
        other["status"] = objects.running_status(names[i % len(names)], i)
        store.save(PODS, other, silent=True)
    workload = objects.gang_workload(gangs=args.gangs, pods_per_gang=args.pods_per_gang, gpus_per_pod=args.gpus_per_pod)
    for kind, obj in workload:
        store.save(PODGANGS if kind == "PodGang" else PODS, obj, silent=True)
    return names


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1008)
    parser.add_argument("--gpus-per-node", type=int, default=4)
    parser.add_argument("--gangs", type=int, default=375)
    parser.add_argument("--pods-per-gang", type=int, default=8)
    parser.add_argument("--gpus-per-pod", type=int, default=1)
    parser.add_argument("--other-pods-per-node", type=int, default=4, help="running pods of other schedulers")
    parser.add_argument("--heartbeat-seconds", type=float, default=10.0, help="Node status period per node")
    parser.add_argument("--kubelet-delay", type=float, default=1.0, help="seconds from bind to Running")
    parser.add_argument("--churn", type=float, default=20.0, help="other schedulers' pods created per second")
    parser.add_argument("--churn-lifetime", type=float, default=30.0)
    parser.add_argument("--history", type=int, default=20000, help="watch events kept (etcd compaction)")
    return parser


def run(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    server = FakeApiServer()
    names = seed(server, args)
    server.start()
    load = Load(server, args, names)
    load.start()
    started = server.resource_version
    print(f"url={server.url}", flush=True)
    sys.stdin.read()  # the bench closes our stdin to end the run
    load.stop.set()
    events = server.resource_version - started
    server.stop()
    return {"events": events, **load.counts, **_requests_by_kind(server)}


def _requests_by_kind(server: FakeApiServer) -> Counter[str]:
    """Requests by verb and resource (and subresource; list and watch apart): what the extender's writes and
    watches cost the API server shows as the difference between the two phases."""
    counts: Counter[str] = Counter()
    for request in server.requests:
        try:
            target = parse_path(request.path)
        except StatusError:
            counts[f"{request.method} unknown"] += 1
            continue
        what = target.resource.rsplit("/", 1)[1] + (f"/{target.subresource}" if target.subresource else "")
        if request.method == "GET" and target.name is None:
            what += " watch" if request.query.get("watch") in ("true", "1") else " list"
        counts[f"{request.method} {what}"] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    stats = run(argv)
    print("stats " + " ".join(f"{key.replace(' ', '_')}={value}" for key, value in stats.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
