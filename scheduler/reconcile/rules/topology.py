"""Topology constraints of a PodCliqueSet: Grove's create-time checks and the domain → node-label-key translation.

A PodCliqueSet packs by *domain name* (``rack``, ``block``), a PodGang by *node-label key*; the
ClusterTopologyBinding named by ``topologyName`` maps one to the other (reference §4–§5).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from api.grove import (
    ClusterTopologyBinding,
    PackConstraint,
    PodCliqueSet,
    PodGangTopologyConstraint,
    TopologyConstraint,
)
from scheduler.reconcile.rules.fields import FieldError

__all__ = [
    "ConstraintSite",
    "binding_errors",
    "constraint_sites",
    "domains",
    "levels_condition",
    "topology_errors",
    "topology_name",
    "translate",
]

_TEMPLATE = "spec.template"


@dataclass(frozen=True)
class ConstraintSite:
    """Where a constraint sits: its JSON path, its parent site (for the hierarchy rule) and its effective name."""

    path: str
    constraint: TopologyConstraint
    parents: tuple[str, ...]  # paths of enclosing sites that carry a constraint


def constraint_sites(pcs: PodCliqueSet) -> Iterator[ConstraintSite]:
    template = pcs.spec.template
    pcs_path = f"{_TEMPLATE}.topologyConstraint"
    pcs_parent = (pcs_path,) if template.topologyConstraint else ()
    if template.topologyConstraint:
        yield ConstraintSite(pcs_path, template.topologyConstraint, ())
    group_of: dict[str, str] = {}
    for index, group in enumerate(template.podCliqueScalingGroups):
        path = f"{_TEMPLATE}.podCliqueScalingGroups[{index}].topologyConstraint"
        for name in group.cliqueNames:
            group_of.setdefault(name, path if group.topologyConstraint else "")
        if group.topologyConstraint:
            yield ConstraintSite(path, group.topologyConstraint, pcs_parent)
    for index, clique in enumerate(template.cliques):
        if clique.topologyConstraint:
            group_path = group_of.get(clique.name, "")
            parents = (*pcs_parent, group_path) if group_path else pcs_parent
            yield ConstraintSite(f"{_TEMPLATE}.cliques[{index}].topologyConstraint", clique.topologyConstraint, parents)


def topology_name(pcs: PodCliqueSet) -> str | None:
    """The ClusterTopologyBinding a PodCliqueSet uses: the first ``topologyName`` at any level (validation keeps
    them equal; a child-only constraint names it on the child)."""
    for site in constraint_sites(pcs):
        if site.constraint.topologyName:
            return site.constraint.topologyName
    return None


def _required(constraint: TopologyConstraint) -> str | None:
    return (constraint.pack.required if constraint.pack else None) or constraint.packDomain


def _preferred(constraint: TopologyConstraint) -> str | None:
    return constraint.pack.preferred if constraint.pack else None


def domains(constraint: TopologyConstraint) -> list[str]:
    return [d for d in (_required(constraint), _preferred(constraint)) if d]


def levels_condition(pcs: PodCliqueSet, binding: ClusterTopologyBinding | None) -> tuple[str, str, str] | None:
    """Grove's PCS condition ``TopologyLevelsUnavailable`` as (status, reason, message); None when nothing packs."""
    sites = list(constraint_sites(pcs))
    if not sites:
        return None
    name = topology_name(pcs)
    if not name:
        return "Unknown", "TopologyNameMissing", "no topologyName is set"
    if binding is None:
        return "Unknown", "ClusterTopologyNotFound", f"ClusterTopologyBinding {name!r} not found"
    levels = {level.domain for level in binding.spec.levels}
    missing = sorted({d for site in sites for d in domains(site.constraint)} - levels)
    if missing:
        return "True", "ClusterTopologyLevelsUnavailable", f"levels missing from {name!r}: {missing}"
    return "False", "AllClusterTopologyLevelsAvailable", ""


def translate(
    constraint: TopologyConstraint | None, binding: ClusterTopologyBinding | None
) -> PodGangTopologyConstraint | None:
    """Domain names → node-label keys; a domain the binding lacks is skipped silently, as Grove does at reconcile."""
    if constraint is None or binding is None:
        return None
    keys = {level.domain: level.key for level in binding.spec.levels}
    required, preferred = _required(constraint), _preferred(constraint)
    pack = PackConstraint(
        required=keys.get(required) if required else None,
        preferred=keys.get(preferred) if preferred else None,
    )
    if pack.required is None and pack.preferred is None:
        return None
    return PodGangTopologyConstraint(packConstraint=pack)


def _shape_errors(site: ConstraintSite) -> Iterator[tuple[str, str]]:
    constraint = site.constraint
    pack = constraint.pack
    if pack is None and not constraint.packDomain:
        yield site.path, "one of pack or packDomain must be set"
    if pack is not None and not pack.required and not pack.preferred:
        yield f"{site.path}.pack", "must set required or preferred"
    if constraint.packDomain and pack is not None and pack.required:
        yield site.path, "packDomain and pack.required cannot both be set"
    if constraint.packDomain:
        yield f"{site.path}.packDomain", "is deprecated and forbidden on create; use pack.required"


def binding_errors(binding: ClusterTopologyBinding) -> list[str]:
    """Grove's ClusterTopologyBinding webhook: levels must not repeat a domain or a node-label key."""
    problems = []
    for field, values in (
        ("domain", [lvl.domain for lvl in binding.spec.levels]),
        ("key", [lvl.key for lvl in binding.spec.levels]),
    ):
        seen: set[str] = set()
        for index, value in enumerate(values):
            if value in seen:
                problems.append(f"spec.levels[{index}].{field}: duplicate {field} {value!r}")
            seen.add(value)
    return problems


_NAME_REQUIRED = "is required when topologyConstraint is set and cannot be inherited"
_NAME_MISMATCH = "all topologyConstraint.topologyName values within a PodCliqueSet must match"


def _effective_names(pcs: PodCliqueSet) -> tuple[str | None, list[FieldError]]:
    """Grove's ``resolveEffectiveTopologyNameFieldErrors``: a PCS constraint needs its own ``topologyName``; a
    scaling group's may inherit the PCS's; a clique's its group's, else the PCS's. All must be one name."""
    template = pcs.spec.template
    found: list[tuple[str, str]] = []  # (path of topologyName, effective name)
    errors: list[FieldError] = []

    def resolve(path: str, constraint: TopologyConstraint, inherited: str | None) -> str | None:
        name = constraint.topologyName or inherited
        if not name:
            errors.append(FieldError(f"{path}.topologyName", _NAME_REQUIRED))
            return None
        found.append((f"{path}.topologyName", name))
        return name

    root = template.topologyConstraint
    pcs_name = resolve(f"{_TEMPLATE}.topologyConstraint", root, None) if root else None
    group_name: dict[str, str] = {}
    for index, group in enumerate(template.podCliqueScalingGroups):
        if group.topologyConstraint is not None:
            path = f"{_TEMPLATE}.podCliqueScalingGroups[{index}].topologyConstraint"
            if name := resolve(path, group.topologyConstraint, pcs_name):
                for clique in group.cliqueNames:
                    group_name.setdefault(clique, name)
    for index, member in enumerate(template.cliques):
        if member.topologyConstraint is not None:
            inherited = group_name.get(member.name) or pcs_name
            resolve(f"{_TEMPLATE}.cliques[{index}].topologyConstraint", member.topologyConstraint, inherited)
    reference = found[0][1] if found else None
    errors += [
        FieldError(path, f"{_NAME_MISMATCH} ({name!r} ≠ {reference!r})") for path, name in found if name != reference
    ]
    return reference, errors


def topology_errors(pcs: PodCliqueSet, binding: ClusterTopologyBinding | None) -> list[FieldError]:
    """Grove's create-time topology checks; ``binding`` is the one named by the constraints' ``topologyName``."""
    sites = list(constraint_sites(pcs))
    if not sites:
        return []
    errors = [FieldError(path, rule) for site in sites for path, rule in _shape_errors(site)]
    name, name_errors = _effective_names(pcs)
    if name_errors or name is None:
        return errors + name_errors
    if binding is None or binding.metadata.name != name:
        errors.append(
            FieldError(f"{_TEMPLATE}.topologyConstraint.topologyName", f"ClusterTopologyBinding {name!r} not found")
        )
        return errors
    if problems := binding_errors(binding):
        errors.append(
            FieldError(
                f"{_TEMPLATE}.topologyConstraint.topologyName",
                f"ClusterTopologyBinding {name!r} is invalid: {'; '.join(problems)}",
            )
        )
        return errors
    by_path = {site.path: site for site in sites}
    order = {level.domain: index for index, level in enumerate(binding.spec.levels)}
    for site in sites:
        for field, domain in (
            ("pack.required", _required(site.constraint)),
            ("pack.preferred", _preferred(site.constraint)),
        ):
            if domain and domain not in order:
                errors.append(
                    FieldError(f"{site.path}.{field}", f"domain {domain!r} is not a level of {name!r}: {list(order)}")
                )
    if errors:
        return errors
    for site in sites:
        for parent_path in site.parents:
            parent = by_path[parent_path].constraint
            for field, pick in (("pack.required", _required), ("pack.preferred", _preferred)):
                mine, theirs = pick(site.constraint), pick(parent)
                if mine and theirs and order[theirs] > order[mine]:
                    errors.append(
                        FieldError(
                            f"{parent_path}.{field}",
                            f"{theirs!r} is narrower than {mine!r} at {site.path}; a parent must not be narrower",
                        )
                    )
    return errors
