"""A token-controller stand-in: it fills Secrets of type ``kubernetes.io/service-account-token`` as
kube-controller-manager's tokens controller does. There is none here, and the product relies on it: the reconciler
creates the Secret ``<pcs>-ic-sat`` for the ServiceAccount ``<pcs>`` and never reads it (it may not), and
``grove-initc`` runs with the token the controller writes into it, mounted from that Secret.

As the real controller: the Secret names its account in the annotation ``kubernetes.io/service-account.name``; if
that account does not exist (or has another uid than ``kubernetes.io/service-account.uid`` says), the Secret is
deleted; otherwise ``token`` (a legacy service-account JWT signed with the key the API server verifies, claims
naming the account, its uid and the Secret), ``ca.crt`` and ``namespace`` are written, with the uid annotation. The
API server then decides whether the token is good: it looks the Secret and the account up on every request.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from benchmarks.controlplane.agents import Agent, Handler
from benchmarks.controlplane.rest import Api
from benchmarks.controlplane.tokens import legacy_token

__all__ = ["TOKEN_SECRET", "TokenController"]

TOKEN_SECRET = "kubernetes.io/service-account-token"
ACCOUNT_NAME = "kubernetes.io/service-account.name"
ACCOUNT_UID = "kubernetes.io/service-account.uid"


def _b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


class TokenController(Agent):
    name = "token-controller"

    def __init__(self, api: Api, *, signing_key: Path) -> None:
        super().__init__(api)
        self._key = signing_key.read_bytes()
        self._ca = api.ca.read_bytes()

    def watches(self) -> list[tuple[str, dict[str, str], Handler]]:
        return [("/api/v1/secrets", {"fieldSelector": f"type={TOKEN_SECRET}"}, self._seen)]

    def _seen(self, kind: str, secret: dict[str, Any]) -> None:
        if kind == "DELETED" or secret["metadata"].get("deletionTimestamp") or (secret.get("data") or {}).get("token"):
            return
        self.spawn(self._fill(secret))

    async def _fill(self, secret: dict[str, Any]) -> None:
        assert self.client is not None
        meta = secret["metadata"]
        namespace, annotations = meta["namespace"], meta.get("annotations") or {}
        path = f"/api/v1/namespaces/{namespace}/secrets/{meta['name']}"
        account_path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{annotations.get(ACCOUNT_NAME, '')}"
        reply = await self.client.arequest("GET", account_path)
        if reply.status >= 400 and reply.status != 404:
            self.errors.append(f"reading the account of secret {namespace}/{meta['name']}: HTTP {reply.status}")
            return
        account = reply.body["metadata"] if reply.status < 400 else None
        if account is None or annotations.get(ACCOUNT_UID, account["uid"]) != account["uid"]:
            # The controller's rule: a token Secret of no (or another) account is deleted, never filled.
            body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": meta["uid"]}}
            await self.client.arequest("DELETE", path, body)
            return
        token = legacy_token(
            self._key, namespace=namespace, account=account["name"], uid=account["uid"], secret=meta["name"]
        )
        data = {
            **(secret.get("data") or {}),
            "token": _b64(token),
            "ca.crt": _b64(self._ca),
            "namespace": _b64(namespace),
        }
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
            {"op": "add", "path": "/metadata/annotations", "value": {**annotations, ACCOUNT_UID: account["uid"]}},
            {"op": "add", "path": "/data", "value": data},
        ]
        reply = await self.client.arequest("PATCH", path, patch, content_type="application/json-patch+json")
        if reply.status >= 400 and reply.status not in (404, 409, 422):  # gone, or changed since: its event follows
            self.errors.append(f"filling secret {namespace}/{meta['name']}: HTTP {reply.status}")
