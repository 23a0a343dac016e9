"""The grouped sums and cover counts the bounds are built on, against the one-group-at-a-time definition."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.grouping import NEVER, Pools, fewest_to_cover


@st.composite
def layouts(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    nodes = draw(st.integers(0, 12))
    count = draw(st.integers(1, 4))
    groups = np.array(draw(st.lists(st.integers(-1, count - 1), min_size=nodes, max_size=nodes)), np.int64)
    sub = np.array(draw(st.lists(st.integers(0, 5), min_size=nodes, max_size=nodes)), np.int64)
    weights = np.array(draw(st.lists(st.integers(0, 9), min_size=nodes, max_size=nodes)), np.int64)
    return groups, sub, weights, count


def pooled(groups: np.ndarray, sub: np.ndarray, weights: np.ndarray, group: int) -> list[int]:
    """The group's pool totals, the slow way."""
    totals: dict[int, int] = {}
    for g, s, w in zip(groups.tolist(), sub.tolist(), weights.tolist(), strict=True):
        if g == group:
            totals[s] = totals.get(s, 0) + w
    return list(totals.values())


@settings(max_examples=200, deadline=None)
@given(layouts(), st.integers(-2, 30), st.integers(0, 4))
def test_every_group_is_answered_as_if_alone(
    layout: tuple[np.ndarray, np.ndarray, np.ndarray, int], amount: int, taken: int
) -> None:
    groups, sub, weights, count = layout
    # Two rows: the weights, and the weights doubled with the amount doubled (a second need of the same shape).
    ranked = Pools(groups, sub, count).ranked([weights, 2 * weights])
    fewest = ranked.fewest(np.array([[amount], [2 * amount]]))
    top = ranked.top(taken)
    for group in range(count):
        totals = pooled(groups, sub, weights, group)
        expected = fewest_to_cover(totals, amount)
        for row in (0, 1):
            assert fewest[row, group] == (NEVER if expected is None else expected)
            assert top[row, group] == (row + 1) * sum(sorted(totals, reverse=True)[:taken])
            assert ranked.size[row, group] == len(totals)


def test_a_pool_mask_keeps_only_the_flagged_pools() -> None:
    # One group, three sub-domains with totals 5 (nodes 0+1), 4 and 7. Keeping all but the 7: the two
    # largest kept sum to 9, and 9 units take both of them.
    groups = np.zeros(4, np.int64)
    sub = np.array([0, 0, 1, 2], np.int64)
    weights = np.array([2, 3, 4, 7], np.int64)
    pools = Pools(groups, sub, 1)
    kept = pools.ranked([weights], pools.sub != 2)
    assert kept.top(2).tolist() == [[9]]
    assert kept.fewest(9).tolist() == [[2]]
    assert kept.fewest(10).tolist() == [[NEVER]]
