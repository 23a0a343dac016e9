"""Greedy placement: the CP-SAT model's starting hint and the baseline policies the benchmark compares against.

Owns: a running tally of free capacity (:mod:`~placement.greedy.tally`), the topology-aware gang greedy (KAI-like,
tightest domain first) and three topology-blind baselines. Pure Python, no solver.
"""
