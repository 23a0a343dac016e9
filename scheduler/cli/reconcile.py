"""``grove-extender reconcile``: run the PodCliqueSet reconciler against a cluster, or print what it would create."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import yaml

from scheduler.reconcile.controller import DEFAULT_INITC_IMAGE
from scheduler.reconcile.dryrun import DryRunRejected, dry_run
from scheduler.reconcile.rules.features import Features
from scheduler.reconcile.rules.limits import Limits
from scheduler.snapshot.documents import UnreadableText, parse_stream
from scheduler.snapshot.files import UnreadableFile, read_bounded

__all__ = ["register"]

log = logging.getLogger(__name__)
_MAX_FILE_BYTES = 16 * 1024 * 1024  # a PodCliqueSet file, not a cluster dump: refuse before parsing, not after
# What dry_run takes: the sets, the topology they name, and the ResourceClaimTemplates their resourceSharing names.
# Grove's operator runs a worker per controller (PodCliqueSet, PodClique, scaling group) and its client at 100 QPS,
# burst 120; one pass of ours does all three controllers' work, so several PodCliqueSets' passes overlap.
DEFAULT_WORKERS = 4
DEFAULT_CONCURRENT_WRITES = 8
DEFAULT_QPS = 100.0
DEFAULT_BURST = 120
_DRY_RUN_KINDS = ("PodCliqueSet", "ClusterTopologyBinding", "ResourceClaimTemplate")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "reconcile",
        help="turn PodCliqueSets into PodGangs and gated pods (runs without the Grove operator)",
        description="Watch PodCliqueSets, PodGangs and their pods and converge them the way Grove's operator does; "
        "or, with --dry-run, print the objects it would create for a PodCliqueSet file on an empty cluster.",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: the pod's service account)")
    parser.add_argument(
        "--namespace",
        help="list, watch and write only in this namespace: a Role there is all it needs "
        "(deploy/overlays/namespaced/reconciler-rbac-namespaced.yaml; default: every namespace)",
    )
    parser.add_argument("--scheduler-name", default="grove", help="schedulerName set on pods (default: grove)")
    parser.add_argument(
        "--default-scheduler-profile",
        metavar="NAME",
        help="what an empty schedulerName in a clique means, as Grove's scheduler.defaultProfileName "
        "(default: --scheduler-name)",
    )
    parser.add_argument(
        "--mnnvl",
        action="store_true",
        help="Grove's MNNVL feature (network.autoMNNVLEnabled, off by default): a ComputeDomain per PodCliqueSet "
        "replica and grove.io/mnnvl-group, claimed by its GPU pods; needs the NVIDIA DRA driver's ComputeDomain CRD",
    )
    parser.add_argument("--resync-seconds", type=float, default=60.0, help="full resync period (default: 60)")
    parser.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help="PodCliqueSets reconciled at once, never one by two workers (default: %(default)s)",
    )
    parser.add_argument(
        "--concurrent-writes",
        type=int,
        default=DEFAULT_CONCURRENT_WRITES,
        help="a pass's independent writes (a PodClique's pods, their gates) sent at once, all workers together "
        "(default: %(default)s; 1 sends them one by one)",
    )
    parser.add_argument(
        "--qps",
        type=float,
        default=DEFAULT_QPS,
        help="API requests per second, all workers together, once --burst is spent (default: %(default)s, as "
        "Grove's operator's client)",
    )
    parser.add_argument(
        "--burst",
        type=int,
        default=DEFAULT_BURST,
        help="API requests sent at once before --qps holds them (default: %(default)s)",
    )
    parser.add_argument(
        "--probe-port",
        type=int,
        help="serve /healthz (loop and watches alive) and /readyz (informers synced) in plain HTTP on this port "
        "(default: not served)",
    )
    parser.add_argument(
        "--probe-host",
        default="127.0.0.1",
        help="address of --probe-port (default: %(default)s; the kubelet probes the pod's address: 0.0.0.0 there)",
    )
    parser.add_argument(
        "--initc-image",
        default=DEFAULT_INITC_IMAGE,
        help=f"image of the grove-initc startup-order init container (default: {DEFAULT_INITC_IMAGE}; "
        "use the reconciler's own image, which has the grove-extender command)",
    )
    parser.add_argument(
        "--max-replicas",
        type=int,
        default=Limits.replicas,
        help=f"largest replica count a PodCliqueSet, clique or scaling group may ask for (default: {Limits.replicas})",
    )
    parser.add_argument(
        "--max-pods",
        type=int,
        default=Limits.pods,
        help=f"most pods one PodCliqueSet may have at its template's counts (default: {Limits.pods})",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the objects it would create; no cluster access")
    parser.add_argument("-f", "--filename", type=Path, help="with --dry-run: PodCliqueSet YAML/JSON (and bindings)")
    parser.add_argument(
        "-o", "--output", choices=("json", "yaml"), default="yaml", help="with --dry-run (default yaml)"
    )
    parser.add_argument("--seed", type=int, default=0, help="with --dry-run: seed of the pod-name suffixes")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    problem = (
        ("--workers must be at least 1" if args.workers < 1 else None)
        or ("--concurrent-writes must be at least 1" if args.concurrent_writes < 1 else None)
        or ("--qps must be positive" if not args.qps > 0 else None)
        or ("--burst must be at least 1" if args.burst < 1 else None)
    )
    if problem:
        print(f"reconcile: {problem}", file=sys.stderr)
        return 2
    if args.dry_run:
        return _dry_run(args)
    if args.filename:
        print("reconcile: -f is only used with --dry-run", file=sys.stderr)
        return 2
    return _serve(args)


def _load(path: Path) -> list[dict[str, Any]]:
    """The objects in a YAML/JSON file (documents, or the ``items`` of a ``List``); ``DryRunRejected`` with one
    line naming the document, item and field for anything that is not a file of PodCliqueSets."""
    try:
        documents = parse_stream(read_bounded(path, limit=_MAX_FILE_BYTES))
    except (UnreadableFile, UnreadableText) as err:
        raise DryRunRejected(f"{path}: {err}") from None
    objects: list[dict[str, Any]] = []
    for number, doc in enumerate(documents):
        where = f"{path}: document {number}" if len(documents) > 1 else str(path)
        if not isinstance(doc, dict):
            raise DryRunRejected(f"{where}: must be a Kubernetes object (a mapping), got {type(doc).__name__}")
        kind = doc.get("kind")
        if not (isinstance(kind, str) and kind.endswith("List")):
            objects.append(_known(doc, where))
            continue
        items = doc.get("items")
        if not isinstance(items, list):
            raise DryRunRejected(f"{where}: items must be a list of objects, got {type(items).__name__}")
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise DryRunRejected(f"{where}: items[{index}]: must be an object, got {type(item).__name__}")
            objects.append(_known(item, f"{where}: items[{index}]"))
    return objects


def _features(args: argparse.Namespace) -> Features:
    return Features(default_scheduler=args.default_scheduler_profile, mnnvl=args.mnnvl)


def _known(obj: dict[str, Any], where: str) -> dict[str, Any]:
    """``obj`` if a dry run reads its kind; a Secret or a typo is refused rather than passed over in silence."""
    kind = obj.get("kind")
    if kind not in _DRY_RUN_KINDS:
        raise DryRunRejected(f"{where}: kind {kind!r}: a dry run reads only {', '.join(_DRY_RUN_KINDS)} objects")
    return obj


def _dry_run(args: argparse.Namespace) -> int:
    if args.filename is None:
        print("reconcile --dry-run: -f PCS.yaml is required", file=sys.stderr)
        return 2
    limits = Limits(replicas=args.max_replicas, pods=args.max_pods)
    try:
        result = dry_run(
            _load(args.filename),
            scheduler_name=args.scheduler_name,
            seed=args.seed,
            limits=limits,
            features=_features(args),
        )
    except DryRunRejected as err:
        print(f"reconcile --dry-run: {err}", file=sys.stderr)
        return 2
    if args.output == "json":
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump(result, sys.stdout, sort_keys=False)
    return 0


def _serve(args: argparse.Namespace) -> int:
    # Imported here: --dry-run must work on a machine with no kubeconfig and without loading the client.
    from scheduler.kube.connect import ConnectError, load_api_client
    from scheduler.kube.rate_limit import TokenBucket
    from scheduler.reconcile.client import ApiError
    from scheduler.reconcile.controller import Reconciler
    from scheduler.reconcile.fanout import Fanout
    from scheduler.reconcile.health import Health, HealthServer
    from scheduler.reconcile.rest_client import KubeApi

    try:
        api_client = load_api_client(args.kubeconfig)
    except ConnectError as err:
        print(f"reconcile: {err}", file=sys.stderr)
        return 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    api = KubeApi(api_client, namespace=args.namespace, rate=TokenBucket(args.qps, args.burst))
    if args.mnnvl:  # as Grove's operator, which will not start with MNNVL on and no ComputeDomain to make
        try:
            served = api.serves("ComputeDomain")
        except ApiError as err:
            print(f"reconcile: --mnnvl: cannot read API discovery: {err}", file=sys.stderr)
            return 1
        if not served:
            print(
                "reconcile: --mnnvl needs computedomains.resource.nvidia.com (the NVIDIA DRA driver's CRD), which "
                "this cluster does not serve: install the driver, or run without --mnnvl",
                file=sys.stderr,
            )
            return 1
    health = Health()
    server: HealthServer | None = None
    if args.probe_port is not None:
        try:  # before any watch starts: a port that cannot be had is one line and exit 2, not a half-started process
            server = HealthServer(health, host=args.probe_host, port=args.probe_port)
        except OSError as err:
            where = f"{args.probe_host}:{args.probe_port}"
            print(f"reconcile: --probe-port {where}: {err.strerror or err}", file=sys.stderr)
            return 2
    health.watching(api.start_watches(stop, on_synced=health.synced))
    if server is not None:
        server.start()
    log.info("reconciler started namespace=%s scheduler=%s", args.namespace or "*", args.scheduler_name)
    reconciler = Reconciler(
        api,
        scheduler_name=args.scheduler_name,
        initc_image=args.initc_image,
        limits=Limits(replicas=args.max_replicas, pods=args.max_pods),
        features=_features(args),
        fanout=Fanout(args.concurrent_writes),
    )
    try:
        reconciler.run(stop=stop, resync_seconds=args.resync_seconds, on_tick=health.tick, workers=args.workers)
    finally:
        if server is not None:
            server.stop()
    return 0
