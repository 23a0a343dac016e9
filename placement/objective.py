"""The placement objective, computed from a plan alone: the yardstick every policy and the tests share.

A plan is judged by a tuple of tiers, compared lexicographically (smaller is better), in DESIGN.md's order:

1. ``preferred`` — for each ``preferred`` pack scope, domains of its key the scope's pods touch beyond one;
2. ``span:<level>`` — domains touched at each level below the host, narrowest first (NVLink before block
   before zone);
3. ``fresh:<level>`` then ``fresh:host`` — wholly free NVLink domains (the narrowest level when there is no
   NVLink level) and wholly free nodes the gang breaks into: best fit fills partly used ones first;
4. ``extras-missing`` — best-effort pods (beyond ``minReplicas``) left unplaced.

The CP-SAT model encodes the same tiers, but this module is written independently of it so tests can check
the solver against a brute-force oracle through a scorer that shares none of the model's code.
"""

from __future__ import annotations

from collections.abc import Mapping

from placement.problem import Problem

__all__ = ["Counts", "assignment_of", "counts_of", "evaluate", "tier_names"]

Counts = Mapping[tuple[int, str], int]  # (group index, node) → pods of that group on that node


def tier_names(problem: Problem) -> tuple[str, ...]:
    fresh = (f"fresh:{problem.fresh_level}",) if problem.fresh_level else ()
    return ("preferred", *(f"span:{level}" for level in problem.span_levels), *fresh, "fresh:host", "extras-missing")


def evaluate(problem: Problem, counts: Counts) -> tuple[int, ...]:
    used = {(g, n) for (g, n), c in counts.items() if c > 0}
    nodes = {n for _, n in used}
    preferred = 0
    for scope in problem.preferred:
        values = {problem.key_value(n, scope.key) or f"<none>:{n}" for g, n in used if g in scope.groups}
        preferred += max(0, len(values) - 1)
    spans = [len({problem.domain(n, level) for n in nodes}) for level in problem.span_levels]
    fresh: list[int] = []
    if problem.fresh_level is not None:
        level = problem.fresh_level
        fresh.append(len({problem.domain(n, level) for n in nodes} & problem.fresh_domains))
    fresh.append(len(nodes & problem.fresh_nodes))
    placed = [0] * len(problem.groups)
    for (g, _), c in counts.items():
        placed[g] += c
    missing = sum(len(group.pods) - min(placed[group.index], len(group.pods)) for group in problem.groups)
    return (preferred, *spans, *fresh, missing)


def counts_of(problem: Problem, assignment: Mapping[str, str]) -> dict[tuple[int, str], int]:
    """Per (group, node) pod counts of a pod → node assignment; pods not in the gang are ignored."""
    group_of = {pod: g.index for g in problem.groups for pod in g.pods}
    counts: dict[tuple[int, str], int] = {}
    for pod, node in assignment.items():
        if pod in group_of:
            key = (group_of[pod], node)
            counts[key] = counts.get(key, 0) + 1
    return counts


def assignment_of(problem: Problem, counts: Counts) -> dict[str, str]:
    """Name the pods of a counts plan: within a group pods are interchangeable, so the first pods in the
    group's order take the first nodes (in name order), guaranteed members before best-effort extras."""
    assignment: dict[str, str] = {}
    for group in problem.groups:
        pods = iter(group.pods)
        for node in sorted(n for (g, n), c in counts.items() if g == group.index and c > 0):
            for _ in range(counts[(group.index, node)]):
                assignment[next(pods)] = node
    return assignment
