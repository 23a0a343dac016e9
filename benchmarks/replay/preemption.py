"""Preemption in the replay: which running work makes way for a waiting gang of higher priority, chosen by
``placement.preemption`` on the replay's own state, checked by its validator, with both choosers asked every time.

The candidates are built from the engine's running gangs the way the extender gathers them
(``scheduler.extender.coordinator.victims``): every bound pod of a running gang of strictly lower priority is a
``Victim`` (its node and demand), its gang a ``VictimGang`` with each group's ``minReplicas`` (the chooser evicts a
gang whole, or only its members above those); a gang with no pod on a node the preemptor could use is left out.
The snapshot's background pods (bound in it) are not candidates: the replay does not know who owns them.
Reservations never appear: a replay decision leaves none behind (all-or-nothing steps bind or refuse).

At every decision both choosers run on the same candidates and free capacity: the one the run applies
(``--preemption``) and the other, whose choice is only recorded — so one run answers, arrival by arrival, whether
the victim model evicts fewer GPUs than the KAI-like greedy. Both choices pass through ``preemption_violations``; a
violation fails the replay, as an overcommit does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from api.core import GPU
from benchmarks.replay.workload import ReplayGang
from placement.preemption import (
    Preemption,
    Victim,
    VictimGang,
    greedy_preemption,
    plan_preemption,
    preemption_violations,
)
from placement.request import ClusterView, GangRequest, SolveOptions, Status
from topology import Topology

__all__ = [
    "CHOOSERS",
    "MODES",
    "OFF",
    "Choice",
    "PreemptionRecord",
    "PreemptionViolation",
    "Preemptor",
    "candidates",
    "could_fit",
]

OFF = "off"
Chooser = Callable[..., Preemption]
CHOOSERS: dict[str, Chooser] = {"cpsat": plan_preemption, "kai-greedy": greedy_preemption}
MODES = (OFF, *CHOOSERS)


class PreemptionViolation(RuntimeError):
    """A chooser's answer the validator refuses (a victim gang broken, a victim not below the preemptor, a plan
    that does not fit once its victims are gone, a cost that does not match)."""


@dataclass(frozen=True)
class Choice:
    """One chooser's answer, as the comparison records it: what it would evict (running pods only; the replay has
    no reservations to yield) and how long it took."""

    status: str
    gpus: int = 0
    gangs: int = 0
    pods: int = 0
    highest_priority: int | None = None
    seconds: float = 0.0

    @classmethod
    def of(cls, found: Preemption) -> Choice:
        cost = found.cost
        return cls(
            found.status.value,
            cost.victim_gpus,
            cost.victim_gangs,
            cost.victim_pods,
            cost.victim_priority,
            found.solve_seconds,
        )

    @property
    def placed(self) -> bool:
        return self.status == Status.PLACED.value

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "gpusEvicted": self.gpus,
            "gangsTouched": self.gangs,
            "podsEvicted": self.pods,
            "highestPriority": self.highest_priority,
            "ms": round(self.seconds * 1000, 3),
        }


@dataclass
class PreemptionRecord:
    """One decision: a waiting gang that did not fit asked both choosers; ``applied`` names the one the run
    followed; ``started``: the gang started right after its victims went (the step placed it on what they freed)."""

    at: float
    gang: str
    priority: int
    applied: str
    choices: Mapping[str, Choice]
    started: bool = False

    @property
    def evicted(self) -> bool:
        """The applied choice evicted something."""
        chosen = self.choices[self.applied]
        return chosen.placed and chosen.pods > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "t": round(self.at, 1),
            "gang": self.gang,
            "priority": self.priority,
            "applied": self.applied,
            "started": self.started,
            **{name: choice.to_json() for name, choice in self.choices.items()},
        }


@dataclass
class Preemptor:
    """Asks both choosers with ``options`` (the step's policy, time limit and workers) and returns the ``policy``
    one's answer. ``choosers`` are ``CHOOSERS`` unless a test hands in others."""

    policy: str
    options: SolveOptions
    topology: Topology
    choosers: Mapping[str, Chooser] = field(default_factory=lambda: dict(CHOOSERS))

    def choose(
        self,
        request: GangRequest,
        free: Mapping[str, Mapping[str, int]],
        victims: Sequence[Victim],
        gangs: Mapping[str, VictimGang],
    ) -> tuple[Preemption, dict[str, Choice]]:
        view = ClusterView(self.topology, free)
        found: dict[str, Preemption] = {}
        for name, chooser in self.choosers.items():
            answer = chooser(request, view, victims, gangs, self.options)
            wrong = preemption_violations(request, view, victims, gangs, answer)
            if wrong:
                raise PreemptionViolation(f"gang {request.key}: {name}'s choice of victims: " + "; ".join(wrong))
            found[name] = answer
        return found[self.policy], {name: Choice.of(answer) for name, answer in found.items()}


def useful_nodes(request: GangRequest) -> frozenset[str] | None:
    """The nodes the gang could run on at all (``None``: any), as the extender reads them."""
    sets = [group.eligible for group in request.groups]
    if any(eligible is None for eligible in sets):
        return None
    return frozenset().union(*(eligible for eligible in sets if eligible is not None))


def candidates(
    preemptor: GangRequest, running: Iterable[tuple[ReplayGang, Mapping[str, str]]]
) -> tuple[list[Victim], dict[str, VictimGang]]:
    """Victims and their gangs among ``running`` (gang, pod → node): every bound pod of each gang of strictly lower
    priority with a pod on a node the preemptor could use, in gang-key then pod-key order."""
    useful = useful_nodes(preemptor)
    victims: list[Victim] = []
    gangs: dict[str, VictimGang] = {}
    for gang, bound in sorted(running, key=lambda item: item[0].key):
        if gang.priority >= preemptor.priority or not bound:
            continue
        if useful is not None and not any(node in useful for node in bound.values()):
            continue
        groups = gang.request.groups
        group_of = {pod: group.name for group in groups for pod in group.pods}
        gangs[gang.key] = VictimGang(gang.key, gang.priority, {group.name: group.min_replicas for group in groups})
        victims.extend(Victim(pod, bound[pod], gang.demand[pod], gang.key, group_of[pod]) for pod in sorted(bound))
    return victims, gangs


def could_fit(request: GangRequest, free: Mapping[str, Mapping[str, int]], victims: Sequence[Victim]) -> bool:
    """A necessary condition before asking the choosers: each group's guaranteed GPUs fit what is free on its
    eligible nodes plus what every victim there holds."""
    held: dict[str, int] = {}
    for victim in victims:
        held[victim.node] = held.get(victim.node, 0) + victim.demand.get(GPU, 0)
    for group in request.groups:
        gpus = group.demand.get(GPU, 0) * group.min_replicas
        if gpus == 0:
            continue
        nodes = free if group.eligible is None else group.eligible
        room = sum(free.get(node, {}).get(GPU, 0) + held.get(node, 0) for node in nodes)
        if room < gpus:
            return False
    return True
