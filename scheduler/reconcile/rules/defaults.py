"""Grove's defaults for a PodCliqueSet (CRD defaults plus the defaulting webhook, reference §4).

Applied before validation and before building anything, exactly as the API server would have applied them had
Grove's webhook been installed, so a user's PodCliqueSet means the same thing here as under the Grove operator.
"""

from __future__ import annotations

from api.grove import PodCliqueSet

__all__ = [
    "DEFAULT_STARTUP_TYPE",
    "DEFAULT_TERMINATION_DELAY",
    "ON_DELETE",
    "ROLLING_RECREATE",
    "UPDATE_STRATEGIES",
    "with_defaults",
]

ROLLING_RECREATE = "RollingRecreate"  # the default: Grove replaces replicas one at a time when the template changes
ON_DELETE = "OnDelete"  # pods change only when someone deletes them
UPDATE_STRATEGIES = (ROLLING_RECREATE, ON_DELETE)
DEFAULT_STARTUP_TYPE = "CliqueStartupTypeAnyOrder"
DEFAULT_TERMINATION_DELAY = "4h"
DEFAULT_GRACE_SECONDS = 30


def with_defaults(pcs: PodCliqueSet) -> PodCliqueSet:
    """A defaulted deep copy; the input is left untouched (it is what the user wrote and what we patch status on)."""
    out = pcs.model_copy(deep=True)
    spec = out.spec
    if spec.updateStrategy is None:
        spec.updateStrategy = {"type": ROLLING_RECREATE}
    else:
        spec.updateStrategy.setdefault("type", ROLLING_RECREATE)
    template = spec.template
    template.cliqueStartupType = template.cliqueStartupType or DEFAULT_STARTUP_TYPE
    template.terminationDelay = template.terminationDelay or DEFAULT_TERMINATION_DELAY
    if template.headlessServiceConfig is None:
        template.headlessServiceConfig = {}
    template.headlessServiceConfig.setdefault("publishNotReadyAddresses", True)
    for clique in template.cliques:
        clique_spec = clique.spec
        # Grove's defaulting reads the template as written: `replicas: 0` becomes 1, but minAvailable (and the
        # HPA's minReplicas) default to the 0 written, which validation then refuses at minAvailable.
        written = clique_spec.replicas
        if clique_spec.replicas == 0:
            clique_spec.replicas = 1
        if clique_spec.minAvailable is None:
            clique_spec.minAvailable = written
        clique_spec.podSpec.setdefault("restartPolicy", "Always")
        clique_spec.podSpec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        if clique_spec.autoScalingConfig is not None and clique_spec.autoScalingConfig.minReplicas is None:
            clique_spec.autoScalingConfig.minReplicas = written
    for group in template.podCliqueScalingGroups:
        group.replicas = 1 if group.replicas is None else group.replicas
        group.minAvailable = 1 if group.minAvailable is None else group.minAvailable
        if group.scaleConfig is not None and group.scaleConfig.minReplicas is None:
            group.scaleConfig.minReplicas = group.replicas
    return out
