"""Hard: no victim gang is left below ``minReplicas``. A gang either goes whole (every member chosen) or loses
only members above its minimums: per group it names, at most its listed members less the minimum (none when
fewer are listed); groups it does not name may lose any. A reservation and a gang that names no minimums go whole
or not at all.
"""

from __future__ import annotations

from placement.preemption.victim_vars import VictimVars

__all__ = ["add_gang_rule"]


def add_gang_rule(vv: VictimVars) -> None:
    pool = vv.pool
    for gang, members in pool.members.items():
        whole = vv.whole[gang]
        if not pool.splits(gang):
            for member in vv.members(gang):
                vv.model.add(member == whole)
            continue
        for member in vv.members(gang):
            vv.model.add_implication(whole, member)
        for group, allowance in pool.allowance(gang).items():
            inside = [vv.chosen[i] for i in members if pool.victims[i].group == group]
            if len(inside) > allowance:
                vv.model.add(sum(inside) <= allowance).only_enforce_if(~whole)
