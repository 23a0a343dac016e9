"""The packing benchmark beside the replay (``grove-extender bench --fill``): gangs drawn from a workload's shapes
are placed one at a time until the first one does not fit, the way Google's "workload inflation" measures packing
efficiency (Verma et al., "Evaluating job packing in warehouse-scale computing", CLUSTER '14) and FGD's
evaluation fills an emulated cluster (Weng et al., ATC '23).

Owns: the gang templates a fill draws from (``templates``), the fill itself (``fill``), FGD's fragmentation measure
(``fgd``), and the figures, table and plot of a run (``report``). Placement is ``placement.solve``'s; the templates come
through the one PodGang translator (``scheduler.extender.translation.gang_request``). Does not own the replay.
"""
