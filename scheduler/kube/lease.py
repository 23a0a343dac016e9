"""``LeaseElector``: one active extender replica, elected with a ``coordination.k8s.io/v1`` Lease.

The algorithm is client-go's ``leaderelection``: a candidate reads the Lease; if another holder renewed it within
``lease_duration`` *as observed on our own clock* (the time we last saw the record change, so clock skew between
replicas does not matter), it waits; otherwise it writes itself as holder, with the resourceVersion it read, so of
two candidates racing for an expired Lease exactly one wins (the other gets 409 Conflict). The leader renews every
``retry_period``; if it has not renewed for ``renew_deadline`` it stops calling itself leader — before any standby
can take over, since ``renew_deadline < lease_duration``. On stop the leader releases the Lease so a standby takes
over at once instead of after ``lease_duration``.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient, CoordinationV1Api, V1Lease, V1LeaseSpec, V1ObjectMeta
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from scheduler.kube.connect import WRITE_TIMEOUT, describe_error, response_json

__all__ = ["LeaseElector", "LeaseTiming"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseTiming:
    """Seconds; client-go's defaults."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("lease timing must satisfy retry_period < renew_deadline < lease_duration")


def _micro_time(moment: datetime) -> datetime:
    # The client serialises datetimes with isoformat(), which drops the fraction when it is zero; the API server
    # parses a Lease's MicroTime with exactly six fractional digits. One microsecond keeps the fraction present.
    return moment if moment.microsecond else moment.replace(microsecond=1)


class LeaseElector:
    """Implements ``scheduler.extender.leadership.Leadership``. ``step`` is one attempt (tests drive it with fake
    clocks); ``start`` runs attempts every ``retry_period`` in a daemon thread until ``stop`` is set, then releases."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        namespace: str,
        name: str = "grove-extender",
        identity: str | None = None,
        timing: LeaseTiming | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        request_timeout: tuple[float, float] = WRITE_TIMEOUT,
    ) -> None:
        self._api = CoordinationV1Api(api_client)
        self._namespace = namespace
        self._name = name
        self.identity = identity or socket.gethostname()
        self._timing = timing or LeaseTiming()
        self._clock = clock
        self._wall = wall
        # (connect, read) seconds per API call; tests that hold requests at a gate on a loaded machine pass more.
        self._request_timeout = request_timeout
        self._lock = threading.Lock()
        self._leading = False
        self._renewed_at = 0.0
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0

    # --- Leadership ----------------------------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True while we hold the Lease and renewed it within ``renew_deadline``; never blocks."""
        with self._lock:
            return self._leading and self._clock() - self._renewed_at < self._timing.renew_deadline

    # --- election ------------------------------------------------------------------------------------------------

    def step(self) -> bool:
        """One acquire-or-renew attempt; returns whether we lead afterwards."""
        try:
            won = self._try_acquire_or_renew()
        except (ApiException, HTTPError, OSError) as err:
            log.warning("lease attempt failed lease=%s/%s error=%s", self._namespace, self._name, describe_error(err))
            won = False
        now = self._clock()
        with self._lock:
            if won:
                if not self._leading:
                    log.info("became leader lease=%s/%s identity=%s", self._namespace, self._name, self.identity)
                self._leading, self._renewed_at = True, now
            elif self._leading and now - self._renewed_at >= self._timing.renew_deadline:
                log.warning("lost leadership lease=%s/%s identity=%s", self._namespace, self._name, self.identity)
                self._leading = False
            return self._leading and now - self._renewed_at < self._timing.renew_deadline

    def _read(self) -> dict[str, Any] | None:
        try:
            response = self._api.read_namespaced_lease(
                self._name, self._namespace, _preload_content=False, _request_timeout=self._request_timeout
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        lease: dict[str, Any] = response_json(response)
        return lease

    def _spec(self, *, acquired: datetime, transitions: int, holder: str, duration: int) -> V1LeaseSpec:
        return V1LeaseSpec(
            holder_identity=holder,
            lease_duration_seconds=duration,
            acquire_time=_micro_time(acquired),
            renew_time=_micro_time(self._wall()),
            lease_transitions=transitions,
        )

    def _try_acquire_or_renew(self) -> bool:
        lease = self._read()
        duration = max(1, round(self._timing.lease_duration))
        if lease is None:
            body = V1Lease(
                metadata=V1ObjectMeta(name=self._name, namespace=self._namespace),
                spec=self._spec(acquired=self._wall(), transitions=0, holder=self.identity, duration=duration),
            )
            return self._write(self._api.create_namespaced_lease, namespace=self._namespace, body=body)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("acquireTime"), spec.get("leaseTransitions"))
        now = self._clock()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        if holder and holder != self.identity and now < self._observed_at + self._timing.lease_duration:
            return False  # someone else holds a live lease
        ours = holder == self.identity
        acquired = datetime.fromisoformat(spec["acquireTime"]) if ours and spec.get("acquireTime") else self._wall()
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if ours else 1)
        body = V1Lease(
            metadata=V1ObjectMeta(
                name=self._name, namespace=self._namespace, resource_version=lease["metadata"]["resourceVersion"]
            ),
            spec=self._spec(acquired=acquired, transitions=transitions, holder=self.identity, duration=duration),
        )
        return self._write(self._api.replace_namespaced_lease, name=self._name, namespace=self._namespace, body=body)

    def _write(self, call: Callable[..., Any], **kwargs: Any) -> bool:
        try:
            response_json(call(**kwargs, _preload_content=False, _request_timeout=self._request_timeout))
        except ApiException as err:
            if err.status == 409:  # another candidate wrote first (or created it first)
                return False
            raise
        return True

    def release(self) -> None:
        """Give the Lease up if we hold it, so a standby need not wait ``lease_duration``."""
        with self._lock:
            was_leading, self._leading = self._leading, False
        if not was_leading:
            return
        try:
            lease = self._read()
            spec = (lease or {}).get("spec") or {}
            if lease is None or spec.get("holderIdentity") != self.identity:
                return
            body = V1Lease(
                metadata=V1ObjectMeta(
                    name=self._name, namespace=self._namespace, resource_version=lease["metadata"]["resourceVersion"]
                ),
                spec=self._spec(
                    acquired=self._wall(), transitions=int(spec.get("leaseTransitions") or 0), holder="", duration=1
                ),
            )
            self._write(self._api.replace_namespaced_lease, name=self._name, namespace=self._namespace, body=body)
            log.info("released lease=%s/%s identity=%s", self._namespace, self._name, self.identity)
        except (ApiException, HTTPError, OSError) as err:
            log.warning("lease release failed lease=%s/%s error=%s", self._namespace, self._name, describe_error(err))

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.step()
            stop.wait(self._timing.retry_period)
        self.release()

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="lease-elector", daemon=True)
        thread.start()
        return thread
