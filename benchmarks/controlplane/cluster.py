"""``ControlPlane``: etcd, kube-apiserver, the ``standalone`` overlay installed as a user installs it, fake GPU
nodes, a kubelet stand-in, and the product's three processes run as their installed ServiceAccounts and
Deployments — started in that order, stopped by PID.

    with ControlPlane.start(assets, folder, nodes=gpu_nodes(1008)) as cp:
        cp.kubectl("get", "nodes")

Components can be restarted (``restart_extender(kill=True)`` is a SIGKILL and a new process with the same
identity, as a container restart), run with other flags (``bench_e2e --real``), or left out (``components=False``).
Logs: ``<folder>/<component>.log``, a restart's ``<component>.2.log``.
"""

from __future__ import annotations

import json
import logging
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchmarks.controlplane import components
from benchmarks.controlplane.apiserver import ApiServer, start_api_server
from benchmarks.controlplane.assets import Assets
from benchmarks.controlplane.collector import GarbageCollector
from benchmarks.controlplane.disruption import DisruptionController
from benchmarks.controlplane.install import NAMESPACE, grove_extender, install, secret_files
from benchmarks.controlplane.kubectl import Kubectl
from benchmarks.controlplane.kubelet import Kubelet
from benchmarks.controlplane.nodes import NodeSpec, create_nodes
from benchmarks.controlplane.rest import Api
from benchmarks.controlplane.supervisor import Child, Supervisor
from benchmarks.controlplane.token_controller import TokenController
from benchmarks.controlplane.tokens import request_token, write_kubeconfig
from benchmarks.e2e.processes import free_port

__all__ = ["ControlPlane", "Extender"]

log = logging.getLogger(__name__)

EXTENDER_IDENTITY = "grove-extender-e2e-0"  # one pod's name: a restart of its container keeps it
SCHEDULER_ACCOUNT = "grove-scheduler"


@dataclass
class Extender:
    child: Child
    ports: components.ExtenderPorts

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.ports.verbs}"

    def get(self, path: str, *, port: str = "debug") -> tuple[int, bytes]:
        """GET on the probe or debug port (plain HTTP on loopback)."""
        number = self.ports.debug if port == "debug" else self.ports.probes
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{number}{path}", timeout=10) as reply:
                return int(reply.status), bytes(reply.read())
        except urllib.error.HTTPError as err:
            return int(err.code), bytes(err.read())

    def metrics(self) -> str:
        status, body = self.get("/metrics")
        if status != 200:
            raise RuntimeError(f"extender /metrics answered {status}")
        return body.decode()

    def gangs(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = json.loads(self.get("/debug/gangs")[1])["gangs"]
        return found


@dataclass
class ControlPlane:
    assets: Assets
    folder: Path
    supervisor: Supervisor
    server: ApiServer
    api: Api
    kubectl: Kubectl
    kubelet: Kubelet | None = None
    collector: GarbageCollector | None = None
    token_controller: TokenController | None = None
    disruption: DisruptionController | None = None
    extender: Extender | None = None
    reconciler: Child | None = None
    reconciler_probe_port: int = 0
    scheduler: Child | None = None
    default_scheduler: Child | None = None
    kubeconfigs: dict[str, Path] = field(default_factory=dict)
    installed: Path | None = None  # the kustomization applied (``kubectl delete -k`` of it uninstalls)

    # --- start and stop -------------------------------------------------------------------------------------------

    @classmethod
    @contextmanager
    def start(
        cls,
        assets: Assets,
        folder: Path,
        *,
        nodes: Sequence[NodeSpec] = (),
        components: bool = True,
        agents: bool = True,
        installed: bool = True,
    ) -> Iterator[ControlPlane]:
        """Everything up (components after the nodes exist); everything stopped on leaving, also on failure.
        ``agents``: the kubelet, garbage-collector, token-controller and disruption-controller stand-ins.
        ``installed=False``: no install and no components (a test then calls ``install`` and starts them itself)."""
        folder.mkdir(parents=True, exist_ok=True)
        supervisor = Supervisor(folder)
        api: Api | None = None
        plane: ControlPlane | None = None
        try:
            server = start_api_server(assets, supervisor)
            api = Api(server.url, token=server.admin_token, ca=server.keys.ca)
            admin = write_kubeconfig(
                folder / "admin.kubeconfig", server=server.url, ca=server.keys.ca, token=server.admin_token,
                user="admin",
            )  # fmt: skip
            plane = cls(assets, folder, supervisor, server, api, Kubectl(assets["kubectl"], admin))
            plane.kubeconfigs["admin"] = admin
            plane.ensure_namespace("default")
            if installed:
                plane.install()
            started = time.monotonic()
            create_nodes(api, nodes)
            log.info("created %d nodes in %.1f s", len(nodes), time.monotonic() - started)
            if agents:
                plane.kubelet = Kubelet(api, folder=folder, start_initc=plane._start_initc)
                plane.collector = GarbageCollector(api)
                plane.token_controller = TokenController(api, signing_key=server.keys.service_account_key)
                plane.disruption = DisruptionController(api)
                for stand_in in (plane.kubelet, plane.collector, plane.token_controller, plane.disruption):
                    stand_in.start()
            if components and installed:
                plane.start_extender()
                plane.start_reconciler(wait=True)
                plane.start_scheduler()
            yield plane
        finally:
            stand_ins = (plane.kubelet, plane.collector, plane.token_controller, plane.disruption) if plane else ()
            for agent in stand_ins:
                if agent is not None:
                    agent.stop()
            supervisor.stop_all()
            if api is not None:
                api.close()

    def install(self) -> None:
        """As the README's install section: ``kubectl apply -k`` of a kustomization naming the overlay, then
        ``grove-extender certs --apply``; the two Secrets then copied to files, as their volumes mount them."""
        self.installed = install(self.kubectl, self.folder / "install")
        secret_files(self.kubectl, "grove-extender-tls", self.folder / "extender-tls")
        secret_files(self.kubectl, "grove-scheduler-extender-client", self.folder / "scheduler-client")

    def installed_object(self, kind: str, name: str) -> dict[str, Any]:
        """A Deployment or ConfigMap of ``grove-system`` as the API server holds it: what a pod would run."""
        found: dict[str, Any] = self.kubectl.json("-n", NAMESPACE, "get", kind, name)
        return found

    # --- identities -----------------------------------------------------------------------------------------------

    def account_kubeconfig(self, account: str, *, namespace: str = NAMESPACE, server: str | None = None) -> Path:
        """A kubeconfig holding a fresh TokenRequest token of ServiceAccount ``namespace/account``, for the API server
        at ``server`` (a proxy in front of it; its own address unless given)."""
        token = request_token(self.api, namespace=namespace, account=account)
        suffix = "" if server is None else f".via-{server.rsplit(':', 1)[-1]}"
        path = self.folder / f"{namespace}.{account}{suffix}.kubeconfig"
        user = f"system:serviceaccount:{namespace}:{account}"
        written = write_kubeconfig(
            path, server=server or self.server.url, ca=self.server.keys.ca, token=token, user=user
        )
        if server is None:
            self.kubeconfigs[account] = written
        return path

    def ensure_namespace(self, name: str, *, labels: Mapping[str, str] | None = None) -> None:
        """Namespace ``name`` with its ``default`` ServiceAccount, which kube-controller-manager would create (and
        without which the ServiceAccount admission plugin refuses every pod)."""
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}
        if self.api.find(f"/api/v1/namespaces/{name}") is None:
            self.api.create("/api/v1/namespaces", body)
        elif labels:
            self.api.merge(f"/api/v1/namespaces/{name}", {"metadata": {"labels": dict(labels)}})
        if self.api.find(f"/api/v1/namespaces/{name}/serviceaccounts/default") is None:
            sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}}
            self.api.create(f"/api/v1/namespaces/{name}/serviceaccounts", sa)

    # --- the product's processes ----------------------------------------------------------------------------------

    def start_extender(
        self, *, extra: tuple[str, ...] = (), wait: bool = True, ports: components.ExtenderPorts | None = None
    ) -> Extender:
        """``grove-extender serve`` as the Deployment runs it, as ServiceAccount ``grove-extender``; ``extra`` flags
        appended; ``ports`` to keep a former process's (kube-scheduler's configuration names the verbs' port)."""
        self.extender = self.extender_replica(EXTENDER_IDENTITY, ports=ports, extra=extra)
        if wait:
            self.wait_extender_ready()
        return self.extender

    def extender_replica(
        self,
        identity: str,
        *,
        ports: components.ExtenderPorts | None = None,
        extra: tuple[str, ...] = (),
        api_server: str | None = None,
        name: str = "extender",
    ) -> Extender:
        """One ``serve`` process as one replica of the Deployment runs it (``identity``: its pod's name, which it
        holds the Lease as), reaching the API server at ``api_server`` (a proxy; its own address unless given); its
        log is ``name``.log. ``start_extender`` starts the one the harness keeps; a scenario may start more."""
        kubeconfig = self.account_kubeconfig("grove-extender", server=api_server)
        ports = ports or components.ExtenderPorts(free_port(), free_port(), free_port())
        argv = components.extender_argv(
            grove_extender(), deployment=self.installed_object("deployment", "grove-extender"), kubeconfig=kubeconfig,
            tls=self.folder / "extender-tls", ports=ports, identity=identity, extra=extra,
        )  # fmt: skip
        return Extender(self.supervisor.start(name, argv), ports)

    def restart_extender(self, *, kill: bool = True, extra: tuple[str, ...] = (), wait: bool = True) -> Extender:
        """Stop the extender (SIGKILL by default) and start it again on the same ports, with the same identity."""
        assert self.extender is not None
        self.extender.child.stop(kill=kill)
        return self.start_extender(extra=extra, wait=wait, ports=self.extender.ports)

    def wait_extender_ready(self, *, timeout: float = 120.0, replica: Extender | None = None) -> None:
        """Until ``/readyz`` answers 200 (watches synced and the Lease held), of ``replica`` or the one kept."""
        extender = replica or self.extender
        assert extender is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not extender.child.alive():
                raise RuntimeError(f"the extender exited; see {extender.child.log}")
            try:
                if extender.get("/readyz", port="probes")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the extender was not ready within {timeout:g} s; see {extender.child.log}")

    def start_reconciler(self, *, extra: tuple[str, ...] = (), wait: bool = False) -> Child:
        """``grove-extender reconcile`` as the Deployment runs it, as ServiceAccount ``grove-reconciler``; ``extra``
        flags appended (``--mnnvl`` or ``--namespace`` for a test that changes its rights). ``wait``: until its
        ``/readyz`` answers 200 (every informer listed once)."""
        kubeconfig = self.account_kubeconfig("grove-reconciler")
        deployment = self.installed_object("deployment", "grove-reconciler")
        self.reconciler_probe_port = port = free_port()
        argv = components.reconciler_argv(
            grove_extender(), deployment=deployment, kubeconfig=kubeconfig, probe_port=port
        )
        self.reconciler = self.supervisor.start("reconciler", [*argv, *extra])
        if wait:
            self.wait_reconciler_ready()
        return self.reconciler

    def reconciler_probe(self, path: str) -> tuple[int, str]:
        """GET ``/healthz`` or ``/readyz`` on the reconciler's probe port: (status, body)."""
        try:
            url = f"http://127.0.0.1:{self.reconciler_probe_port}{path}"
            with urllib.request.urlopen(url, timeout=5) as reply:
                return int(reply.status), reply.read().decode()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode()

    def wait_reconciler_ready(self, *, timeout: float = 60.0) -> None:
        assert self.reconciler is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.reconciler.alive():
                raise RuntimeError(f"the reconciler exited; see {self.reconciler.log}")
            try:
                if self.reconciler_probe("/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the reconciler was not ready within {timeout:g} s; see {self.reconciler.log}")

    def restart_reconciler(self) -> Child:
        assert self.reconciler is not None
        self.reconciler.stop(kill=True)
        return self.start_reconciler()

    def start_scheduler(
        self, *, overrides: Mapping[str, Any] | None = None, name: str = "kube-scheduler", wait: bool = True
    ) -> Child:
        """kube-scheduler as ``grove-scheduler`` with the shipped profile, calling the extender over mTLS."""
        assert self.extender is not None
        kubeconfig = self.account_kubeconfig(SCHEDULER_ACCOUNT)
        config = components.grove_scheduler_config(
            config_map=self.installed_object("configmap", "grove-scheduler-config"),
            deployment=self.installed_object("deployment", "grove-scheduler"), kubeconfig=kubeconfig,
            extender_url=self.extender.url, client=self.folder / "scheduler-client", overrides=overrides,
        )  # fmt: skip
        self.scheduler = self._start_scheduler(name, config, wait=wait)
        return self.scheduler

    def restart_scheduler(self, *, wait: bool = True) -> Child:
        """Stop kube-scheduler with SIGTERM (it gives up its Lease, so the next one need not wait for it to expire)
        and start it again."""
        assert self.scheduler is not None
        self.scheduler.stop()
        return self.start_scheduler(wait=wait)

    def start_plain_scheduler(self, *, overrides: Mapping[str, Any] | None = None) -> Child:
        """kube-scheduler alone: the default profile and settings, no extender, as the cluster's own scheduler
        (user ``system:kube-scheduler``)."""
        config: dict[str, Any] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "clientConnection": {"kubeconfig": str(self._scheduler_user_kubeconfig())},
        }
        for key, value in (overrides or {}).items():
            config.setdefault(key, {}).update(value) if isinstance(value, dict) else config.__setitem__(key, value)
        self.default_scheduler = self._start_scheduler("default-scheduler", config)
        return self.default_scheduler

    def start_default_scheduler(self) -> Child:
        """The cluster's own kube-scheduler (profile ``default-scheduler``) with the preempt guard applied."""
        assert self.extender is not None
        config = components.default_scheduler_config(
            guard_map=self.installed_object("configmap", "grove-default-scheduler-preempt-guard"),
            kubeconfig=self._scheduler_user_kubeconfig(), extender_url=self.extender.url,
            client=self.folder / "scheduler-client",
        )  # fmt: skip
        self.default_scheduler = self._start_scheduler("default-scheduler", config)
        return self.default_scheduler

    def _scheduler_user_kubeconfig(self) -> Path:
        return write_kubeconfig(
            self.folder / "system-kube-scheduler.kubeconfig", server=self.server.url, ca=self.server.keys.ca,
            token=self.server.scheduler_token, user="system:kube-scheduler",
        )  # fmt: skip

    def _start_scheduler(self, name: str, config: Mapping[str, Any], *, wait: bool = True) -> Child:
        path = self.folder / f"{name}.config.yaml"
        path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
        cert_dir = self.folder / f"{name}-certs"
        cert_dir.mkdir(exist_ok=True)
        argv = components.scheduler_argv(
            self.assets["kube-scheduler"], deployment=self.installed_object("deployment", "grove-scheduler"),
            config=path, kubeconfig=Path(config["clientConnection"]["kubeconfig"]), cert_dir=cert_dir,
            secure_port=free_port(),
        )  # fmt: skip
        child = self.supervisor.start(name, argv)
        if wait:
            self._wait_scheduler(child, argv)
        return child

    def _wait_scheduler(self, child: Child, argv: list[str], *, timeout: float = 60.0) -> None:
        """Until its ``/readyz`` (informers synced) answers on the secure port."""
        port = next(a.split("=", 1)[1] for a in argv if a.startswith("--secure-port="))
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # its own self-signed serving cert
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not child.alive():
                raise RuntimeError(f"{child.name} exited with {child.process.returncode}; see {child.log}")
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", timeout=5, context=context) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        raise RuntimeError(f"{child.name} not ready within {timeout:g} s; see {child.log}")

    def _start_initc(self, name: str, args: list[str], kubeconfig: Path) -> Child:
        return self.supervisor.start(name, [grove_extender(), "initc", *args, f"--kubeconfig={kubeconfig}"])
