"""The benchmark's discrete-event replay: gangs of a snapshot arrive at their ``creationTimestamp``, run for
``grove-extender/duration-seconds``, then free their capacity; waiting gangs are retried whenever capacity frees.

Owns: the workload read from a snapshot (``workload``), the capacity ledger that refuses any overcommit
(``ledger``), the event loop (``engine``), the one decision adapter it calls (``decision``, ``solve_step``),
and the metrics, table and plot of a run (``metrics``, ``fragmentation``, ``report``, ``plot``). Does not own
placement (``placement``) nor the CLI wiring (``scheduler.cli.bench``).
"""
