"""``topology-greedy``: all-or-nothing, tightest domain first (the way KAI-Scheduler packs), and the CP-SAT hint.

Try each domain as the gang's container, narrowest level first and, within a level, partly used domains before
wholly free ones and the smallest that could hold the gang first; inside a container, fill sub-domains largest
first (fewest of them) and nodes partly used, fullest first (best fit). ``preferred`` packs are first treated as
required and dropped only if that fails. No search beyond that: it may miss a placement the model finds.
"""

from __future__ import annotations

from collections.abc import Sequence

from placement.greedy.ledger import Ledger
from placement.problem import Problem

__all__ = ["topology_greedy"]

_Pack = tuple[tuple[int, ...], str]  # (group indexes, label key) that must share one value


class _Layout:
    """Per-problem precomputation: the fill order of nodes and each domain's capacity."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        primary = problem.primary
        self.domain_free: dict[str, dict[str, int]] = {}
        for level in problem.span_levels:
            sums: dict[str, int] = {}
            for node in problem.nodes:
                domain = problem.domain(node, level)
                sums[domain] = sums.get(domain, 0) + problem.free(node, primary)
            self.domain_free[level] = sums
        broad_first = tuple(reversed(problem.span_levels))

        def key(node: str) -> tuple[object, ...]:
            path = tuple(
                (-self.domain_free[lv][problem.domain(node, lv)], problem.domain(node, lv)) for lv in broad_first
            )
            return (*path, node in problem.fresh_nodes, problem.free(node, primary), node)

        self.order = sorted(problem.nodes, key=key)

    def containers(self) -> list[list[str]]:
        """Candidate containers, narrowest level first, partly used and tightest first; the whole cluster last."""
        problem = self.problem
        found: list[list[str]] = []
        for level in problem.span_levels:
            members: dict[str, list[str]] = {}
            for node in self.order:
                members.setdefault(problem.domain(node, level), []).append(node)
            if len(members) <= 1:
                continue
            fresh = problem.fresh_domains if level == problem.fresh_level else frozenset()
            ranked = sorted(members, key=lambda d: (d in fresh, self.domain_free[level][d], d))
            found.extend(members[d] for d in ranked if self._could_hold(members[d]))
        found.append(self.order)
        return found

    def _could_hold(self, nodes: Sequence[str]) -> bool:
        problem = self.problem
        for group in problem.groups:
            if sum(group.cap.get(n, 0) for n in nodes) < group.min:
                return False
        for resource in problem.resources:
            need = sum(g.min * g.demand.get(resource, 0) for g in problem.groups)
            if need and sum(problem.free(n, resource) for n in nodes) < need:
                return False
        return True


def topology_greedy(problem: Problem) -> dict[tuple[int, str], int] | None:
    layout = _Layout(problem)
    required: list[_Pack] = [(s.groups, s.key) for s in problem.required]
    preferred: list[_Pack] = [(s.groups, s.key) for s in problem.preferred]
    containers = layout.containers()
    for packs in ([*required, *preferred], required) if preferred else (required,):
        for nodes in containers:
            plan = _pack_within(problem, nodes, packs)
            if plan is not None:
                return plan
    return None


def _pack_within(problem: Problem, nodes: list[str], packs: list[_Pack]) -> dict[tuple[int, str], int] | None:
    region = {g.index: nodes for g in problem.groups}
    for groups, key in sorted(packs, key=lambda p: -len(p[0])):
        by_value: dict[str, list[str]] = {}
        for node in region[groups[0]]:
            value = problem.key_value(node, key)
            if value is not None:
                by_value.setdefault(value, []).append(node)
        fitting = [v for v, members in by_value.items() if _holds(problem, members, groups)]
        if not fitting:
            return None
        # Tightest first: the smallest domain that holds the scope leaves the big ones for bigger gangs.
        value = min(fitting, key=lambda v: (sum(problem.free(n, problem.primary) for n in by_value[v]), v))
        chosen = set(by_value[value])
        for g in groups:
            region[g] = [n for n in region[g] if n in chosen]
    ledger = Ledger(problem)
    # Big pods first: they are the hard ones to fit once small pods have fragmented the nodes.
    for group in sorted(problem.groups, key=lambda g: -g.demand.get(problem.primary, 0)):
        if ledger.fill(group.index, region[group.index], group.min) < group.min:
            return None
    _add_extras(problem, ledger, region)
    return ledger.counts


def _holds(problem: Problem, nodes: Sequence[str], groups: Sequence[int]) -> bool:
    return all(sum(problem.groups[g].cap.get(n, 0) for n in nodes) >= problem.groups[g].min for g in groups)


def _add_extras(problem: Problem, ledger: Ledger, region: dict[int, list[str]]) -> None:
    """Best-effort pods go only where they cost no objective tier: onto used nodes, or onto partly used nodes
    whose every domain the gang already touches."""
    used = ledger.used_nodes()
    touched = {level: {problem.domain(n, level) for n in used} for level in problem.span_levels}

    def free_of_cost(node: str) -> bool:
        if node in used:
            return True
        if node in problem.fresh_nodes:
            return False
        return all(problem.domain(node, level) in touched[level] for level in problem.span_levels)

    preferred_ok = {
        s.index: {problem.key_value(n, s.key) for g, n in ledger.counts if g in s.groups} for s in problem.preferred
    }
    for group in problem.groups:
        scopes = [s for s in problem.preferred if group.index in s.groups]
        nodes = [
            n
            for n in region[group.index]
            if free_of_cost(n) and all(problem.key_value(n, s.key) in preferred_ok[s.index] for s in scopes)
        ]
        ledger.fill(group.index, sorted(nodes, key=lambda n: n not in used), group.extras)
