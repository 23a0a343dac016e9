"""An in-memory Kubernetes API: kube-apiserver's storage semantics (resourceVersions, the watch log, conditional
writes, subresources, ``pods/binding``, owner cascades), with no server.

``reconcile --dry-run`` runs the real reconciler against it (``scheduler.reconcile.memory_client``). The same
store is the state of the fake API server the tests and benchmarks talk to over HTTP, and of the kube-scheduler
simulator's API (``benchmarks.sim.fakeapi``): one store, so the fakes cannot drift apart. Modules: ``resources``
(what is served, paths, the ``v1.Status`` error), ``selectors`` (field and label selectors, merge patch), ``store``.
"""
