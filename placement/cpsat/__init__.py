"""The CP-SAT placement model: integer pod counts per (group, node), one module per hard constraint (registered in
:mod:`placement.cpsat.registry`), the objective tiers' expressions taken from :mod:`placement.tiers` in
:data:`placement.objective.TIERS` order, composed and solved by :mod:`placement.cpsat.solver`.

Owns: the hard constraints, the weighting of tiers and the ``cpsat`` policy's order of work. The variable container
(:mod:`placement.model_vars`), problem resolution, the tiers, bounds, the scorer and the reasons for refusal live in
``placement`` proper so the tiers, the greedy policies and the tests share them without importing the model.
"""
