"""The victims checked and indexed: what the model, the greedy baseline and the plan they return share.

Checking refuses, naming the field and the rule, anything that would make a plan unsafe or meaningless: a victim
that is not of strictly lower priority than the preemptor, a node or gang nobody knows, a key given twice, a
negative demand. Indexing says, per gang, which victims are its members and how many of each group it may lose
without being evicted whole; and, for any choice of victims, what it frees per node and what it costs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from placement.preemption.request import Budget, Preemption, PreemptionCost, Victim, VictimGang
from placement.problem import InvalidRequest
from placement.request import ClusterView, GangRequest, Status
from topology.graph import GPU_RESOURCE

__all__ = ["VictimPool"]


@dataclass(frozen=True)
class VictimPool:
    """``victims`` in the caller's order (a victim is its index there); ``gangs`` and ``members`` only of gangs
    that have victims, members in victim order."""

    victims: tuple[Victim, ...]
    gangs: Mapping[str, VictimGang]
    members: Mapping[str, tuple[int, ...]]
    budgets: tuple[tuple[str, tuple[int, ...], int], ...] = ()  # (name, victims covered, how many may go)

    @classmethod
    def resolve(
        cls,
        request: GangRequest,
        view: ClusterView,
        victims: Sequence[Victim],
        gangs: Mapping[str, VictimGang],
        budgets: Sequence[Budget] = (),
    ) -> VictimPool:
        """Check the victims against the preemptor and the view; raise :class:`InvalidRequest` naming the field."""
        for key, entry in gangs.items():
            if entry.key != key:
                raise InvalidRequest(f"gangs[{key}]: the entry's key must be its gang's key, got {entry.key!r}")
            for group, minimum in entry.min_replicas.items():
                if not isinstance(minimum, int) or minimum < 0:
                    raise InvalidRequest(
                        f"gangs[{key}].min_replicas[{group}] must be a non-negative integer, got {minimum!r}"
                    )
        seen: set[str] = set()
        members: dict[str, list[int]] = {}
        for i, victim in enumerate(victims):
            where = f"victims[{i}] ({victim.key})"
            if victim.key in seen:
                raise InvalidRequest(f"{where}: key appears twice among the victims")
            seen.add(victim.key)
            if victim.node not in view.topology.hosts:
                raise InvalidRequest(f"{where}: node {victim.node} is not in the cluster view")
            gang = gangs.get(victim.gang)
            if gang is None:
                raise InvalidRequest(f"{where}: gang {victim.gang} is not among the victim gangs")
            for resource, units in victim.demand.items():
                if not isinstance(units, int) or units < 0:
                    raise InvalidRequest(f"{where}: demand[{resource}] must be a non-negative integer, got {units!r}")
            if gang.priority >= request.priority:
                raise InvalidRequest(
                    f"{where}: gang {gang.key} has priority {gang.priority}, not below the preemptor's "
                    f"{request.priority}"
                )
            members.setdefault(victim.gang, []).append(i)
        return cls(
            tuple(victims),
            {key: gangs[key] for key in members},
            {key: tuple(found) for key, found in members.items()},
            _budgets(victims, budgets),
        )

    def within_budgets(self, chosen: Collection[int]) -> bool:
        """Whether no budget would have more of its victims evicted than it allows."""
        picked = set(chosen)
        return all(sum(1 for i in covered if i in picked) <= allowed for _, covered, allowed in self.budgets)

    @property
    def binding_budgets(self) -> bool:
        """Some budget allows fewer evictions than it covers victims: not every victim can go at once."""
        return any(allowed < len(covered) for _, covered, allowed in self.budgets)

    def splits(self, gang: str) -> bool:
        """Whether the gang may lose some members and keep running: not a reservation, and it names minimums."""
        found = self.gangs[gang]
        return not found.reserved and bool(found.min_replicas)

    def allowance(self, gang: str) -> dict[str, int]:
        """Per group the gang names a minimum for: how many of its listed members it may lose short of going
        whole (none when fewer than the minimum are listed). Groups not named may lose every member."""
        listed: dict[str, int] = {}
        for i in self.members[gang]:
            listed[self.victims[i].group] = listed.get(self.victims[i].group, 0) + 1
        return {
            group: max(0, listed.get(group, 0) - minimum) for group, minimum in self.gangs[gang].min_replicas.items()
        }

    def extras(self, gang: str) -> tuple[int, ...]:
        """The members above the gang's minimums: of each named group its last listed members beyond the
        minimum (Grove scales a clique down from its highest replica), and every member of groups not named."""
        limits = self.allowance(gang)
        chosen: list[int] = []
        by_group: dict[str, list[int]] = {}
        for i in self.members[gang]:
            by_group.setdefault(self.victims[i].group, []).append(i)
        for group, found in by_group.items():
            keep = len(found) - limits[group] if group in limits else 0
            chosen.extend(found[keep:])
        return tuple(sorted(chosen))

    def gpus(self, victim: int) -> int:
        return self.victims[victim].demand.get(GPU_RESOURCE, 0)

    def freed(self, chosen: Collection[int]) -> dict[str, dict[str, int]]:
        """Units per node and resource that the chosen victims give back."""
        found: dict[str, dict[str, int]] = {}
        for i in chosen:
            victim = self.victims[i]
            on_node = found.setdefault(victim.node, {})
            for resource, units in victim.demand.items():
                on_node[resource] = on_node.get(resource, 0) + units
        return found

    def view_with(self, view: ClusterView, chosen: Collection[int]) -> ClusterView:
        """The view as it would be with the chosen victims gone (the gang shapes dropped: no tier here uses them)."""
        free = {node: dict(units) for node, units in view.free.items()}
        for node, units in self.freed(chosen).items():
            on_node = free.setdefault(node, {})
            for resource, extra in units.items():
                on_node[resource] = on_node.get(resource, 0) + extra
        return ClusterView(view.topology, free)

    def outcome(self, chosen: Collection[int]) -> tuple[tuple[str, ...], tuple[str, ...], PreemptionCost]:
        """What the chosen victims mean for the plan: running pods evicted (victim keys), reserved gangs that
        yield (gang keys), both in the caller's order, and the cost."""
        picked = set(chosen)
        evicted = tuple(self.victims[i].key for i in sorted(picked) if not self.gangs[self.victims[i].gang].reserved)
        touched = [key for key, members in self.members.items() if picked.intersection(members)]
        running = [key for key in touched if not self.gangs[key].reserved]
        reserved = [key for key in touched if self.gangs[key].reserved]
        cost = PreemptionCost(
            victim_priority=max((self.gangs[key].priority for key in running), default=None),
            victim_gpus=sum(self.gpus(i) for key in running for i in self.members[key] if i in picked),
            victim_gangs=len(running),
            victim_pods=len(evicted),
            yielded_priority=max((self.gangs[key].priority for key in reserved), default=None),
            yielded_gpus=sum(self.gpus(i) for key in reserved for i in self.members[key] if i in picked),
            yielded_gangs=len(reserved),
        )
        return evicted, tuple(reserved), cost

    def plan(self, chosen: Collection[int], assignment: Mapping[str, str], *, optimal: bool) -> Preemption:
        """A placed plan: the preemptor's ``assignment`` once the chosen victims make way."""
        evicted, yielded, cost = self.outcome(chosen)
        return Preemption(Status.PLACED, dict(assignment), evicted, yielded, cost, optimal=optimal)

    def chosen_in(self, plan: Preemption) -> frozenset[int]:
        """The victims a plan chose: those it evicts and every member of the gangs that yield."""
        evicted = set(plan.evicted)
        members = (i for gang in plan.yielded for i in self.members.get(gang, ()))
        return frozenset(i for i, victim in enumerate(self.victims) if victim.key in evicted) | frozenset(members)


def _budgets(victims: Sequence[Victim], budgets: Sequence[Budget]) -> tuple[tuple[str, tuple[int, ...], int], ...]:
    """Budgets by victim index; raise :class:`InvalidRequest` naming the field for one that cannot be applied."""
    index = {victim.key: i for i, victim in enumerate(victims)}
    found = []
    for b, budget in enumerate(budgets):
        where = f"budgets[{b}] ({budget.name})"
        if not isinstance(budget.allowed, int) or budget.allowed < 0:
            raise InvalidRequest(f"{where}: allowed must be a non-negative integer, got {budget.allowed!r}")
        covered: set[int] = set()
        for v, key in enumerate(budget.victims):
            if key not in index:
                raise InvalidRequest(f"{where}: victims[{v}] {key} is not among the victims")
            covered.add(index[key])
        found.append((budget.name, tuple(sorted(covered)), budget.allowed))
    return tuple(found)
