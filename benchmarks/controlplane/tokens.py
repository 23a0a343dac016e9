"""Identities: a ServiceAccount token from the TokenRequest API, and the kubeconfig a process reads it from."""

from __future__ import annotations

from pathlib import Path

import yaml

from benchmarks.controlplane.rest import Api

__all__ = ["request_token", "write_kubeconfig"]


def request_token(api: Api, *, namespace: str, account: str, seconds: int = 4 * 3600) -> str:
    """``POST .../serviceaccounts/<account>/token``: what the kubelet mounts into a pod as a projected token."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}}
    reply = api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", body)
    return str(reply["status"]["token"])


def write_kubeconfig(path: Path, *, server: str, ca: Path, token: str, user: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
        "current-context": "e2e",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
