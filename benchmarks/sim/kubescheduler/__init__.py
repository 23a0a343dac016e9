"""kube-scheduler v1.36 as far as the gang lifecycle and throughput can tell the difference: its scheduling queue
(``queue``) and its scheduling and binding cycles over an assume cache (``scheduler``), driven on a simulated clock
by ``benchmarks.sim.simulation`` and in real time over HTTP by the end-to-end bench (``standin``).
"""
