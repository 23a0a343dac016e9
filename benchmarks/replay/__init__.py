"""The benchmark's discrete-event replay: gangs of a snapshot arrive at their ``creationTimestamp``, run for
``grove-extender/duration-seconds``, then free their capacity; waiting gangs are retried whenever capacity frees.

Owns: the workload and how it is read from a snapshot (``workload``, ``loading``), the capacity ledger that refuses any
overcommit (``ledger``), the event loop (``engine``), the one decision seam it calls (``decision``) with its two
adapters — through the gang coordinator ``serve`` runs (``coordinator_step``) or straight to ``placement.solve``
(``solve_step``) — and the figures of a run (``metrics``, ``quality``, ``fragmentation``, ``report``, ``plot``). Does
not own placement (``placement``), the coordinator (``scheduler.extender.coordinator``) nor the CLI wiring
(``benchmarks.cli``).
"""
