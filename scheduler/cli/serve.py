"""``grove-extender serve``: the extender over HTTP (uvicorn, keep-alive).

Embedded mode (``--snapshot FILE``): the cluster is the snapshot, binds and status writes are applied in memory,
and this replica is always the leader. ``build_service`` is shared with the live mode, which only swaps the
store's feed, the writer and the leadership.

Live mode (``--kubeconfig FILE``, or ``--in-cluster``, which is also the default inside a pod when neither other
mode is given): watches feed the store, bindings and status go to the API server, and a Lease elects the one
replica that acts (``scheduler.kube.live``).

Where and how it listens (ports, mTLS, limits): ``scheduler.cli.listeners``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp

from api.http.app import DEFAULT_MAX_BODY_BYTES, create_app, create_debug_app, create_probe_app
from placement import solve
from placement.request import SolveOptions
from scheduler.cli.listeners import add_listener_arguments, listener_problem, serve_http, tls_problem
from scheduler.extender.cluster_writer import ClusterWriter, InMemoryClusterWriter
from scheduler.extender.coordinator import BackgroundWorker, Coordinator, CoordinatorConfig, RoomSettings
from scheduler.extender.leadership import AlwaysLeader, Leadership
from scheduler.extender.state import ClusterStore, load_snapshot_into
from scheduler.extender.translation.cluster_view import LevelsError, choose_levels
from scheduler.kube.connect import ConnectError
from scheduler.kube.foreign import OurPods
from scheduler.kube.live import connect_live, default_namespace, wants_in_cluster
from scheduler.snapshot import SnapshotError, load_snapshot
from topology import Level

__all__ = ["Service", "build_service", "register"]

log = logging.getLogger(__name__)


@dataclass
class Service:
    app: ASGIApp  # the verbs and probes
    probe_app: ASGIApp  # the probes alone
    debug_app: ASGIApp  # /metrics and /debug/gangs
    coordinator: Coordinator
    worker: BackgroundWorker


def build_service(
    *,
    store: ClusterStore,
    writer: ClusterWriter,
    leadership: Leadership,
    config: CoordinatorConfig,
    levels: Sequence[Level] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Service:
    """Wire store → coordinator → app. Build it before the store is filled, so the first list's events queue
    every pending gang for planning ahead."""
    coordinator = Coordinator(
        store=store, writer=writer, solver=solve, leadership=leadership, config=config, levels=levels
    )
    return Service(
        app=create_app(coordinator, registry=coordinator.registry, max_body_bytes=max_body_bytes),
        probe_app=create_probe_app(coordinator),
        debug_app=create_debug_app(coordinator, registry=coordinator.registry),
        coordinator=coordinator,
        worker=BackgroundWorker(coordinator),
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("serve", help="run the kube-scheduler extender (filter, prioritize, bind, preempt)")
    parser.add_argument("--snapshot", help="serve over this snapshot (embedded mode: binds are applied in memory)")
    parser.add_argument("--kubeconfig", help="serve a live cluster through this kubeconfig file")
    parser.add_argument(
        "--in-cluster",
        action="store_true",
        help="serve a live cluster with the pod's service account (the default inside a pod when neither "
        "--snapshot nor --kubeconfig is given)",
    )
    parser.add_argument("--lease-namespace", help="namespace of the leader-election Lease (default: the pod's)")
    parser.add_argument("--lease-name", default="grove-extender", help="leader-election Lease (default: %(default)s)")
    parser.add_argument("--identity", help="this replica's name in the Lease (default: the host name)")
    add_listener_arguments(parser)
    parser.add_argument(
        "--bind-wait",
        type=float,
        default=CoordinatorConfig.bind_wait_seconds,
        help="seconds a ready member's bind call waits for its gang to complete before it answers Error (the member "
        "stays ready and is bound when the gang completes); keep well below kube-scheduler's httpTimeout "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--reservation-ttl",
        type=float,
        default=CoordinatorConfig.reservation_ttl_seconds,
        help="seconds any plan holds capacity without progress; a gang gets more the larger it is and the slower "
        "kube-scheduler feeds its members (default: %(default)s)",
    )
    parser.add_argument(
        "--solve-time-limit", type=float, default=SolveOptions.time_limit_seconds, help="seconds per plan"
    )
    parser.add_argument(
        "--head-time-limit",
        type=float,
        help="seconds a queue head's CP-SAT model searches at most, its greedy plan in hand (default: "
        "--solve-time-limit); shorter is cheaper and sooner, and packs worse",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=CoordinatorConfig.batch_size,
        metavar="K",
        help="gangs waiting for a first placement planned together in one model, the first K by priority then age; "
        "1 plans one gang at a time (default: %(default)s)",
    )
    parser.add_argument(
        "--nominate",
        action=argparse.BooleanOptionalAction,
        default=CoordinatorConfig.nominate,
        help="write each planned pod's status.nominatedNodeName (needs pods/status patch): kube-scheduler then "
        "tries the planned node alone instead of running its filters over every node (default: %(default)s)",
    )
    parser.add_argument(
        "--preemption",
        action=argparse.BooleanOptionalAction,
        default=RoomSettings.evict,
        help="evict lower-priority pods (whole gangs, or their pods above minReplicas) through the Eviction API "
        "when a gang fits no other way (needs pods/eviction create); without it, only reservations of gangs "
        "not started yet give way to a gang of higher priority (default: %(default)s)",
    )
    parser.add_argument(
        "--preemption-wait",
        type=float,
        default=RoomSettings.wait_seconds,
        metavar="SECONDS",
        help="how long pods evicted for a gang may take to go before the preemption is given up and the gang is "
        "planned again without them; cover your pods' terminationGracePeriodSeconds (default: %(default)s)",
    )
    parser.add_argument("--levels", help="topology levels file (list of {domain, key}); default: labels / binding")
    parser.add_argument(
        "--scheduler-name",
        action="append",
        dest="scheduler_names",
        metavar="NAME",
        help="schedulerName of the kube-scheduler profile that calls this extender (repeatable; default: grove). "
        "Pods it schedules and Grove gang members are kept whole; other pods only as the capacity they hold",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    config = CoordinatorConfig(
        bind_wait_seconds=args.bind_wait,
        reservation_ttl_seconds=args.reservation_ttl,
        solve=SolveOptions(time_limit_seconds=args.solve_time_limit),
        head_time_limit_seconds=args.head_time_limit,
        batch_size=args.batch_size,
        nominate=args.nominate,
        room=RoomSettings(evict=args.preemption, wait_seconds=args.preemption_wait),
    )
    problem = (
        listener_problem(args)
        or ("--batch-size must be at least 1" if args.batch_size < 1 else None)
        or ("--preemption-wait must be positive" if not args.preemption_wait > 0 else None)
        or (
            "--head-time-limit must be positive"
            if args.head_time_limit is not None and not args.head_time_limit > 0
            else None
        )
        or tls_problem(args)
    )
    if problem:
        print(f"grove-extender serve: {problem}", file=sys.stderr)
        return 2
    live = args.kubeconfig or args.in_cluster
    if args.snapshot and live:
        print("grove-extender serve: give --snapshot or --kubeconfig/--in-cluster, not both", file=sys.stderr)
        return 2
    if args.snapshot:
        return _serve_snapshot(args, config)
    if args.kubeconfig or wants_in_cluster(in_cluster_flag=args.in_cluster):
        return _serve_live(args, config)
    print("grove-extender serve: --snapshot FILE, --kubeconfig FILE or --in-cluster is required", file=sys.stderr)
    return 2


def our_pods(args: argparse.Namespace) -> OurPods:
    return OurPods(frozenset(args.scheduler_names)) if args.scheduler_names else OurPods()


def _serve_snapshot(args: argparse.Namespace, config: CoordinatorConfig) -> int:
    try:
        snapshot = load_snapshot(args.snapshot)
        levels = choose_levels(levels_file=args.levels, bindings=snapshot.topology_bindings)
    except (SnapshotError, LevelsError) as err:
        print(f"grove-extender serve: {err}", file=sys.stderr)
        return 2
    store = ClusterStore(ours=our_pods(args))
    service = build_service(
        store=store,
        writer=InMemoryClusterWriter(store),
        leadership=AlwaysLeader(),
        config=config,
        levels=levels,
        max_body_bytes=args.max_body_bytes,
    )
    load_snapshot_into(store, snapshot)
    # The loaded cluster lives as long as the process: keep the collector from re-scanning it on the hot path.
    gc.freeze()
    service.worker.start()
    service.coordinator.add_liveness("planner", service.worker.alive)
    log.info("serving snapshot=%s", args.snapshot)
    try:
        return _serve(args, service)
    finally:
        service.worker.stop()


def _serve(args: argparse.Namespace, service: Service) -> int:
    registry = service.coordinator.registry  # the TLS listener's metrics join the extender's on /metrics
    return serve_http(args, verbs=service.app, probes=service.probe_app, debug=service.debug_app, registry=registry)


def _serve_live(args: argparse.Namespace, config: CoordinatorConfig) -> int:
    # Levels come from --levels or the node labels' defaults: reading ClusterTopologyBindings would need one more
    # permission than the extender's least-privilege role grants.
    try:
        levels = choose_levels(levels_file=args.levels, bindings=[])
        cluster = connect_live(
            kubeconfig=args.kubeconfig,
            lease_namespace=args.lease_namespace or default_namespace(),
            lease_name=args.lease_name,
            identity=args.identity,
        )
    except (LevelsError, ConnectError) as err:
        print(f"grove-extender serve: {err}", file=sys.stderr)
        return 2
    store = ClusterStore(ours=our_pods(args))
    # Built before the watches fill the store, so the first list's events queue every pending gang for planning.
    service = build_service(
        store=store,
        writer=cluster.writer,
        leadership=cluster.elector,
        config=config,
        levels=levels,
        max_body_bytes=args.max_body_bytes,
    )
    cluster.start(store)
    service.worker.start()
    service.coordinator.add_liveness("planner", service.worker.alive)
    service.coordinator.add_liveness("watches", cluster.alive)
    service.coordinator.add_freshness(cluster.stale)
    log.info("serving live cluster")
    try:
        return _serve(args, service)
    finally:
        service.worker.stop()
        cluster.close()
