"""What a PodCliqueSet must be before anything is built from it: Grove's defaults and rules, and ours.

Owns: Grove's defaulting (``defaults``), its webhook's create rules (``validation``) and update rules
(``immutability``), resource sharing's (``sharing``) and MNNVL's (``mnnvl``, with who is enrolled), the topology
checks and the domain → node-label translation (``topology``), the parts of Grove's operator configuration honoured
(``features``), the reconciler's own caps (``limits``), and Kubernetes' syntax rules for names, labels, env vars and
durations (``fields``, with ``FieldError``, the one shape every broken rule takes). Pure functions of the
PodCliqueSet (and its ClusterTopologyBinding); they import nothing else of the reconciler. Does not own: what is
built from a valid PodCliqueSet (``desired``), or telling the user (``status.reporting``).
"""
