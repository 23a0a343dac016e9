"""The API server's own keys: a CA and the serving certificate it signs (for 127.0.0.1), and the key that signs
service-account tokens. Clients verify the API server against the CA, as they would in a cluster."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["ApiServerKeys", "write_keys"]


@dataclass(frozen=True)
class ApiServerKeys:
    ca: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    # SEC 1 ("EC PRIVATE KEY"): --service-account-key-file reads no PKCS#8 EC key as a public key source.
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def write_keys(folder: Path) -> ApiServerKeys:
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    end = now + datetime.timedelta(days=2)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("e2e kube-apiserver CA"))
        .issuer_name(_name("e2e kube-apiserver CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    serving_key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    serving = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca.subject)
        .public_key(serving_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    keys = ApiServerKeys(
        ca=folder / "apiserver-ca.crt",
        serving_cert=folder / "apiserver.crt",
        serving_key=folder / "apiserver.key",
        service_account_key=folder / "service-account.key",
    )
    keys.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    keys.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    keys.serving_key.write_bytes(_key_pem(serving_key))
    keys.service_account_key.write_bytes(_key_pem(ec.generate_private_key(ec.SECP256R1())))
    for path in (keys.serving_key, keys.service_account_key):
        path.chmod(0o600)
    return keys
