"""A ValidatingAdmissionPolicy's CEL evaluated (cel-python) the way kube-apiserver evaluates it: matchConditions,
then variables, then validations. ``make e2e`` shows the real API server agreeing with each policy so tested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import celpy
import yaml


def load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The policy and its binding, from one manifest."""
    policy, binding = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return policy, binding


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression)).evaluate(activation)


def admitted(
    policy: dict[str, Any], *, user: str, operation: str, old: dict[str, Any] | None, new: dict[str, Any] | None
) -> bool:
    """True when ``policy`` lets the request through: it does not match, or every validation holds."""
    spec = policy["spec"]
    activation: dict[str, Any] = {
        "request": celpy.json_to_cel({"operation": operation, "userInfo": {"username": user}}),
        "object": celpy.json_to_cel(new),
        "oldObject": celpy.json_to_cel(old),
    }
    if not all(_evaluate(c["expression"], activation) for c in spec["matchConditions"]):
        return True
    activation["variables"] = celpy.json_to_cel({})
    for variable in spec.get("variables", []):
        value = _evaluate(variable["expression"], activation)
        activation["variables"] = celpy.celtypes.MapType({**activation["variables"], variable["name"]: value})
    results = [_evaluate(v["expression"], activation) for v in spec["validations"]]
    assert all(isinstance(r, celpy.celtypes.BoolType) for r in results), results  # an error would be a non-bool
    return all(results)
