"""Grove's rules for DRA resource sharing (webhook ``validation/podcliqueset.go``: ``validateResourceClaimTemplates``,
``validatePCSResourceSharing``, ``validatePCSGResourceSharing``, ``validateResourceSharingSpecs``), with Grove's
field paths and the API machinery's wording (``Required value``, ``Duplicate value``, ``Unsupported value``,
``Not found``, ``Invalid value``), so a refusal reads as Grove's webhook would have written it.

What is checked here is the spec alone; whether an external ResourceClaimTemplate exists is the API's to say when
the claims are made (``components.resource_claim``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from api.grove import PodCliqueSet, ResourceSharing
from scheduler.reconcile.rules.fields import FieldError

__all__ = ["SCOPES", "sharing_errors"]

SCOPES = ("AllReplicas", "PerReplica")
_T = "spec.template"


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(f'"{value}"' for value in values)


def _entry_errors(path: str, entries: Sequence[ResourceSharing], templates: set[str]) -> list[FieldError]:
    """The rules every level shares: a name, unique at its level; no namespace for an internal template; a scope."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        at = f"{path}[{index}]"
        if not entry.name:
            errors.append(FieldError(f"{at}.name", "Required value: reference name is required"))
        elif entry.name in seen:
            errors.append(FieldError(f"{at}.name", f'Duplicate value: "{entry.name}"'))
        seen.add(entry.name)
        if entry.namespace and entry.name and entry.name in templates:
            errors.append(
                FieldError(
                    f"{at}.namespace",
                    f'Invalid value: "{entry.namespace}": namespace must be empty when name matches an internal '
                    "resourceClaimTemplate",
                )
            )
        if entry.scope not in SCOPES:
            errors.append(
                FieldError(f"{at}.scope", f'Unsupported value: "{entry.scope}": supported values: {_quoted(SCOPES)}')
            )
    return errors


def _filter_errors(
    path: str, entries: Sequence[ResourceSharing], *, cliques: set[str], groups: set[str] | None
) -> list[FieldError]:
    """``groups`` is None at scaling-group level, where a filter may name member cliques only."""
    errors: list[FieldError] = []
    for index, entry in enumerate(entries):
        if entry.filter is None:
            continue
        at = f"{path}[{index}].filter"
        chosen = entry.filter
        if groups is None and not chosen.childCliqueNames:
            errors.append(FieldError(at, "Required value: filter must specify at least one childCliqueNames entry"))
        elif groups is not None and not (chosen.childCliqueNames or chosen.childScalingGroupNames):
            errors.append(
                FieldError(
                    at,
                    "Required value: filter must specify at least one childCliqueNames or childScalingGroupNames entry",
                )
            )
        for name_index, name in enumerate(chosen.childCliqueNames):
            if name not in cliques:
                errors.append(FieldError(f"{at}.childCliqueNames[{name_index}]", f'Not found: "{name}"'))
        for name_index, name in enumerate(chosen.childScalingGroupNames):
            if groups is not None and name not in groups:
                errors.append(FieldError(f"{at}.childScalingGroupNames[{name_index}]", f'Not found: "{name}"'))
    return errors


def sharing_errors(pcs: PodCliqueSet) -> list[FieldError]:
    """Every resource-sharing rule ``pcs`` breaks, PodCliqueSet level first, then cliques, then scaling groups."""
    template = pcs.spec.template
    errors: list[FieldError] = []
    names: list[str] = []
    for index, config in enumerate(template.resourceClaimTemplates):
        at = f"{_T}.resourceClaimTemplates[{index}]"
        if not config.name:
            errors.append(FieldError(f"{at}.name", "Required value: template name is required"))
        requests = ((config.templateSpec.get("spec") or {}).get("devices") or {}).get("requests")
        if not requests:
            errors.append(
                FieldError(
                    f"{at}.templateSpec.spec.devices.requests",
                    "Required value: at least one device request is required",
                )
            )
        names.append(config.name)
    duplicates = sorted({name for name in names if names.count(name) > 1})
    errors += [FieldError(f"{_T}.resourceClaimTemplates.name", f'Duplicate value: "{name}"') for name in duplicates]
    templates = {name for name in names if name}
    cliques = {clique.name for clique in template.cliques}
    groups = {group.name for group in template.podCliqueScalingGroups}
    errors += _entry_errors(f"{_T}.resourceSharing", template.resourceSharing, templates)
    errors += _filter_errors(f"{_T}.resourceSharing", template.resourceSharing, cliques=cliques, groups=groups)
    for index, clique in enumerate(template.cliques):
        errors += _entry_errors(f"{_T}.cliques[{index}].resourceSharing", clique.resourceSharing, templates)
    for index, group in enumerate(template.podCliqueScalingGroups):
        path = f"{_T}.podCliqueScalingGroups[{index}].resourceSharing"
        errors += _entry_errors(path, group.resourceSharing, templates)
        errors += _filter_errors(path, group.resourceSharing, cliques=set(group.cliqueNames), groups=None)
    return errors
