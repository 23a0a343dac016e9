"""Reasons a person can act on when a gang cannot be placed: which constraint, which domain came closest, by
how much. Checked from capacity sums, broadest cause first, so the message names the real bottleneck; amounts are
written as Kubernetes writes them (``placement.amounts``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from placement.amounts import amount, quantity
from placement.problem import Problem, Scope
from placement.prune import holding_domains

__all__ = ["explain_infeasible", "relaxation_reason"]


@dataclass(frozen=True)
class _Shortfall:
    resource: str | None  # None: pods of a group (``group``)
    have: int
    need: int
    group: str = ""

    @property
    def relative(self) -> float:
        return (self.need - self.have) / self.need

    def of(self, units: int) -> str:
        """``units`` of what falls short, as a person reads it (``16 nvidia.com/gpu``, ``1500m cpu``, ``8``)."""
        return amount(self.resource, units) if self.resource else str(units)

    @property
    def what(self) -> str:
        return self.of(self.need) if self.resource else f"{_pods(self.need)} of group {self.group}"

    @property
    def missing(self) -> str:
        """How much is short, the unit said once already: ``4``, ``1500m``, ``2Gi``."""
        short = self.need - self.have
        return quantity(self.resource, short) if self.resource else str(short)


def _pods(count: int) -> str:
    return f"{count} pod" if count == 1 else f"{count} pods"


def _shortfalls(problem: Problem, nodes: Sequence[str], groups: Sequence[int]) -> list[_Shortfall]:
    found: list[_Shortfall] = []
    chosen = [problem.groups[g] for g in groups if problem.groups[g].min > 0]
    for resource in problem.resources:
        need = sum(g.min * g.demand.get(resource, 0) for g in chosen)
        have = sum(problem.free(n, resource) for n in nodes if any(n in g.cap for g in chosen))
        if need > have:
            found.append(_Shortfall(resource, have, need))
    for group in chosen:
        have = sum(group.cap.get(n, 0) for n in nodes)
        if group.min > have:
            found.append(_Shortfall(None, have, group.min, group=group.name))
    return found


def _whole_shortfalls(problem: Problem) -> list[_Shortfall]:
    """The cluster-wide sums, on arrays: this runs on every solve, so it must not loop over nodes in Python."""
    arrays = problem.arrays
    found: list[_Shortfall] = []
    hosts = np.zeros(len(problem.nodes), np.bool_)
    for g in problem.groups:
        if g.min > 0:
            hosts |= arrays.cap[g.index] > 0
    for resource in problem.resources:
        need = sum(g.min * g.demand.get(resource, 0) for g in problem.groups)
        have = int(arrays.free[resource][hosts].sum())
        if need > have:
            found.append(_Shortfall(resource, have, need))
    return found


def relaxation_reason(problem: Problem) -> str | None:
    """A reason when capacity sums alone rule the gang out; ``None`` when they do not (search must decide)."""
    for group in problem.groups:
        have = sum(group.cap.values())
        if have < group.min:
            return _group_reason(problem, group.index, have)
    whole = _whole_shortfalls(problem)
    if whole:
        worst = max(whole, key=lambda s: s.relative)
        return (
            f"needs {worst.what} on eligible nodes; the cluster has {worst.of(worst.have)} free ({worst.missing} short)"
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
    # One pod slot per pod goes without saying.
    demand = ", ".join(amount(r, u) for r, u in sorted(group.demand.items()) if (r, u) != ("pods", 1)) or "nothing"
    keys = [s.key for s in problem.required if index in s.groups]
    labelled = f" carrying label {', '.join(keys)}" if keys else ""
    return (
        f"group {group.name} needs {_pods(group.min)} of {demand} each; only {have} fit on the "
        f"{eligible} eligible nodes{labelled} ({len(group.cap)} have room for one)"
    )


def _scope_reason(problem: Problem, scope: Scope) -> str | None:
    if all(problem.groups[g].min == 0 for g in scope.groups) or holding_domains(problem, scope).any():
        return None  # some domain holds the scope on capacity alone
    arrays = problem.arrays
    ids = arrays.key_ids(scope.key)
    hosts = np.zeros(len(ids), np.bool_)
    for index in scope.groups:
        hosts |= arrays.cap[index] > 0
    if not hosts.any():
        return f"{scope.describe(problem)} must share one {scope.key}, but no eligible node carries that label"
    size = int(ids.max()) + 1
    # Per domain, its worst relative shortfall over the scope's needs; the closest domain has the smallest.
    worst = np.zeros(size)
    chosen = [problem.groups[g] for g in scope.groups if problem.groups[g].min > 0]
    for group in chosen:
        have = np.bincount(ids, weights=arrays.cap[group.index], minlength=size)
        worst = np.maximum(worst, (group.min - have) / group.min)
    for resource in problem.resources:
        need = sum(g.min * g.demand.get(resource, 0) for g in chosen)
        if need:
            have = np.bincount(ids, weights=np.where(hosts, arrays.free[resource], 0), minlength=size)
            worst = np.maximum(worst, (need - have) / need)
    candidates = np.zeros(size, np.bool_)
    candidates[ids[hosts]] = True
    best = int(np.flatnonzero(candidates)[np.argmin(worst[candidates])])
    nodes = [problem.nodes[i] for i in np.flatnonzero((ids == best) & hosts)]
    shortfall = max(_shortfalls(problem, nodes, scope.groups), key=lambda s: s.relative)
    value = problem.key_value(nodes[0], scope.key)
    return (
        f"needs {shortfall.what} in one {scope.key} (required pack of {scope.describe(problem)}); "
        f"the closest domain, {value}, has {shortfall.of(shortfall.have)} ({shortfall.missing} short)"
    )
