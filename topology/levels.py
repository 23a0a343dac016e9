"""Topology levels and the node-label keys that name a node's domain at each level.

A level may be named by several label families (Topograph changed its keys across releases; GPU Feature
Discovery and Topograph both publish the NVLink domain), so a level holds candidate keys in order of trust and a
node's domain comes from the first key it carries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_LEVELS",
    "HOSTNAME_KEY",
    "HOST_LEVEL",
    "NVLINK_LEVEL",
    "Level",
    "active_levels",
    "is_host_level",
    "levels_from_pairs",
]

HOSTNAME_KEY = "kubernetes.io/hostname"
_TIER = re.compile(r"^fabric\.topograph\.run/tier-(\d+)$")


@dataclass(frozen=True)
class Level:
    """One level of the hierarchy; ``keys`` are candidate node-label keys, first present wins."""

    name: str
    keys: tuple[str, ...]

    def value_of(self, labels: Mapping[str, str]) -> str | None:
        for key in self.keys:
            value = labels.get(key)
            if value:
                return value
        return None


NVLINK_LEVEL = "nvlink"
HOST_LEVEL = Level("host", (HOSTNAME_KEY,))

# Broad → narrow. Topograph v1 tiers are discovered per cluster (variable depth) and slotted in before "nvlink".
DEFAULT_LEVELS: tuple[Level, ...] = (
    Level("region", ("topology.kubernetes.io/region",)),
    Level("zone", ("topology.kubernetes.io/zone",)),
    Level("datacenter", ("network.topology.nvidia.com/datacenter",)),
    Level("core", ("network.topology.nvidia.com/core",)),
    Level("spine", ("network.topology.nvidia.com/spine",)),
    Level("block", ("network.topology.nvidia.com/block",)),
    Level("leaf", ("network.topology.nvidia.com/leaf",)),
    Level(
        NVLINK_LEVEL,
        (
            # GFD's clique label is what the NVLink fabric itself reports; Topograph's keys may be derived.
            "nvidia.com/gpu.clique",
            "accelerator.topograph.run/domain",
            "network.topology.nvidia.com/accelerator",
        ),
    ),
    Level("nvlink-subdomain", ("accelerator.topograph.run/sub-domain",)),
    HOST_LEVEL,
)


def _tier_levels(label_sets: Iterable[Mapping[str, str]]) -> list[Level]:
    depths: set[int] = set()
    for labels in label_sets:
        for key in labels:
            match = _TIER.match(key)
            if match:
                depths.add(int(match.group(1)))
    # Tier 0 is nearest the node, so the broadest tier comes first.
    return [Level(f"tier-{n}", (f"fabric.topograph.run/tier-{n}",)) for n in sorted(depths, reverse=True)]


def active_levels(label_sets: Sequence[Mapping[str, str]], levels: Sequence[Level] | None = None) -> tuple[Level, ...]:
    """The levels that at least one node carries, broad → narrow, always ending with the host level.

    With ``levels=None`` the defaults are used and Topograph v1 ``tier-N`` levels are discovered from the labels.
    """
    if levels is None:
        tiers = _tier_levels(label_sets)
        nvlink_at = next(i for i, level in enumerate(DEFAULT_LEVELS) if level.name == NVLINK_LEVEL)
        candidates = [*DEFAULT_LEVELS[:nvlink_at], *tiers, *DEFAULT_LEVELS[nvlink_at:]]
    else:
        candidates = list(levels)
    host_at = next((i for i, level in enumerate(candidates) if is_host_level(level)), None)
    if host_at is None:
        host = HOST_LEVEL
    else:
        # Levels listed after the host (Grove's "numa") are narrower than a node: a node label has one value per
        # node, so it cannot split one, and ranking such a level above the host would merge unrelated nodes that
        # merely share a value like "0". The node hierarchy ends at the host.
        host, candidates = candidates[host_at], candidates[:host_at]
    present = [level for level in candidates if any(level.value_of(labels) for labels in label_sets)]
    return (*present, host)


def is_host_level(level: Level) -> bool:
    """Whether ``level`` is the node level: keyed by the hostname label, or named ``host`` as Grove's is."""
    return level.name == HOST_LEVEL.name or HOSTNAME_KEY in level.keys


def levels_from_pairs(pairs: Iterable[tuple[str, str]]) -> tuple[Level, ...]:
    """Levels from ``(domain, key)`` pairs, as a Grove ClusterTopologyBinding or a config file lists them.

    A binding's host level (named ``host`` or keyed by the hostname label) is kept as given; levels after it are
    finer than a node and ``active_levels`` leaves them out of the node hierarchy. If the binding names no host
    level one is appended, since every placement ends on a host.
    """
    result = [Level(domain, (key,)) for domain, key in pairs]
    names = [level.name for level in result]
    if len(set(names)) != len(names):
        raise ValueError(f"topology levels: duplicate domain names in {names}")
    if not any(is_host_level(level) for level in result):
        result.append(HOST_LEVEL)
    return tuple(result)
