"""Everything stateful and Kubernetes-facing: cluster state (live watches or a snapshot), the gang coordinator
(the gang lifecycle: plans, reservations, ready members, the release) behind ``api``'s extender interface, PodGang
status writer, preemption guard, PodCliqueSet reconciler, and the CLI that wires them together.

Imports ``topology``, ``placement`` and ``api``; nothing imports it but tests and benchmarks.
"""
