"""The PodCliqueSet reconciler: does the Grove operator's part on clusters without it. A PodCliqueSet becomes
PodCliqueScalingGroups, PodCliques, PodGangs, headless Services, HPAs, shared ResourceClaims, MNNVL ComputeDomains
and gated pods with Grove's own names, labels, ownership, finalizers, gang rules, startup order, gang termination
and rolling updates, so the extender can schedule it.

Shaped as Grove's operator is, in layers that import downwards only (import-linter checks them):
``controller`` (the loop, and one pass composed of the parts below) and ``dryrun`` over ``components`` (one per
kind of object a PodCliqueSet owns, each with its sync and delete, behind ``components.registry``) over ``status``
(what the reconciler tells: PodClique, scaling-group and PodCliqueSet status) over ``desired`` (the pure
desired-state function and one builder per kind) over ``rules`` (Grove's defaults and rules, and our limits).
Beside them: ``live`` (what a live pod says about itself), the small Kubernetes interface the reconciler needs
(``client``) with an in-memory (``memory_client``) and a real (``rest_client``) implementation, and the
``grove-initc`` wait (``initc``). Does not own: scheduling (the extender), PodGang ``Scheduled``/phase/score (the
extender's status writer).
"""
