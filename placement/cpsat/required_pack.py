"""Hard: all pods of a ``required`` pack scope share one value of the scope's node-label key.

One choice boolean per candidate domain of the key, at most one chosen (exactly one when the scope must place
pods and its gang is active, none when it is not); a count may be positive only on a node of the chosen domain.
Nodes lacking the label were already dropped from the scope's groups when the problem was resolved.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from placement.model_vars import ModelVars

__all__ = ["add_required_pack"]


def add_required_pack(mv: ModelVars) -> None:
    problem = mv.problem
    for scope in problem.required:
        choice: dict[str, cp_model.IntVar] = {}
        for (g, node), var in mv.count.items():
            if g not in scope.groups:
                continue
            value = problem.key_value(node, scope.key)
            assert value is not None  # resolution removed unlabelled nodes from required scopes
            if value not in choice:
                choice[value] = mv.model.new_bool_var(f"required[{scope.index}]={value}")
            mv.model.add(var <= problem.groups[g].cap[node] * choice[value])
        chosen = cp_model.LinearExpr.sum(list(choice.values()))
        if sum(problem.groups[g].min for g in scope.groups) > 0:
            mv.model.add(chosen == mv.active)
        else:
            mv.model.add(chosen <= mv.active)
