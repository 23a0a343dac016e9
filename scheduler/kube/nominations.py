"""What a nomination is: the extender's plan for one pod, written to its ``status.nominatedNodeName``.

kube-scheduler tries a pod's nominated node alone before it runs its filters over every node
(``evaluateNominatedNode``); on a large cluster that is most of its CPU per pod. Defined down here because both the
writer (``scheduler.kube.writer``) and the coordinator that decides them use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from api.core import Pod
from scheduler.kube.errors import WriteError

__all__ = ["FIELD_MANAGER", "Nominated", "Nomination", "NotSent", "Wanted", "nominated_by_us"]

FIELD_MANAGER = "grove-extender"
"""The field manager our nominations are written as: the API server then records, in the pod's ``managedFields``,
that the ``status`` field it set is ours, which is how a new leader (or this process after a restart) tells the
nominations it must answer for from those kube-scheduler wrote."""


def nominated_by_us(pod: Pod) -> bool:
    """Whether ``pod``'s ``status.nominatedNodeName`` is set and was written by us (any replica, any time). The only
    status field we write is that one, so an entry of ours for the ``status`` subresource owns exactly it; another
    component that writes the field since takes it over, and our entry, owning nothing more, is dropped."""
    return bool(pod.status.nominatedNodeName) and FIELD_MANAGER in pod.metadata.status_managers


@dataclass(frozen=True)
class Nomination:
    """Set the pod's ``status.nominatedNodeName`` to ``node`` ("" clears it), if the pod still has ``uid`` and the
    field still reads ``previous`` ("": unset). The second condition is what keeps a nomination another component
    wrote meanwhile (kube-scheduler's, after a preemption of its own) from being overwritten: whoever sets a pod's
    nominatedNodeName owns it (KEP-5278)."""

    namespace: str
    name: str
    uid: str
    node: str
    previous: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class NotSent(WriteError):
    """A nomination the writer did not send: when its turn came, it was no longer wanted."""

    def __init__(self, nomination: Nomination) -> None:
        super().__init__(f"nomination of pod {nomination.key} not sent: no longer wanted")


Nominated = Callable[[Nomination, WriteError | None], None]
"""Told how a nomination ended (None: written; ``NotSent``: dropped unsent), on whichever thread the writer answers
it."""
Wanted = Callable[[Nomination], bool]
"""Asked as a nomination's turn to be sent comes: whether it is still worth a write."""
