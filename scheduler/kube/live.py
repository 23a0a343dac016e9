"""The live cluster behind ``serve``: the mirror's informers feeding the store, the real writer, and the Lease elector.

``serve`` picks the mode: ``--snapshot`` is embedded; ``--kubeconfig FILE`` is live from that file; ``--in-cluster``,
or running in a pod (``KUBERNETES_SERVICE_HOST`` set) with neither of the others, is live from the service account.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes.client import ApiClient

from scheduler.kube.connect import load_api_client
from scheduler.kube.lease import LeaseElector
from scheduler.kube.mirror import Mirror, WatchedStore, start_mirror
from scheduler.kube.writer import KubeClusterWriter

__all__ = ["LiveCluster", "connect_live", "default_namespace", "wants_in_cluster"]

log = logging.getLogger(__name__)

_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def wants_in_cluster(*, in_cluster_flag: bool) -> bool:
    """In-cluster config when asked for, or when running in a pod (the API server's address is in the env)."""
    return in_cluster_flag or bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def default_namespace() -> str:
    """Where the Lease lives: the pod's namespace (downward API or service account), else ``default``."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return _SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


@dataclass
class LiveCluster:
    api_client: ApiClient
    writer: KubeClusterWriter
    elector: LeaseElector
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    mirror: Mirror | None = None

    def start(self, store: WatchedStore) -> None:
        """Start watching into ``store`` and campaigning for the Lease."""
        self.mirror = start_mirror(client=self.api_client, store=store, stop=self.stop, on_synced=_freeze_heap)
        self.threads = [*self.mirror.threads, self.elector.start(self.stop)]

    def stale(self) -> str | None:
        """What of the store's view is too old to act on (``Mirror.stale``), if anything."""
        return self.mirror.stale() if self.mirror is not None else None

    def alive(self) -> bool:
        """Every watch (and the elector) still runs: a dead watch would leave the store, and every decision made
        on it, behind the API for good."""
        return bool(self.threads) and not self.stop.is_set() and all(thread.is_alive() for thread in self.threads)

    def close(self, *, timeout: float = 5.0) -> None:
        """Stop the watches, release the Lease (so a standby takes over at once) and close the connections."""
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=timeout)
        self.writer.close()
        self.api_client.close()  # type: ignore[no-untyped-call]


def _freeze_heap() -> None:
    """After the first list the mirror is most of the heap and lives as long as the process: move it out of the
    collector's reach, as snapshot mode does after loading, so a full collection does not re-scan a cluster's
    worth of objects on the hot path. Later changes are new objects, collected as usual."""
    gc.freeze()
    log.info("heap frozen after first sync objects=%d", gc.get_freeze_count())


def connect_live(
    *, kubeconfig: str | None, lease_namespace: str, lease_name: str = "grove-extender", identity: str | None = None
) -> LiveCluster:
    """Connect (raises ``ConnectError`` with what to pass instead) and build the live parts; nothing runs yet."""
    api_client = load_api_client(kubeconfig)
    identity = identity or socket.gethostname()
    log.info("live mode kubeconfig=%s lease=%s/%s identity=%s", kubeconfig or "in-cluster", lease_namespace,
             lease_name, identity)  # fmt: skip
    return LiveCluster(
        api_client=api_client,
        writer=KubeClusterWriter(api_client, instance=identity),
        elector=LeaseElector(api_client, namespace=lease_namespace, name=lease_name, identity=identity),
    )
