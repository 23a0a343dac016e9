"""The batch model: every gang of the head in one CP-SAT model, with a literal per gang that says whether it starts
now. Each gang's variables, constraints and quality tiers are the single-gang model's (``ModelVars`` with the
literal as ``active``, the constraint modules, the tier modules' expressions); capacity is shared; the batch tiers
of :mod:`placement.batch.objective` are summed over the gangs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placement.batch.objective import BatchObjective
from placement.batch.queue import Queued
from placement.cpsat.capacity import add_shared_capacity
from placement.cpsat.min_replicas import add_min_replicas
from placement.cpsat.required_pack import add_required_pack
from placement.cpsat.solver import solve_lexicographic
from placement.model_vars import ModelVars, TierExpr
from placement.objective import TIERS, Counts
from placement.problem import Problem
from placement.request import SolveOptions
from placement.tiers.future_fit import future_fit_expression
from topology.graph import GPU_RESOURCE

__all__ = ["BatchOutcome", "solve_batch"]


@dataclass
class BatchOutcome:
    """``state`` as a single model's (``optimal``, ``feasible``, ``infeasible``, ``unknown``); ``plans``: queue
    position → counts of each gang the plan starts."""

    state: str
    plans: dict[int, Counts] = field(default_factory=dict)


def solve_batch(
    gangs: Sequence[Queued],
    candidates: Mapping[int, Problem],
    objective: BatchObjective,
    *,
    hint: Mapping[int, Counts],
    deadline: float,
    options: SolveOptions,
) -> BatchOutcome:
    """``candidates``: each gang's problem cut to the nodes the model may use (its own problem when the model
    covers every candidate)."""
    model = cp_model.CpModel()
    starts: dict[int, cp_model.IntVar] = {}
    gang_vars: dict[int, ModelVars] = {}
    for gang in gangs:
        starts[gang.position] = model.new_bool_var(f"start[{gang.request.key}]")
        mv = ModelVars.build(candidates[gang.position], model, starts[gang.position])
        add_min_replicas(mv)
        add_required_pack(mv)
        gang_vars[gang.position] = mv
    add_shared_capacity(list(gang_vars.values()))
    tiers = _tiers(gangs, objective, model, starts, gang_vars)
    decisions: list[cp_model.IntVar] = []
    for gang in gangs:
        model.add_hint(starts[gang.position], int(gang.position in hint))
        gang_vars[gang.position].hint(hint.get(gang.position, {}))
        decisions.append(starts[gang.position])
        decisions.extend(gang_vars[gang.position].count.values())
    solved = solve_lexicographic(
        model,
        tiers,
        objective.lower(),
        decisions=decisions,
        deadline=deadline,
        workers=options.workers,
        clock=options.clock,
    )
    if not solved.values:
        return BatchOutcome(solved.state)
    values = iter(solved.values)  # in the order the decisions were listed: a gang's start, then its counts
    plans: dict[int, Counts] = {}
    for gang in gangs:
        starts_now = next(values)
        counts = {key: next(values) for key in gang_vars[gang.position].count}
        if starts_now:
            plans[gang.position] = {key: pods for key, pods in counts.items() if pods > 0}
    return BatchOutcome(solved.state, plans)


def _tiers(
    gangs: Sequence[Queued],
    objective: BatchObjective,
    model: cp_model.CpModel,
    starts: Mapping[int, cp_model.IntVar],
    gang_vars: Mapping[int, ModelVars],
) -> list[TierExpr]:
    tiers: list[TierExpr] = []
    for priority in objective.classes:
        members = [g for g in gangs if g.request.priority == priority]
        left = [1 - starts[g.position] for g in members]
        waiting = cp_model.LinearExpr.weighted_sum(left, [g.weight for g in members])
        tiers.append(TierExpr(f"waiting:{priority}", waiting, sum(g.weight for g in members)))
    weights = [objective.order_weight(g) for g in gangs]
    order = cp_model.LinearExpr.weighted_sum([1 - starts[g.position] for g in gangs], weights)
    tiers.append(TierExpr("queue-order", order, sum(weights)))
    quality: dict[str, list[TierExpr]] = {name: [] for name in objective.quality}
    for gang in gangs:
        mv = gang_vars[gang.position]
        for family in TIERS:
            if family.quality:
                for tier in family.model(mv):
                    quality[tier.name].append(tier)
    for name in objective.quality:
        parts = quality[name]
        tiers.append(TierExpr(name, cp_model.LinearExpr.sum([t.expr for t in parts]), sum(t.upper for t in parts)))
    if objective.future is not None:
        usage: dict[str, cp_model.LinearExpr] = {}
        for gang in gangs:
            mv = gang_vars[gang.position]
            for (g, node), var in mv.count.items():
                gpus = mv.problem.groups[g].demand.get(GPU_RESOURCE, 0)
                if gpus:
                    usage[node] = usage.get(node, 0) + gpus * var
        expr, upper = future_fit_expression(objective.future, model, usage)
        tiers.append(TierExpr("future-fit", expr, upper))
    return tiers
