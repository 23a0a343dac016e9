"""The gang coordinator: the gang lifecycle of DESIGN.md behind ``api.service.Extender``.

Owns: gang membership (``members``), plans and the reservation book (``planning``, ``planner``,
``reservations``, ``ledger``), the bind barrier and binding (``barrier``, ``binding``), the preemption guard,
PodGang status, metrics, and the background planner. Does not own: cluster state (``scheduler.state``), the solver
(``placement``), HTTP (``api.app``) or the Kubernetes client (``scheduler.kube``, behind ``ClusterWriter``).
"""

from scheduler.coordinator.background import BackgroundWorker
from scheduler.coordinator.coordinator import Coordinator, CoordinatorConfig
from scheduler.coordinator.planner import Solver

__all__ = ["BackgroundWorker", "Coordinator", "CoordinatorConfig", "Solver"]
