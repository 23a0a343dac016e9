"""``BindTimes``: when each pod of a namespace was first seen bound, from a list-and-watch of its bound pods only
(``spec.nodeName!=``: one event per pod as it is bound, not every status write), so following thousands of binds
costs the API server and this process little. Like an informer, it lists again whenever the watch ends or fails."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from benchmarks.controlplane.rest import Api, ApiError

__all__ = ["BindTimes"]

_QUERY = {"fieldSelector": "spec.nodeName!="}


class BindTimes:
    """``bound_only=False``: when each pod was first seen at all (its creation), from a watch of every pod."""

    def __init__(self, api: Api, namespace: str, *, bound_only: bool = True) -> None:
        self.path = f"/api/v1/namespaces/{namespace}/pods"
        self._query = _QUERY if bound_only else {}
        self.errors: list[str] = []  # why a watch ended early, for a test that waited in vain
        self._seen: dict[str, float] = {}
        self._future = api.background(self._follow(api))

    async def _follow(self, api: Api) -> None:
        while True:
            try:
                listed = await api.acall("GET", self.path, **self._query)
                now = time.monotonic()
                for pod in listed["items"]:
                    self._seen.setdefault(pod["metadata"]["name"], now)
                version = listed["metadata"]["resourceVersion"]
                watch = api.watch(self.path, resource_version=version, timeoutSeconds="600", **self._query)
                async for event in watch:
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._seen.setdefault(event["object"]["metadata"]["name"], time.monotonic())
                    elif event["type"] == "ERROR":
                        self.errors.append(str(event["object"].get("message")))
                        break
            except (ApiError, aiohttp.ClientError, ValueError, TimeoutError) as err:
                self.errors.append(f"{type(err).__name__}: {err}")
                await asyncio.sleep(0.5)

    def first_bound(self) -> dict[str, float]:
        """Pod name → when it was first seen bound (``time.monotonic``)."""
        return dict(self._seen)

    def count(self) -> int:
        if self._future.done() and not self._future.cancelled():
            self._future.result()  # the watch loop died: raise why
        return len(self._seen)

    def stop(self) -> None:
        self._future.cancel()
