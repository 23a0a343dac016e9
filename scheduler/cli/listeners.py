"""``serve``'s listeners: the flags, what makes them unsafe or inconsistent, and serving the service's apps.

The verbs and probes on ``--host``/``--port``, over mTLS when ``--tls-cert``/``--tls-key``/``--client-ca`` are
given (the client's certificate must then also name one of ``--client-san``, and its handshake finish within
``--tls-handshake-timeout``); the probes alone on ``--probe-port`` (the kubelet presents no client certificate);
``/metrics`` and ``/debug/gangs`` on ``--debug-port`` only, on ``--debug-host`` (loopback unless told otherwise:
they tell whoever asks every gang's plan, with no authentication). Plain HTTP without client certificates is for
loopback: on any other address it needs ``--allow-unauthenticated``, because whoever reaches the verb port steers
scheduling.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp

from api.http.app import DEFAULT_MAX_BODY_BYTES
from api.http.hypercorn_server import serve_with_hypercorn
from api.http.server import Listener, ServeError, Timeouts, serve_listeners
from api.http.tls import DEFAULT_HANDSHAKE_TIMEOUT, TlsConfig, TlsError, server_context
from scheduler.cli.certs import CLIENT_NAME
from scheduler.snapshot.files import UnreadableFile, read_bounded

__all__ = ["add_listener_arguments", "build_listeners", "listener_problem", "serve_http", "tls_config", "tls_problem"]

MAX_PEM_BYTES = 1 << 20  # a certificate chain or a bundle of CAs: a few KB each


def add_listener_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8888, help="port of the verbs (default: %(default)s)")
    tls = parser.add_argument_group("TLS (kube-scheduler's enableHTTPS and tlsConfig)")
    tls.add_argument("--tls-cert", metavar="PEM", help="serve the verb port over TLS with this certificate (chain)")
    tls.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    tls.add_argument(
        "--client-ca",
        metavar="PEM",
        help="require a client certificate signed by this CA on the verb port (mTLS): only kube-scheduler, "
        "holding one, can call the verbs",
    )
    tls.add_argument(
        "--client-san",
        action="append",
        dest="client_sans",
        metavar="NAME",
        help="with --client-ca: a client certificate must also carry this DNS or URI subject alternative name "
        f"(repeatable; default: {CLIENT_NAME}, the name grove-extender certs gives kube-scheduler's certificate)",
    )
    tls.add_argument(
        "--tls-handshake-timeout",
        type=float,
        default=DEFAULT_HANDSHAKE_TIMEOUT,
        help="seconds a client has to complete its TLS handshake (default: %(default)s)",
    )
    tls.add_argument(
        "--tls-reload-seconds",
        type=float,
        default=60.0,
        help="how often to look for renewed certificate files (default: %(default)s)",
    )
    tls.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve the verbs without client certificates on a non-loopback address (anyone who reaches the port "
        "can then steer scheduling)",
    )
    parser.add_argument(
        "--probe-port", type=int, help="also serve /healthz and /readyz alone, in plain HTTP, on this port (kubelet)"
    )
    parser.add_argument(
        "--debug-port",
        type=int,
        help="serve /metrics and /debug/gangs, in plain HTTP, on this port (default: not served)",
    )
    parser.add_argument(
        "--debug-host",
        default="127.0.0.1",
        help="address of --debug-port (default: %(default)s; reach it with kubectl port-forward, or give the pod's "
        "address for a Prometheus and let a NetworkPolicy admit only it)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help="largest request body (default: %(default)s, node-names mode; NodeList mode sends every node in "
        "full: a few KB per node)",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=Timeouts.request,
        help="seconds a request's headers and body may take to arrive (default: %(default)s)",
    )
    parser.add_argument(
        "--http-server",
        choices=["builtin", "hypercorn"],
        default="builtin",
        help="builtin (default): the bounded HTTP/1.1 and HTTP/2 listener; hypercorn: the same apps on hypercorn, "
        "for comparison only (client certificates' names unchecked, no bounds of its own, the bench extra)",
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listener_problem(args: argparse.Namespace) -> str | None:
    """Why these listener flags cannot be served, or ``None``."""
    if bool(args.tls_cert) != bool(args.tls_key):
        return "--tls-cert and --tls-key go together"
    if args.client_ca and not args.tls_cert:
        return "--client-ca needs --tls-cert and --tls-key (client certificates are checked in the TLS handshake)"
    if not args.client_ca and not args.allow_unauthenticated and not _is_loopback(args.host):
        return (
            f"--host {args.host} without --client-ca lets anyone who reaches port {args.port} steer scheduling; "
            "give --tls-cert, --tls-key and --client-ca (see deploy/), or --allow-unauthenticated"
        )
    if args.client_sans and not args.client_ca:
        return "--client-san needs --client-ca (it is checked on the client certificate the CA signed)"
    if any(not name for name in args.client_sans or ()):
        return "--client-san must not be empty"
    ports = [p for p in (args.port, args.probe_port) if p is not None]
    if len(set(ports)) != len(ports) or (args.debug_port is not None and args.debug_port in ports and _same_host(args)):
        return "--port, --probe-port and --debug-port must differ"
    positive = (args.max_body_bytes, args.request_timeout, args.tls_reload_seconds, args.tls_handshake_timeout)
    if any(value <= 0 for value in positive):
        return "--max-body-bytes, --request-timeout, --tls-reload-seconds and --tls-handshake-timeout must be positive"
    return None


def _same_host(args: argparse.Namespace) -> bool:
    """Whether the debug listener could collide with the others: the same address, or either a wildcard."""
    wildcards = ("0.0.0.0", "::", "")
    return bool(args.debug_host == args.host or args.debug_host in wildcards or args.host in wildcards)


def tls_config(args: argparse.Namespace) -> TlsConfig | None:
    if not args.tls_cert:
        return None
    return TlsConfig(
        cert=args.tls_cert,
        key=args.tls_key,
        client_ca=args.client_ca,
        client_sans=tuple(args.client_sans or (CLIENT_NAME,)) if args.client_ca else (),
        handshake_timeout=args.tls_handshake_timeout,
    )


def tls_problem(args: argparse.Namespace) -> str | None:
    """Why the TLS files cannot be served, or ``None``: read within bounds like every file a user names, then
    loaded, before anything starts (so the error is one line, not a half-started process)."""
    config = tls_config(args)
    if config is None:
        return None
    for flag, path in (("--tls-cert", config.cert), ("--tls-key", config.key), ("--client-ca", config.client_ca)):
        if path is None:
            continue
        try:
            text = read_bounded(path, limit=MAX_PEM_BYTES)
        except UnreadableFile as err:
            return f"{flag} {path}: {err}"
        if b"-----BEGIN " not in text:
            return f"{flag} {path}: not a PEM file (no -----BEGIN line)"
    try:
        server_context(config)
    except TlsError as err:
        return f"extender listener: cannot load its TLS files: {err}"
    return None


def build_listeners(args: argparse.Namespace, *, verbs: ASGIApp, probes: ASGIApp, debug: ASGIApp) -> list[Listener]:
    """The verbs (and probes) on ``--host``, the probes alone on ``--probe-port``, the debug app on ``--debug-host``."""
    listeners = [Listener(name="extender", app=verbs, host=args.host, port=args.port, tls=tls_config(args))]
    if args.probe_port is not None:
        listeners.append(Listener(name="probes", app=probes, host=args.host, port=args.probe_port))
    if args.debug_port is not None:
        listeners.append(Listener(name="debug", app=debug, host=args.debug_host, port=args.debug_port))
    return listeners


def serve_http(
    args: argparse.Namespace,
    *,
    verbs: ASGIApp,
    probes: ASGIApp,
    debug: ASGIApp,
    registry: CollectorRegistry | None = None,
) -> int:
    """Serve the apps where the flags say until a signal; 2 when a listener cannot start (the reason printed).
    ``registry`` receives the listeners' own metrics (the TLS handshakes)."""
    listeners = build_listeners(args, verbs=verbs, probes=probes, debug=debug)
    timeouts = Timeouts(request=args.request_timeout)
    try:
        if args.http_server == "hypercorn":
            serve_with_hypercorn(listeners, log_level=args.log_level, timeouts=timeouts)
        else:
            serve_listeners(
                listeners,
                log_level=args.log_level,
                timeouts=timeouts,
                tls_reload_seconds=args.tls_reload_seconds,
                registry=registry,
            )
    except ServeError as err:
        print(f"grove-extender serve: {err}", file=sys.stderr)
        return 2
    return 0
