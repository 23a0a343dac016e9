"""Which replica acts. Several extender replicas may run; only the leader plans, reserves and binds, and the others
answer ``/readyz`` not ready so the Service sends them no traffic. ``scheduler.kube.lease`` implements it with a
``coordination.k8s.io`` Lease; ``AlwaysLeader`` serves the embedded mode and the tests."""

from __future__ import annotations

from typing import Protocol

__all__ = ["AlwaysLeader", "Leadership"]


class Leadership(Protocol):
    """``is_leader`` is called on every request and readiness probe: it must be cheap and never block (read a flag
    the elector's own thread maintains). It may turn false at any time; the caller then stops acting."""

    def is_leader(self) -> bool: ...


class AlwaysLeader:
    """A single replica: always the leader."""

    def is_leader(self) -> bool:
        return True
