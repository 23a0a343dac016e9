"""``api.http.fences.eager_fence``: Python 3.12's eager tasks re-created for 3.11, and how they behave as
``api.http.http2`` relies on (run at once up to the first wait, carried on by a task only if it waits, what the
task is sent or thrown reaching the coroutine). It fails the day the project requires 3.12: then the module goes,
for ``asyncio.eager_task_factory``."""

from __future__ import annotations

import asyncio
import sys
import tomllib

import pytest
from packaging.specifiers import SpecifierSet

from api.http.fences.eager_fence import start_eagerly
from tests.conftest import REPO_ROOT


def test_the_fence_stands_only_while_the_project_supports_python_3_11() -> None:
    requires = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert SpecifierSet(requires).contains("3.11.0"), (
        f"requires-python is {requires!r}: Python 3.12's asyncio.eager_task_factory (or Task(eager_start=True)) "
        "replaces api.http.fences.eager_fence; remove it and start api.http.http2's answers as eager tasks"
    )


def test_a_coroutine_that_never_waits_runs_whole_at_once_without_a_task() -> None:
    seen: list[object] = []

    async def answer() -> None:
        seen.append(asyncio.current_task())

    async def run() -> list[asyncio.Task[None] | None]:
        loop = asyncio.get_running_loop()
        started: list[asyncio.Task[None] | None] = []
        loop.call_soon(lambda: started.append(start_eagerly(answer(), loop)))  # as a protocol's data_received does
        await asyncio.sleep(0)
        return started

    assert asyncio.run(run()) == [None]
    assert seen == [None]  # called from a callback, as api.http.http2 does: no task in the first step


def test_a_coroutine_that_waits_runs_to_its_first_wait_at_once_then_a_task_carries_it_on() -> None:
    steps: list[str] = []

    async def answer() -> None:
        steps.append("first")
        await asyncio.sleep(0)
        steps.append(f"then, in a task: {asyncio.current_task() is not None}")

    async def run() -> None:
        task = start_eagerly(answer(), asyncio.get_running_loop())
        assert steps == ["first"] and task is not None
        await task

    asyncio.run(run())
    assert steps == ["first", "then, in a task: True"]


def test_what_the_first_step_raises_is_raised_at_once() -> None:
    async def answer() -> None:
        raise KeyError("bad")

    async def run() -> None:
        with pytest.raises(KeyError):
            start_eagerly(answer(), asyncio.get_running_loop())

    asyncio.run(run())


def test_cancelling_the_task_reaches_the_coroutine_where_it_waits() -> None:
    seen: list[str] = []

    async def answer() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def run() -> None:
        task = start_eagerly(answer(), asyncio.get_running_loop())
        assert task is not None
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert seen == ["cancelled"]


def test_a_value_the_awaited_future_resolves_to_reaches_the_coroutine() -> None:
    async def answer(future: asyncio.Future[int], out: list[int]) -> None:
        out.append(await future)

    async def run() -> list[int]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        out: list[int] = []
        task = start_eagerly(answer(future, out), loop)
        assert task is not None
        loop.call_soon(future.set_result, 7)
        await task
        return out

    assert asyncio.run(run()) == [7]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="the replacement exists from Python 3.12")
def test_the_replacement_runs_the_first_step_at_once_too() -> None:
    steps: list[str] = []

    async def answer() -> None:
        steps.append("first")
        await asyncio.sleep(0)
        steps.append("then")

    async def run() -> None:
        loop = asyncio.get_running_loop()
        loop.set_task_factory(asyncio.eager_task_factory)  # type: ignore[attr-defined]
        task = loop.create_task(answer())
        assert steps == ["first"]
        await task

    asyncio.run(run())
    assert steps == ["first", "then"]
