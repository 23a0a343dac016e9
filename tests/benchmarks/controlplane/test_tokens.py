"""The e2e harness's token-controller stand-in signs what kube-apiserver's legacy token authenticator verifies: an
ES256 JWT under the service-account key, key id and claims as kube-controller-manager's tokens controller writes them
(make e2e is where the API server accepts it: grove-initc lists pods with it)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from benchmarks.controlplane.tokens import legacy_token


def _decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _key() -> tuple[bytes, ec.EllipticCurvePublicKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    return pem, key.public_key()


def _verify(token: str, public: ec.EllipticCurvePublicKey) -> tuple[dict[str, Any], dict[str, Any]]:
    header, claims, signature = token.split(".")
    raw = _decode(signature)
    assert len(raw) == 64  # JWS ES256: r and s, 32 bytes each, not DER
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public.verify(der, f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    return json.loads(_decode(header)), json.loads(_decode(claims))


def test_a_legacy_token_names_the_account_and_its_secret_under_the_api_servers_key_id() -> None:
    pem, public = _key()
    token = legacy_token(pem, namespace="ns", account="training", uid="u-1", secret="training-ic-sat")
    header, claims = _verify(token, public)
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert header == {
        "alg": "ES256",
        "kid": base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode(),
    }
    assert claims == {
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": "ns",
        "kubernetes.io/serviceaccount/secret.name": "training-ic-sat",
        "kubernetes.io/serviceaccount/service-account.name": "training",
        "kubernetes.io/serviceaccount/service-account.uid": "u-1",
        "sub": "system:serviceaccount:ns:training",
    }


def test_another_key_does_not_verify_it() -> None:
    pem, _ = _key()
    _, other = _key()
    with pytest.raises(InvalidSignature):
        _verify(legacy_token(pem, namespace="ns", account="a", uid="u", secret="s"), other)
