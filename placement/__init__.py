"""The solver: one gang request and a frozen cluster view in, a placement or a reasoned refusal out.

Owns: the request/result types, the CP-SAT model (one file per constraint or objective), the greedy baselines,
the placement score and a validator that does not import the solver. Does not own: Kubernetes objects, I/O,
reservations or time. Imports only ``topology``.
"""
