"""A simulator of kube-scheduler (v1.36 behaviour) driving the extender in process, on a simulated clock.

What it models, because the gang lifecycle depends on it: the scheduling queue (activeQ by priority then queue
time; per-pod exponential backoff after an error; pods refused by a filter parked until a cluster event or five
minutes), one scheduling cycle at a time at a set pace, the scheduler cache with assumed pods, asynchronous
binding cycles with ``httpTimeout``, forgetting an assumed pod on a failed binding (and the cluster-wide wake-up
that causes), pods bound by someone else leaving the queue, watches that lag. And around it: an API server that
takes any binding but records overcommit, bind faults, extender restarts (SIGKILL mid-release), and a controller
that re-creates deleted members as Grove does.

What it does not: preemption, pod affinity, node selectors and taints in the in-tree filters (gang pods here
tolerate everything), PreBind plugins' own failures, more than one profile. See ``queue``, ``scheduler``.
"""
