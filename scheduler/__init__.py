"""Everything stateful and Kubernetes-facing: cluster state (live watches or a snapshot), the gang coordinator
(plans, reservations, bind barrier) behind ``api``'s extender interface, the binder, PodGang status writer,
preemption guard, PodCliqueSet reconciler, and the CLI that wires them together.

Imports ``topology``, ``placement`` and ``api``; nothing imports it but tests and benchmarks.
"""
