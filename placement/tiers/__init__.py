"""The objective's tiers, one module per tier family: each holds the tier's name, its CP-SAT expression, its value
on a plan and its lower bound from capacity alone, so the model, the scorer, the greedy's plan comparison and the
bounds cannot drift apart.

Owns: the tier families (``preferred_pack``, ``domains_spanned``, ``fresh_domains``, ``fresh_nodes``,
``extras_missing``) and the interface they share (``family``). Their priority order is
:data:`placement.objective.TIERS`; composing them is the caller's (the model in ``placement.cpsat.solver``, the
bounds in ``placement.bounds``). The tests judge these modules with an evaluator of their own.
"""
