"""The parts of Grove's operator configuration the reconciler honours, with Grove's defaults.

- ``default_scheduler``: what an empty ``schedulerName`` means (Grove's ``scheduler.defaultProfileName``); unset, the
  reconciler's own scheduler, since it is the backend it prepares pods for.
- ``mnnvl``: Grove's ``network.autoMNNVLEnabled`` (off by default, as in Grove): ComputeDomains and the
  ``mnnvl-claim`` resource claims for cliques that opt in with ``grove.io/mnnvl-group``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Features"]


@dataclass(frozen=True)
class Features:
    default_scheduler: str | None = None
    mnnvl: bool = False
