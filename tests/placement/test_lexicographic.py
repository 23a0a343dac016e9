"""``solve_lexicographic``: tiers too wide for one weighted sum are solved chunk by chunk, and a plan is called
optimal only when every chunk was."""

from __future__ import annotations

from ortools.sat.python import cp_model

from placement.cpsat.solver import solve_lexicographic
from placement.model_vars import TierExpr

_WIDE = 2**30  # two tiers this wide cannot share one weighted sum (2**60 > the 2**40 the weights may reach)


def _two_chunk_model() -> tuple[cp_model.CpModel, list[TierExpr], list[cp_model.IntVar]]:
    """Minimise (a, b) lexicographically subject to a + b ≥ 3: the optimum is a = 0, b = 3."""
    model = cp_model.CpModel()
    a = model.new_int_var(0, _WIDE, "a")
    b = model.new_int_var(0, _WIDE, "b")
    model.add(a + b >= 3)
    return model, [TierExpr("a", a, _WIDE), TierExpr("b", b, _WIDE)], [a, b]


def test_every_chunk_is_minimised_in_turn() -> None:
    model, tiers, decisions = _two_chunk_model()
    solved = solve_lexicographic(model, tiers, None, decisions=decisions, deadline=float("inf"), workers=1)
    assert solved.state == "optimal"
    assert solved.values == [0, 3]


def test_a_plan_whose_later_chunk_never_ran_is_not_optimal() -> None:
    """The clock stands still just short of the deadline: the first chunk gets the minimum slice and the time is
    spent after it, so the second chunk never runs. Whatever the first chunk proved, the tuple is not proven."""
    model, tiers, decisions = _two_chunk_model()
    solved = solve_lexicographic(model, tiers, None, decisions=decisions, deadline=1e-9, workers=1, clock=lambda: 0.0)
    assert solved.state != "optimal"
