"""Greedy placement: the CP-SAT model's starting hint and the baseline policies the benchmark compares against.

Owns: a running tally of free capacity (:mod:`~placement.greedy.tally`), the topology-aware gang greedy (KAI-like,
tightest domain first), three topology-blind baselines, and the best-effort extras every gang policy adds after the
guarantee (:mod:`~placement.greedy.extras`). Pure Python, no solver.
"""
