"""Grove's validation rules for a PodCliqueSet (webhook ``validation/podcliqueset.go``, reference §4).

Each rule yields a ``FieldError`` naming the JSON path of the offending field and the rule it breaks (resource
sharing's are in ``sharing``). Rules Grove applies on create only (``creating=True``) are
checked the first time the reconciler acts on a PodCliqueSet, i.e. while nothing exists for it yet. The input must
already carry Grove's defaults (``defaults.with_defaults``), as the webhook sees it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping

from api.grove import ClusterTopologyBinding, PodCliqueSet, PodCliqueTemplate
from scheduler.reconcile.rules.defaults import UPDATE_STRATEGIES
from scheduler.reconcile.rules.fields import (
    FieldError,
    dns_subdomain_error,
    env_name_error,
    go_duration_seconds,
    label_value_error,
    qualified_name_error,
)
from scheduler.reconcile.rules.limits import Limits, limit_errors
from scheduler.reconcile.rules.mnnvl import mnnvl_errors
from scheduler.reconcile.rules.sharing import sharing_errors
from scheduler.reconcile.rules.topology import topology_errors

__all__ = ["DEFAULT_SCHEDULER", "STARTUP_TYPES", "FieldError", "validate"]

STARTUP_TYPES = ("CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit")
DEFAULT_SCHEDULER = "default-scheduler"  # Grove's default profile, always enabled
MAX_NAME_BUDGET = 45  # len(pcs) + len(pcsg) + len(clique): keeps generated pod names and hostnames ≤ 63
_ANNOTATIONS_MAX_BYTES = 256 * 1024
_TEMPLATE = "spec.template"


def validate(
    pcs: PodCliqueSet,
    *,
    binding: ClusterTopologyBinding | None,
    creating: bool,
    scheduler_names: frozenset[str],
    default_scheduler: str = DEFAULT_SCHEDULER,
    mnnvl: bool = False,
    limits: Limits | None = None,
) -> list[FieldError]:
    """Every rule ``pcs`` breaks, in field order; empty when it is valid. ``scheduler_names``: the enabled backends
    beside ``default-scheduler``; ``default_scheduler``: the one an empty ``schedulerName`` means (Grove's
    ``defaultProfileName``); ``mnnvl``: whether the MNNVL feature is on."""
    errors: list[FieldError] = limit_errors(pcs, limits or Limits())
    if problem := dns_subdomain_error(pcs.metadata.name):
        errors.append(FieldError("metadata.name", problem))
    if pcs.spec.replicas < 0:
        errors.append(FieldError("spec.replicas", f"must be ≥ 0 (got {pcs.spec.replicas})"))
    strategy = (pcs.spec.updateStrategy or {}).get("type")
    if strategy not in UPDATE_STRATEGIES:  # the CRD's enum, in the API server's words
        supported = ", ".join(f'"{name}"' for name in UPDATE_STRATEGIES)
        message = f"Unsupported value: {json.dumps(strategy)}: supported values: {supported}"
        errors.append(FieldError("spec.updateStrategy.type", message))
    template = pcs.spec.template
    if template.cliqueStartupType not in STARTUP_TYPES:
        errors.append(FieldError(f"{_TEMPLATE}.cliqueStartupType", f"must be one of {', '.join(STARTUP_TYPES)}"))
    delay = go_duration_seconds(template.terminationDelay or "")
    if delay is None or delay <= 0:
        errors.append(FieldError(f"{_TEMPLATE}.terminationDelay", "must be a positive duration such as 4h or 30s"))
    enabled = scheduler_names | {DEFAULT_SCHEDULER, default_scheduler}
    errors += _clique_errors(pcs, creating=creating, enabled=enabled, default_scheduler=default_scheduler)
    errors += _group_errors(pcs)
    errors += sharing_errors(pcs)
    if creating:
        errors += mnnvl_errors(pcs, enabled=mnnvl)
        errors += topology_errors(pcs, binding)
    return errors


def _metadata_errors(path: str, labels: Mapping[str, str], annotations: Mapping[str, str]) -> list[FieldError]:
    errors = []
    for key, value in labels.items():
        if problem := qualified_name_error(key) or label_value_error(value):
            errors.append(FieldError(f"{path}.labels", problem))
    for key in annotations:
        if problem := qualified_name_error(key):
            errors.append(FieldError(f"{path}.annotations", problem))
    if sum(len(k) + len(v) for k, v in annotations.items()) > _ANNOTATIONS_MAX_BYTES:
        errors.append(FieldError(f"{path}.annotations", "total size must be at most 256 KiB"))
    return errors


def _duplicates(values: Iterable[str]) -> set[str]:
    return {value for value, count in Counter(values).items() if count > 1}


def _clique_errors(
    pcs: PodCliqueSet, *, creating: bool, enabled: frozenset[str], default_scheduler: str
) -> list[FieldError]:
    cliques = pcs.spec.template.cliques
    if not cliques:
        return [FieldError(f"{_TEMPLATE}.cliques", "at least one clique is required")]
    errors: list[FieldError] = []
    duplicate_names = _duplicates(c.name for c in cliques)
    duplicate_roles = _duplicates(c.spec.roleName for c in cliques)
    for index, clique in enumerate(cliques):
        path = f"{_TEMPLATE}.cliques[{index}]"
        if problem := dns_subdomain_error(clique.name):
            errors.append(FieldError(f"{path}.name", problem))
        elif clique.name in duplicate_names:
            errors.append(FieldError(f"{path}.name", f"duplicate clique name {clique.name!r}"))
        if not clique.spec.roleName:
            errors.append(FieldError(f"{path}.spec.roleName", "is required"))
        elif clique.spec.roleName in duplicate_roles:
            errors.append(FieldError(f"{path}.spec.roleName", f"duplicate roleName {clique.spec.roleName!r}"))
        errors += _metadata_errors(path, clique.labels, clique.annotations)
        errors += _replica_errors(path, clique)
        errors += _pod_spec_errors(f"{path}.spec.podSpec", clique.spec.podSpec, creating=creating)
    errors += _startup_errors(pcs)
    errors += _scheduler_errors(cliques, enabled=enabled, default_scheduler=default_scheduler)
    return errors


def _replica_errors(path: str, clique: PodCliqueTemplate) -> list[FieldError]:
    spec = clique.spec
    errors = []
    if spec.replicas <= 0:
        errors.append(FieldError(f"{path}.spec.replicas", f"must be > 0 (got {spec.replicas})"))
    if spec.minAvailable is None or spec.minAvailable <= 0:
        errors.append(FieldError(f"{path}.spec.minAvailable", f"must be > 0 (got {spec.minAvailable})"))
    elif spec.minAvailable > spec.replicas:
        errors.append(
            FieldError(
                f"{path}.spec.minAvailable",
                f"must be ≤ replicas (got minAvailable {spec.minAvailable} > replicas {spec.replicas})",
            )
        )
    scaling = spec.autoScalingConfig
    if scaling is not None:
        low = scaling.minReplicas if scaling.minReplicas is not None else spec.replicas
        high = scaling.maxReplicas
        scaling_path = f"{path}.spec.autoScalingConfig"
        if spec.minAvailable is not None and low < spec.minAvailable:
            errors.append(FieldError(f"{scaling_path}.minReplicas", f"must be ≥ minAvailable {spec.minAvailable}"))
        if high < low:
            errors.append(FieldError(f"{scaling_path}.maxReplicas", f"must be ≥ minReplicas {low}"))
        elif high < spec.replicas:
            errors.append(FieldError(f"{scaling_path}.maxReplicas", f"must be ≥ replicas {spec.replicas}"))
    return errors


def _pod_spec_errors(path: str, pod_spec: Mapping[str, object], *, creating: bool) -> list[FieldError]:
    errors = []
    if creating:
        for forbidden in ("topologySpreadConstraints", "nodeName"):
            if pod_spec.get(forbidden):
                errors.append(FieldError(f"{path}.{forbidden}", "must not be set: placement is the gang scheduler's"))
    # Our CRD keeps podSpec opaque (Grove's embeds the whole PodSpec schema), so check the shape pods need here.
    if not isinstance(pod_spec.get("containers"), list) or not pod_spec.get("containers"):
        errors.append(FieldError(f"{path}.containers", "at least one container is required"))
    for kind in ("initContainers", "containers"):
        containers = pod_spec.get(kind) or []
        if not isinstance(containers, list):
            errors.append(FieldError(f"{path}.{kind}", "must be a list of containers"))
            continue
        for c_index, container in enumerate(containers):
            if not isinstance(container, dict) or not container.get("name"):
                errors.append(FieldError(f"{path}.{kind}[{c_index}].name", "every container needs a name"))
                continue
            env = container.get("env") or []
            if not isinstance(env, list) or not all(isinstance(item, dict) for item in env):
                errors.append(FieldError(f"{path}.{kind}[{c_index}].env", "must be a list of {name, value} objects"))
                continue
            names = [str(item.get("name", "")) for item in env]
            duplicate = _duplicates(names)
            for e_index, name in enumerate(names):
                env_path = f"{path}.{kind}[{c_index}].env[{e_index}].name"
                if problem := env_name_error(name):
                    errors.append(FieldError(env_path, problem))
                elif name in duplicate:
                    errors.append(FieldError(env_path, f"duplicate environment variable {name!r}"))
    return errors


def _startup_errors(pcs: PodCliqueSet) -> list[FieldError]:
    template = pcs.spec.template
    if template.cliqueStartupType != "CliqueStartupTypeExplicit":
        return []
    known = {clique.name for clique in template.cliques}
    errors: list[FieldError] = []
    for index, clique in enumerate(template.cliques):
        duplicate = _duplicates(clique.spec.startsAfter)
        for s_index, parent in enumerate(clique.spec.startsAfter):
            path = f"{_TEMPLATE}.cliques[{index}].spec.startsAfter[{s_index}]"
            if not parent:
                errors.append(FieldError(path, "must not be empty"))
            elif parent == clique.name:
                errors.append(FieldError(path, "a clique cannot start after itself"))
            elif parent not in known:
                errors.append(FieldError(path, f"unknown clique {parent!r}"))
            elif parent in duplicate:
                errors.append(FieldError(path, f"duplicate dependency {parent!r}"))
    if not errors and (cycle := _find_cycle({c.name: list(c.spec.startsAfter) for c in template.cliques})):
        errors.append(FieldError(f"{_TEMPLATE}.cliques", f"startsAfter forms a cycle: {' → '.join(cycle)}"))
    return errors


def _find_cycle(edges: Mapping[str, list[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for parent in edges.get(node, []):
            if state.get(parent) == 1:
                return [*path[path.index(parent) :], parent]
            if parent not in state and (found := visit(parent)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in edges:
        if node not in state and (found := visit(node)):
            return found
    return None


def _scheduler_errors(
    cliques: list[PodCliqueTemplate], *, enabled: frozenset[str], default_scheduler: str
) -> list[FieldError]:
    """Grove's ``validateSchedulerNames``: an empty ``schedulerName`` is the default profile's before cliques are
    compared (the reconciler's own scheduler unless ``reconcile --default-scheduler-profile`` says otherwise);
    every name must be enabled and all cliques must end up on one scheduler. ``default-scheduler`` is always
    enabled, and the reconciler routes its pods to itself."""
    errors = []
    resolved: list[str] = []
    for index, clique in enumerate(cliques):
        name = str(clique.spec.podSpec.get("schedulerName") or "") or default_scheduler
        path = f"{_TEMPLATE}.cliques[{index}].spec.podSpec.schedulerName"
        if name not in enabled:
            errors.append(FieldError(path, f"scheduler {name!r} is not enabled (enabled: {sorted(enabled)})"))
        resolved.append(name)
    if len(distinct := list(dict.fromkeys(resolved))) > 1:
        errors.append(
            FieldError(
                f"{_TEMPLATE}.cliques.spec.podSpec.schedulerName",
                f"the schedulerName for all pods have to be the same (got {', '.join(distinct)})",
            )
        )
    return errors


def _group_errors(pcs: PodCliqueSet) -> list[FieldError]:
    template = pcs.spec.template
    cliques = {clique.name: clique for clique in template.cliques}
    errors: list[FieldError] = []
    duplicate_names = _duplicates(group.name for group in template.podCliqueScalingGroups)
    owner: dict[str, str] = {}
    for index, group in enumerate(template.podCliqueScalingGroups):
        path = f"{_TEMPLATE}.podCliqueScalingGroups[{index}]"
        if problem := dns_subdomain_error(group.name):
            errors.append(FieldError(f"{path}.name", problem))
        elif group.name in duplicate_names:
            errors.append(FieldError(f"{path}.name", f"duplicate PodCliqueScalingGroup name {group.name!r}"))
        if not group.cliqueNames:
            errors.append(FieldError(f"{path}.cliqueNames", "at least one clique is required"))
        for c_index, name in enumerate(group.cliqueNames):
            c_path = f"{path}.cliqueNames[{c_index}]"
            if name not in cliques:
                errors.append(FieldError(c_path, f"unknown clique {name!r}"))
                continue
            if name in owner:
                errors.append(
                    FieldError(c_path, f"clique {name!r} is already in PodCliqueScalingGroup {owner[name]!r}")
                )
            owner.setdefault(name, group.name)
            if cliques[name].spec.autoScalingConfig is not None:
                errors.append(
                    FieldError(c_path, f"clique {name!r} has its own autoScalingConfig; scale the group instead")
                )
            budget = len(pcs.metadata.name) + len(group.name) + len(name)
            if budget > MAX_NAME_BUDGET:
                errors.append(
                    FieldError(c_path, f"len(pcs)+len(pcsg)+len(clique) must be ≤ {MAX_NAME_BUDGET} (got {budget})")
                )
        replicas, minimum = group.replicas or 0, group.minAvailable or 0
        if replicas <= 0:
            errors.append(FieldError(f"{path}.replicas", f"must be > 0 (got {group.replicas})"))
        if minimum <= 0:
            errors.append(FieldError(f"{path}.minAvailable", f"must be > 0 (got {group.minAvailable})"))
        elif minimum > replicas:
            errors.append(FieldError(f"{path}.minAvailable", f"must be ≤ replicas (got {minimum} > {replicas})"))
        low = group.scaleConfig.minReplicas if group.scaleConfig is not None else None
        if low is not None and low < minimum:
            errors.append(FieldError(f"{path}.scaleConfig.minReplicas", f"must be ≥ minAvailable {minimum}"))
    for index, clique in enumerate(template.cliques):
        budget = len(pcs.metadata.name) + len(clique.name)
        if clique.name not in owner and budget > MAX_NAME_BUDGET:
            errors.append(
                FieldError(
                    f"{_TEMPLATE}.cliques[{index}].name",
                    f"len(pcs)+len(clique) must be ≤ {MAX_NAME_BUDGET} (got {budget})",
                )
            )
    return errors
