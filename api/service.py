"""The interface the HTTP app routes to. ``scheduler.extender.coordinator`` implements it; ``api`` never imports it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from api.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
)

__all__ = ["Extender"]


class Extender(Protocol):
    """A kube-scheduler extender. Called on the HTTP server's event loop; every verb must return quickly or await
    (never block the loop: solve and write in threads). A verb never raises for a request it can parse: it answers
    with the wire format's own ``Error``/``FailedNodes`` so kube-scheduler shows the reason and retries.

    ``filter`` must answer in the request's mode: ``NodeNames`` (a subset of the given names) when names were sent,
    ``Nodes`` (a subset of the given list) when a NodeList was sent. ``bind`` may wait (a gang's bind barrier) but
    must answer before kube-scheduler's ``httpTimeout``.
    """

    async def filter(self, args: ExtenderArgs) -> ExtenderFilterResult: ...

    async def prioritize(self, args: ExtenderArgs) -> Sequence[HostPriority]: ...

    async def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult: ...

    async def preempt(self, args: ExtenderPreemptionArgs) -> ExtenderPreemptionResult: ...

    def healthy(self) -> bool:
        """The process can serve (liveness)."""
        ...

    def ready(self) -> bool:
        """State is synced and this replica leads: send it traffic."""
        ...

    def debug_gangs(self) -> Sequence[Mapping[str, Any]]:
        """One JSON-ready mapping per gang the extender tracks (state, plan, reservation age, last reason)."""
        ...
