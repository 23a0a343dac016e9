"""``solve``: the one entry point. Checks the request, resolves it against the view, runs the named policy.

Policies (``SolveOptions.policy``), all behind this call so the benchmark compares like with like:

- ``cpsat`` — the CP-SAT model (all-or-nothing, topology-aware, optimal within the time limit);
- ``topology-greedy`` — all-or-nothing, tightest domain first (KAI-like);
- ``gang-best-fit`` — all-or-nothing, topology-blind best fit;
- ``first-fit`` and ``spread`` — pod by pod with no gang, like kube-scheduler without gang support.

Partial results: only ``first-fit`` and ``spread`` ever return one. Their status is ``Placed`` only when every
guaranteed pod got a node; otherwise ``Infeasible``, but ``assignment`` still holds the pods they did place
(a kube-scheduler without gangs binds those and strands their GPUs, which is what the benchmark measures).
Gang policies return an empty assignment unless the whole gang fits.

``objective_parts``: each objective tier by name (see :mod:`placement.objective`), and for ``cpsat``
``optimal`` (1.0 when the plan is proven best) and ``models`` (CP-SAT models solved; 0 when the greedy plan met
the lower bound). ``bound`` (``cpsat`` only): the best placementScore any plan could reach as far as the search
proved — the plan's own score when proven optimal, else 1.0.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from placement.cpsat.policy import solve_cpsat
from placement.greedy.baselines import first_fit, gang_best_fit, spread, topology_greedy_policy
from placement.problem import InvalidRequest, Problem, prepare
from placement.request import ClusterView, GangRequest, Result, SolveOptions, Status

__all__ = ["POLICIES", "solve"]

log = logging.getLogger(__name__)
_MARGIN = 0.1  # share of the time limit kept back for building the result

POLICIES: dict[str, Callable[[Problem, SolveOptions], Result]] = {
    "cpsat": solve_cpsat,
    "topology-greedy": topology_greedy_policy,
    "gang-best-fit": gang_best_fit,
    "first-fit": first_fit,
    "spread": spread,
}


def solve(request: GangRequest, view: ClusterView, options: SolveOptions | None = None) -> Result:
    """Place one gang on a frozen view. Never raises for bad input: a malformed request or unknown policy gets
    ``Status.INVALID`` with the field and the rule in ``reason``."""
    options = options or SolveOptions()
    clock = options.clock
    started = clock()
    policy = POLICIES.get(options.policy)
    try:
        if policy is None:
            raise InvalidRequest(f"options.policy must be one of {', '.join(POLICIES)}; got {options.policy!r}")
        problem = prepare(request, view, options)
    except InvalidRequest as error:
        return Result(status=Status.INVALID, reason=str(error), solve_seconds=clock() - started)
    # The time limit bounds the whole call: what resolution took comes off the policy's budget, and a margin is
    # kept for turning the plan into a result (assignment, score) after the search stops.
    spent = clock() - started
    budget = max(0.01, options.time_limit_seconds - spent - _MARGIN * options.time_limit_seconds)
    result = policy(problem, replace(options, time_limit_seconds=budget))
    seconds = clock() - started
    log.debug(
        "solved gang=%s policy=%s status=%s pods=%d score=%s seconds=%.4f",
        request.key,
        options.policy,
        result.status.value,
        len(result.assignment),
        result.placement_score,
        seconds,
    )
    return replace(result, solve_seconds=seconds)
