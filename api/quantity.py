"""Kubernetes resource quantities, parsed the way apimachinery does.

A quantity is ``<signed number><suffix>`` where the suffix is a binary SI (``Ki``..``Ei``), a decimal SI
(``n``, ``u``, ``m``, ``k``, ``M``..``E``) or a decimal exponent (``e3``, ``E-2``). We keep exact fractions so
``0.1`` CPU and ``100m`` compare equal, and convert to integers only at the edge, rounding up like
kube-scheduler does (``MilliValue`` for CPU, ``Value`` for everything else).

Amounts are also bounded (``check_units``): never negative, never beyond a 64-bit integer (apimachinery's own
limit, and numpy's and CP-SAT's), and never beyond a sane maximum per resource, so that one absurd value in a request
or on a node (``nvidia.com/gpu: 1e40``, set by a broken device plugin) is refused with its name instead of
overflowing the planner.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

__all__ = ["INT64_MAX", "QuantityError", "check_units", "maximum_units", "parse_quantity", "resource_units"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?\d+)|(?P<dec>[numkMGTPE]?))$"
)

_MAX_EXPONENT = 40  # apimachinery caps values at int64 anyway (~9.2e18)

# Resources kube-scheduler counts in thousandths; everything else is a whole count.
_MILLI_RESOURCES = frozenset({"cpu"})

INT64_MAX = 2**63 - 1

# Sane maxima, written as a person writes a quantity (and said so in the error), each orders of magnitude above any
# real machine yet small enough that sums over a 10,000-node cluster (domain bounds, CP-SAT capacity rows) stay
# inside 64 bits.
_MAXIMA = {
    "cpu": "1000000",  # a million cores (the largest machines have about 2,000)
    "memory": "256Ti",  # beyond the memory of any single machine built yet
    "pods": "1000000",  # kubelet's max-pods defaults to 110
    # 8–16 devices per node; time-slicing or MPS advertises up to 48 replicas of each.
    "nvidia.com/gpu": "4096",
}
_DEFAULT_MAXIMUM = "512Ti"  # ephemeral-storage, hugepages-*, extended resources: 512 Ti of whatever they count


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a quantity such as ``"500m"``, ``"16Gi"``, ``"1e3"`` or ``"2k"``."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a finite quantity")
        return Fraction(str(value))
    if not isinstance(value, str):
        # Anything else (null, a list, an object) reaches here from hand-written YAML: a named error, not a crash.
        raise QuantityError(f"{value!r} is not a quantity (expected a string or a number)")
    return _parse_text(value)


# A pure memo, not state: a cluster spells the same few quantities ("4", "16Gi", "110") tens of thousands of
# times, and building Fractions dominated loading a 10,000-node snapshot (benchmarks/bench_snapshot_load.py).
@lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    text = value.strip()
    match = _PATTERN.match(text)
    if match is None:
        raise QuantityError(
            f"{value!r} is not a quantity (expected a number with an optional suffix such as 500m, 16Gi, 1e3)"
        )
    number = Fraction(match["num"])
    if match["bin"]:
        return number * _BINARY[match["bin"]]
    if match["exp"]:
        exponent = int(match["exp"][1:])
        if abs(exponent) > _MAX_EXPONENT:
            # 10**1000000000 would take minutes and gigabytes to build: refuse, don't hang on a typo.
            raise QuantityError(f"{value!r}: exponent beyond ±{_MAX_EXPONENT} is not a sensible quantity")
        return number * Fraction(10) ** exponent
    return number * _DECIMAL[match["dec"] or ""]


def resource_units(resource: str, value: str | int | float) -> int:
    """The integer amount the scheduler accounts for ``resource``: millicores for CPU, else whole units.

    Rounds up, so a request never looks smaller than it is.
    """
    if isinstance(value, str):
        return _units_of_text(resource in _MILLI_RESOURCES, value)
    quantity = parse_quantity(value)
    if resource in _MILLI_RESOURCES:
        quantity *= 1000
    return math.ceil(quantity)


@lru_cache(maxsize=4096)
def _units_of_text(milli: bool, value: str) -> int:
    quantity = _parse_text(value)
    return math.ceil(quantity * 1000 if milli else quantity)


@lru_cache(maxsize=256)
def maximum_units(resource: str) -> int:
    """The largest amount of ``resource`` (in ``resource_units``) a request or a node may carry."""
    return resource_units(resource, _MAXIMA.get(resource, _DEFAULT_MAXIMUM))


def check_units(resource: str, value: str | int | float) -> int:
    """``resource_units``, refusing a negative amount or one above ``maximum_units`` with a ``QuantityError``."""
    units = resource_units(resource, value)
    if units < 0:
        raise QuantityError(f"{value!r} is negative; requests and capacities are never below 0")
    if units > INT64_MAX:
        raise QuantityError(f"{value!r} is beyond a 64-bit integer, Kubernetes' own limit for a quantity")
    if units > maximum_units(resource):
        maximum = _MAXIMA.get(resource, _DEFAULT_MAXIMUM)
        raise QuantityError(f"{value!r} is above the sane maximum for {resource} ({maximum} {resource})")
    return units
