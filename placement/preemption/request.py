"""What a preemption plan is asked and what it answers. Plain frozen data, no solver imports.

A gang that does not fit on what is free may fit once lower-priority work makes way. Two kinds of work can: a
running pod, which is *evicted* (it loses its progress), and a reservation of a gang that has not started binding,
which *yields* (its gang goes back to the queue; nothing running is touched). Both are ``Victim`` entries; their
gang (``VictimGang``) says which kind they are and what of the gang must survive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import total_ordering

from placement.request import Status

__all__ = ["Budget", "Preemption", "PreemptionCost", "Victim", "VictimGang"]


@dataclass(frozen=True)
class Victim:
    """One pod holding ``demand`` on ``node`` that could make way: a running pod, or a reserved one.

    ``gang`` is the key of its ``VictimGang``; a pod of no gang is a gang of its own (one victim). ``group`` is
    its group in that gang ("" for a pod of no gang)."""

    key: str
    node: str
    demand: Mapping[str, int]
    gang: str
    group: str = ""


@dataclass(frozen=True)
class VictimGang:
    """A gang some of whose pods are victims. Every running (or, when ``reserved``, every reserved) member of the
    gang must be listed as a ``Victim``: the gang is evicted whole, or only so far that each group keeps
    ``min_replicas[group]`` members (groups not named keep none). A gang with no ``min_replicas`` (a pod of no
    gang, another scheduler's pod) and a ``reserved`` gang go whole or not at all.

    ``reserved``: the members are reservations of a gang that has not started binding; it yields them all (it is
    planned again later) and no pod is evicted."""

    key: str
    priority: int
    min_replicas: Mapping[str, int] = field(default_factory=dict)
    reserved: bool = False


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget as preemption must respect it: of the ``victims`` it covers (victim keys), at most
    ``allowed`` may be evicted (its ``status.disruptionsAllowed``). The Eviction API refuses the rest, so a choice
    that counts on more would leave its victims half evicted."""

    name: str
    victims: tuple[str, ...]
    allowed: int


@total_ordering
@dataclass(frozen=True)
class PreemptionCost:
    """What a choice of victims costs, compared field by field in this order (lower is better): the highest
    priority among evicted gangs (``None``: nothing evicted, better than any), the GPUs they held, how many gangs
    lost pods (a pod of no gang counts as one), how many pods were evicted; then the same of the reservations that
    yield (highest priority, GPUs, gangs). Evicting nothing always beats evicting anything.

    Costs compare by :meth:`key`: a dataclass's own ``order=True`` compares the fields as they are, and ``None``
    against a priority raises ``TypeError``."""

    victim_priority: int | None = None
    victim_gpus: int = 0
    victim_gangs: int = 0
    victim_pods: int = 0
    yielded_priority: int | None = None
    yielded_gpus: int = 0
    yielded_gangs: int = 0

    def key(self) -> tuple[int, ...]:
        """A totally ordered tuple of the fields (``None`` below every priority)."""
        low = -(2**63)
        return (
            low if self.victim_priority is None else self.victim_priority,
            self.victim_gpus,
            self.victim_gangs,
            self.victim_pods,
            low if self.yielded_priority is None else self.yielded_priority,
            self.yielded_gpus,
            self.yielded_gangs,
        )

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, PreemptionCost):
            return NotImplemented
        return self.key() < other.key()


@dataclass(frozen=True)
class Preemption:
    """``Placed``: the gang's guaranteed pods fit as ``assignment`` says once the ``evicted`` pods are gone and the
    ``yielded`` gangs gave their reservations back. ``Infeasible``: not even if every victim made way (``reason``
    says what is short). ``TimedOut``: no choice found in time. ``Invalid``: the input breaks a rule, named in
    ``reason``. ``optimal``: the cost is proven least."""

    status: Status
    assignment: Mapping[str, str] = field(default_factory=dict)  # preemptor pod → node (guaranteed pods only)
    evicted: tuple[str, ...] = ()  # victim keys of running pods to evict
    yielded: tuple[str, ...] = ()  # keys of reserved gangs that give way
    cost: PreemptionCost = field(default_factory=PreemptionCost)
    optimal: bool = False
    reason: str = ""
    solve_seconds: float = 0.0
    placement_score: float | None = None  # of ``assignment``, when a caller placed the gang again on the freed room
