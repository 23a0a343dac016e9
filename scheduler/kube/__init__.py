"""The Kubernetes-facing edge of the extender: the real implementations of the small interfaces the core codes
against.

Owns: connecting to the API server (``connect``), listing and watching Nodes, Pods and PodGangs into the cluster
store (``listing``, ``watch``), the writes the extender makes — bindings, PodGang status, Events (``writer``) —
leader election with a ``coordination.k8s.io`` Lease (``lease``), the live wiring ``serve`` uses (``live``), and
what a recorded snapshot must not carry (``scrub``). Does not own: what the store or the coordinator do with what
it reads; none of these modules makes a scheduling decision.

Everything here speaks JSON dicts to the official ``kubernetes`` client with ``_preload_content=False``: its typed
models would cost a deserialisation per object and are not what the rest of the project reads (``api`` models are).
"""
