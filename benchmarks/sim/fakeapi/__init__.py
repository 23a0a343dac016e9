"""One fake Kubernetes API server for every test that talks to Kubernetes over HTTP (the extender's watches,
writer, lease and recorder; the reconciler's ``KubeApi``).

It is real HTTP on 127.0.0.1 that the official client talks to unchanged, with kube-apiserver's shapes: paths,
``<Kind>List`` pages, a global resourceVersion, chunked watches with bookmarks and 410 Gone, ``v1.Status`` errors,
optimistic concurrency, status and scale subresources, ``pods/binding``, scheduling-gate rules and owner cascades.
Modules: ``resources`` (what is served, paths, Status), ``selectors``, ``store`` (state and semantics), ``http``
(wire format), ``server`` (lifecycle and test steering).
"""

from benchmarks.sim.fakeapi.http import Request
from benchmarks.sim.fakeapi.server import FakeApiServer, connected, running
from scheduler.kube.memory.resources import (
    CORE,
    CORE_EVENTS,
    EVENTS,
    HPAS,
    LEASES,
    NODES,
    PODCLIQUES,
    PODCLIQUESCALINGGROUPS,
    PODCLIQUESETS,
    PODGANGS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    SERVICES,
    TOPOLOGY_BINDINGS,
    resource_for,
)

__all__ = [
    "CORE",
    "CORE_EVENTS",
    "EVENTS",
    "HPAS",
    "LEASES",
    "NODES",
    "PODCLIQUES",
    "PODCLIQUESCALINGGROUPS",
    "PODCLIQUESETS",
    "PODGANGS",
    "PODS",
    "ROLEBINDINGS",
    "ROLES",
    "SERVICEACCOUNTS",
    "SERVICES",
    "TOPOLOGY_BINDINGS",
    "FakeApiServer",
    "Request",
    "connected",
    "resource_for",
    "running",
]
