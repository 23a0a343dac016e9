"""What a nomination is: the extender's plan for one pod, written to its ``status.nominatedNodeName``.

kube-scheduler tries a pod's nominated node alone before it runs its filters over every node
(``evaluateNominatedNode``); on a large cluster that is most of its CPU per pod. Defined down here because both the
writer (``scheduler.kube.writer``) and the coordinator that decides them use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scheduler.kube.errors import WriteError

__all__ = ["Nominated", "Nomination"]


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


Nominated = Callable[[Nomination, WriteError | None], None]
"""Told how a nomination ended (None: written), on whichever thread the writer answers it."""
