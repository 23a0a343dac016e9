"""What a valid PodCliqueSet should have, and the objects that say it, built as Grove's controllers build them.

Owns: the pure desired-state function (``state``: which scaling groups, PodCliques and PodGangs exist, their counts,
startup order and translated topology) and one builder per kind of object made from it — ``cliques``
(PodCliqueScalingGroups and PodCliques), ``pods``, ``gangs`` (PodGangs), ``services`` (headless Services),
``autoscale`` (HPAs), ``startup`` (the ``grove-initc`` init container and its ServiceAccount, Role, RoleBinding and
token Secret), ``claims`` (shared ResourceClaims and the claims each pod references), ``compute_domains`` (MNNVL)
— with Grove's names and labels (``names``) and its pod-template hash (``template_hash``, replaying
Go's printer with ``go_quantity`` over the generated ``go_types.json``; ``go_types_gen`` regenerates it). No I/O:
builders take what exists (pods, a live PodClique) as arguments. Does not own: deciding what to write
(``components``), or the rules a PodCliqueSet must meet first (``rules``).
"""
