"""The parts of ``policy/v1`` PodDisruptionBudget that preemption reads: which pods it covers and how many of them
may be disrupted now. Everything else is ignored on parse."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.core import ObjectMeta

__all__ = ["LabelSelector", "LabelSelectorRequirement", "PodDisruptionBudget"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class LabelSelectorRequirement(_Model):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelector(_Model):
    """``metav1.LabelSelector``: every ``matchLabels`` pair and every requirement must hold. An empty selector
    selects every pod (a PodDisruptionBudget's, in ``policy/v1``); a missing one, none."""

    matchLabels: dict[str, str] = Field(default_factory=dict)
    matchExpressions: list[LabelSelectorRequirement] = Field(default_factory=list)

    @field_validator("matchLabels", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("matchExpressions", mode="before")
    @classmethod
    def _none_is_empty_list(cls, value: Any) -> Any:
        return [] if value is None else value

    def matches(self, labels: dict[str, str]) -> bool:
        if any(labels.get(key) != value for key, value in self.matchLabels.items()):
            return False
        for requirement in self.matchExpressions:
            present = requirement.key in labels
            value = labels.get(requirement.key)
            if requirement.operator == "In" and (not present or value not in requirement.values):
                return False
            if requirement.operator == "NotIn" and present and value in requirement.values:
                return False
            if requirement.operator == "Exists" and not present:
                return False
            if requirement.operator == "DoesNotExist" and present:
                return False
        return True


class _PDBSpec(_Model):
    selector: LabelSelector | None = None


class _PDBStatus(_Model):
    disruptionsAllowed: int = 0
    observedGeneration: int | None = None


class _PDBMeta(ObjectMeta):
    generation: int | None = None


class PodDisruptionBudget(_Model):
    apiVersion: str = "policy/v1"
    kind: str = "PodDisruptionBudget"
    metadata: _PDBMeta = Field(default_factory=_PDBMeta)
    spec: _PDBSpec = Field(default_factory=_PDBSpec)
    status: _PDBStatus = Field(default_factory=_PDBStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    def allowed(self) -> int:
        """Evictions of covered pods the API server allows now: ``status.disruptionsAllowed``, none while the
        disruption controller has not processed the budget's current generation (the Eviction API refuses every
        eviction then)."""
        seen, current = self.status.observedGeneration, self.metadata.generation
        if seen is None or (current is not None and seen < current):
            return 0
        return max(0, self.status.disruptionsAllowed)

    def covers(self, namespace: str, labels: dict[str, str]) -> bool:
        return (
            namespace == self.metadata.namespace
            and self.spec.selector is not None
            and self.spec.selector.matches(labels)
        )
