"""``placementScore``: how close a plan comes to the best placement the free capacity could conceivably allow.

    placementScore = Π over the quality tiers t of (1 + bound_t) / (1 + value_t)

The quality tiers are those of :mod:`placement.objective` whose family says so (not ``extras-missing``: how
many best-effort pods run is a matter of quantity, not of placement): preferred-pack misses, domains spanned per
level, and wholly free NVLink domains and nodes broken into. ``bound_t`` is :func:`placement.bounds.tier_bounds`,
a lower bound from capacity alone, so every factor lies in (0, 1] and the score in (0, 1]. It is 1.0 exactly when
every tier sits at its bound: the gang is in the narrowest domain that could hold it, honours every ``preferred``
pack that capacity allows, and breaks into no more wholly free NVLink domain or node than it must. Spanning two
racks where one would do gives a factor of 2/3; breaking one whole NVLink domain needlessly gives 1/2. Comparable
across policies because the bound depends on the request and the free capacity, not on the plan.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["placement_score"]


def placement_score(values: Sequence[int], bounds: Sequence[int], quality: Sequence[bool]) -> float:
    """Score a plan's tier ``values`` against the ``bounds`` (both as :mod:`placement.objective` orders them);
    ``quality`` flags the tiers that count (:func:`placement.objective.quality_mask`)."""
    score = 1.0
    for value, bound, counts in zip(values, bounds, quality, strict=True):
        if counts:
            score *= (1 + min(bound, value)) / (1 + value)
    return score
