"""``grove-extender certs --apply`` (or ``-o certs.yaml``): the mTLS certificates between kube-scheduler and the
extender, as Secrets written to the API server (no key on disk: ``certs_apply``) or to a file.

One fresh CA signs two certificates: the extender's serving certificate (names of its Service) and
kube-scheduler's client certificate. Each goes into a ``kubernetes.io/tls`` Secret with the CA as ``ca.crt``, the
shape cert-manager writes too, so ``deploy/`` mounts the same Secrets whichever issued them:

- ``grove-extender-tls``: the extender serves with ``tls.crt``/``tls.key`` and requires client certificates signed
  by ``ca.crt`` (``serve --tls-cert --tls-key --client-ca``);
- ``grove-scheduler-extender-client``: kube-scheduler presents ``tls.crt``/``tls.key`` and verifies the extender
  against ``ca.crt`` (``tlsConfig`` of the extender in its configuration). The certificate names ``grove-scheduler``
  (common name and DNS subject alternative name), the name ``serve --client-san`` requires by default.

The CA's private key is never written: renewing means running the command again and restarting both Deployments.
``cryptography`` is the ``certs`` extra, imported only here: the extender itself reads PEM files.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.x509 import Certificate, Name, ObjectIdentifier

__all__ = [
    "CLIENT_NAME",
    "CLIENT_SECRET",
    "SERVER_SECRET",
    "Authority",
    "Issued",
    "KeyPair",
    "issue",
    "register",
    "secrets_manifest",
    "service_names",
]

SERVER_SECRET = "grove-extender-tls"
CLIENT_SECRET = "grove-scheduler-extender-client"
CLIENT_NAME = "grove-scheduler"
"""kube-scheduler's name in its client certificate (common name and DNS SAN), the one ``serve --client-san`` expects
by default."""
INSTALL_HINT = "grove-extender certs needs the 'certs' extra: pip install 'grove-extender[certs]'"


@dataclass(frozen=True)
class KeyPair:
    cert: bytes  # PEM
    key: bytes  # PEM, PKCS#8, unencrypted (the Secret is the protection)


@dataclass(frozen=True)
class Issued:
    ca: bytes  # PEM of the CA certificate; its key is discarded
    server: KeyPair
    client: KeyPair

    def write_pems(self, folder: Path) -> dict[str, Path]:
        """Each PEM as a file in ``folder`` (mode 0600, replaced atomically, as a Secret volume update does), for
        serving or calling over mTLS outside a cluster: keys ``ca``, ``server_cert``, ``server_key``,
        ``client_cert``, ``client_key``."""
        contents = {
            "ca": self.ca,
            "server_cert": self.server.cert,
            "server_key": self.server.key,
            "client_cert": self.client.cert,
            "client_key": self.client.key,
        }
        paths = {}
        for name, pem in contents.items():
            path, staged = folder / f"{name}.pem", folder / f".{name}.pem.new"
            staged.write_bytes(pem)
            staged.chmod(0o600)
            staged.replace(path)
            paths[name] = path
        return paths


def service_names(service: str, namespace: str) -> list[str]:
    """Every name kube-scheduler may use for the extender's Service (``urlPrefix``'s host must be one of them)."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


@dataclass(frozen=True)
class Authority:
    """A fresh CA (ECDSA P-256, which Go's TLS and Python's ssl both accept), held in memory only: its key goes
    when this object does. ``issue`` uses one for the two certificates; tests use one to sign odd clients."""

    cert: Certificate
    key: EllipticCurvePrivateKey
    start: datetime.datetime
    end: datetime.datetime

    @classmethod
    def create(cls, *, days: int = 365, now: datetime.datetime | None = None) -> Authority:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        start = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(minutes=5)  # tolerate clock skew
        end = start + datetime.timedelta(days=days)
        key = ec.generate_private_key(ec.SECP256R1())
        name = _name("grove-extender CA")
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(cert=cert, key=key, start=start, end=end)

    def pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self.cert.public_bytes(serialization.Encoding.PEM)

    def server(self, names: list[str]) -> KeyPair:
        """A serving certificate for ``names`` (the first is also its common name)."""
        from cryptography.x509.oid import ExtendedKeyUsageOID

        return self._leaf(names[0], ExtendedKeyUsageOID.SERVER_AUTH, names)

    def client(self, name: str) -> KeyPair:
        """A client certificate naming ``name`` as its common name and its DNS subject alternative name, the one
        ``serve --client-san`` checks."""
        from cryptography.x509.oid import ExtendedKeyUsageOID

        return self._leaf(name, ExtendedKeyUsageOID.CLIENT_AUTH, [name])

    def _leaf(self, common_name: str, usage: ObjectIdentifier, dns: list[str]) -> KeyPair:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.start)
            .not_valid_after(self.end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        pem_key = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return KeyPair(cert=cert.public_bytes(serialization.Encoding.PEM), key=pem_key)


def _name(common_name: str) -> Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def issue(
    *,
    server_names: list[str],
    client_name: str = CLIENT_NAME,
    days: int = 365,
    now: datetime.datetime | None = None,
) -> Issued:
    """A new CA and the two leaf certificates it signs; the CA's key is not kept."""
    authority = Authority.create(days=days, now=now)
    return Issued(ca=authority.pem(), server=authority.server(server_names), client=authority.client(client_name))


def _secret(name: str, namespace: str, pair: KeyPair, ca: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "grove-extender"},
        },
        # stringData: the API server base64-encodes it; the file stays readable PEM.
        "stringData": {"tls.crt": pair.cert.decode(), "tls.key": pair.key.decode(), "ca.crt": ca.decode()},
    }


def secrets_manifest(issued: Issued, *, namespace: str) -> str:
    documents = [
        _secret(SERVER_SECRET, namespace, issued.server, issued.ca),
        _secret(CLIENT_SECRET, namespace, issued.client, issued.ca),
    ]
    return yaml.safe_dump_all(documents, sort_keys=False)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "certs",
        help="issue the mTLS certificates between kube-scheduler and the extender, as Secrets in the cluster",
        description="Write two kubernetes.io/tls Secrets: the extender's serving certificate and kube-scheduler's "
        "client certificate, signed by a fresh CA whose key is not kept. Needs the 'certs' extra.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--apply", action="store_true", help="write the Secrets to the API server (server-side apply; no file)"
    )
    where.add_argument("-o", "--output", help="YAML file to write instead (mode 0600: it holds keys)")
    parser.add_argument(
        "--kubeconfig", help="with --apply: kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)"
    )
    parser.add_argument("--namespace", default="grove-system", help="namespace of both Secrets (default: %(default)s)")
    parser.add_argument("--service", default="grove-extender", help="the extender's Service (default: %(default)s)")
    parser.add_argument("--days", type=int, default=365, help="validity (default: %(default)s)")
    parser.set_defaults(handler=run_certs)


def run_certs(args: argparse.Namespace) -> int:
    if args.days <= 0:
        print("grove-extender certs: --days must be positive", file=sys.stderr)
        return 2
    try:
        issued = issue(server_names=service_names(args.service, args.namespace), days=args.days)
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    if args.apply:
        return _apply(issued, args)
    path = Path(args.output)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(descriptor, 0o600)  # also when the file already existed with wider permissions
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets_manifest(issued, namespace=args.namespace))
    except OSError as err:
        print(f"grove-extender certs: cannot write {path}: {err.strerror}", file=sys.stderr)
        return 1
    print(
        f"wrote Secrets {SERVER_SECRET} and {CLIENT_SECRET} (namespace {args.namespace}, valid {args.days} days) to "
        f"{path}; apply with: kubectl apply -f {path}",
        file=sys.stderr,
    )
    return 0


def _apply(issued: Issued, args: argparse.Namespace) -> int:
    from scheduler.cli.certs_apply import ApplyError, apply_secrets, kubeconfig_path

    secrets = list(yaml.safe_load_all(secrets_manifest(issued, namespace=args.namespace)))
    try:
        applied = apply_secrets(secrets, kubeconfig=kubeconfig_path(args.kubeconfig))
    except ApplyError as err:
        print(f"grove-extender certs --apply: {err}", file=sys.stderr)
        return 1
    for one in applied:
        print(f"Secret {args.namespace}/{one.name} {'created' if one.created else 'replaced'}", file=sys.stderr)
    if not all(one.created for one in applied):
        print(
            f"renewed: restart both to load the new CA: kubectl -n {args.namespace} rollout restart "
            "deployment/grove-extender deployment/grove-scheduler",
            file=sys.stderr,
        )
    return 0
