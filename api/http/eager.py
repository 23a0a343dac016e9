"""A coroutine run at once, up to its first wait, and carried on by a task only if it waits at all (what Python 3.12's
eager tasks do; the project supports 3.11). A filter usually answers without waiting: a task of its own cost it more
than the rest of the extender's part, and its reply could go out only in a later turn of the loop. Within that first
step ``asyncio.current_task()`` is None."""

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
