"""What the shipped Deployments run, as commands on this machine: read from the Deployments and ConfigMaps the API
server holds (as the install put them there), rewritten only where a process outside a pod must differ from the pod.

A container's command and args are taken as they are, with the kubelet's part done here: ``$(VAR)`` expanded from
the container's env (the downward API's pod name and namespace), and every path under a volume's ``mountPath``
moved into the folder that stands in for that volume. Then, per component, only what a test must change:

- the extender: ``--in-cluster`` becomes ``--kubeconfig`` (a ServiceAccount token of ``grove-extender``), and it
  listens on free loopback ports (the Deployment's ports are fixed, and other control planes share the machine),
  with ``--debug-port`` added for ``/metrics``;
- the reconciler: ``--kubeconfig`` (a token of ``grove-reconciler``), its probes on a free loopback port, and
  ``--initc-image`` as its env gives it;
- kube-scheduler: ``clientConnection.kubeconfig`` (a token of ``grove-scheduler``), the extender's ``urlPrefix`` on
  loopback with ``tlsConfig.serverName`` set to the Service name the URL had (the extender's certificate is issued
  for that name, and verification must still check it), and a free ``--secure-port``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from benchmarks.controlplane.install import DEPLOY, NAMESPACE

__all__ = [
    "ExtenderPorts",
    "container",
    "default_scheduler_config",
    "document",
    "extender_argv",
    "grove_scheduler_config",
    "reconciler_argv",
    "scheduler_argv",
]

Object = Mapping[str, Any]


def document(manifest: str, kind: str, name: str) -> dict[str, Any]:
    """One object of a file under ``deploy/``, as shipped (for tests that change and re-apply it)."""
    for doc in yaml.safe_load_all((DEPLOY / manifest).read_text()):
        if doc and doc.get("kind") == kind and doc["metadata"]["name"] == name:
            found: dict[str, Any] = doc
            return found
    raise LookupError(f"{manifest} holds no {kind} {name}")


def container(deployment: Object) -> dict[str, Any]:
    """The first container of ``deployment``."""
    found: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return found


def _kubelet_argv(spec: Mapping[str, Any], *, mounts: Mapping[str, Path], env: Mapping[str, str]) -> list[str]:
    """command + args with ``$(VAR)`` expanded and mounted paths moved (the kubelet's part)."""
    values = dict(env)
    for variable in spec.get("env", []):
        if "value" in variable:
            values[variable["name"]] = variable["value"]

    def one(argument: str) -> str:
        argument = re.sub(r"\$\((\w+)\)", lambda m: values.get(m[1], m[0]), argument)
        for mount_path, local in mounts.items():
            argument = argument.replace(mount_path.rstrip("/") + "/", f"{local}/")
        return argument

    return [one(str(a)) for a in [*spec.get("command", []), *spec.get("args", [])]]


def _mounts(spec: Mapping[str, Any], volumes: Mapping[str, Path]) -> dict[str, Path]:
    return {m["mountPath"]: volumes[m["name"]] for m in spec.get("volumeMounts", []) if m["name"] in volumes}


def _replace_flag(argv: list[str], flag: str, value: str | None) -> list[str]:
    """``--flag=value`` in place of any ``--flag``/``--flag=…`` (dropped when ``value`` is None)."""
    kept = [a for a in argv if a != flag and not a.startswith(f"{flag}=")]
    if value is None:
        return kept
    at = next((i for i, a in enumerate(argv) if a == flag or a.startswith(f"{flag}=")), len(argv))
    return [*kept[:at], f"{flag}={value}", *kept[at:]]


@dataclass(frozen=True)
class ExtenderPorts:
    verbs: int
    probes: int
    debug: int


def extender_argv(
    executable: str,
    *,
    deployment: Object,
    kubeconfig: Path,
    tls: Path,
    ports: ExtenderPorts,
    identity: str,
    extra: tuple[str, ...] = (),
) -> list[str]:
    spec = container(deployment)
    argv = _kubelet_argv(
        spec,
        mounts=_mounts(spec, {"tls": tls}),
        env={"POD_NAME": identity, "POD_NAMESPACE": NAMESPACE},
    )
    argv = [executable, *argv] if argv[0] == "serve" else [executable, *argv[1:]]
    argv = _replace_flag(argv, "--in-cluster", None)
    for flag, value in (
        ("--kubeconfig", str(kubeconfig)),
        ("--host", "127.0.0.1"),
        ("--port", str(ports.verbs)),
        ("--probe-port", str(ports.probes)),
        ("--debug-port", str(ports.debug)),
    ):
        argv = _replace_flag(argv, flag, value)
    return [*argv, *extra]


def reconciler_argv(executable: str, *, deployment: Object, kubeconfig: Path, probe_port: int) -> list[str]:
    spec = container(deployment)
    argv = _kubelet_argv(spec, mounts={}, env={})
    if argv[0] != "grove-extender":
        raise LookupError(f"the reconciler's Deployment runs {argv[0]!r}, not grove-extender")
    argv = [executable, *argv[1:]]
    for flag, value in (
        ("--kubeconfig", str(kubeconfig)),
        ("--probe-port", str(probe_port)),
        ("--probe-host", "127.0.0.1"),
    ):
        argv = _replace_flag(argv, flag, value)
    return argv


def _loopback_extender(entry: dict[str, Any], *, url: str, client: Path, mount_path: str) -> dict[str, Any]:
    entry = deepcopy(entry)
    service = urlparse(entry["urlPrefix"]).hostname
    entry["urlPrefix"] = url
    tls = entry.get("tlsConfig")
    if tls is not None:
        for key in ("certFile", "keyFile", "caFile"):
            if key in tls:
                tls[key] = tls[key].replace(mount_path.rstrip("/") + "/", f"{client}/")
        tls["serverName"] = service
    return entry


def grove_scheduler_config(
    *,
    config_map: Object,
    deployment: Object,
    kubeconfig: Path,
    extender_url: str,
    client: Path,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The installed KubeSchedulerConfiguration (``config_map``'s) with the kubeconfig, loopback URL and client files
    rewritten; ``overrides`` (e.g. ``clientConnection.qps`` for a benchmark) merged on top, key by key."""
    config: dict[str, Any] = yaml.safe_load(config_map["data"]["config.yaml"])
    mount_path = _mount_path(deployment, "extender-client")
    config["extenders"] = [
        _loopback_extender(e, url=extender_url, client=client, mount_path=mount_path) for e in config["extenders"]
    ]
    config.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
    for key, value in (overrides or {}).items():
        if isinstance(value, dict):
            config.setdefault(key, {}).update(value)
        else:
            config[key] = value
    return config


def default_scheduler_config(*, guard_map: Object, kubeconfig: Path, extender_url: str, client: Path) -> dict[str, Any]:
    """The cluster's own kube-scheduler (profile ``default-scheduler``) with the preempt guard's ``extenders`` block
    (``guard_map``: the ConfigMap the ``preempt-guard`` component installs) copied in, as its file tells an operator
    to."""
    guard = yaml.safe_load(guard_map["data"]["scheduler-config.yaml"])
    mount_path = "/etc/kubernetes/grove-extender-client"  # where the guard's comment has the operator put the files
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "extenders": [
            _loopback_extender(e, url=extender_url, client=client, mount_path=mount_path) for e in guard["extenders"]
        ],
    }


def _mount_path(deployment: Object, volume: str) -> str:
    return str(next(m["mountPath"] for m in container(deployment)["volumeMounts"] if m["name"] == volume))


def scheduler_argv(
    binary: str, *, deployment: Object, config: Path, kubeconfig: Path, cert_dir: Path, secure_port: int
) -> list[str]:
    """The shipped kube-scheduler command with its volumes moved to files here and a free secure port. In a pod
    its secure port authenticates and authorizes callers through the in-cluster identity; outside one that
    identity is named (``--authentication-kubeconfig``, ``--authorization-kubeconfig``), so the same lookups —
    and the shipped ``extension-apiserver-authentication-reader`` binding they need — happen here too."""
    spec = container(deployment)
    argv = _kubelet_argv(spec, mounts=_mounts(spec, {"certs": cert_dir}), env={})
    argv = _replace_flag([binary, *argv[1:]], "--config", str(config))
    for flag, value in (
        ("--secure-port", str(secure_port)),
        ("--bind-address", "127.0.0.1"),
        ("--authentication-kubeconfig", str(kubeconfig)),
        ("--authorization-kubeconfig", str(kubeconfig)),
    ):
        argv = _replace_flag(argv, flag, value)
    return argv
