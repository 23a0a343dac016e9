"""``grove-extender bench``: replay snapshots through placement policies side by side (see ``benchmarks.replay``),
or, with ``--fill``, pack each snapshot's cluster with gangs of its (or a trace's) shapes until the first one does
not fit (see ``benchmarks.packing``).

Registered as the ``bench`` entry point of ``grove_extender.commands`` (pyproject.toml): ``scheduler.cli`` lists it
beside its own subcommands without importing the benchmarks, and an install without them has no ``bench``."""

from __future__ import annotations

import argparse

from benchmarks.policies import BATCH, DEFAULT_POLICIES


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="replay snapshots through placement policies and compare them",
        description="Discrete-event replay: gangs arrive at creationTimestamp, run for "
        "grove-extender/duration-seconds, then free capacity; every policy sees the same arrivals.",
    )
    parser.add_argument("--snapshot", action="append", required=True, metavar="FILE", help="repeatable")
    parser.add_argument(
        "--policy",
        default=DEFAULT_POLICIES,
        help=f"comma-separated (default {DEFAULT_POLICIES}); {BATCH} plans the queue's head together (replay only)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=16, metavar="K", help=f"{BATCH}: gangs planned together (default 16)"
    )
    parser.add_argument("--json", metavar="OUT", help="write the metrics as JSON (a list when several snapshots)")
    parser.add_argument("--plot", metavar="OUT.png", help="write utilisation over time and GPU-hour bars")
    parser.add_argument("--horizon-seconds", type=float, help="measured window (default: the last arrival)")
    parser.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="run time of a PodGang without the grove-extender/duration-seconds annotation (a cluster recorded by "
        "`grove-extender record` has none)",
    )
    parser.add_argument("--time-limit", type=float, help="solver time limit per decision, seconds")
    parser.add_argument(
        "--workers",
        type=int,
        help="CP-SAT workers (default: the solver's); 1 makes cpsat replays repeatable unless a solve times out",
    )
    parser.add_argument(
        "--preemption",
        default="off",
        metavar="MODE[,MODE]",
        help="replay only: off (default), cpsat (the victim model) or kai-greedy (the KAI-like greedy) chooses what a "
        "waiting gang of higher priority evicts; each run also records the other chooser's choice at every decision. "
        "Several, comma-separated, run side by side (policies cpsat, topology-greedy)",
    )
    parser.add_argument(
        "--direct",
        action="store_true",
        help="call placement.solve directly for gang policies too, instead of going through the gang coordinator",
    )
    fill = parser.add_argument_group("packing (--fill)")
    fill.add_argument(
        "--fill",
        action="store_true",
        help="instead of replaying, place gangs drawn from the workload's shapes one at a time until one fails",
    )
    fill.add_argument(
        "--shapes",
        metavar="FILE",
        help="draw gangs from this snapshot's PodGangs or openb-format pod list (.csv) instead of the snapshot's own",
    )
    fill.add_argument("--seeds", type=int, default=10, help="fills per policy, seeds 1..N (default 10)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # Imported on use: every grove-extender command (serve included) builds this parser in an install that has the
    # benchmarks, and the replay and packing engines have no business in those processes.
    from benchmarks.command import bench

    return bench(args)
