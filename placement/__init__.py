"""The solver: one gang request and a frozen cluster view in, a placement or a reasoned refusal out; or the head
of a queue of gangs in, which of them start now and where out (``batch``).

Owns: the request/result types, the objective (one module per tier family in ``tiers``, future fit over the
cluster's recent gang shapes among them), the CP-SAT model (one module per hard constraint), queue-aware planning,
the greedy baselines, the placement score and a validator that does not import the solver. Does not own:
Kubernetes objects, I/O, reservations or time. Imports only ``topology``.
"""

from placement.request import (
    ClusterView,
    GangRequest,
    GroupRequest,
    PackScope,
    Result,
    SolveOptions,
    Status,
    WorkloadShape,
)
from placement.solve import POLICIES, solve
from placement.validation import violations

__all__ = [
    "POLICIES",
    "ClusterView",
    "GangRequest",
    "GroupRequest",
    "PackScope",
    "Result",
    "SolveOptions",
    "Status",
    "WorkloadShape",
    "solve",
    "violations",
]
