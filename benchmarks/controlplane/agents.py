"""``Agent``: a loop of its own that lists and watches the API, as the cluster's node and controller agents do
(the kubelet stand-in, the garbage collector and token controller stand-ins). Each has its own client, on its own
thread, apart from the tests' calls."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

import aiohttp

from benchmarks.controlplane.rest import Api, ApiError

__all__ = ["Agent", "Handler"]

log = logging.getLogger(__name__)
Handler = Callable[[str, dict[str, Any]], None]  # (event type, object); the list's items come as ADDED


class Agent:
    name = "agent"

    def __init__(self, api: Api) -> None:
        self.api = api
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"e2e-{self.name}", daemon=True)
        self.client: Api | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def watches(self) -> list[tuple[str, dict[str, str], Handler]]:
        """(path, query, handler) of every list-and-watch the agent keeps."""
        raise NotImplementedError

    def _run(self) -> None:
        client = self.client = Api(self.api.server, token=self.api.token, ca=self.api.ca)
        try:
            client.run(self._main(client), timeout=None)
        finally:
            client.close()

    async def _main(self, client: Api) -> None:
        tasks = [asyncio.create_task(self._informer(client, *w)) for w in self.watches()]
        while not self._stop.is_set():
            await asyncio.sleep(0.2)
        others = set(tasks) | (asyncio.all_tasks() - {asyncio.current_task()})  # informers, and what they spawned
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    async def _informer(self, client: Api, path: str, query: dict[str, str], handle: Handler) -> None:
        """List, then watch from the list's version; list again whenever the stream ends or fails."""
        while True:
            try:
                listed = await client.acall("GET", path, **query)
                for item in listed["items"]:
                    handle("ADDED", item)
                version = listed["metadata"]["resourceVersion"]
                async for event in client.watch(path, resource_version=version, timeoutSeconds="300", **query):
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        handle(event["type"], event["object"])
            except (TimeoutError, ApiError, OSError, aiohttp.ClientError) as err:
                # A restarted kube-apiserver ends every stream (aiohttp's ServerDisconnectedError, not an OSError):
                # list again, as an informer does, or every later scenario loses this agent.
                log.warning("%s: watch of %s: %s: %s", self.name, path, type(err).__name__, err)
                await asyncio.sleep(1)

    def spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        """Run ``coroutine`` on the agent's loop (call from a handler). A task the agent's stop cancels before it
        ever ran closes ``coroutine`` too: left unawaited, it would warn when collected, and under ``-W error`` fail
        whichever test was tearing down then (deleting its PodCliqueSet as the control plane stopped)."""
        task = asyncio.get_running_loop().create_task(self._guarded(coroutine))
        task.add_done_callback(lambda _: coroutine.close())
        return task

    async def _guarded(self, coroutine: Any) -> None:
        try:
            await coroutine
        except asyncio.CancelledError:
            raise
        except Exception as err:  # an agent keeps going whatever one object does
            self.errors.append(f"{self.name}: {err}")
            log.exception("%s", self.name)
