"""etcd and kube-apiserver on free loopback ports, authentication by tokens and RBAC on.

The admin is a static token in ``system:masters``; the cluster's own kube-scheduler (the *default* profile, for
the preemption scenarios) has a static token as user ``system:kube-scheduler``, as kubeadm's runs with a client
certificate of that name. Every component of ours gets a ServiceAccount token from the TokenRequest API instead
(``tokens``), so only the shipped RBAC allows it anything.
"""

from __future__ import annotations

import secrets
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from benchmarks.controlplane.assets import Assets
from benchmarks.controlplane.pki import ApiServerKeys, write_keys
from benchmarks.controlplane.supervisor import Child, Supervisor
from benchmarks.e2e.processes import free_port

__all__ = ["ApiServer", "free_port", "start_api_server"]

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# Beyond the defaults: OwnerReferencesPermissionEnforcement, which some distributions turn on, is what makes the
# reconciler's `*/finalizers` rule necessary (an owner reference with blockOwnerDeletion needs it).
ADMISSION_PLUGINS = "OwnerReferencesPermissionEnforcement"


@dataclass
class ApiServer:
    url: str
    keys: ApiServerKeys
    admin_token: str
    scheduler_token: str  # user system:kube-scheduler
    etcd: Child
    process: Child
    command: list[str]  # kube-apiserver's, to start it again as it was
    supervisor: Supervisor

    def restart(self, *, kill: bool = True, timeout: float = 120.0) -> float:
        """Stop kube-apiserver (SIGKILL by default) and start it again on the same port and etcd, as a control
        plane's static pod restarts; seconds until it was ready again. Its watch cache starts afresh: a client
        resuming a watch from an older resourceVersion gets 410 Gone and must relist."""
        self.process.stop(kill=kill)
        started = time.monotonic()
        self.process = self.supervisor.start("kube-apiserver", self.command)
        _wait_ready(self, timeout)
        return time.monotonic() - started


def _ready(url: str, token: str, ca: Path) -> bool:
    request = urllib.request.Request(f"{url}/readyz", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5, context=ssl.create_default_context(cafile=str(ca))) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_api_server(assets: Assets, supervisor: Supervisor, *, timeout: float = 120.0) -> ApiServer:
    folder = supervisor.folder
    keys = write_keys(folder)
    client_port, peer_port, secure_port = free_port(), free_port(), free_port()
    etcd = supervisor.start(
        "etcd",
        [assets["etcd"], "--data-dir", str(folder / "etcd"),
         "--listen-client-urls", f"http://127.0.0.1:{client_port}",
         "--advertise-client-urls", f"http://127.0.0.1:{client_port}",
         "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
         "--initial-cluster", f"default=http://127.0.0.1:{peer_port}",
         "--quota-backend-bytes", str(4 * 2**30), "--log-level", "warn"],
    )  # fmt: skip
    admin_token, scheduler_token = secrets.token_hex(16), secrets.token_hex(16)
    tokens = folder / "tokens.csv"
    tokens.write_text(
        f'{admin_token},admin,admin,"system:masters"\n{scheduler_token},system:kube-scheduler,kube-scheduler\n'
    )
    tokens.chmod(0o600)
    # --profiling: admin-only /debug/pprof, for bench_e2e --grove-flow's profile of the API server.
    command = [assets["kube-apiserver"], f"--etcd-servers=http://127.0.0.1:{client_port}",
         "--bind-address=127.0.0.1", f"--secure-port={secure_port}",
         f"--tls-cert-file={keys.serving_cert}", f"--tls-private-key-file={keys.serving_key}",
         f"--client-ca-file={keys.ca}",
         f"--service-account-key-file={keys.service_account_key}",
         f"--service-account-signing-key-file={keys.service_account_key}",
         f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
         "--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=Node,RBAC",
         f"--token-auth-file={tokens}", f"--enable-admission-plugins={ADMISSION_PLUGINS}",
         "--profiling=true", "--v=1"]  # fmt: skip
    process = supervisor.start("kube-apiserver", command)
    server = ApiServer(
        f"https://127.0.0.1:{secure_port}", keys, admin_token, scheduler_token, etcd, process, command, supervisor
    )
    _wait_ready(server, timeout)
    return server


def _wait_ready(server: ApiServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not _ready(server.url, server.admin_token, server.keys.ca):
        for child in (server.etcd, server.process):
            if not child.alive():
                raise RuntimeError(f"{child.name} exited with {child.process.returncode}; see {child.log}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"kube-apiserver not ready within {timeout:g} s; see {server.process.log}")
        time.sleep(0.5)
