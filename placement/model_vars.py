"""The variable container every constraint (``placement.cpsat``) and objective tier (``placement.tiers``) builds on:
below both, so the tiers need not import the model that composes them.

Pods of a group are interchangeable, so the decision is one integer per (group, candidate node): how many of
that group's pods go there. Usage booleans (is a node used, is a domain used) are created on first request, so
a model only holds the indicators its constraints and objectives actually need.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placement.problem import Problem

__all__ = ["ModelVars", "TierExpr"]


@dataclass(frozen=True)
class TierExpr:
    """One objective tier in a model: a linear expression to minimise and an upper bound on its value (for
    weighting)."""

    name: str
    expr: cp_model.LinearExpr
    upper: int


@dataclass
class ModelVars:
    """One gang's variables in a model. ``active`` is 1 for a gang that must be placed, or the literal that says
    whether it is when a batch of gangs shares the model (constraints hold only for an active gang; an inactive
    one places nothing)."""

    problem: Problem
    model: cp_model.CpModel
    active: cp_model.LinearExprT = 1
    count: dict[tuple[int, str], cp_model.IntVar] = field(default_factory=dict)
    total: dict[int, cp_model.LinearExpr] = field(default_factory=dict)
    _node_used: dict[str, cp_model.IntVar] = field(default_factory=dict)
    _domain_used: dict[tuple[str, str], cp_model.IntVar] = field(default_factory=dict)

    @classmethod
    def build(
        cls, problem: Problem, model: cp_model.CpModel | None = None, active: cp_model.IntVar | None = None
    ) -> ModelVars:
        """The count variables of ``problem``'s gang, in a new model or in ``model`` (shared by a batch)."""
        found = cls(problem, model if model is not None else cp_model.CpModel(), 1 if active is None else active)
        model = found.model
        for group in problem.groups:
            for node, cap in sorted(group.cap.items()):
                found.count[(group.index, node)] = model.new_int_var(0, cap, f"x[{group.name},{node}]")
            found.total[group.index] = cp_model.LinearExpr.sum(
                [found.count[(group.index, n)] for n in sorted(group.cap)]
            )
        return found

    def counts_on(self, node: str, groups: Iterable[int] | None = None) -> list[tuple[int, cp_model.IntVar]]:
        """(cap, var) for each group with a count variable on ``node``."""
        chosen = range(len(self.problem.groups)) if groups is None else groups
        return [(self.problem.groups[g].cap[node], self.count[(g, node)]) for g in chosen if (g, node) in self.count]

    def node_used(self, node: str) -> cp_model.IntVar:
        """1 when any pod of the gang is on ``node`` (forced up by the counts; objectives push it down)."""
        if node not in self._node_used:
            used = self.model.new_bool_var(f"used[{node}]")
            for cap, var in self.counts_on(node):
                self.model.add(var <= cap * used)
            self._node_used[node] = used
        return self._node_used[node]

    def indicator(self, name: str, nodes: Iterable[str], *, cache: tuple[str, str] | None = None) -> cp_model.IntVar:
        """A boolean forced to 1 when any of ``nodes`` is used; cached per (level, domain) when ``cache`` given."""
        if cache is not None and cache in self._domain_used:
            return self._domain_used[cache]
        flag = self.model.new_bool_var(name)
        for node in nodes:
            self.model.add_implication(self.node_used(node), flag)
        if cache is not None:
            self._domain_used[cache] = flag
        return flag

    def hint(self, counts: Mapping[tuple[int, str], int]) -> None:
        """Seed the search with a plan: its counts, and the usage indicators built so far at the values the plan
        gives them (left to the solver, they would start at whatever it completes them with, often 1, and the
        first solution would be far worse than the plan)."""
        used = {node for (_, node), pods in counts.items() if pods > 0}
        for key, var in self.count.items():
            self.model.add_hint(var, counts.get(key, 0))
        for node, flag in self._node_used.items():
            self.model.add_hint(flag, int(node in used))
        levels = {level for level, _ in self._domain_used}
        touched = {(level, self.problem.domain(n, level)) for n in used for level in levels}
        for domain, flag in self._domain_used.items():
            self.model.add_hint(flag, int(domain in touched))

    def by_domain(self, level: str) -> dict[str, list[str]]:
        """The model's nodes grouped by their domain at ``level``."""
        grouped: dict[str, list[str]] = {}
        for node in self.problem.nodes:
            grouped.setdefault(self.problem.domain(node, level), []).append(node)
        return grouped
