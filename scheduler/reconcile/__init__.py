"""The PodCliqueSet reconciler: does the Grove operator's part on clusters without it. A PodCliqueSet becomes
PodCliqueScalingGroups, PodCliques, PodGangs, headless Services, HPAs and gated pods with Grove's own names, labels,
ownership, gang rules, startup order and gang termination, so the extender can schedule it.

Owns: Grove's defaults and rules for a PodCliqueSet (``defaults``, ``validation``, ``topology_rules``,
``immutability``, our ``limits``, with Kubernetes' syntax rules in ``fields``); the pure desired-state function
(``desired``) and the objects built from it (``names``, ``cliques``, ``pods``, ``gangs``, ``autoscale``,
``startup``, ``template_hash`` with ``go_quantity`` and the generated ``go_types.json``); the controller loop
(``controller``, reading through ``owned`` and converging with ``clique_sync``, ``pod_sync``, ``supporting`` /
``owned_sync``, ``gang_sync``, ``gates``, then ``upkeep``: ``clique_status`` and ``termination``; reporting in
``status`` and ``reporting``); ``dryrun``; the ``grove-initc`` wait (``initc``); and the small Kubernetes interface
it needs (``client``) with an in-memory (``memory_client``) and a real (``rest_client``) implementation.
Does not own: scheduling (the extender), PodGang ``Scheduled``/phase/score (the extender's status writer), rolling
updates of changed templates, MNNVL and resource sharing (not implemented).
"""
