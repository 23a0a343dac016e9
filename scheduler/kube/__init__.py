"""The Kubernetes client side: the real implementations of the small interfaces the programs code against.

Owns: connecting to the API server (``connect``), listing and watching Nodes, Pods and PodGangs into a store
(``listing``, ``watch``, ``decoding``, ``heartbeats``; ``foreign``: which pods are kept whole and what is kept of
the others), the writes the extender makes — bindings, PodGang status, Events (``writer``, ``http``, ``errors``) —
leader election with a ``coordination.k8s.io`` Lease (``lease``), and the live wiring ``serve`` uses (``live``).
Does not own: what the store or the coordinator do with what it reads; none of these modules makes a scheduling
decision. Imports neither the extender nor the reconciler.

Everything here speaks JSON dicts to the official ``kubernetes`` client with ``_preload_content=False``: its typed
models would cost a deserialisation per object and are not what the rest of the project reads (``api`` models are).
"""
