"""``topology-greedy``: all-or-nothing, tightest domain first (the way KAI-Scheduler packs), and the CP-SAT hint.

It places each group's guaranteed pods; best-effort extras are added afterwards by :mod:`placement.greedy.extras`.

Try each domain as the gang's container, narrowest level first and, within a level, partly used domains before
wholly free ones and the smallest that could hold the gang first; inside a container, fill sub-domains largest
first (fewest of them) and nodes partly used, fullest first (best fit). ``preferred`` packs are first treated as
required and dropped only if that fails. No search beyond that: it may miss a placement the model finds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from placement.arrays import Ints
from placement.greedy.domain_choice import choose_domains
from placement.greedy.tally import Tally
from placement.grouping import fewest_to_cover
from placement.objective import evaluate
from placement.problem import Problem, Scope

__all__ = ["topology_greedy"]

_Pack = tuple[tuple[int, ...], str]  # (group indexes, label key) that must share one value


class _Layout:
    """Per-problem precomputation on node-index arrays: the fill order of nodes and the candidate containers."""

    def __init__(
        self,
        problem: Problem,
        *,
        partly_first: bool,
        spans_first: bool = False,
        shared: dict[str, tuple[npt.NDArray[np.bool_], Ints]] | None = None,
    ) -> None:
        self.problem = problem
        self.spans_first = spans_first
        # Per level, which domains hold the gang and how many narrowest domains each needs: the same whatever the
        # fill order, so the two passes of ``topology_greedy`` work them out once.
        self.shared = {} if shared is None else shared
        arrays = problem.arrays
        count = len(problem.nodes)
        primary = arrays.free.get(problem.primary, np.zeros(count, np.int64))
        self.domain_free: dict[str, Ints] = {}
        # Sort keys, least significant first (np.lexsort): node name, free units, freshness, then each level's
        # domain (its rank, then its id to keep a domain's nodes together), narrow to broad.
        keys: list[Ints] = [np.arange(count), primary, arrays.fresh.astype(np.int64)]
        for level in problem.span_levels:
            ids, size = arrays.level_ids[level], len(arrays.level_names[level])
            self.domain_free[level] = np.bincount(ids, weights=primary, minlength=size).astype(np.int64)
            partly = np.bincount(ids, weights=np.where(arrays.fresh, 0, primary), minlength=size).astype(np.int64)
            rank = partly if partly_first else self.domain_free[level]
            keys.extend((ids, -rank[ids]))
        self.order: Ints = np.lexsort(keys) if count else np.arange(0)

    def containers(self) -> list[Ints]:
        """Candidate containers (node indexes in fill order), narrowest level first, partly used and tightest
        first; the whole cluster last. Only domains that hold the gang on capacity sums are offered."""
        problem = self.problem
        arrays = problem.arrays
        # (NVLink domains needed, level position, rank within level, nodes): with ``spans_first`` the fewest
        # NVLink domains win across levels (the objective counts narrow spans first), else narrowest level first.
        ranked: list[tuple[int, int, int, Ints]] = []
        for position, level in enumerate(problem.span_levels):
            ids = arrays.level_ids[level][self.order]
            domains = len(arrays.level_names[level])
            if domains <= 1:
                continue
            if level not in self.shared:
                holds = self._holds_per_domain(arrays.level_ids[level], domains)
                holds &= np.bincount(ids, minlength=domains) > 0  # a restricted problem numbers absent domains too
                needed = self._narrow_needed(level, domains) if self.spans_first else np.zeros(domains, np.int64)
                self.shared[level] = (holds, needed)
            holds, needed = self.shared[level]
            fresh = np.zeros(domains, np.bool_)
            if level == problem.fresh_level:
                fresh = arrays.fresh_domain_mask()
            order = np.lexsort((np.arange(domains), self.domain_free[level], fresh))
            grouped = np.argsort(ids, kind="stable")
            starts = np.searchsorted(ids[grouped], np.arange(domains + 1))
            for rank, d in enumerate(order):
                if holds[d]:
                    ranked.append((int(needed[d]), position, rank, self.order[grouped[starts[d] : starts[d + 1]]]))
        ranked.sort(key=lambda item: item[:3])
        return [nodes for *_, nodes in ranked] + [self.order]

    def _narrow_needed(self, level: str, domains: int) -> Ints:
        """Per domain at ``level``: how many narrowest-level domains inside it, largest first, hold the gang's
        guaranteed demand of the primary resource."""
        problem = self.problem
        arrays = problem.arrays
        narrow = problem.span_levels[0]
        need = sum(g.min * g.demand.get(problem.primary, 0) for g in problem.groups)
        primary = arrays.free.get(problem.primary, np.zeros(len(problem.nodes), np.int64))
        sums = np.bincount(arrays.level_ids[narrow], weights=primary).astype(np.int64)
        parent = np.zeros(len(sums), np.int64)
        parent[arrays.level_ids[narrow]] = arrays.level_ids[level]
        children: dict[int, list[int]] = {}
        for child in np.flatnonzero(sums > 0):
            children.setdefault(int(parent[child]), []).append(int(sums[child]))
        needed = np.full(domains, len(sums) + 1, np.int64)
        for domain, capacities in children.items():
            count = fewest_to_cover(capacities, need)
            if count is not None:
                needed[domain] = count
        return needed

    def _holds_per_domain(self, ids: Ints, domains: int) -> npt.NDArray[np.bool_]:
        problem = self.problem
        arrays = problem.arrays
        holds = np.ones(domains, np.bool_)
        for group in problem.groups:
            holds &= np.bincount(ids, weights=arrays.cap[group.index], minlength=domains) >= group.min
        for resource in problem.resources:
            need = sum(g.min * g.demand.get(resource, 0) for g in problem.groups)
            if need:
                holds &= np.bincount(ids, weights=arrays.free[resource], minlength=domains) >= need
        return holds


def topology_greedy(problem: Problem, *, spans_first: bool = False) -> dict[tuple[int, str], int] | None:
    """Two passes, filling sub-domains largest first (fewest of them) and then partly used capacity first
    (fewest wholly free nodes broken into); the better plan under the objective wins.

    ``spans_first``: among containers of one level, prefer the one the gang fits in with the fewest NVLink
    domains over the tightest (the objective's order; the KAI-like baseline keeps tightest first)."""
    shared: dict[str, tuple[npt.NDArray[np.bool_], Ints]] = {}
    plans = [
        p
        for partly in (False, True)
        if (p := _greedy(problem, _Layout(problem, partly_first=partly, spans_first=spans_first, shared=shared)))
    ]
    return min(plans, key=lambda plan: evaluate(problem, plan), default=None)


def _greedy(problem: Problem, layout: _Layout) -> dict[tuple[int, str], int] | None:
    required: list[_Pack] = [(s.groups, s.key) for s in problem.required]
    # A preferred pack no domain of its key could hold is not worth a pass as if it were required.
    preferred: list[_Pack] = [(s.groups, s.key) for s in problem.preferred if _honourable(problem, s)]
    containers = layout.containers()
    for packs in ([*required, *preferred], required) if preferred else (required,):
        for indexes in containers:
            plan = _pack_within(problem, [problem.nodes[i] for i in indexes], packs)
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
        primary = problem.primary
        value = min(fitting, key=lambda v: (sum(problem.free(n, primary) for n in by_value[v]), v))
        chosen = set(by_value[value])
        for g in groups:
            region[g] = [n for n in region[g] if n in chosen]
    tally = _fill(problem, region)
    if tally is None:
        return None
    if problem.span_levels:
        tally, region = _best_set(problem, tally, region)
        # Refill inside the narrowest domains the first pass touched, partly used nodes first across all of
        # them: same spans, but no wholly free node is broken while a touched domain has partly used room.
        level = problem.span_levels[0]
        touched = {problem.domain(n, level) for n in tally.used_nodes()}
        primary = problem.primary

        def best_fit(node: str) -> tuple[bool, int, str]:
            return (node in problem.fresh_nodes, problem.free(node, primary), node)

        compact = {
            g: sorted((n for n in nodes if problem.domain(n, level) in touched), key=best_fit)
            for g, nodes in region.items()
        }
        refilled = _fill(problem, compact)
        if refilled is not None and evaluate(problem, refilled.counts) < evaluate(problem, tally.counts):
            tally, region = refilled, compact
    return tally.counts


def _best_set(problem: Problem, tally: Tally, region: dict[int, list[str]]) -> tuple[Tally, dict[int, list[str]]]:
    """Try the enumerated best set of narrowest domains, best-fit order across it; keep it if it scores better."""
    union = list(dict.fromkeys(n for nodes in region.values() for n in nodes))
    chosen = choose_domains(problem, union)
    if chosen is None:
        return tally, region
    level, primary = problem.span_levels[0], problem.primary
    inside = {
        g: sorted(
            (n for n in nodes if problem.domain(n, level) in chosen),
            key=lambda n: (n in problem.fresh_nodes, problem.free(n, primary), n),
        )
        for g, nodes in region.items()
    }
    trial = _fill(problem, inside)
    if trial is not None and evaluate(problem, trial.counts) < evaluate(problem, tally.counts):
        return trial, inside
    return tally, region


def _fill(problem: Problem, region: dict[int, list[str]]) -> Tally | None:
    tally = Tally(problem)
    # Big pods first: they are the hard ones to fit once small pods have fragmented the nodes.
    for group in sorted(problem.groups, key=lambda g: -g.demand.get(problem.primary, 0)):
        if tally.fill(group.index, region[group.index], group.min) < group.min:
            return None
    return tally


def _honourable(problem: Problem, scope: Scope) -> bool:
    arrays = problem.arrays
    ids = arrays.key_ids(scope.key)
    holds = np.ones(int(ids.max()) + 1 if len(ids) else 0, np.bool_)
    for g in scope.groups:
        holds &= np.bincount(ids, weights=arrays.cap[g], minlength=len(holds)) >= problem.groups[g].min
    return bool(holds.any())


def _holds(problem: Problem, nodes: Sequence[str], groups: Sequence[int]) -> bool:
    return all(sum(problem.groups[g].cap.get(n, 0) for n in nodes) >= problem.groups[g].min for g in groups)
