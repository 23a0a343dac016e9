"""The benchmark's discrete-event replay: gangs of a snapshot arrive at their ``creationTimestamp``, run for
``grove-extender/duration-seconds``, then free their capacity; waiting gangs are retried whenever capacity frees.

Owns: the workload and how it is read from a snapshot (``workload``, ``loading``), the capacity ledger that refuses any
overcommit (``ledger``), the event loop and what it records per gang (``engine``, ``runs``), the one decision seam it
calls (``decision``) with its adapters — through the gang coordinator ``serve`` runs (``coordinator_step``), straight
to ``placement.solve`` (``solve_step``) or to ``placement.batch`` (``batch_step``) — gang priority and preemption
(``preemption``: the candidates, both victim choosers asked, their choices validated and recorded), and the figures
of a run (``metrics``, ``quality``, ``fragmentation``, ``report``, ``plot``, ``preemption_plot``). Does not own
placement or the victim choice (``placement``, ``placement.preemption``), the coordinator
(``scheduler.extender.coordinator``) nor the CLI wiring (``benchmarks.cli``).
"""
