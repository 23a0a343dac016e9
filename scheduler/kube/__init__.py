"""The Kubernetes client side: the real implementations of the small interfaces the programs code against.

Owns: connecting to the API server (``connect``); the one list-watch-relist loop every program reads the cluster
through (``informer``: paged lists, watches with bookmarks, relists on 410 Gone, back-off; handlers registered per
consumer), what it reads and how it decodes it (``listing``, ``decoding``, ``heartbeats``; ``foreign``: which pods
are kept whole and what is kept of the others); the extender's mirror of Nodes, Pods, PodGangs, PriorityClasses and
PodDisruptionBudgets, its informers feeding its store (``mirror``); the writes the extender makes — bindings,
PodGang status, Events, nominations, evictions (``writer``, ``http``, ``connections``, ``errors``) — leader election
with a ``coordination.k8s.io`` Lease (``lease``), and the live wiring ``serve`` uses (``live``). Does not own: what a
store or handler does with what it reads; none of these modules makes a scheduling decision. Imports neither the
extender nor the reconciler.

Reads (lists, watches, the Lease) go through the official ``kubernetes`` client with ``_preload_content=False``:
its typed models would cost a deserialisation per object and are not what the rest of the project reads (``api``
models are, decoded here). The extender's writes (bindings, status, Events, nominations, evictions) do not: they are
bare JSON requests over its own kept-alive HTTP/1.1 connections (``http``, ``connections``), with the connection
settings of the client's configuration, because a write per pod through the official client cost more CPU than the
rest of the write path (``benchmarks/bench_bind_client.py``).
"""
