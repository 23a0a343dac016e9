"""The PodCliqueSet reconciler: turns a Grove PodCliqueSet into PodGangs, headless Services and gated pods with
Grove's own names, labels and gang rules, so the extender works on clusters without the Grove operator.

Owns: Grove's defaults and validation rules for a PodCliqueSet (``defaults``, ``validation``), the pure
desired-state function (``desired``, ``pods``, ``gangs``), the controller loop (``controller``, ``status``), and the
small Kubernetes interface it needs (``api``) with an in-memory (``memory``) and a real (``kube``) implementation.
Does not own: scheduling (the extender), PodGang ``Scheduled``/phase/score (the extender's status writer), PodClique
and PodCliqueScalingGroup objects (not created: their counts come from the PodCliqueSet template).
"""
