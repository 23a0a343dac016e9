"""The variable container of the victim model: the preemptor's pod counts (:class:`~placement.model_vars.ModelVars`,
on the problem every victim's capacity is counted in) beside one boolean per victim and per victim gang.

``free``: the units free now, every victim still in place (the problem's own view counts them all as free, so
its candidate nodes and per-node caps cover whatever a choice of victims could free). ``chosen[i]``: victim ``i``
makes way (is evicted, or its reserved gang yields). ``whole[gang]``: the gang goes
whole (every member chosen). ``touched(gang)``: the gang loses any member, created on first request for the
objective.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placement.model_vars import ModelVars
from placement.objective import Counts
from placement.preemption.pool import VictimPool
from placement.problem import Problem

__all__ = ["VictimVars"]


@dataclass
class VictimVars:
    placement: ModelVars
    pool: VictimPool
    free: Mapping[str, Mapping[str, int]]
    chosen: list[cp_model.IntVar]
    whole: dict[str, cp_model.IntVar]
    _touched: dict[str, cp_model.IntVar] = field(default_factory=dict)

    @classmethod
    def build(cls, problem: Problem, pool: VictimPool, free: Mapping[str, Mapping[str, int]]) -> VictimVars:
        placement = ModelVars.build(problem)
        model = placement.model
        chosen = [model.new_bool_var(f"chosen[{victim.key}]") for victim in pool.victims]
        whole = {gang: model.new_bool_var(f"whole[{gang}]") for gang in pool.members}
        return cls(placement, pool, free, chosen, whole)

    @property
    def model(self) -> cp_model.CpModel:
        return self.placement.model

    def members(self, gang: str) -> list[cp_model.IntVar]:
        return [self.chosen[i] for i in self.pool.members[gang]]

    def touched(self, gang: str) -> cp_model.IntVar:
        """1 exactly when the gang loses any member (a whole-or-nothing gang's ``whole`` says so already)."""
        if not self.pool.splits(gang):
            return self.whole[gang]
        if gang not in self._touched:
            flag = self.model.new_bool_var(f"touched[{gang}]")
            members = self.members(gang)
            for member in members:
                self.model.add_implication(member, flag)
            self.model.add_bool_or(members).only_enforce_if(flag)
            self._touched[gang] = flag
        return self._touched[gang]

    def hint(self, chosen: Collection[int], counts: Counts) -> None:
        """Seed the search with a choice of victims and the preemptor's plan on what they free."""
        self.placement.hint(counts)
        for i, var in enumerate(self.chosen):
            self.model.add_hint(var, int(i in chosen))
        for gang, members in self.pool.members.items():
            self.model.add_hint(self.whole[gang], int(all(i in chosen for i in members)))
            if gang in self._touched:
                self.model.add_hint(self._touched[gang], int(any(i in chosen for i in members)))
