"""Tier ``future-fit``: the free GPUs the gang shapes the cluster keeps seeing could not use after the plan,
weighted by how often each shape came (FGD-style, per topology domain: :mod:`placement.future_fit`). Present only
when the view names recent shapes. Last, and not a quality tier: it only chooses among plans that every tier
above finds equal, and it measures the cluster's future, not this gang's placement.

Bound: see :meth:`placement.future_fit.FutureFit.lower_bound`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from ortools.sat.python import cp_model

from placement.arrays import Ints
from placement.future_fit import FutureFit, usage_of
from placement.model_vars import ModelVars, TierExpr
from placement.problem import Problem
from placement.tiers.family import BoundInputs, PlanFacts, TierFamily
from topology.graph import GPU_RESOURCE

__all__ = ["FutureFitTier", "future_fit_expression"]

NAME = "future-fit"


class FutureFitTier(TierFamily):
    quality = False

    def names(self, problem: Problem) -> tuple[str, ...]:
        return (NAME,) if problem.future_fit is not None else ()

    def evaluate(self, problem: Problem, plan: PlanFacts) -> tuple[int, ...]:
        measure = problem.future_fit
        if measure is None:
            return ()
        return (measure.fragmented(usage_of(plan.counts, _gpus(problem))),)

    def bounds(self, inputs: BoundInputs) -> list[Ints]:
        problem = inputs.problem
        measure = problem.future_fit
        if measure is None:
            return []
        gpus = sum(g.min * g.demand.get(GPU_RESOURCE, 0) for g in problem.groups)
        hosts = problem.arrays.host_index[inputs.idx]
        return [measure.lower_bound(hosts, inputs.groups, inputs.count, gpus)]

    def model(self, mv: ModelVars) -> list[TierExpr]:
        measure = mv.problem.future_fit
        if measure is None:
            return []
        gpus = _gpus(mv.problem)
        usage: dict[str, cp_model.LinearExpr] = {}
        for (g, node), var in mv.count.items():
            if gpus[g]:
                usage[node] = usage.get(node, 0) + gpus[g] * var
        expr, upper = future_fit_expression(measure, mv.model, usage)
        return [TierExpr(NAME, expr, upper)]


def _gpus(problem: Problem) -> list[int]:
    return [g.demand.get(GPU_RESOURCE, 0) for g in problem.groups]


def future_fit_expression(
    measure: FutureFit, model: cp_model.CpModel, usage: Mapping[str, cp_model.LinearExprT]
) -> tuple[cp_model.LinearExpr, int]:
    """The measure as a linear expression over ``usage`` (GPUs per node, in the model's variables; nodes not in
    it use none), with an upper bound on its value. Per touchable domain that hosts a shape now: the pods of the
    shape's size each node still holds are integers within its room, ``keeps`` may be 1 only while they reach
    what the shape needs, and the domain's fragmented GPUs are at least what it keeps free unless it ``keeps``
    (the solver pushes them down to exactly that). A domain that cannot host the shape now keeps fragmented
    exactly its free GPUs less what the plan uses there."""
    pods: dict[tuple[str, int], cp_model.IntVar] = {}

    def room(node: str, g: int) -> cp_model.IntVar:
        if (node, g) not in pods:
            free = int(measure.free[measure.position[node]])
            var = model.new_int_var(0, free // g, f"room[{node},{g}]")
            model.add(g * var <= free - usage[node])
            pods[(node, g)] = var
        return pods[(node, g)]

    terms: list[cp_model.LinearExprT] = []
    constant = measure.total
    names = list(usage)
    nodes = np.fromiter((measure.position[n] for n in names), np.int64, len(names))
    for table in measure.tables:
        g, weight = table.shape.pod_gpus, table.shape.weight
        domain = table.domain[nodes]
        for d in np.unique(domain[domain >= 0]):
            inside = [names[i] for i in np.flatnonzero(domain == d)]
            used = cp_model.LinearExpr.sum([usage[n] for n in inside])
            free = int(table.free[d])
            constant -= weight * int(table.fragmented[d])  # replaced by this domain's term
            if not table.hosting[d]:
                terms.append(weight * (free - used))
                continue
            keeps = model.new_bool_var(f"keeps[{table.shape.level},{g},{d}]")
            rest = int(table.pods[d]) - sum(int(measure.free[measure.position[n]]) // g for n in inside)
            if len(inside) == 1 and rest == 0:
                # A one-node domain (a DGX node as its own NVLink domain): n pods of g fit iff n·g GPUs are free.
                model.add(int(table.needed[d]) * g * keeps <= free - used)
            else:
                model.add(int(table.needed[d]) * keeps <= sum(room(n, g) for n in inside) + rest)
            fragmented = model.new_int_var(0, free, f"fragmented[{table.shape.level},{g},{d}]")
            model.add(fragmented >= free - used - free * keeps)
            terms.append(weight * fragmented)
    return cp_model.LinearExpr.sum(terms) + constant, measure.upper
