"""The Kubernetes client side: the real implementations of the small interfaces the programs code against.

Owns: connecting to the API server (``connect``); the one list-watch-relist loop every program reads the cluster
through (``informer``: paged lists, watches with bookmarks, relists on 410 Gone, back-off; handlers registered per
consumer), what it reads and how it decodes it (``listing``, ``decoding``, ``heartbeats``; ``foreign``: which pods
are kept whole and what is kept of the others); the extender's mirror of Nodes, Pods and PodGangs, its informers
feeding its store (``mirror``); the writes the extender makes — bindings, PodGang status, Events (``writer``,
``http``, ``errors``) — leader election with a ``coordination.k8s.io`` Lease (``lease``), and the live wiring
``serve`` uses (``live``). Does not own: what a store or handler does with what it reads; none of these modules
makes a scheduling decision. Imports neither the extender nor the reconciler.

Everything here speaks JSON dicts to the official ``kubernetes`` client with ``_preload_content=False``: its typed
models would cost a deserialisation per object and are not what the rest of the project reads (``api`` models are).
"""
