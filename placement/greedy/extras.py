"""Best-effort pods: after the guaranteed pods are planned, add the extras wherever they still fit.

(Gang policies first try to place every pod as one gang; this is the fallback when that does not fit.)

"Last" in ARCHITECTURE.md's objective order means an extra never costs the guaranteed pods anything: the guaranteed
plan is fixed first (by whichever gang policy), then each group's extras go, one node at a time, where they
cost the least — nodes the gang already uses, then partly used nodes in domains it already touches, and only
then further afield — but they do go wherever they fit: the result is maximal (no further extra pod fits on
any node it may use). Extras stay inside the domain a required pack already chose for their scope.
"""

from __future__ import annotations

from collections.abc import Mapping

from placement.greedy.tally import Tally
from placement.objective import Counts
from placement.problem import Problem

__all__ = ["add_extras"]


def add_extras(problem: Problem, counts: Counts) -> dict[tuple[int, str], int]:
    """``counts`` plus as many best-effort pods as fit (``problem`` is the full problem, extras included)."""
    tally = Tally(problem)
    for (g, node), pods in counts.items():
        if pods > 0:
            tally.place(g, node, pods)
    if all(g.extras == 0 for g in problem.groups):
        return tally.counts
    chosen = _required_values(problem, tally.counts)
    primary = problem.primary
    for group in problem.groups:
        scopes = [s for s in problem.required if group.index in s.groups]
        while (want := len(group.pods) - tally.placed[group.index]) > 0:
            allowed = [
                n for n in group.cap if all(chosen.get(s.index) in (None, problem.key_value(n, s.key)) for s in scopes)
            ]
            used = tally.used_nodes()
            touched = {level: {problem.domain(n, level) for n in used} for level in problem.span_levels}

            def cost(node: str, used: set[str] = used, touched: dict[str, set[str]] = touched) -> tuple[object, ...]:
                # Fewest new domains, narrowest level first, then partly used before wholly free, then fullest.
                spans = tuple(problem.domain(node, lv) not in touched[lv] for lv in problem.span_levels)
                return (node not in used, *spans, node in problem.fresh_nodes, problem.free(node, primary), node)

            open_scopes = [s for s in scopes if chosen.get(s.index) is None]
            # A scope with no pod placed yet commits to the domain of its first extra, so place that one alone.
            placed = tally.fill(group.index, sorted(allowed, key=cost), 1 if open_scopes else want)
            if placed == 0:
                break
            if open_scopes:
                first = next(n for (g, n), c in tally.counts.items() if g == group.index and c > 0)
                for s in open_scopes:
                    chosen[s.index] = problem.key_value(first, s.key)
            else:
                break
    return tally.counts


def _required_values(problem: Problem, counts: Mapping[tuple[int, str], int]) -> dict[int, str | None]:
    """The key value each required scope's placed pods already share."""
    found: dict[int, str | None] = {}
    for scope in problem.required:
        for (g, node), c in counts.items():
            if c > 0 and g in scope.groups:
                found[scope.index] = problem.key_value(node, scope.key)
                break
    return found
