"""Amounts of a resource as a person reads them: in Kubernetes' quantity notation, followed by the resource.

Placement counts in whole units: millicores for ``cpu``, bytes for memory and storage, a count for everything else
(the convention ``api.quantity.resource_units`` sets when it parses a request; a test holds the two together). A
message that printed those integers told a user a pod "needs 1000 cpu" when it asked for one core, or 8589934592
memory for ``8Gi``. Every message that names an amount goes through ``amount``: ``1 cpu``, ``500m cpu``,
``8Gi memory``, ``4 nvidia.com/gpu``. The notation is Kubernetes' canonical one: whole cores without a suffix,
millicores with ``m``, bytes with the largest binary suffix that divides them exactly (else a decimal one, else
none) — what ``kubectl`` prints for the same value.
"""

from __future__ import annotations

__all__ = ["amount", "quantity"]

_MILLI_RESOURCES = frozenset({"cpu"})
_BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def _counts_bytes(resource: str) -> bool:
    return resource in _BYTE_RESOURCES or resource.startswith("hugepages-")


def quantity(resource: str, units: int) -> str:
    """``units`` of ``resource`` written as a Kubernetes quantity (``500m``, ``2``, ``8Gi``, ``1G``, ``4``)."""
    if resource in _MILLI_RESOURCES:
        whole, milli = divmod(abs(units), 1000)
        sign = "-" if units < 0 else ""
        return f"{sign}{whole}" if milli == 0 else f"{units}m"
    if _counts_bytes(resource) and units:
        for suffixes in (_BINARY, _DECIMAL):
            for suffix, size in suffixes:
                if units % size == 0:
                    return f"{units // size}{suffix}"
    return str(units)


def amount(resource: str, units: int) -> str:
    """``units`` of ``resource`` for a message: ``1 cpu``, ``500m cpu``, ``8Gi memory``, ``4 nvidia.com/gpu``."""
    return f"{quantity(resource, units)} {resource}"
