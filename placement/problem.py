"""A request checked and resolved against a cluster view: what every policy, the model and the scorer share.

Resolving once means the CP-SAT model, the greedy policies and the scorer agree on the same facts: which nodes
may take a pod of each group (eligibility, free capacity, the labels a required pack needs), how many pods of a
group one node holds on its own, which domain a node is in at each level, and which nodes are wholly free.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from placement.arrays import HostArrays, Ints, NodeArrays, label_value
from placement.future_fit import FutureFit
from placement.request import ClusterView, GangRequest, SolveOptions
from topology.graph import GPU_RESOURCE, UNKNOWN
from topology.levels import NVLINK_LEVEL

__all__ = ["Group", "InvalidRequest", "Problem", "Scope", "check_options", "check_request", "label_value", "prepare"]


class InvalidRequest(ValueError):
    """A malformed request; the message names the field and the rule it breaks."""


@dataclass(frozen=True)
class Group:
    index: int
    name: str
    pods: tuple[str, ...]
    min: int
    demand: Mapping[str, int]  # positive demands only
    cap: Mapping[str, int]  # candidate node → how many pods of this group fit there alone (≥ 1)

    @property
    def extras(self) -> int:
        return len(self.pods) - self.min


@dataclass(frozen=True)
class Scope:
    """A resolved pack constraint: the groups (by index) it covers and the node-label key they pack on."""

    index: int
    groups: tuple[int, ...]
    key: str
    required: bool

    def describe(self, problem: Problem) -> str:
        names = [problem.groups[g].name for g in self.groups]
        if len(names) == len(problem.groups):
            return "the gang"
        return f"group{'s' if len(names) > 1 else ''} {', '.join(names)}"


class Problem:
    """The request resolved against the view. Immutable after construction; derived facts are cached."""

    def __init__(
        self,
        request: GangRequest,
        view: ClusterView,
        hosts: HostArrays | None = None,
        within: Collection[str] | None = None,
    ) -> None:
        """``hosts``: the view's host arrays when gangs on one view share them (they must cover the resources the
        request asks for). ``within``: only these nodes may be candidates (cheaper than resolving every node and
        then restricting, for a gang planned on a neighbourhood)."""
        self.request = request
        self.view = view
        self.topology = view.topology
        self.required, self.preferred = _scopes(request)
        self.primary = _primary_resource(request)
        demanded = sorted({r for g in request.groups for r, u in g.demand.items() if u > 0})
        self.hosts = hosts if hosts is not None else HostArrays(view, demanded)
        self.host_cap: list[Ints] = []
        groups = []
        for i in range(len(request.groups)):
            group, cap = _group(i, request, self.hosts, self.required, within)
            groups.append(group)
            self.host_cap.append(cap)
        self.groups = tuple(groups)
        names = self.hosts.names
        # Each candidate's position among the view's hosts, when known without a lookup per node.
        self.node_positions: Ints | None = None
        if self.hosts.names_sorted:  # the candidates in host order are in name order: no strings compared
            held = np.flatnonzero(np.any(np.stack(self.host_cap), axis=0)) if self.host_cap else np.arange(0)
            self.nodes: tuple[str, ...] = tuple([names[i] for i in held.tolist()])
            self.node_positions = held
        else:
            self.nodes = tuple(sorted({n for g in self.groups for n in g.cap}))
        self.node_set = frozenset(self.nodes)
        levels = [level.name for level in view.topology.levels]
        # Spans are counted narrow → broad below the host level: the host level is best fit's business.
        self.span_levels: tuple[str, ...] = tuple(reversed(levels[:-1]))
        self.fresh_level: str | None = (
            NVLINK_LEVEL if NVLINK_LEVEL in levels else (self.span_levels[0] if self.span_levels else None)
        )
        self.host_fresh = self.hosts.fresh(self.primary)
        self.fresh_nodes: frozenset[str] = frozenset(self.hosts.names[i] for i in np.flatnonzero(self.host_fresh))

    def restricted(self, keep: Mapping[int, Collection[str]] | Collection[str]) -> Problem:
        """The same problem with fewer candidate nodes: ``keep`` is a node set for every group, or a node set
        per group index (groups not named keep theirs). Cluster facts (freshness, domains) are unchanged."""
        twin = copy.copy(self)

        def allowed(index: int) -> Collection[str] | None:
            if isinstance(keep, Mapping):
                return keep.get(index)
            return keep

        groups = []
        for group in self.groups:
            nodes = allowed(group.index)
            cap = group.cap if nodes is None else {n: c for n, c in group.cap.items() if n in nodes}
            groups.append(replace(group, cap=cap))
        twin.groups = tuple(groups)
        kept = set().union(*(g.cap for g in twin.groups))
        twin.nodes = tuple(n for n in self.nodes if n in kept)
        twin.node_set = frozenset(twin.nodes)
        twin.node_positions = None
        # Sliced from the parent's arrays: ``host_cap`` still describes the parent's candidates, not the twin's.
        twin.__dict__["arrays"] = self.arrays.subset(twin, self.nodes)
        return twin

    def preferring_one(self) -> Scope | None:
        """The gang-wide ``preferred`` scope when it is the only one and every candidate carries its key: then a
        plan inside one domain of it, if any exists, beats every plan outside (the preferred tier comes first),
        so the search may treat the scope as required and fall back only when no domain holds the gang."""
        scopes = self.preferred
        if len(scopes) != 1 or len(scopes[0].groups) != len(self.groups) or self.required_whole() is not None:
            return None
        key = scopes[0].key
        return scopes[0] if all(self.key_value(n, key) is not None for n in self.nodes) else None

    def required_whole(self) -> Scope | None:
        """The gang-wide ``required`` scope, if any."""
        return next((s for s in self.required if len(s.groups) == len(self.groups)), None)

    def packing(self, scope: Scope) -> Problem:
        """The same problem with ``scope`` (a preferred scope every candidate carries the key of) also required."""
        twin = copy.copy(self)
        twin.required = (*self.required, replace(scope, index=len(self.required), required=True))
        return twin

    def domain(self, node: str, level: str) -> str:
        """The node's domain at ``level``; an unlabelled node is a domain of its own, so missing labels never
        make a spread placement look packed."""
        value = self.topology.domain_of(node, level)
        return f"{UNKNOWN}:{node}" if value == UNKNOWN else value

    def key_value(self, node: str, key: str) -> str | None:
        return label_value(self.topology.hosts[node].labels, key=key, node=node)

    def free(self, node: str, resource: str) -> int:
        return self.view.free.get(node, {}).get(resource, 0)

    @cached_property
    def fresh_domains(self) -> frozenset[str]:
        """Domains at ``fresh_level`` whose every node is wholly free: the NVLink domains best fit keeps whole."""
        if self.fresh_level is None:
            return frozenset()
        return frozenset(
            value
            for value, members in self.topology.domains(self.fresh_level).items()
            if value != UNKNOWN and all(n in self.fresh_nodes for n in members)
        )

    @cached_property
    def arrays(self) -> NodeArrays:
        return NodeArrays(self)

    @cached_property
    def future_fit(self) -> FutureFit | None:
        """The future-fit measure over the view's recent gang shapes; ``None`` when the view names none."""
        if not self.view.shapes:
            return None
        found = self.hosts.memo.get("future-fit")  # one per view, however many gangs share its arrays
        if not isinstance(found, FutureFit):
            found = self.hosts.memo["future-fit"] = FutureFit(self.hosts)
        return found

    @cached_property
    def resources(self) -> tuple[str, ...]:
        return tuple(sorted({r for g in self.groups for r in g.demand}))

    @property
    def total_pods(self) -> int:
        return sum(len(g.pods) for g in self.groups)

    def guaranteed(self) -> Problem:
        """The same problem with each group cut down to its ``minReplicas`` pods: what the gang guarantee is
        planned on, before best-effort extras are added where they fit."""
        return self._regrouped(tuple(replace(g, pods=g.pods[: g.min]) for g in self.groups))

    def requiring(self, placed: Sequence[int]) -> Problem:
        """The same problem asking for exactly ``placed[g]`` pods of each group: what a plan that placed that
        many is scored against (extras included, so a plan is not marked down for running more pods)."""
        return self._regrouped(
            tuple(replace(g, pods=g.pods[:n], min=n) for g, n in zip(self.groups, placed, strict=True))
        )

    def _regrouped(self, groups: tuple[Group, ...]) -> Problem:
        twin = copy.copy(self)
        twin.groups = groups
        twin.__dict__.pop("arrays", None)
        if "arrays" in self.__dict__:
            twin.__dict__["arrays"] = self.arrays.subset(twin, self.nodes)  # same nodes; fresh bound caches
        return twin

    @property
    def guaranteed_pods(self) -> int:
        return sum(g.min for g in self.groups)


def prepare(
    request: GangRequest, view: ClusterView, options: SolveOptions | None = None, *, hosts: HostArrays | None = None
) -> Problem:
    """Check the request (raising :class:`InvalidRequest` naming the field) and resolve it against the view
    (on ``hosts``, the view's shared host arrays, when given)."""
    check_request(request)
    if options is not None:
        check_options(options)
    return Problem(request, view, hosts)


def check_request(request: GangRequest) -> None:
    """Raise :class:`InvalidRequest`, naming the field and the rule, if ``request`` is malformed."""
    if not request.groups:
        raise InvalidRequest(f"gang {request.key}: groups must not be empty")
    names: set[str] = set()
    pods: set[str] = set()
    for i, group in enumerate(request.groups):
        where = f"gang {request.key}: groups[{i}] ({group.name})"
        if group.name in names:
            raise InvalidRequest(f"{where}: name must be unique within the gang")
        names.add(group.name)
        if not 0 <= group.min_replicas <= len(group.pods):
            raise InvalidRequest(
                f"{where}: minReplicas {group.min_replicas} must be between 0 and its {len(group.pods)} pods"
            )
        for pod in group.pods:
            if pod in pods:
                raise InvalidRequest(f"{where}: pod {pod} appears twice in the gang")
            pods.add(pod)
        for resource, units in group.demand.items():
            if not isinstance(units, int) or units < 0:
                raise InvalidRequest(f"{where}: demand[{resource}] must be a non-negative integer, got {units!r}")
    for i, pack in enumerate(request.packs):
        unknown = [g for g in pack.groups if g not in names]
        if unknown or not pack.groups:
            raise InvalidRequest(
                f"gang {request.key}: packs[{i}].groups must name groups of the gang, got {unknown or '[]'}"
            )
        for kind, key in (("required", pack.required), ("preferred", pack.preferred)):
            if key is not None and not key.strip():
                raise InvalidRequest(
                    f"gang {request.key}: packs[{i}].{kind} must be a node-label key, got an empty string"
                )


def check_options(options: SolveOptions) -> None:
    """Raise :class:`InvalidRequest`, naming the field, if ``options`` cannot be solved with."""
    if not options.time_limit_seconds > 0:
        raise InvalidRequest(f"options.time_limit_seconds must be positive, got {options.time_limit_seconds}")
    if options.workers < 1:
        raise InvalidRequest(f"options.workers must be at least 1, got {options.workers}")


def _scopes(request: GangRequest) -> tuple[tuple[Scope, ...], tuple[Scope, ...]]:
    index = {g.name: i for i, g in enumerate(request.groups)}
    required: list[Scope] = []
    preferred: list[Scope] = []
    for pack in request.packs:
        groups = tuple(sorted({index[name] for name in pack.groups}))
        if pack.required:
            required.append(Scope(len(required), groups, pack.required, required=True))
        if pack.preferred:
            preferred.append(Scope(len(preferred), groups, pack.preferred, required=False))
    return tuple(required), tuple(preferred)


def _group(
    index: int, request: GangRequest, hosts: HostArrays, required: tuple[Scope, ...], within: Collection[str] | None
) -> tuple[Group, Ints]:
    """Resolve one group: how many of its pods each host holds alone, zero where it may not run at all."""
    spec = request.groups[index]
    demand = {r: u for r, u in spec.demand.items() if u > 0}
    limit = len(spec.pods)
    fits = np.full(len(hosts.names), limit, np.int64)
    for resource, units in demand.items():
        fits = np.minimum(fits, hosts.free[resource] // units)
    if spec.eligible is not None:
        allowed = np.zeros(len(hosts.names), np.bool_)
        allowed[[hosts.position[n] for n in spec.eligible if n in hosts.position]] = True
        fits = np.where(allowed, fits, 0)
    for scope in required:
        if index in scope.groups:
            fits = np.where(hosts.labelled(scope.key), fits, 0)  # no label: in no domain of that key
    if within is not None:
        inside = np.zeros(len(hosts.names), np.bool_)
        inside[[hosts.position[n] for n in within]] = True
        fits = np.where(inside, fits, 0)
    held = np.flatnonzero(fits > 0)
    names = hosts.names
    cap = dict(zip([names[i] for i in held.tolist()], fits[held].tolist(), strict=True))
    return Group(index, spec.name, tuple(spec.pods), spec.min_replicas, demand, cap), np.maximum(fits, 0)


def _primary_resource(request: GangRequest) -> str:
    """The resource best fit keeps whole: GPUs when the gang asks for any, else CPU."""
    demanded = {r for g in request.groups for r, u in g.demand.items() if u > 0}
    if GPU_RESOURCE in demanded:
        return GPU_RESOURCE
    return "cpu" if "cpu" in demanded or not demanded else sorted(demanded)[0]
