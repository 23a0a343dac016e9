"""One fake Kubernetes API, two faces over the one in-memory store (``scheduler.kube.memory``).

``FakeApiServer`` (``server``, ``http``) is real HTTP on 127.0.0.1 that the official client talks to unchanged, for
every test and benchmark that talks to Kubernetes over HTTP (the extender's watches, writer, lease and recorder;
the reconciler's client; the e2e bench's API server process): kube-apiserver's shapes — paths, ``<Kind>List``
pages, a global resourceVersion, chunked watches with bookmarks and 410 Gone, ``v1.Status`` errors, optimistic
concurrency, status and scale subresources, ``pods/binding``, scheduling-gate rules and owner cascades — and test
steering. ``FakeApi`` (``inprocess``) is the same store in process, for the simulator on its clock.
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
