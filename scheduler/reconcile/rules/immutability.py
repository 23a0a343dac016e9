"""Grove's update rules (reference §4 "On update"): what a PodCliqueSet may not change once accepted.

Grove's webhook compares the old object with the new one. We have no webhook, so the reconciler records the
*shape* it accepted (the fields these rules cover) in the PodCliqueSet's status and compares each later spec with
it; a forbidden change is refused like any other invalid spec, and the objects built from the accepted shape stay.
"""

from __future__ import annotations

from typing import Any

from api.grove import PodCliqueSet, ResourceClaimTemplateConfig, ResourceSharing, TopologyConstraint
from scheduler.reconcile.rules.fields import FieldError
from scheduler.reconcile.rules.mnnvl import mnnvl_shape, mnnvl_update_errors

__all__ = ["SHAPE_STATUS_KEY", "shape", "update_errors"]

SHAPE_STATUS_KEY = "acceptedShape"
_T = "spec.template"
_ORDERED = ("CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit")


def _constraint(value: TopologyConstraint | None) -> dict[str, Any] | None:
    if value is None:
        return None
    pack = value.pack
    # packDomain → pack.required with the same value is allowed: compare the effective domains.
    required = (pack.required if pack else None) or value.packDomain
    return {"topologyName": value.topologyName, "required": required, "preferred": pack.preferred if pack else None}


def _listed(items: list[ResourceClaimTemplateConfig] | list[ResourceSharing]) -> list[dict[str, Any]] | None:
    """Entries as the user wrote them (what a shape stored before they were modelled holds too); none is ``None``."""
    return [item.to_json_dict() for item in items] or None


def _compact(value: Any) -> Any:
    """Drop ``None`` everywhere: a merge patch deletes null keys, so the stored shape never holds them."""
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def shape(pcs: PodCliqueSet) -> dict[str, Any]:
    """The fields Grove's update rules freeze, as plain JSON without nulls (it is stored in status)."""
    template = pcs.spec.template
    frozen: dict[str, Any] = {
        "cliqueStartupType": template.cliqueStartupType,
        "topologyConstraint": _constraint(template.topologyConstraint),
        "resourceClaimTemplates": _listed(template.resourceClaimTemplates),
        "resourceSharing": _listed(template.resourceSharing),
        "mnnvl": mnnvl_shape(pcs),
        "cliques": [
            {
                "name": c.name,
                "roleName": c.spec.roleName,
                "minAvailable": c.spec.minAvailable,
                "startsAfter": list(c.spec.startsAfter),
                "schedulerName": c.spec.podSpec.get("schedulerName") or "",
                "resourceSharing": _listed(c.resourceSharing),
                "topologyConstraint": _constraint(c.topologyConstraint),
            }
            for c in template.cliques
        ],
        "groups": [
            {
                "name": g.name,
                "cliqueNames": list(g.cliqueNames),
                "minAvailable": g.minAvailable,
                "resourceSharing": _listed(g.resourceSharing),
                "topologyConstraint": _constraint(g.topologyConstraint),
            }
            for g in template.podCliqueScalingGroups
        ],
    }
    compact: dict[str, Any] = _compact(frozen)
    return compact


def _topology_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    if old is not None and new is not None and "topologyName" not in old:
        # Adding topologyName to a legacy packDomain-only constraint is allowed.
        new = {k: v for k, v in new.items() if k != "topologyName"}
    return old != new


def _members(
    *, kind: str, path: str, old: list[dict[str, Any]], new: list[dict[str, Any]], fields: dict[str, str]
) -> list[FieldError]:
    """``fields``: shape key → its JSON path inside one list item."""
    errors: list[FieldError] = []
    old_by_name = {item["name"]: item for item in old}
    added = [item["name"] for item in new if item["name"] not in old_by_name]
    removed = sorted(old_by_name.keys() - {item["name"] for item in new})
    if added or removed:
        errors.append(
            FieldError(path, f"{kind} cannot be added or removed after creation (added {added}, removed {removed})")
        )
    for index, item in enumerate(new):
        before = old_by_name.get(item["name"])
        if before is None:
            continue
        for field, where in fields.items():
            if (before.get(field) or None) != (item.get(field) or None):  # [] stored before is "none"
                rule = f"is immutable (was {before.get(field)!r})"
                if field == "minAvailable":
                    rule += "; when unset it was defaulted from replicas at creation"
                errors.append(FieldError(f"{path}[{index}].{where}", rule))
        if _topology_change(before.get("topologyConstraint"), item.get("topologyConstraint")):
            errors.append(FieldError(f"{path}[{index}].topologyConstraint", "cannot be added, removed or changed"))
    return errors


def update_errors(old: dict[str, Any], pcs: PodCliqueSet) -> list[FieldError]:
    """Every update rule the spec of ``pcs`` breaks against the previously accepted ``old`` shape."""
    new = shape(pcs)
    errors: list[FieldError] = []
    if old.get("cliqueStartupType") != new.get("cliqueStartupType"):
        errors.append(FieldError(f"{_T}.cliqueStartupType", f"is immutable (was {old.get('cliqueStartupType')!r})"))
    elif new.get("cliqueStartupType") in _ORDERED:
        old_order = [c["name"] for c in old.get("cliques", [])]
        new_order = [c["name"] for c in new["cliques"] if c["name"] in old_order]
        if new_order != [name for name in old_order if name in new_order]:
            errors.append(FieldError(f"{_T}.cliques", f"cannot be reordered under {new.get('cliqueStartupType')}"))
    clique_fields = {
        "roleName": "spec.roleName",
        "minAvailable": "spec.minAvailable",
        "startsAfter": "spec.startsAfter",
        "schedulerName": "spec.podSpec.schedulerName",
        "resourceSharing": "resourceSharing",
    }
    errors += _members(
        kind="cliques", path=f"{_T}.cliques", old=old.get("cliques", []), new=new["cliques"], fields=clique_fields
    )
    group_fields = {name: name for name in ("cliqueNames", "minAvailable", "resourceSharing")}
    groups_path = f"{_T}.podCliqueScalingGroups"
    errors += _members(
        kind="PodCliqueScalingGroups",
        path=groups_path,
        old=old.get("groups", []),
        new=new["groups"],
        fields=group_fields,
    )
    for key in ("resourceClaimTemplates", "resourceSharing"):
        if (old.get(key) or None) != (new.get(key) or None):
            errors.append(FieldError(f"{_T}.{key}", "is immutable"))
    if _topology_change(old.get("topologyConstraint"), new.get("topologyConstraint")):
        errors.append(FieldError(f"{_T}.topologyConstraint", "cannot be added, removed or changed"))
    if "mnnvl" in old:  # shapes accepted before MNNVL was read hold none: nothing to compare with
        existed = {f"clique/{c['name']}" for c in old.get("cliques", [])}
        existed |= {f"group/{g['name']}" for g in old.get("groups", [])}
        errors += mnnvl_update_errors(old["mnnvl"], pcs, existed=existed)
    return errors
