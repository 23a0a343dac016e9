"""What the reconciler tells about the objects it keeps: their status, computed as Grove computes it.

Owns: conditions and how they merge (``conditions``); PodClique and PodCliqueScalingGroup status (``cliques``,
pure) and writing it (``writer``); PodCliqueSet status (``podcliqueset``, pure) and reporting it, with an Event when
a PodCliqueSet is refused (``reporting``); the PodCliqueSet's update record (``rollout``) and the update fields of
all three (``updates``, pure); the merge patch a status is written with (``patch``). Every write is made only when
the status differs, so a steady cluster sees none. Does not own: the PodGang status Grove's PodCliqueSet controller
writes at creation (the PodGang component's), or the ``Scheduled`` condition, phase and score (the extender's).
"""
