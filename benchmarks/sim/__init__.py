"""The one home of the fakes and simulators that tests and benchmarks share: one fake of the Kubernetes API and one
model of kube-scheduler, each with two faces.

- ``fakeapi``: the API server over the in-memory store (``scheduler.kube.memory``, which ``reconcile --dry-run``
  runs on too). ``FakeApiServer`` serves it over real HTTP, with kube-apiserver's shapes and watch semantics
  (resourceVersions, bookmarks, 410 Gone after compaction) and test steering; ``FakeApi`` is the same store in
  process, on the simulator's clock, with typed views, lagged watches and bind faults.
- ``kubescheduler``: kube-scheduler v1.36 as far as the gang lifecycle and throughput can tell the difference (its
  queue, backoff, parking, assume cache, asynchronous binding with ``httpTimeout``), with the clock and the
  transport injected: in process on a simulated clock (``inprocess``), or in real time over HTTP (``standin``, the
  end-to-end bench's kube-scheduler).
- ``simulation`` (with ``extender``, the extender as a process that can be killed): a cluster, kube-scheduler, the
  extender and a Grove-like controller on one simulated clock, for the lifecycle's property tests and
  ``benchmarks.bench_lifecycle``.

What the model does not do: preemption, pod affinity, node selectors and taints in the in-tree filters (gang pods
here tolerate everything), PreBind plugins' own failures, more than one profile.
"""
