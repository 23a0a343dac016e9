"""The problem's per-node facts as numpy arrays, so bounds over 10,000 nodes cost a few bincounts, not loops.

Index ``i`` is ``problem.nodes[i]`` (the candidate nodes). Domains at each level and values of each pack key
are numbered per array; a node lacking a pack key's label gets a number of its own.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from placement.request import ClusterView
from topology.graph import UNKNOWN
from topology.levels import HOSTNAME_KEY

__all__ = ["Candidates", "HostArrays", "Ints", "NodeArrays", "label_value"]


def label_value(labels: Mapping[str, str], *, key: str, node: str) -> str | None:
    """The value of pack key ``key`` on a node; the hostname key falls back to the node's name, as it is always
    set by the kubelet. ``None``: the node lacks the label and so cannot host a pod that must pack on it."""
    value = labels.get(key)
    if value:
        return value
    return node if key == HOSTNAME_KEY else None


Ints = npt.NDArray[np.int64]


def _number(values: list[str]) -> tuple[Ints, list[str]]:
    ids: dict[str, int] = {}
    numbered = np.fromiter((ids.setdefault(v, len(ids)) for v in values), dtype=np.int64, count=len(values))
    return numbered, list(ids)


@dataclass
class _Tables:
    """What the host arrays derive from the topology alone (names, positions, labels, levels, allocatable): one
    set per ``Topology`` object, shared by every view on it. The extender keeps one topology while its Nodes do
    not change, and rebuilding these for every plan cost more than the rest of a small gang's bounds. Arrays are
    stored read-only, as they are shared."""

    names: list[str]
    position: dict[str, int]
    names_sorted: bool  # host order is name order: a candidate list in host order needs no sort
    labelled: dict[str, npt.NDArray[np.bool_]] = field(default_factory=dict)
    levels: dict[str, tuple[Ints, list[str]]] = field(default_factory=dict)
    keys: dict[str, tuple[Ints, list[str]]] = field(default_factory=dict)
    allocatable: dict[str, Ints] = field(default_factory=dict)
    # The last view's free vectors (of a view whose vectors are replaced, never changed), in host order, and the
    # arrays built from them: the next such view rebuilds only the hosts whose vector is another object (the
    # extender's plans follow one another, each changing a few nodes).
    last_free: tuple[list[Mapping[str, int]], dict[str, Ints]] | None = None


_TABLES: weakref.WeakKeyDictionary[object, _Tables] = weakref.WeakKeyDictionary()


def _tables(view: ClusterView) -> _Tables:
    found = _TABLES.get(view.topology)
    if found is None:
        names = list(view.topology.hosts)
        found = _Tables(names, {n: i for i, n in enumerate(names)}, names == sorted(names))
        _TABLES[view.topology] = found
    return found


_Array = TypeVar("_Array", bound=npt.NDArray[Any])
_EMPTY: Mapping[str, int] = {}  # one object, so a node missing from two views reads as unchanged


def _frozen(array: _Array) -> _Array:
    array.flags.writeable = False
    return array


def _free_arrays(
    tables: _Tables, free: list[Mapping[str, int]], resources: Sequence[str], *, carry: bool
) -> dict[str, Ints]:
    """Free units per host for each resource, as fresh arrays the caller owns. With ``carry`` (the view's vectors
    are replaced, never changed: ``ClusterView.replaced``), from the last such view's arrays where most vectors are
    the same objects (only the other hosts read); else from scratch. The same either way."""
    if not carry:
        return {r: np.fromiter((f.get(r, 0) for f in free), np.int64, len(free)) for r in resources}
    last = tables.last_free
    changed: list[int] | None = None
    if last is not None and len(last[0]) == len(free):
        changed = [i for i, (now, then) in enumerate(zip(free, last[0], strict=True)) if now is not then]
        if 4 * len(changed) > len(free):
            changed = None
    # Every resource the memo held is carried over to these vectors, so none of its arrays is left stale.
    wanted = list(dict.fromkeys([*resources, *(last[1] if last is not None and changed is not None else ())]))
    kept: dict[str, Ints] = {}
    for resource in wanted:
        known = last[1].get(resource) if last is not None and changed is not None else None
        if known is None:
            array = np.fromiter((f.get(resource, 0) for f in free), np.int64, len(free))
        else:
            array = known.copy()
            for i in changed or ():
                array[i] = free[i].get(resource, 0)
        kept[resource] = _frozen(array)
    tables.last_free = (free, kept)
    return {r: kept[r].copy() for r in resources}


class HostArrays:
    """Every host of the view, in topology order, as arrays: built once per solve (or once per batch of gangs on
    one view), before candidates are known, so resolving each group is a few vector operations instead of a
    Python loop over 10,000 nodes. ``resources`` must cover every resource the gangs sharing it ask for."""

    def __init__(self, view: ClusterView, resources: Sequence[str]) -> None:
        self.view = view
        tables = _tables(view)
        self.names: list[str] = tables.names
        self.position = tables.position
        self.names_sorted = tables.names_sorted
        free = [view.free.get(n, _EMPTY) for n in self.names]
        self.free = _free_arrays(tables, free, resources, carry=view.replaced)
        self._labelled = tables.labelled
        self._levels = tables.levels
        self._keys = tables.keys
        self._allocatable = tables.allocatable
        self.memo: dict[str, object] = {}  # what callers derive from this view's arrays alone (future fit)

    def debited(self, view: ClusterView, usage: Mapping[str, Mapping[str, int]]) -> HostArrays:
        """The arrays of ``view``, which is this one's view less ``usage`` (units per node): the free arrays are
        debited, the label, key and level tables (which capacity does not change) are shared."""
        twin = copy.copy(self)
        twin.view = view
        twin.memo = {}
        twin.free = {r: a.copy() for r, a in self.free.items()}
        for node, units in usage.items():
            for resource, amount in units.items():
                if resource in twin.free:
                    twin.free[resource][self.position[node]] -= amount
        return twin

    def allocatable(self, resource: str) -> Ints:
        """Allocatable units per host (kept: capacity does not change it, so debited twins share it)."""
        if resource not in self._allocatable:
            hosts = self.view.topology.hosts
            self._allocatable[resource] = _frozen(
                np.fromiter((hosts[n].allocatable.get(resource, 0) for n in self.names), np.int64, len(self.names))
            )
        return self._allocatable[resource]

    def free_of(self, resource: str) -> Ints:
        """Free units of ``resource`` per host (from the arrays when the gangs ask for it, else from the view)."""
        free = self.free.get(resource)
        if free is None:
            empty: dict[str, int] = {}
            free = np.fromiter((self.view.free.get(n, empty).get(resource, 0) for n in self.names), np.int64)
        return free

    def fresh(self, resource: str) -> npt.NDArray[np.bool_]:
        """Hosts with all of ``resource`` free (and some to begin with)."""
        allocatable = self.allocatable(resource)
        return (allocatable > 0) & (self.free_of(resource) >= allocatable)

    def labelled(self, key: str) -> npt.NDArray[np.bool_]:
        """Hosts that carry pack key ``key`` (the hostname key always counts as carried)."""
        if key not in self._labelled:
            hosts = self.view.topology.hosts
            self._labelled[key] = _frozen(
                np.fromiter((label_value(hosts[n].labels, key=key, node=n) is not None for n in self.names), np.bool_)
            )
        return self._labelled[key]

    def key(self, key: str) -> tuple[Ints, list[str]]:
        """Each host's value number for pack key ``key`` and the numbered values (unlabelled hosts each get a
        number of their own, named ``<none>:<node>``)."""
        if key not in self._keys:
            hosts = self.view.topology.hosts
            values = [label_value(hosts[n].labels, key=key, node=n) or f"<none>:{n}" for n in self.names]
            numbered, names = _number(values)
            self._keys[key] = (_frozen(numbered), names)
        return self._keys[key]

    def level(self, level: str) -> tuple[Ints, list[str]]:
        """Each host's domain number at ``level`` and the numbered domain names (an unlabelled host is a domain
        of its own, as :meth:`Problem.domain` has it)."""
        if level not in self._levels:
            ids = np.zeros(len(self.names), np.int64)
            names: list[str] = []
            for value, members in self.view.topology.domains(level).items():
                if value == UNKNOWN:
                    for node in members:
                        ids[self.position[node]] = len(names)
                        names.append(f"{UNKNOWN}:{node}")
                else:
                    ids[[self.position[n] for n in members]] = len(names)
                    names.append(value)
            self._levels[level] = (_frozen(ids), names)
        return self._levels[level]


class _CandidateGroup(Protocol):
    @property
    def index(self) -> int: ...

    @property
    def cap(self) -> Mapping[str, int]: ...


class Candidates(Protocol):
    """What ``NodeArrays`` reads of the problem whose candidate nodes it indexes. ``placement.problem.Problem``
    provides it; naming it here keeps the arrays below the problem that builds them."""

    @property
    def hosts(self) -> HostArrays: ...

    @property
    def nodes(self) -> tuple[str, ...]: ...

    @property
    def groups(self) -> Sequence[_CandidateGroup]: ...

    @property
    def host_cap(self) -> Sequence[Ints]: ...

    @property
    def node_positions(self) -> Ints | None: ...

    @property
    def host_fresh(self) -> npt.NDArray[np.bool_]: ...

    @property
    def resources(self) -> tuple[str, ...]: ...

    @property
    def span_levels(self) -> tuple[str, ...]: ...

    @property
    def fresh_level(self) -> str | None: ...

    @property
    def fresh_domains(self) -> frozenset[str]: ...


@dataclass
class NodeArrays:
    problem: Candidates
    host_index: Ints = field(init=False)  # per candidate: its position among every host of the view
    cap: list[Ints] = field(init=False)  # per group: pods of it a node holds alone (0 if not a candidate)
    free: dict[str, Ints] = field(init=False)  # per resource: free units
    fresh: npt.NDArray[np.bool_] = field(init=False)
    level_ids: dict[str, Ints] = field(init=False)
    level_names: dict[str, list[str]] = field(init=False)
    _key_ids: dict[str, Ints] = field(init=False, default_factory=dict)
    _fresh_mask: npt.NDArray[np.bool_] | None = field(init=False, default=None)
    needs: dict[tuple[int, ...], list[tuple[Ints, int]]] = field(init=False, default_factory=dict)  # bounds' cache

    def __post_init__(self) -> None:
        problem = self.problem
        hosts = problem.hosts
        idx = problem.node_positions
        if idx is None:
            idx = np.fromiter((hosts.position[n] for n in problem.nodes), np.int64, len(problem.nodes))
        self.host_index = idx
        self.cap = [problem.host_cap[g.index][idx] for g in problem.groups]
        self.free = {r: hosts.free[r][idx] for r in problem.resources}
        self.fresh = problem.host_fresh[idx]
        self.level_ids, self.level_names = {}, {}
        for level in problem.span_levels:
            ids, names = hosts.level(level)
            self.level_ids[level], self.level_names[level] = ids[idx], names

    def subset(self, problem: Candidates, parent_nodes: Sequence[str]) -> NodeArrays:
        """The arrays of ``problem`` (a restriction of this one's) by slicing, not rebuilding: domain numbers
        stay the parent's, so names still resolve through ``level_names``."""
        position = {n: i for i, n in enumerate(parent_nodes)}
        idx = np.fromiter((position[n] for n in problem.nodes), np.int64, len(problem.nodes))
        twin = object.__new__(NodeArrays)
        twin.problem = problem
        twin.host_index = self.host_index[idx]
        twin.cap = [
            np.where(np.fromiter((n in g.cap for n in problem.nodes), np.bool_, len(idx)), cap[idx], 0)
            for g, cap in zip(problem.groups, self.cap, strict=True)
        ]
        twin.free = {r: a[idx] for r, a in self.free.items()}
        twin.fresh = self.fresh[idx]
        twin.level_ids = {lv: a[idx] for lv, a in self.level_ids.items()}
        twin.level_names = self.level_names
        twin._key_ids = {k: a[idx] for k, a in self._key_ids.items()}
        twin._fresh_mask = self._fresh_mask
        twin.needs = {}
        return twin

    def key_ids(self, key: str) -> Ints:
        """Numbered values of a pack key; unlabelled nodes each get their own number."""
        if key not in self._key_ids:
            hosts = self.problem.hosts
            ids, _ = hosts.key(key)
            idx = np.fromiter((hosts.position[n] for n in self.problem.nodes), np.int64, len(self.problem.nodes))
            self._key_ids[key] = ids[idx]
        return self._key_ids[key]

    def key_names(self, key: str) -> list[str]:
        return self.problem.hosts.key(key)[1]

    def fresh_domain_mask(self) -> npt.NDArray[np.bool_]:
        """Per domain id at the fresh level: is that domain wholly free."""
        if self._fresh_mask is None:
            level = self.problem.fresh_level
            assert level is not None
            fresh, names = self.problem.fresh_domains, self.level_names[level]
            self._fresh_mask = np.fromiter((d in fresh for d in names), np.bool_, len(names))
        return self._fresh_mask
