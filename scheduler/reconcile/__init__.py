"""The PodCliqueSet reconciler: turns a Grove PodCliqueSet into PodGangs, headless Services and gated pods with
Grove's own names, labels and gang rules, so the extender works on clusters without the Grove operator.

Owns: Grove's defaults and rules for a PodCliqueSet (``defaults``, ``validation``, ``topology_rules``,
``immutability``, with Kubernetes' syntax rules in ``fields``); the pure desired-state function (``desired``) and
the objects built from it (``names``, ``pods``, ``gangs``); the controller loop (``controller``, with
``gang_sync``, ``gates``, ``status`` and ``reporting``); ``dryrun``; and the small Kubernetes interface it needs
(``api``) with an in-memory (``memory``) and a real (``kube``) implementation.
Does not own: scheduling (the extender), PodGang ``Scheduled``/phase/score (the extender's status writer), PodClique
and PodCliqueScalingGroup objects (not created: their counts come from the PodCliqueSet template).
"""
