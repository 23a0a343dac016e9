"""How long gangs take to bind through the extender on a simulated kube-scheduler, and what it costs.

Runs the scenarios of issue 9 on ``benchmarks/sim`` (kube-scheduler's queue, pace, backoff and binding cycles on a
simulated clock; the real coordinator and solver) and prints, per scenario: simulated seconds until the last gang
was whole, kube-scheduler's scheduling cycles and extender calls, the pods the extender bound for members whose own
call had been answered, and the CPU seconds the run took here. Run from the repository root:

    .venv/bin/python -m benchmarks.bench_lifecycle [--only NAME ...] [--pace 80] [--max-backoff 10]

Scenarios: one gang of 2,400 pods on 1,008 nodes × 4 GPUs (the issue's cluster); one of 10,000 on 2,520 nodes;
the same 2,400 beside 400 pods that cannot be placed (parked: every wake-up of the queue costs cycles); the 2,400
with 100 of its pods refused by kube-scheduler's own filters for a minute (its ready members keep coming back from
backoff), alone and beside the parked pods, and the 10,000 with 100 held for 200 s; 100 gangs × 8 with the
extender killed 3 s in and back 8 s later; a gang whose members arrive in two cohorts 5 s apart; a release cut by
a crash after 20 bindings.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console

from benchmarks.sim.simulation import GangSpec, Simulation, SimulationOutcome


@dataclass(frozen=True)
class Knobs:
    """What kube-scheduler's configuration sets: its pace through the extender and ``podMaxBackoffSeconds``."""

    pace: float = 80.0
    max_backoff: float = 10.0

    def simulation(self, *, nodes: int) -> Simulation:
        return Simulation(nodes=nodes, gpus_per_node=4, pods_per_second=self.pace, max_backoff=self.max_backoff)


def _big(size: int, nodes: int) -> Callable[[Knobs], Simulation]:
    def build(knobs: Knobs) -> Simulation:
        sim = knobs.simulation(nodes=nodes)
        sim.add_gang(GangSpec("big", {"w": (size, size, 1)}))
        return sim

    return build


def _big_beside_parked(knobs: Knobs) -> Simulation:
    sim = knobs.simulation(nodes=1008)
    sim.add_gang(GangSpec("big", {"w": (2400, 2400, 1)}))
    # 400 pods of 8 GPUs on 4-GPU nodes: refused with FailedNodes and parked, woken by every cluster event.
    for g in range(50):
        sim.add_gang(GangSpec(f"never-{g}", {"w": (8, 8, 8)}, fits=False))
    return sim


def _blocked(parked: bool, size: int = 2400, nodes: int = 1008, until: float = 60.0) -> Callable[[Knobs], Simulation]:
    """A gang, 100 of whose members kube-scheduler's own filters refuse until ``until`` (a volume being
    provisioned, say): the others are ready and come back from backoff every 10 s meanwhile, which is where what
    filter answers a ready member matters."""

    def build(knobs: Knobs) -> Simulation:
        sim = knobs.simulation(nodes=nodes)
        sim.add_gang(GangSpec("big", {"w": (size, size, 1)}))
        sim.block(sim.members("big")[size - 100 :], until=until)
        if parked:
            for g in range(50):
                sim.add_gang(GangSpec(f"never-{g}", {"w": (8, 8, 8)}, fits=False))
        return sim

    return build


def _restart(knobs: Knobs) -> Simulation:
    sim = knobs.simulation(nodes=252)
    for g in range(100):
        sim.add_gang(GangSpec(f"tp-{g}", {"w": (8, 8, 1)}))
    sim.restart_extender(at=3.0, downtime=8.0)
    return sim


def _cohorts(knobs: Knobs) -> Simulation:
    sim = knobs.simulation(nodes=16)
    sim.add_gang(GangSpec("tp-65", {"w": (8, 8, 1)}, late=frozenset({3, 4, 5, 6, 7}), late_at=5.0))
    return sim


def _cut(knobs: Knobs) -> Simulation:
    sim = knobs.simulation(nodes=20)
    sim.add_gang(GangSpec("g", {"w": (64, 64, 1)}))
    sim.restart_after_binds(20, downtime=8.0)
    return sim


SCENARIOS: dict[str, tuple[str, Callable[[Knobs], Simulation], float]] = {
    "gang-2400": ("1 gang × 2,400 pods, 1,008 nodes", _big(2400, 1008), 600.0),
    "gang-10000": ("1 gang × 10,000 pods, 2,520 nodes", _big(10_000, 2520), 1800.0),
    "gang-2400-parked": ("2,400-pod gang + 400 parked pods", _big_beside_parked, 600.0),
    "gang-2400-blocked": ("2,400-pod gang, 100 held by kube-scheduler 60 s", _blocked(parked=False), 600.0),
    "gang-2400-blocked-parked": ("the same + 400 parked pods", _blocked(parked=True), 600.0),
    "gang-10000-blocked": (
        "10,000-pod gang, 100 held by kube-scheduler 200 s",
        _blocked(parked=False, size=10_000, nodes=2520, until=200.0),
        1800.0,
    ),
    "restart": ("100 gangs × 8, extender down 3 s → 11 s", _restart, 600.0),
    "cohorts": ("gang of 8 in cohorts 3 + 5, 5 s apart", _cohorts, 600.0),
    "cut-release": ("64-pod gang, crash after 20 binds, 8 s down", _cut, 600.0),
}


COLUMNS = (
    "scenario",
    "whole",
    "last whole (sim s)",
    "cycles",
    "filter Error",
    "FailedNodes",
    "bind calls",
    "bind Error",
    "bound by release",
    "partly bound (s)",
    "CPU s",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="run these scenarios only")
    parser.add_argument("--pace", type=float, default=80.0, help="kube-scheduler's pods per second (default 80)")
    parser.add_argument(
        "--max-backoff", type=float, default=10.0, help="kube-scheduler's podMaxBackoffSeconds (default 10)"
    )
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    rows: list[list[str]] = []
    for name in args.only or list(SCENARIOS):
        title, build, until = SCENARIOS[name]
        with console.status(f"{name}: {title}"):
            sim = build(Knobs(pace=args.pace, max_backoff=args.max_backoff))
            out: SimulationOutcome = sim.run(until=until)
        if out.overcommits:
            console.print(f"[red]{name}: overcommitted: {out.overcommits[:3]}")
        rows.append(
            [
                title,
                f"{len(out.whole_at)}/{sum(1 for spec in sim.gangs if spec.fits)}",
                f"{max(out.whole_at.values(), default=float('nan')):.2f}",
                str(out.stats.cycles),
                str(out.stats.filter_errors),
                str(out.stats.filter_refusals),
                str(out.stats.bind_calls),
                str(out.stats.bind_errors),
                str(out.stats.bound_by_others),
                f"{max(out.partial_seconds.values(), default=0.0):.1f}",
                f"{out.cpu_seconds:.1f}",
            ]
        )
    print(
        f"gang lifecycle on the kube-scheduler simulator ({args.pace:g} pods/s, podMaxBackoffSeconds "
        f"{args.max_backoff:g}), simulated seconds\n"
    )
    print("| " + " | ".join(COLUMNS) + " |")
    print("|---" + "|---:" * (len(COLUMNS) - 1) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
