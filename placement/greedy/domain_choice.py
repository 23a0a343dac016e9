"""Choose which narrowest-level domains (NVLink domains, usually) a gang should use inside its container.

The objective wants, in order: as few such domains as capacity allows, then as few broader domains, then as
few wholly free ones, then as much partly used room as possible (so best fit breaks fewer whole nodes). When
the number of candidate sets is small, try them all; this is what the plain largest-first fill gets wrong.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from placement.grouping import fewest_to_cover
from placement.problem import Problem

__all__ = ["choose_domains"]

_MAX_SETS = 400  # enumerate at most this many candidate sets; beyond it the other greedy passes must do


def choose_domains(problem: Problem, nodes: Sequence[str]) -> set[str] | None:
    """The best set of narrowest-level domains among ``nodes`` that holds every group's minimum on capacity
    sums; ``None`` if there is no narrower level, nothing holds, or there are too many sets to try."""
    if not problem.span_levels:
        return None
    level, primary = problem.span_levels[0], problem.primary
    chosen = [g for g in problem.groups if g.min > 0]
    needs = [g.min for g in chosen] + [sum(g.min * g.demand.get(r, 0) for g in chosen) for r in problem.resources]
    capacity: dict[str, list[int]] = {}
    partly: dict[str, int] = {}
    for node in nodes:
        domain = problem.domain(node, level)
        row = capacity.setdefault(domain, [0] * len(needs))
        for i, g in enumerate(chosen):
            row[i] += g.cap.get(node, 0)
        if any(node in g.cap for g in chosen):
            for j, r in enumerate(problem.resources):
                row[len(chosen) + j] += problem.free(node, r)
        if node not in problem.fresh_nodes:
            partly[domain] = partly.get(domain, 0) + problem.free(node, problem.primary)
    counts = [fewest_to_cover((row[i] for row in capacity.values()), need) for i, need in enumerate(needs)]
    if any(c is None for c in counts):
        return None
    k = max((c for c in counts if c is not None), default=0)
    if k == 0:
        return None
    pool = sorted(capacity)
    if math.comb(len(pool), k) > _MAX_SETS:
        # Too many sets to try: keep the domains with the most room for the primary need (any k of those few
        # still reach the fewest possible), and widen the pool only as far as the budget allows.
        column = len(chosen) + problem.resources.index(primary) if primary in problem.resources else 0
        roomiest = sorted(pool, key=lambda d: (-capacity[d][column], d))
        extra = 0
        while k + extra + 1 <= len(roomiest) and math.comb(k + extra + 1, k) <= _MAX_SETS:
            extra += 1
        pool = sorted(roomiest[: k + extra])
    broader = problem.span_levels[1:]
    parent = {d: tuple(problem.domain(n, lv) for lv in broader) for n in nodes if (d := problem.domain(n, level))}
    best: tuple[tuple[object, ...], set[str]] | None = None
    for combo in itertools.combinations(pool, k):
        if any(sum(capacity[d][i] for d in combo) < need for i, need in enumerate(needs)):
            continue
        spans = tuple(len({parent[d][i] for d in combo}) for i in range(len(broader)))
        fresh = sum(d in problem.fresh_domains for d in combo)
        key = (*spans, fresh, -sum(partly.get(d, 0) for d in combo), combo)
        if best is None or key < best[0]:
            best = (key, set(combo))
    return None if best is None else best[1]
