"""From Kubernetes objects to what the solver reads, the same for every entry point (``serve``, ``plan``,
``snapshot inspect``, the benchmarks): ``gang_request`` (a PodGang and its pods → a ``GangRequest``, the one
translator), ``priority`` (a gang's priority, from its PodGang's PriorityClass or its pods), ``cluster_view``
(Nodes and bound pods → a ``Topology`` and free capacity) and ``eligibility`` (whether a pod may run on a node at
all, as kube-scheduler's own filters judge it). Pure: no state, no I/O but reading a levels file.
"""
