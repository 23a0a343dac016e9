"""The Pod Security Standards' "restricted" profile as a checker of pod specs, for the manifests in deploy/.

The rules as the Kubernetes documentation states them (baseline plus restricted), for what a manifest can say;
each violation names the field. Plus two habits of ours: a read-only root filesystem and images pinned by tag.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

_RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
_SECCOMP_OK = frozenset({"RuntimeDefault", "Localhost"})


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for index, container in enumerate(spec.get(field) or []):
            yield f"spec.{field}[{index}]", container


def _pinned(image: str) -> bool:
    if "@sha256:" in image:
        return True
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in ("", "latest")


def restricted_violations(spec: Mapping[str, Any]) -> list[str]:
    """Every way the pod ``spec`` breaks Pod Security "restricted" (or our two habits), as ``field: rule``."""
    found: list[str] = []
    pod_context = spec.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            found.append(f"spec.{field}: must not be true")
    for index, volume in enumerate(spec.get("volumes") or []):
        kinds = set(volume) - {"name"}
        if not kinds <= _RESTRICTED_VOLUMES:
            found.append(f"spec.volumes[{index}]: {sorted(kinds - _RESTRICTED_VOLUMES)} not allowed")
    pod_non_root = pod_context.get("runAsNonRoot") is True
    pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type")
    if pod_context.get("runAsUser") == 0:
        found.append("spec.securityContext.runAsUser: must not be 0")
    if pod_seccomp is not None and pod_seccomp not in _SECCOMP_OK:
        found.append(f"spec.securityContext.seccompProfile.type: {pod_seccomp} not allowed")
    for where, container in _containers(spec):
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            found.append(f"{where}.securityContext.privileged: must not be true")
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{where}.securityContext.allowPrivilegeEscalation: must be false")
        if not (context.get("runAsNonRoot") is True or (pod_non_root and context.get("runAsNonRoot") is None)):
            found.append(f"{where}.securityContext.runAsNonRoot: must be true (here or on the pod)")
        if context.get("runAsUser") == 0:
            found.append(f"{where}.securityContext.runAsUser: must not be 0")
        seccomp = (context.get("seccompProfile") or {}).get("type") or pod_seccomp
        if seccomp not in _SECCOMP_OK:
            found.append(f"{where}.securityContext.seccompProfile.type: must be RuntimeDefault or Localhost")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"{where}.securityContext.capabilities.drop: must include ALL")
        if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            found.append(f"{where}.securityContext.capabilities.add: only NET_BIND_SERVICE")
        for port_index, port in enumerate(container.get("ports") or []):
            if port.get("hostPort"):
                found.append(f"{where}.ports[{port_index}].hostPort: not allowed")
        if context.get("readOnlyRootFilesystem") is not True:
            found.append(f"{where}.securityContext.readOnlyRootFilesystem: must be true (ours)")
        if not _pinned(str(container.get("image", ""))):
            found.append(f"{where}.image: {container.get('image')!r} must be pinned by a tag other than latest (ours)")
    return found
