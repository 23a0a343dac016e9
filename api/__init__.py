"""The boundary's models and names, read by every package: kube-scheduler's extender wire format (``api.extender``),
the parts of core/v1 Pod and Node a scheduler reads (``api.core``, with resource quantities in ``api.quantity``), the
parts of a PodDisruptionBudget preemption reads (``api.policy``), Grove's CRDs, API names, labels and paths
(``api.grove``), and the ``Extender`` interface the HTTP surface calls (``api.service``).

Owns: pydantic models and names. Does not own: any decision, nor serving anything over HTTP: that is ``api.http``,
which imports these models, never the other way round (an import-linter contract). Imports none of our packages.
"""
