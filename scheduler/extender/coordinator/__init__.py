"""The gang coordinator: the gang lifecycle of ARCHITECTURE.md behind ``api.service.Extender``.

Owns: every gang's lifecycle state and the reservation book (``gang_table``, the only writer; ``gang_state`` for its
records and views), what filter and bind answer (``decisions``, pure), gang membership (``members``), planning
(``planning`` one gang at a time, ``head`` the head of the waiting queue together, both around ``solving``: free
capacity, the request from the one translator ``scheduler.extender.translation.gang_request``, the solve), ready members
and the release that binds them (``binding``, ``waiters``, ``release``), reservation lifetimes (``gathering``), store
events (``events``), PodGang status (``status``, ``reporting``), gang priority and preemption (``making_room``: which
lower-priority reservations yield and which pods are evicted, gathered by ``victims``; ``evictions`` carries them
out), the preemption guard of kube-scheduler's own proposals (``preemption``), metrics, and the background worker.
Does not own: cluster state (``scheduler.extender.state``), the solver (``placement``), HTTP (``api.http.app``) or the
Kubernetes client (``scheduler.kube``, behind ``ClusterWriter``).
"""

from scheduler.extender.coordinator.background import BackgroundWorker
from scheduler.extender.coordinator.coordinator import Blocking, Coordinator, CoordinatorConfig
from scheduler.extender.coordinator.making_room import RoomSettings
from scheduler.extender.coordinator.solving import Solver

__all__ = ["BackgroundWorker", "Blocking", "Coordinator", "CoordinatorConfig", "RoomSettings", "Solver"]
