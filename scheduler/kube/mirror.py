"""The extender's mirror of the cluster: Nodes, Pods, PodGangs, PriorityClasses and PodDisruptionBudgets, one
informer each, feeding its store.

Each kind's informer (``informer``) decodes with what keeps the extender's watch path lean: Node heartbeats are
recognised before the model decode (``heartbeats``), pods of other schedulers become ``ForeignPod`` capacity and
only ours the full model (``decoding``, ``foreign``). The store hears every list as ``replace`` and every change
as ``apply``; ``store.mark_synced()`` is called once every kind has been listed. ``Mirror.stale`` says which kinds
have failed to list or watch for longer than a decision may trust a view that old.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from kubernetes.client import ApiClient

from api.core import PriorityClass
from api.grove import PodGang
from api.policy import PodDisruptionBudget
from scheduler.kube.backoff import Backoff
from scheduler.kube.decoding import Decoder, EventType, Model, ModelDecoder, PodDecoder
from scheduler.kube.heartbeats import NodeDecoder
from scheduler.kube.informer import WATCH_SECONDS, Informer, start_informers
from scheduler.kube.listing import DISRUPTION_BUDGETS, NODES, PODGANGS, PODS, PRIORITY_CLASSES, Resource

__all__ = [
    "STALE_SECONDS",
    "EventType",
    "Kind",
    "Mirror",
    "WatchedStore",
    "mirror_informer",
    "mirror_informers",
    "start_mirror",
]

log = logging.getLogger(__name__)

Kind = Literal["Node", "Pod", "PodGang", "PriorityClass", "PodDisruptionBudget"]

# Past a watch's ordinary hiccups (a dropped stream reopens within the back-off's first steps; a 410 relists at
# once), and within what kube-scheduler's own retries of an Error absorb: a view this far behind may hold a pod
# bound elsewhere or a node gone, and every plan made on it would be.
STALE_SECONDS = 10.0


class WatchedStore(Protocol):
    """What the mirror needs of ``scheduler.extender.state.store.ClusterStore`` (and all it calls on it)."""

    def replace(self, kind: Kind, objects: Sequence[Model]) -> None:
        """Afterwards ``kind`` holds exactly ``objects`` (a list or relist result)."""

    def apply(self, kind: Kind, event_type: EventType, obj: Model) -> None:
        """One watch event; replays of known events must be harmless."""

    def mark_synced(self) -> None:
        """Every kind has been listed once."""

    def keeps_whole(self, *, labels: Mapping[str, str] | None, scheduler_name: str) -> bool:
        """Whether a pod is kept as a ``Pod`` (else as a ``ForeignPod``): the Pod informer decodes only that."""


class _IntoStore:
    """One kind's handler: the store is the typed cache the extender reads."""

    __slots__ = ("_kind", "_store")

    def __init__(self, store: WatchedStore, kind: Kind) -> None:
        self._store = store
        self._kind: Kind = kind

    def on_list(self, objects: Sequence[Model]) -> None:
        self._store.replace(self._kind, objects)

    def on_event(self, event_type: EventType, obj: Model) -> None:
        self._store.apply(self._kind, event_type, obj)


_KINDS: tuple[tuple[Kind, Resource], ...] = (
    ("Node", NODES),
    ("Pod", PODS),
    ("PodGang", PODGANGS),
    ("PriorityClass", PRIORITY_CLASSES),
    ("PodDisruptionBudget", DISRUPTION_BUDGETS),
)


def _decoder(kind: Kind, store: WatchedStore) -> Decoder[Model]:
    if kind == "Node":
        return NodeDecoder()
    if kind == "Pod":
        return PodDecoder(keeps_whole=store.keeps_whole, stamp=PODS.stamp)
    if kind == "PriorityClass":
        return ModelDecoder(PriorityClass, stamp=PRIORITY_CLASSES.stamp)
    if kind == "PodDisruptionBudget":
        return ModelDecoder(PodDisruptionBudget, stamp=DISRUPTION_BUDGETS.stamp)
    return ModelDecoder(PodGang, stamp=PODGANGS.stamp)


def _hints(resource: Resource) -> dict[int, str]:
    """What an operator can do about the two failures that never heal on their own."""
    hints = {403: f"grant list/watch on {resource.plural} (deploy/base/extender-rbac.yaml)"}
    if resource is PODGANGS:
        hints[404] = "no PodGang CRD: install Grove's, or ours (kubectl apply -k deploy/overlays/standalone)"
    return hints


def mirror_informer(
    kind: Kind,
    *,
    client: ApiClient,
    store: WatchedStore,
    watch_timeout: int = WATCH_SECONDS,
    backoff: Backoff | None = None,
) -> Informer[Model]:
    """The informer of one kind, feeding ``store``; nothing runs yet."""
    resource = dict(_KINDS)[kind]
    informer = Informer(
        api_client=client,
        resource=resource,
        decoder=_decoder(kind, store),
        watch_timeout=watch_timeout,
        backoff=backoff,
        hints=_hints(resource),
    )
    informer.add_handler(_IntoStore(store, kind))
    return informer


def mirror_informers(
    *,
    client: ApiClient,
    store: WatchedStore,
    watch_timeout: int = WATCH_SECONDS,
    backoff: Callable[[], Backoff] = Backoff,
) -> list[Informer[Model]]:
    """One informer per kind, each feeding ``store`` (with a ``backoff()`` of its own); nothing runs yet."""
    return [
        mirror_informer(kind, client=client, store=store, watch_timeout=watch_timeout, backoff=backoff())
        for kind, _ in _KINDS
    ]


@dataclass(frozen=True)
class Mirror:
    threads: list[threading.Thread]
    informers: Sequence[Informer[Model]]

    def stale(self, after: float = STALE_SECONDS) -> str | None:
        """What is stale, when an informer has failed to list or watch for ``after`` seconds or more; else None."""
        failing = [(informer.kind, informer.failing_for()) for informer in self.informers]
        late = [f"{kind} for {seconds:.0f} s" for kind, seconds in failing if seconds is not None and seconds >= after]
        return "watches failing: " + ", ".join(late) if late else None


def start_mirror(
    *,
    client: ApiClient,
    store: WatchedStore,
    stop: threading.Event,
    watch_timeout: int = WATCH_SECONDS,
    backoff: Callable[[], Backoff] = Backoff,
    on_synced: Callable[[], None] | None = None,
) -> Mirror:
    """Start the mirror's informers (one daemon thread per kind, plus one that interrupts them on ``stop``): their
    threads and the informers.

    ``watch_timeout`` is the server-side length of one watch request in seconds. ``on_synced`` runs once, on a
    watch thread, right after the store is marked synced.
    """

    def synced() -> None:
        log.info("cluster state synced kinds=%s", ",".join(kind for kind, _ in _KINDS))
        store.mark_synced()
        if on_synced is not None:
            on_synced()

    informers = mirror_informers(client=client, store=store, watch_timeout=watch_timeout, backoff=backoff)
    return Mirror(start_informers(informers, stop, on_synced=synced), informers)
