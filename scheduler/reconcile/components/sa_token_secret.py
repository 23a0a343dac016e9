"""The token Secret ``<pcs>-ic-sat`` that ``grove-initc`` mounts, Grove's ``components/satokensecret``.

The reconciler may create Secrets but not read them (``desired.startup`` says why), so this component never lists
or updates one: while pods with a startup order are still to be created, it creates the Secret and takes
``AlreadyExists`` as done. A steady PodCliqueSet costs no request. Deletion is the garbage collector's (the
PodCliqueSet owns it), for the same reason.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

from api.grove import LABEL_PODCLIQUE
from scheduler.reconcile.client import Conflict, ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.desired.startup import token_secret
from scheduler.reconcile.live import is_terminating

__all__ = ["ServiceAccountTokenSecrets"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServiceAccountTokenSecrets:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        live = Counter(
            (pod["metadata"].get("labels") or {}).get(LABEL_PODCLIQUE)
            for pod in state.observed.pods
            if not is_terminating(pod)
        )
        cliques = state.desired.cliques().values()
        if not any(clique.parents and live[clique.fqn] < clique.replicas for clique in cliques):
            return 0
        secret = token_secret(state.pcs)
        try:
            self.api.create(secret)
        except Conflict:
            return 1  # there already: ours from an earlier pass (or the user's, which the pods then mount)
        log.info("created secret=%s/%s", state.pcs.metadata.namespace, secret["metadata"]["name"])
        return 1

    def delete(self, *, namespace: str, pcs: str) -> int:
        return 0  # owned by the PodCliqueSet: the garbage collector's, as the reconciler may not read Secrets
