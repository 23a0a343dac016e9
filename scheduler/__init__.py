"""Everything stateful and Kubernetes-facing, one sub-package per program or concern:

- ``extender``: the extender ``serve`` runs (gang coordinator, cluster state, the one translator, its writer and
  leadership interfaces) behind ``api``'s extender interface;
- ``reconcile``: the PodCliqueSet reconciler ``reconcile`` runs (and ``initc``, its pods' init container);
- ``snapshot``: snapshot files, recording a live cluster, scrubbing;
- ``kube``: the Kubernetes client side shared by every program (connecting, the one informer that lists and watches
  for all of them, writing, the Lease);
- ``cli``: ``grove-extender``, wiring the above into subcommands.

Layers, checked by import-linter: ``cli`` above ``extender`` and ``reconcile`` (which never import each other),
above ``snapshot``, above ``kube``. Imports ``topology``, ``placement`` and ``api``; nothing imports it but tests and
benchmarks.
"""
