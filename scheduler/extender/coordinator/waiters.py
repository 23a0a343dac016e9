"""Bind calls waiting a moment for their own outcome.

A ready member's bind call waits here, briefly (well under kube-scheduler's ``httpTimeout``), in case its gang
completes meanwhile; the release answers it with its own outcome, a deleted PodGang or a change of leadership
with the reason. A call that is not answered in time leaves with ``None`` and its member stays ready.

The futures live on the event loop that serves the calls; ``answer`` may be called from any thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping

__all__ = ["BindWaiters", "Timer"]

Timer = Callable[[float], Awaitable[None]]
"""Completes once the given seconds have passed (``asyncio.sleep``; a simulated clock's sleep in tests)."""


class BindWaiters:
    def __init__(self, *, timer: Timer = asyncio.sleep) -> None:
        self._timer = timer
        self._waiting: dict[str, asyncio.Future[str]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None

    def register(self, pod: str) -> asyncio.Future[str]:
        """Start waiting for ``pod``'s outcome (before anything that may answer it runs). A newer call for the
        same pod takes over: the older one is answered that it was superseded."""
        loop = asyncio.get_running_loop()
        self._loop, self._thread = loop, threading.get_ident()
        stale = self._waiting.get(pod)
        if stale is not None and not stale.done():
            stale.set_result(f"superseded by a newer bind call for {pod}")
        outcome: asyncio.Future[str] = loop.create_future()
        self._waiting[pod] = outcome
        return outcome

    async def wait(self, pod: str, outcome: asyncio.Future[str], *, seconds: float) -> str | None:
        """Wait up to ``seconds`` for the registered outcome ("" = bound, else the error); None when not answered."""
        expiry = asyncio.ensure_future(self._timer(seconds))
        try:
            # ``asyncio.wait`` never cancels the outcome: a call cancelled by its client leaves it to the release.
            await asyncio.wait((outcome, expiry), return_when=asyncio.FIRST_COMPLETED)
        finally:
            expiry.cancel()
            if self._waiting.get(pod) is outcome:
                del self._waiting[pod]
        return outcome.result() if outcome.done() else None

    def answer(self, pods: Iterable[str], outcome: str | Mapping[str, str]) -> None:
        """Answer the waiting calls of ``pods`` (one text, or one per pod); a pod nobody waits for is skipped."""
        pods = list(pods)
        if self._loop is None or not pods:
            return
        if threading.get_ident() == self._thread:
            self._answer(pods, outcome)
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._answer, pods, outcome)

    def _answer(self, pods: list[str], outcome: str | Mapping[str, str]) -> None:
        for pod in pods:
            future = self._waiting.get(pod)
            if future is not None and not future.done():
                future.set_result(outcome if isinstance(outcome, str) else outcome[pod])
