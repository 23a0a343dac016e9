"""The CP-SAT placement model: integer pod counts per (group, node), one module per constraint or objective tier,
composed by :mod:`placement.cpsat.solver` through the explicit registry in :mod:`placement.cpsat.registry`.

Owns: the model only. Problem resolution, bounds, the scorer and the reasons for refusal live in ``placement``
proper so the greedy policies and the tests share them without importing ortools.
"""
