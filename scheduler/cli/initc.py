"""``grove-extender initc``: the startup-order init container (``grove-initc``) the reconciler injects."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

__all__ = ["register"]

log = logging.getLogger(__name__)
_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
EXIT_STOPPED = 143  # 128 + SIGTERM: the pod is going away before its parents were ready


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "initc",
        help="wait until parent PodCliques have enough Ready pods (startup order; runs as an init container)",
        description="Exit 0 once every --podcliques parent has at least minAvailable Ready pods in the namespace. "
        "Exit 2 on bad flags, 1 without cluster access, 143 when stopped (SIGTERM) before that.",
    )
    parser.add_argument(
        "--podcliques",
        action="append",
        default=[],
        metavar="FQN:MIN",
        help="a parent PodClique and its minAvailable; once per parent, as Grove's init container takes it",
    )
    parser.add_argument("--namespace", help="namespace of the pods (default: the pod's own)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: the pod's service account)")
    parser.set_defaults(handler=_handle)


def _namespace(given: str | None) -> str | None:
    if given:
        return given
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return _NAMESPACE_FILE.read_text().strip() or None
    except OSError:
        return None


def _handle(args: argparse.Namespace) -> int:
    from scheduler.kube.connect import ConnectError, load_api_client
    from scheduler.reconcile.initc import ParentWait, parse_podcliques, wait_for_parents

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        required = parse_podcliques(args.podcliques)
    except ValueError as err:
        print(f"initc: {err}", file=sys.stderr)
        return 2
    namespace = _namespace(args.namespace)
    if namespace is None:
        print("initc: no namespace: pass --namespace (outside a pod) or set POD_NAMESPACE", file=sys.stderr)
        return 2
    try:
        api_client = load_api_client(args.kubeconfig, pool_size=2)
    except ConnectError as err:
        print(f"initc: {err}", file=sys.stderr)
        return 1
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())  # the informer's watch, blocked in a read, is interrupted
    done = wait_for_parents(api_client, namespace=namespace, wait=ParentWait(required), stop=stop)
    if not done:
        log.warning("initc stopped before parents were ready")
        return EXIT_STOPPED
    return 0
