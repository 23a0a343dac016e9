"""What every component is, and the pass the components of one PodCliqueSet share.

A component owns one kind of object a PodCliqueSet has (or one duty over them, such as lifting scheduling gates):
``sync`` makes that kind what the desired state says, ``delete`` removes what a deleted PodCliqueSet left of it —
Grove's component ``Operator`` (``Sync``, ``Delete``). Grove's components read each other's results from the
informer cache between reconciles; ours run one after another inside one pass, and hand them on in ``PassState``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from api.grove import PodCliqueSet
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.components.observed import Observed
from scheduler.reconcile.desired.state import Desired
from scheduler.reconcile.rules.fields import FieldError
from scheduler.reconcile.status.rollout import Rollout

__all__ = ["Component", "ComponentKind", "PassState", "Refused"]

# Grove's component kinds (component.Kind), with ours: PodSchedulingGate is the gate Grove's pod component lifts.
ComponentKind = Literal[
    "PodCliqueScalingGroup",
    "PodClique",
    "HeadlessService",
    "HorizontalPodAutoscaler",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ServiceAccountTokenSecret",
    "ResourceClaim",
    "ComputeDomain",
    "Pod",
    "PodGang",
    "PodSchedulingGate",
    "PodCliqueSetReplica",
]


class Refused(Exception):
    """What a component cannot build from the spec as it stands, found only when it tries (the API server refused
    a pod built from it, a template it names is nowhere): the PodCliqueSet is refused, naming the field."""

    def __init__(self, error: FieldError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class PassState:
    """One pass over one valid PodCliqueSet: what every component reads, and the live objects each component
    leaves, after its writes, for the components after it (scaling groups before their PodCliques, PodCliques
    before their pods, pods before the PodGangs that list them)."""

    pcs: PodCliqueSet  # defaulted and valid
    desired: Desired
    observed: Observed  # what existed when the pass began
    rollout: Rollout  # the update record: which template each PCS replica carries; ``pcs_replica`` moves it on
    groups: dict[str, KubeObject] = field(default_factory=dict)  # PodCliqueScalingGroups by name
    podcliques: dict[str, KubeObject] = field(default_factory=dict)
    pods_by_clique: dict[str, list[KubeObject]] = field(default_factory=dict)  # kept pods by PodClique, by index
    gangs: dict[str, KubeObject] = field(default_factory=dict)  # PodGangs by name
    gated: int = 0  # pods still waiting for their scheduling gate
    requeue_after: float | None = None  # seconds until a breached gang's terminationDelay runs out (None: none)


class Component(Protocol):
    """One kind of object a PodCliqueSet owns, kept as Grove's operator keeps it."""

    def sync(self, state: PassState) -> int:
        """Make this kind's objects what ``state.desired`` says: create what is missing, update what differs,
        delete what is no longer wanted; record the live result in ``state`` when later components read it.
        Called once per pass, in the registry's order, after the PodCliqueSet passed every rule. Level-triggered:
        it decides from what it lists now, never from an earlier pass. Returns the writes issued."""
        ...

    def delete(self, *, namespace: str, pcs: str) -> int:
        """Remove this kind's objects that the PodCliqueSet ``pcs``, now gone, controlled directly (what they
        own goes with them). Returns the writes issued."""
        ...
