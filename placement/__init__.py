"""The solver: one gang request and a frozen cluster view in, a placement or a reasoned refusal out.

Owns: the request/result types, the objective (one module per tier family in ``tiers``), the CP-SAT model (one
module per hard constraint), the greedy baselines, the placement score and a validator that does not import the
solver. Does not own: Kubernetes objects, I/O,
reservations or time. Imports only ``topology``.
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
