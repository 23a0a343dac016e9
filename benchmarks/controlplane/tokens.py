"""Identities: a ServiceAccount token from the TokenRequest API, a legacy one as the tokens controller signs it, and
the kubeconfig a process reads a token from."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from benchmarks.controlplane.rest import Api

__all__ = ["legacy_token", "request_token", "write_kubeconfig"]


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


LEGACY_ISSUER = "kubernetes/serviceaccount"  # what kube-apiserver's legacy token authenticator accepts


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def legacy_token(signing_key: bytes, *, namespace: str, account: str, uid: str, secret: str) -> str:
    """The token kube-controller-manager's tokens controller writes into a ``kubernetes.io/service-account-token``
    Secret: a JWT signed with the service-account key (ES256 for the EC key here), its claims naming the account and
    the Secret, so the API server can check on every request that both still exist and the Secret holds this token.
    The key id is the API server's: the SHA-256 of the public key's DER, base64url."""
    key = serialization.load_pem_private_key(signing_key, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise TypeError("the service-account key of this control plane is an EC key")
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    header = {"alg": "ES256", "kid": _b64url(hashlib.sha256(public).digest())}
    claims = {
        "iss": LEGACY_ISSUER,
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/secret.name": secret,
        "kubernetes.io/serviceaccount/service-account.name": account,
        "kubernetes.io/serviceaccount/service-account.uid": uid,
        "sub": f"system:serviceaccount:{namespace}:{account}",
    }
    signed = ".".join(_b64url(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims))
    r, s = decode_dss_signature(key.sign(signed.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{signed}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
