"""``serve``'s listeners: the flags, what makes them unsafe or inconsistent, and serving the service's apps.

The verbs and probes on ``--port``, over mTLS when ``--tls-cert``/``--tls-key``/``--client-ca`` are given; the probes
alone on ``--probe-port`` (the kubelet presents no client certificate); ``/metrics`` and ``/debug/gangs`` on
``--debug-port`` only. Plain HTTP without client certificates is for loopback: on any other address it needs
``--allow-unauthenticated``, because whoever reaches the verb port steers scheduling.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

from starlette.types import ASGIApp

from api.app import DEFAULT_MAX_BODY_BYTES
from api.server import Listener, ServeError, Timeouts, TlsFiles, serve_listeners

__all__ = ["add_listener_arguments", "listener_problem", "serve_http"]


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
    ports = [p for p in (args.port, args.probe_port, args.debug_port) if p is not None]
    if len(set(ports)) != len(ports):
        return "--port, --probe-port and --debug-port must differ"
    if args.max_body_bytes <= 0 or args.request_timeout <= 0 or args.tls_reload_seconds <= 0:
        return "--max-body-bytes, --request-timeout and --tls-reload-seconds must be positive"
    return None


def serve_http(args: argparse.Namespace, *, verbs: ASGIApp, probes: ASGIApp, debug: ASGIApp) -> int:
    """Serve the apps where the flags say until a signal; 2 when a listener cannot start (the reason printed)."""
    tls = TlsFiles(cert=args.tls_cert, key=args.tls_key, client_ca=args.client_ca) if args.tls_cert else None
    listeners = [Listener(name="extender", app=verbs, host=args.host, port=args.port, tls=tls)]
    if args.probe_port is not None:
        listeners.append(Listener(name="probes", app=probes, host=args.host, port=args.probe_port))
    if args.debug_port is not None:
        listeners.append(Listener(name="debug", app=debug, host=args.host, port=args.debug_port))
    try:
        serve_listeners(
            listeners,
            log_level=args.log_level,
            timeouts=Timeouts(request=args.request_timeout),
            tls_reload_seconds=args.tls_reload_seconds,
        )
    except ServeError as err:
        print(f"grove-extender serve: {err}", file=sys.stderr)
        return 2
    return 0
