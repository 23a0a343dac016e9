"""The extender (``grove-extender serve``): what kube-scheduler's ``grove`` profile calls for filter, prioritize,
bind and preempt, implementing ``api.service.Extender``.

Owns: the gang coordinator and its lifecycle (``coordinator``), the in-memory mirror of the cluster it decides on
(``state``), the translation from Kubernetes objects to the solver's inputs (``translation``: the one PodGang →
request translator, the cluster view, node eligibility), and the two small interfaces it acts through — what it
writes (``cluster_writer``) and whether this replica leads (``leadership``) — whose real implementations are
``scheduler.kube``'s. Does not own: the Kubernetes client, watches or Lease (``scheduler.kube``), snapshot files
(``scheduler.snapshot``), the PodCliqueSet reconciler (``scheduler.reconcile``, which it never imports, nor it this).
"""
