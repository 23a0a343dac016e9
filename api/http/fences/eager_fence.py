"""A coroutine run at once, up to its first wait, and carried on by a task only if it waits at all: Python 3.12's eager
tasks (``asyncio.eager_task_factory``), re-created for 3.11, which the project supports.

Why: a filter usually answers without waiting. A task of its own cost it more than the rest of the extender's part,
and its reply could go out only in a later turn of the loop.

Relies on: the coroutine protocol alone (``send``, ``throw``, ``close``, and an awaitable's ``__await__`` yielding
what the task waits on), as ``yield from`` drives a coroutine. No library internals, but one rule every caller keeps:
within that first step ``asyncio.current_task()`` is None (3.12's eager tasks have a task from the start), so code
run this way must not ask for its task (``api.http.http2`` runs the verbs so; they never do).

Can go: when ``requires-python`` reaches 3.12. Then ``api.http.http2`` starts its answers as
``asyncio.Task(coroutine, loop=loop, eager_start=True)`` (or sets ``asyncio.eager_task_factory`` on the loop), the
rule above goes with it, and so does this module (``tests/api/http/fences/test_eager.py`` fails on that day to say so).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any

__all__ = ["start_eagerly"]


def start_eagerly(coroutine: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop) -> asyncio.Task[None] | None:
    """Run ``coroutine`` up to its first wait; the task that carries it on from there, or None if it ended. What it
    raises in that first step is raised here."""
    try:
        waiting_on = coroutine.send(None)
    except StopIteration:
        return None
    return loop.create_task(_carry_on(coroutine, waiting_on))


class _Resumed:
    """Awaits what a coroutine started by hand is waiting on, then drives it on to its end, as ``yield from``
    would have from the start: what the task sends or throws (a cancellation) reaches the coroutine."""

    def __init__(self, coroutine: Coroutine[Any, Any, None], waiting_on: Any) -> None:
        self._coroutine = coroutine
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, None]:
        coroutine, waiting_on = self._coroutine, self._waiting_on
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as err:  # passed on, as yield from does
                try:
                    waiting_on = coroutine.throw(err)
                except StopIteration:
                    return
            else:
                try:
                    waiting_on = coroutine.send(sent)
                except StopIteration:
                    return


async def _carry_on(coroutine: Coroutine[Any, Any, None], waiting_on: Any) -> None:
    await _Resumed(coroutine, waiting_on)
