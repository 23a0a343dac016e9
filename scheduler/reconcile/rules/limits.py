"""Limits that keep one PodCliqueSet from taking the reconciler down, and the quantity rule its pod specs must meet.

Grove has no caps; we need them: ``spec.replicas: 1000000000`` would have the reconciler build a billion pods in
memory (``reconcile --dry-run`` hung, a clique of 10^9 replicas ran out of memory), and one typo in a shared
cluster must not do that to every other workload. Every count a PodCliqueSet can set is capped
(``Limits.replicas``, 10,000 by default), and so is what they multiply to (``Limits.pods`` per PodCliqueSet); the
total is computed arithmetically before anything is built. ``reconcile --max-replicas/--max-pods`` change them.

Our CRD keeps ``podSpec`` opaque, so the API server does not check the quantities in it; a pod built from a bad
one would be refused only at creation. They are checked here, by the API server's rule (a Kubernetes quantity that
fits an int64 in the unit the scheduler counts: millicores for CPU), naming the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from api.grove import PodCliqueSet
from api.quantity import QuantityError, resource_units
from scheduler.reconcile.rules.fields import FieldError

__all__ = ["Limits", "limit_errors"]

_INT64_MAX = 2**63 - 1
_T = "spec.template"


@dataclass(frozen=True)
class Limits:
    replicas: int = 10_000  # any one replica count: a PodCliqueSet's, a clique's, a scaling group's
    pods: int = 50_000  # all pods of one PodCliqueSet at its template's counts


def _count_errors(path: str, value: int, limit: int) -> Iterator[FieldError]:
    if value > limit:
        yield FieldError(path, f"must be ≤ {limit} (got {value}); the reconciler's limit (--max-replicas)")


def _pods(pcs: PodCliqueSet) -> int:
    template = pcs.spec.template
    grouped = {name: group for group in template.podCliqueScalingGroups for name in group.cliqueNames}
    per_replica = 0
    for clique in template.cliques:
        group = grouped.get(clique.name)
        per_replica += max(clique.spec.replicas, 0) * (max(group.replicas or 1, 1) if group else 1)
    return max(pcs.spec.replicas, 0) * per_replica


def _quantity_errors(path: str, pod_spec: Mapping[str, Any]) -> Iterator[FieldError]:
    for kind in ("initContainers", "containers"):
        containers = pod_spec.get(kind)
        for c_index, container in enumerate(containers if isinstance(containers, list) else []):
            resources = container.get("resources") if isinstance(container, dict) else None
            for section in ("requests", "limits"):
                values = resources.get(section) if isinstance(resources, dict) else None
                for name, value in (values or {}).items() if isinstance(values, dict) else ():
                    where = f"{path}.{kind}[{c_index}].resources.{section}.{name}"
                    try:
                        units = resource_units(str(name), value)
                    except QuantityError as err:
                        yield FieldError(where, str(err))
                        continue
                    if not 0 <= units <= _INT64_MAX:
                        yield FieldError(where, f"{value!r} must be between 0 and the int64 maximum")


def limit_errors(pcs: PodCliqueSet, limits: Limits) -> list[FieldError]:
    """Every count beyond ``limits`` and every bad quantity in a clique's pod spec."""
    errors = list(_count_errors("spec.replicas", pcs.spec.replicas, limits.replicas))
    template = pcs.spec.template
    for index, clique in enumerate(template.cliques):
        path = f"{_T}.cliques[{index}].spec"
        errors += _count_errors(f"{path}.replicas", clique.spec.replicas, limits.replicas)
        errors += _quantity_errors(f"{path}.podSpec", clique.spec.podSpec)
    for index, group in enumerate(template.podCliqueScalingGroups):
        errors += _count_errors(f"{_T}.podCliqueScalingGroups[{index}].replicas", group.replicas or 0, limits.replicas)
    if not errors and (total := _pods(pcs)) > limits.pods:
        errors.append(
            FieldError(
                "spec.replicas",
                f"the PodCliqueSet would have {total} pods; the reconciler's limit is {limits.pods} (--max-pods)",
            )
        )
    return errors
