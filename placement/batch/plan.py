"""``plan_batch``: the head of the queue in one model — which gangs start now, and where.

Order of work: resolve each gang of the head as ``solve`` would (an invalid or alone-infeasible gang gets its
reason and stays out); the greedy warm start, in priority-then-age order; then the model over every gang, seeded
with it, within the time limit, on each gang's candidates (or, on a cluster too large to build that in time, on a
neighbourhood of its warm-start plan: its required or preferred domain and the best-bounded others, or its NVLink
domains and the roomiest others); the better of the two plans under the batch objective wins. Best-effort extras
are then added gang by gang where they still fit, as ``solve`` adds them.

``objective_parts``: every batch tier by name, ``optimal`` (1.0 when the model proved the plan best over every
candidate), ``exact`` (1.0 when the model covered every candidate node) and ``models`` (CP-SAT models solved).
Each gang's ``Result`` carries its own tiers and placementScore, judged against the capacity the batch began with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from placement.batch.model import solve_batch
from placement.batch.objective import BatchObjective
from placement.batch.queue import Queued, resolve_head
from placement.batch.warm_start import Residual, warm_start
from placement.bounds import gang_bounds
from placement.explain import explain_infeasible
from placement.future_fit import FutureFit
from placement.greedy.extras import add_extras
from placement.objective import Counts
from placement.outcome import planned
from placement.problem import Problem
from placement.request import ClusterView, GangRequest, Result, SolveOptions, Status

__all__ = ["BatchResult", "plan_batch"]

_DOMAINS_PER_GANG = 3  # on a large cluster, the domains of its pack a gang may use in the model


@dataclass(frozen=True)
class BatchResult:
    """``results``: gang key → its result, for every gang of the head; ``head``: their keys in head order."""

    results: Mapping[str, Result]
    head: tuple[str, ...]
    objective_parts: Mapping[str, float] = field(default_factory=dict)
    solve_seconds: float = 0.0


def plan_batch(
    requests: Sequence[GangRequest], view: ClusterView, options: SolveOptions | None = None, *, size: int = 16
) -> BatchResult:
    """Plan the first ``size`` of ``requests`` (a queue, oldest first) by priority, then age. Never raises for bad
    input: a malformed request gets ``Status.INVALID`` with the field and the rule."""
    options = options or SolveOptions()
    clock = options.clock
    started = clock()
    deadline = started + options.time_limit_seconds
    head = resolve_head(requests, view, options, size=size)
    hosts, gangs, results = head.hosts, head.gangs, dict(head.refused)
    exact = sum(len(g.problem.nodes) for g in gangs) <= options.model_nodes
    if not exact:
        budget = max(1, options.model_nodes // max(1, len(gangs)))
        gangs = _neighbourhoods(gangs, budget)
    objective = BatchObjective(gangs, FutureFit(hosts) if view.shapes else None)
    start = Residual(view, hosts)
    plans, _ = warm_start(gangs, start)
    gangs = [_widened(g, plans.get(g.position)) for g in gangs]
    parts: dict[str, float] = {"optimal": float(not gangs), "exact": float(exact), "models": 0.0}  # none: nothing to do
    if gangs:
        values = objective.evaluate(plans)
        # Proven: the plan meets the lower bound on every tier (then no model is built: the common case of a queue
        # whose head all fits, each gang in its narrowest domains), or the model closed the gap over every candidate.
        proven = values == objective.lower()
        if not proven:
            candidates = {g.position: g.problem if g.near is None else g.problem.restricted(g.near) for g in gangs}
            outcome = solve_batch(gangs, candidates, objective, hint=plans, deadline=deadline, options=options)
            if outcome.state in ("optimal", "feasible") and objective.evaluate(outcome.plans) <= values:
                plans = outcome.plans
                values = objective.evaluate(plans)
            proven = (exact and outcome.state == "optimal") or values == objective.lower()
            parts["models"] = 1.0
        parts["optimal"] = float(proven)
        parts.update(zip(objective.names(), map(float, values), strict=True))
    results.update(_results(gangs, plans, start, proven=bool(parts["optimal"])))
    return BatchResult(results, head.keys, parts, clock() - started)


def _neighbourhoods(gangs: Sequence[Queued], budget: int) -> list[Queued]:
    """The nodes the batch may use for each gang on a cluster too large to model whole. A gang bound to one domain
    of a key (required, or its only preferred pack) gets its best-bounded domains; any other gang NVLink domains,
    partly used before wholly free, roomiest first, about ``budget`` nodes and at least room for twice what it
    needs. Room counts only what the gang's own pods can use (its pods per node, alone). In head order each gang
    claims its guaranteed units of the primary resource in the domains it gets, and later gangs pass over domains
    whose room the claims have used up, so the gangs are not all offered the same few domains."""
    claimed: dict[tuple[str, str], int] = {}
    chosen: list[Queued] = []
    for gang in sorted(gangs, key=lambda g: g.rank):
        problem = gang.problem
        need = sum(g.min * g.demand.get(problem.primary, 0) for g in problem.groups)
        usable = sum(
            (cap * g.demand.get(problem.primary, 0) for g, cap in zip(problem.groups, problem.arrays.cap, strict=True)),
            np.zeros(len(problem.nodes), np.int64),
        )
        primary = np.minimum(usable, problem.arrays.free.get(problem.primary, usable))
        scope = problem.required_whole() or problem.preferring_one()
        bounds = gang.bounds
        if scope is not None and not scope.required:
            bounds = gang_bounds(problem.packing(scope), exact_fit=False) or bounds
        if scope is not None and bounds.by_domain is not None and bounds.members is not None:
            members = bounds.members
            by_domain = bounds.by_domain
            found = {value: int(primary[members[value]].sum()) for value in by_domain}
            # Best bound first, then the tightest (as the single-gang domain search and best fit order them).
            ranked = sorted(by_domain, key=lambda v: (by_domain[v], found[v], v))
            domains = [(f"key:{scope.key}", value) for value in ranked]
            room = {d: found[d[1]] for d in domains}
            nodes = {d: [problem.nodes[i] for i in members[d[1]]] for d in domains}
            limit, enough = _DOMAINS_PER_GANG, need  # one of these domains must hold the whole gang
        else:
            if not problem.span_levels:
                chosen.append(gang)
                continue
            level = problem.span_levels[0]
            ids = problem.arrays.level_ids[level]
            names = problem.arrays.level_names[level]
            size = len(names)
            total = np.bincount(ids, weights=primary, minlength=size)
            if level == problem.fresh_level:
                # Partly used as the objective's fresh tier counts it, over every node of the domain: a domain whose
                # used nodes are full has none among the candidates (pruned), yet breaking it costs nothing.
                partly = ~problem.arrays.fresh_domain_mask()
            else:
                partly = np.bincount(ids, weights=np.where(problem.arrays.fresh, 0, primary), minlength=size) > 0
            present = np.bincount(ids, minlength=size) > 0
            order = [int(d) for d in np.lexsort((-total, ~partly)) if present[d]]
            domains = [(f"level:{level}", names[d]) for d in order]
            room = {d: int(total[i]) for d, i in zip(domains, order, strict=True)}
            grouped: dict[int, list[str]] = {}
            for i, domain_id in enumerate(ids.tolist()):
                grouped.setdefault(domain_id, []).append(problem.nodes[i])
            nodes = {d: grouped[i] for d, i in zip(domains, order, strict=True)}
            limit, enough = len(domains), 1  # the gang may spread over several of them
        keep: list[tuple[str, str]] = []
        count = covered = 0
        for domain in domains:
            if len(keep) >= limit or (count >= budget and covered >= 2 * need):
                break
            left = room[domain] - claimed.get(domain, 0)
            if left >= max(enough, 1):
                keep.append(domain)
                count += len(nodes[domain])
                covered += left
        keep = keep or domains[:1]
        left = need
        for domain in keep:  # the claim: as much of the need as each kept domain still has room for, in order
            take = min(left, room[domain] - claimed.get(domain, 0))
            if take > 0:
                claimed[domain] = claimed.get(domain, 0) + take
                left -= take
        chosen.append(replace(gang, near=frozenset(n for d in keep for n in nodes[d])))
    return sorted(chosen, key=lambda g: g.rank)


def _widened(gang: Queued, plan: Counts | None) -> Queued:
    """The gang with its warm-start plan's nodes in its neighbourhood (the plan may lie outside it)."""
    if gang.near is None or plan is None:
        return gang
    return replace(gang, near=gang.near | {node for (_, node), pods in plan.items() if pods > 0})


def _results(
    gangs: Sequence[Queued], plans: Mapping[int, Counts], start: Residual, *, proven: bool
) -> dict[str, Result]:
    """Each gang's result: the plan's pods (extras added where they still fit, in head order) or why it waits.
    ``proven``: the plan is proven best over every candidate, so a gang left out beside no started gang cannot
    be placed at all."""
    results: dict[str, Result] = {}
    residual = start
    for gang in sorted(gangs, key=lambda g: g.rank):
        if gang.position in plans:
            residual = residual.debit(gang.problem, plans[gang.position])
    started = [g.request.key for g in sorted(gangs, key=lambda g: g.rank) if g.position in plans]
    others = ", ".join(started[:3]) + (f" and {len(started) - 3} more" if len(started) > 3 else "")
    for gang in sorted(gangs, key=lambda g: g.rank):
        counts = plans.get(gang.position)
        if counts is None and not started:
            reason = explain_infeasible(gang.problem)
            status = Status.INFEASIBLE if proven else Status.TIMED_OUT
            if not proven:
                reason = f"no plan found for it in this batch within the time limit; {reason}"
            results[gang.request.key] = Result(status, reason=reason)
            continue
        if counts is None:
            results[gang.request.key] = Result(
                Status.DEFERRED,
                reason=f"not started in this batch: it started {others} on the capacity this one needs "
                "(higher priority first, then the most GPUs, then the oldest)",
            )
            continue
        if any(g.min_replicas < len(g.pods) for g in gang.request.groups):
            # Extras go where they still fit beside every gang the batch started and the extras added before:
            # the gang's own guaranteed pods are handed back first, as add_extras places them itself.
            own = residual.debit(gang.problem, {key: -pods for key, pods in counts.items()})
            full = Problem(gang.request, own.view, own.hosts)
            with_extras = add_extras(full, counts)
            residual = own.debit(full, with_extras)
            results[gang.request.key] = planned(full, with_extras)
        else:
            # Scored against the coarse bounds: a looser lower bound can only lower the score, never inflate it.
            results[gang.request.key] = planned(gang.problem, counts, bounds=gang.bounds.per_tier)
    return results
