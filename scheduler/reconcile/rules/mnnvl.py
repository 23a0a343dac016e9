"""MNNVL (multi-node NVLink, Grove's GREP-417, ``operator/internal/mnnvl``): who is enrolled, and Grove's rules for
the ``grove.io/mnnvl-group`` annotation.

A clique is enrolled in group ``g`` when the first of its own annotations, its scaling group's and the
PodCliqueSet's that sets ``grove.io/mnnvl-group`` says ``g`` (``none`` opts out of a parent's group and stops the
walk), and only if one of its containers asks for ``nvidia.com/gpu`` (a CPU clique is skipped, even when annotated).
Each PodCliqueSet replica then has one ComputeDomain per group, ``<pcs>-<r>-<g>``, and each enrolled pod claims
from it (``desired.cliques`` injects the claim, ``components.compute_domain`` keeps the domains).

Rules, as Grove's webhook (``mnnvl/webhook.go``): on create, a value must be ``none`` or a DNS-1123 label, and any
other value than ``none`` is refused while the feature is off (``Features.mnnvl``, Grove's
``network.autoMNNVLEnabled``); on update the annotation may not be added, removed or changed at any level.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from api.grove import ANNOTATION_MNNVL_GROUP, MNNVL_OPT_OUT, PodCliqueSet
from api.quantity import QuantityError, resource_units
from scheduler.reconcile.rules.fields import FieldError

__all__ = ["GPU", "has_gpu", "mnnvl_errors", "mnnvl_shape", "mnnvl_update_errors", "resolve_group"]

GPU = "nvidia.com/gpu"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_NOT_ENABLED = (
    f"MNNVL is not enabled in the operator configuration. Either enable MNNVL globally or remove the "
    f"{ANNOTATION_MNNVL_GROUP} annotation"
)


def resolve_group(*layers: Mapping[str, str]) -> str | None:
    """Grove's ``ResolveGroupNameHierarchically``: ``layers`` from the most specific; the first that sets the
    annotation decides: its group, or ``None`` for ``none``. ``None`` too when no layer sets it."""
    for layer in layers:
        if ANNOTATION_MNNVL_GROUP in layer:
            value = layer[ANNOTATION_MNNVL_GROUP]
            return None if value == MNNVL_OPT_OUT else value
    return None


def _asks_for_gpu(container: Mapping[str, Any]) -> bool:
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):
        value = (resources.get(section) or {}).get(GPU)
        try:
            if value is not None and resource_units(GPU, value) > 0:
                return True
        except QuantityError:
            continue  # refused by the quantity rule, with its field
    return False


def has_gpu(pod_spec: Mapping[str, Any]) -> bool:
    """Grove's ``HasGPUInPodSpec``: a container or init container asks for ``nvidia.com/gpu``."""
    return any(_asks_for_gpu(c) for kind in ("containers", "initContainers") for c in pod_spec.get(kind) or [])


def _layers(pcs: PodCliqueSet) -> Iterator[tuple[str, str, Mapping[str, str]]]:
    """(key for the update rule, JSON path of the annotations, the annotations) of every layer that may set it."""
    template = pcs.spec.template
    yield "podcliqueset", "metadata.annotations", pcs.metadata.annotations
    for index, clique in enumerate(template.cliques):
        yield f"clique/{clique.name}", f"spec.template.cliques[{index}].annotations", clique.annotations
    for index, group in enumerate(template.podCliqueScalingGroups):
        yield f"group/{group.name}", f"spec.template.podCliqueScalingGroups[{index}].annotations", group.annotations


def _value_error(value: str) -> str | None:
    if not value:
        return "mnnvl-group value must not be empty"
    if value == MNNVL_OPT_OUT:
        return None
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _DNS_LABEL.match(value):
        problems.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
            "and end with an alphanumeric character"
        )
    if problems:
        return f'mnnvl-group value "{value}" is not a valid DNS-1123 label: {"; ".join(problems)}'
    return None


def mnnvl_errors(pcs: PodCliqueSet, *, enabled: bool) -> list[FieldError]:
    """Grove's ``ValidatePCSOnCreate``: every annotation's value, and the feature being on."""
    errors = []
    for _, path, layer in _layers(pcs):
        if ANNOTATION_MNNVL_GROUP not in layer:
            continue
        value = layer[ANNOTATION_MNNVL_GROUP]
        at = f"{path}.{ANNOTATION_MNNVL_GROUP}"
        if problem := _value_error(value):
            errors.append(FieldError(at, f'Invalid value: "{value}": {problem}'))
        if not enabled and value != MNNVL_OPT_OUT:
            errors.append(FieldError(at, f'Invalid value: "{value}": {_NOT_ENABLED}'))
    return errors


def mnnvl_shape(pcs: PodCliqueSet) -> list[dict[str, str]]:
    """What the update rule freezes, for the accepted shape: every layer's annotation value, where it is set (a
    list, so a status merge patch replaces it whole)."""
    return [
        {"at": key, "value": layer[ANNOTATION_MNNVL_GROUP]}
        for key, _, layer in _layers(pcs)
        if ANNOTATION_MNNVL_GROUP in layer
    ]


def mnnvl_update_errors(old: list[dict[str, str]], pcs: PodCliqueSet, *, existed: set[str]) -> list[FieldError]:
    """Grove's ``ValidatePCSOnUpdate`` (``ValidateAnnotationsImmutability``) against the accepted shape's values;
    cliques and groups are matched by name, as Grove pairs them, and one that did not exist (``existed``: the
    ``clique/<name>`` and ``group/<name>`` keys accepted before) is left to the rule that refuses adding it."""
    before = {item["at"]: item["value"] for item in old}
    errors = []
    for key, path, layer in _layers(pcs):
        if key != "podcliqueset" and key not in existed:
            continue
        at = f"{path}.{ANNOTATION_MNNVL_GROUP}"
        now, was = layer.get(ANNOTATION_MNNVL_GROUP), before.get(key)
        if was is None and now is not None:
            rule = f"Forbidden: annotation {ANNOTATION_MNNVL_GROUP} cannot be added after creation"
            errors.append(FieldError(at, rule))
        elif was is not None and now is None:
            rule = f"Forbidden: annotation {ANNOTATION_MNNVL_GROUP} cannot be removed after creation"
            errors.append(FieldError(at, rule))
        elif was is not None and now is not None and was != now:
            rule = (
                f'Invalid value: "{now}": annotation {ANNOTATION_MNNVL_GROUP} is immutable and cannot be changed '
                f'from "{was}" to "{now}"'
            )
            errors.append(FieldError(at, rule))
    return errors
