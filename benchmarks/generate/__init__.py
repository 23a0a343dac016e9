"""Seeded generators of benchmark snapshots: GPU clusters with Topograph/GFD topology labels, and Grove-shaped
gang workloads (PodGangs + pending pods) whose arrivals, sizes and durations come from stated, cited
distributions (see ``benchmarks/README.md``).

Owns: cluster layouts (``nodes``, ``clusters``), trace-derived distributions (``traces``), gang shapes
(``shapes``), Kubernetes objects for them (``objects``), arrival sampling (``workload``) and the shipped
scenarios (``scenarios``). Run ``python -m benchmarks.generate --out benchmarks/snapshots`` to regenerate.
Same seed, same bytes: only ``random.Random(seed)`` draws, no clocks, gzip without mtime.
"""
