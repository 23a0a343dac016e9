"""Check any :class:`~placement.preemption.request.Preemption` against what it was asked, without the solver.

Written from the request, the view and the victims directly (not from the victim pool or the resolved problem the
model and the greedy share), so a bug in either shows up here instead of being agreed with. Every preemption
result in tests and benchmarks goes through :func:`preemption_violations`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from placement.amounts import amount, quantity
from placement.preemption.request import Budget, Preemption, PreemptionCost, Victim, VictimGang
from placement.problem import label_value
from placement.request import ClusterView, GangRequest, Status
from topology.graph import GPU_RESOURCE

__all__ = ["preemption_violations"]


def preemption_violations(
    request: GangRequest,
    view: ClusterView,
    victims: Sequence[Victim],
    gangs: Mapping[str, VictimGang],
    result: Preemption,
    *,
    budgets: Sequence[Budget] = (),
) -> list[str]:
    """Everything wrong with ``result``; empty when it is sound (``budgets``: the disruption budgets it was given)."""
    if result.status != Status.PLACED:
        found = []
        if result.assignment or result.evicted or result.yielded:
            found.append(f"status {result.status} but a plan: {len(result.assignment)} pods, victims chosen")
        if not result.reason:
            found.append(f"status {result.status} without a reason")
        return found
    found, chosen = _chosen(victims, gangs, result)
    for key in sorted({v.gang for v in chosen}):
        if key in gangs and gangs[key].priority >= request.priority:
            found.append(f"gang {key} makes way at priority {gangs[key].priority}, not below {request.priority}")
    found.extend(_gang_rule(victims, gangs, chosen))
    evicted = set(result.evicted)
    for budget in budgets:
        taken = sorted(key for key in set(budget.victims) if key in evicted)
        if len(taken) > budget.allowed:
            found.append(f"budget {budget.name} allows {budget.allowed} evictions, the plan makes {len(taken)}")
    found.extend(_placement(request, view, chosen, result.assignment))
    cost = _cost(gangs, chosen)
    if cost != result.cost:
        found.append(f"cost {result.cost} does not match the victims chosen, which cost {cost}")
    return found


def _chosen(
    victims: Sequence[Victim], gangs: Mapping[str, VictimGang], result: Preemption
) -> tuple[list[str], list[Victim]]:
    """The victims the plan makes way (evicted pods, every member of yielding gangs), and what is wrong with it."""
    found: list[str] = []
    by_key = {v.key: v for v in victims}
    chosen: list[Victim] = []
    for key, times in Counter(result.evicted).items():
        victim = by_key.get(key)
        if times > 1:
            found.append(f"victim {key} evicted {times} times")
        if victim is None:
            found.append(f"evicted {key} is not a victim")
        elif victim.gang not in gangs or gangs[victim.gang].reserved:
            found.append(f"evicted {key} is not a running pod of a known gang (a reservation yields, whole)")
        else:
            chosen.append(victim)
    for key in sorted(set(result.yielded)):
        if key not in gangs or not gangs[key].reserved:
            found.append(f"yielded {key} is not a reserved victim gang")
        else:
            chosen.extend(v for v in victims if v.gang == key)
    if len(set(result.yielded)) != len(result.yielded):
        found.append("a gang yields twice")
    return found, chosen


def _gang_rule(victims: Sequence[Victim], gangs: Mapping[str, VictimGang], chosen: list[Victim]) -> list[str]:
    found: list[str] = []
    picked = {v.key for v in chosen}
    for key in sorted({v.gang for v in chosen}):
        members = [v for v in victims if v.gang == key]
        lost = [v for v in members if v.key in picked]
        gang = gangs[key]
        if len(lost) == len(members):
            continue
        if gang.reserved or not gang.min_replicas:
            found.append(f"gang {key} loses {len(lost)} of its {len(members)} members; it goes whole or not at all")
            continue
        for group, minimum in sorted(gang.min_replicas.items()):
            listed = sum(1 for v in members if v.group == group)
            kept = listed - sum(1 for v in lost if v.group == group)
            if kept < min(minimum, listed):
                found.append(f"gang {key} keeps {kept} of group {group}, below minReplicas {minimum}")
    return found


def _placement(
    request: GangRequest, view: ClusterView, chosen: list[Victim], assignment: Mapping[str, str]
) -> list[str]:
    found: list[str] = []
    free: dict[str, Counter[str]] = {node: Counter(units) for node, units in view.free.items()}
    for victim in chosen:
        free.setdefault(victim.node, Counter()).update(victim.demand)
    group_of = {pod: g for g in request.groups for pod in g.pods}
    hosts = view.topology.hosts
    load: dict[str, Counter[str]] = {}
    for pod, node in assignment.items():
        group = group_of.get(pod)
        if group is None or node not in hosts:
            found.append(f"pod {pod} on {node}: not a pod of gang {request.key}, or not a node of the view")
            continue
        if group.eligible is not None and node not in group.eligible:
            found.append(f"pod {pod} of group {group.name} placed on ineligible node {node}")
        load.setdefault(node, Counter()).update(group.demand)
    for node, on_node in sorted(load.items()):
        for resource, units in sorted(on_node.items()):
            room = free.get(node, Counter())[resource]
            if units > room:
                found.append(
                    f"node {node} over capacity: {amount(resource, units)} placed, "
                    f"{quantity(resource, room)} free with the victims gone"
                )
    placed = Counter(group_of[p].name for p in assignment if p in group_of)
    for group in request.groups:
        if placed[group.name] != group.min_replicas:
            found.append(
                f"group {group.name} placed {placed[group.name]} pods, not its minReplicas {group.min_replicas}"
            )
    for index, pack in enumerate(request.packs):
        if pack.required is None:
            continue
        values = {
            label_value(hosts[node].labels, key=pack.required, node=node)
            for pod, node in assignment.items()
            if pod in group_of and group_of[pod].name in pack.groups and node in hosts
        }
        if None in values or len(values) > 1:
            found.append(f"packs[{index}]: required {pack.required} not shared, values {sorted(map(str, values))}")
    return found


def _cost(gangs: Mapping[str, VictimGang], chosen: list[Victim]) -> PreemptionCost:
    running = [v for v in chosen if not gangs[v.gang].reserved]
    reserved = [v for v in chosen if gangs[v.gang].reserved]
    run_gangs = {v.gang for v in running}
    yield_gangs = {v.gang for v in reserved}
    return PreemptionCost(
        victim_priority=max((gangs[g].priority for g in run_gangs), default=None),
        victim_gpus=sum(v.demand.get(GPU_RESOURCE, 0) for v in running),
        victim_gangs=len(run_gangs),
        victim_pods=len(running),
        yielded_priority=max((gangs[g].priority for g in yield_gangs), default=None),
        yielded_gpus=sum(v.demand.get(GPU_RESOURCE, 0) for v in reserved),
        yielded_gangs=len(yield_gangs),
    )
