"""The components of a PodCliqueSet: one per kind of object it owns, each keeping that kind as Grove's operator
keeps it — Grove's ``components/*`` shape.

Owns: what a component is and the pass the components share (``component``); the table of components and the
order a pass runs them in (``registry``); what exists when a pass begins (``observed``) and the rules by which a
component converges its kind (``converge``); and the components themselves — ``scaling_group``, ``podclique``,
``headless_service``, ``hpa``, ``service_account``, ``role``, ``role_binding``, ``sa_token_secret``,
``resource_claim``, ``compute_domain`` (MNNVL), ``pod``, ``podgang``, ``scheduling_gate`` and ``pcs_replica`` (gang
termination and the rolling update's next replica, with their pure decisions in ``gang_termination`` and
``rolling_update``).
Does not own: what the objects should be (``desired`` builds them), the rules a PodCliqueSet must meet first
(``rules``), or status (``status``); the controller composes them.
"""
