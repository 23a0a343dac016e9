"""Reasons a person can act on when a gang cannot be placed: which constraint, which domain came closest, by
how much. Checked from capacity sums, broadest cause first, so the message names the real bottleneck."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from placement.problem import Problem, Scope

__all__ = ["explain_infeasible", "relaxation_reason"]


@dataclass(frozen=True)
class _Shortfall:
    what: str  # e.g. "16 nvidia.com/gpu" or "8 pods of group workers"
    have: int
    need: int

    @property
    def relative(self) -> float:
        return (self.need - self.have) / self.need


def _shortfalls(problem: Problem, nodes: Sequence[str], groups: Sequence[int]) -> list[_Shortfall]:
    found: list[_Shortfall] = []
    chosen = [problem.groups[g] for g in groups if problem.groups[g].min > 0]
    for resource in problem.resources:
        need = sum(g.min * g.demand.get(resource, 0) for g in chosen)
        have = sum(problem.free(n, resource) for n in nodes if any(n in g.cap for g in chosen))
        if need > have:
            found.append(_Shortfall(f"{need} {resource}", have, need))
    for group in chosen:
        have = sum(group.cap.get(n, 0) for n in nodes)
        if group.min > have:
            found.append(_Shortfall(f"{group.min} pods of group {group.name}", have, group.min))
    return found


def relaxation_reason(problem: Problem) -> str | None:
    """A reason when capacity sums alone rule the gang out; ``None`` when they do not (search must decide)."""
    for group in problem.groups:
        have = sum(group.cap.values())
        if have < group.min:
            return _group_reason(problem, group.index, have)
    whole = _shortfalls(problem, problem.nodes, range(len(problem.groups)))
    if whole:
        worst = max(whole, key=lambda s: s.relative)
        return (
            f"needs {worst.what} on eligible nodes; the cluster has {worst.have} free ({worst.need - worst.have} short)"
        )
    for scope in problem.required:
        reason = _scope_reason(problem, scope)
        if reason is not None:
            return reason
    return None


def explain_infeasible(problem: Problem) -> str:
    """Always a reason: the capacity one if there is one, else that the constraints conflict only together."""
    reason = relaxation_reason(problem)
    if reason is not None:
        return reason
    names = ", ".join(g.name for g in problem.groups)
    packs = "; ".join(f"{s.describe(problem)} in one {s.key}" for s in problem.required)
    return (
        f"capacity adds up, but no assignment of groups {names} to nodes fits every node's free resources at once"
        + (f" while keeping {packs}" if packs else "")
        + " (pods fragment across nodes); free larger nodes or lower minReplicas"
    )


def _group_reason(problem: Problem, index: int, have: int) -> str:
    group = problem.groups[index]
    spec = problem.request.groups[index]
    eligible = len(problem.topology.hosts) if spec.eligible is None else len(spec.eligible)
    demand = ", ".join(f"{u} {r}" for r, u in sorted(group.demand.items())) or "nothing"
    keys = [s.key for s in problem.required if index in s.groups]
    labelled = f" carrying label {', '.join(keys)}" if keys else ""
    return (
        f"group {group.name} needs {group.min} pods of {demand} each; only {have} fit on the "
        f"{eligible} eligible nodes{labelled} ({len(group.cap)} have room for one)"
    )


def _scope_reason(problem: Problem, scope: Scope) -> str | None:
    if all(problem.groups[g].min == 0 for g in scope.groups):
        return None
    by_value: dict[str, list[str]] = {}
    for node in problem.nodes:
        if any(node in problem.groups[g].cap for g in scope.groups):
            value = problem.key_value(node, scope.key)
            if value is not None:
                by_value.setdefault(value, []).append(node)
    closest: tuple[float, str, _Shortfall] | None = None
    for value, nodes in by_value.items():
        shortfalls = _shortfalls(problem, nodes, scope.groups)
        if not shortfalls:
            return None  # this domain holds the scope on capacity alone
        worst = max(shortfalls, key=lambda s: s.relative)
        if closest is None or worst.relative < closest[0]:
            closest = (worst.relative, value, worst)
    if closest is None:
        return f"{scope.describe(problem)} must share one {scope.key}, but no eligible node carries that label"
    _, value, worst = closest
    return (
        f"needs {worst.what} in one {scope.key} (required pack of {scope.describe(problem)}); "
        f"the closest domain, {value}, has {worst.have} ({worst.need - worst.have} short)"
    )
