"""The bind barrier on its own: release once satisfied, time-outs leave, a retried call replaces its stale self."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.coordinator.barrier import Arrival, BarrierTimeout, BindBarrier
from tests.extender_support import FakeClock


def _arrival(pod: str, loop: asyncio.AbstractEventLoop, group: str = "w") -> Arrival:
    return Arrival(pod=pod, uid=pod, node="n", group=group, arrived_at=0.0, outcome=loop.create_future())


def test_release_happens_once_for_everyone_when_the_group_is_complete() -> None:
    released: list[list[str]] = []

    async def release(taken: list[Arrival]) -> None:
        released.append([a.pod for a in taken])
        for a in taken:
            a.outcome.set_result("")

    async def main() -> list[str]:
        barrier = BindBarrier()
        loop = asyncio.get_running_loop()
        calls = [
            barrier.wait(
                "g", _arrival(p, loop), satisfied=lambda arrived: arrived.get("w", 0) >= 3, release=release, timeout=1
            )
            for p in ("a", "b", "c")
        ]
        return list(await asyncio.gather(*calls))

    assert asyncio.run(main()) == ["", "", ""]
    assert released == [["a", "b", "c"]]


def test_time_out_leaves_the_barrier_and_reports_who_was_there() -> None:
    async def never(taken: list[Arrival]) -> None:
        raise AssertionError("must not release")

    async def main() -> None:
        barrier = BindBarrier()
        loop = asyncio.get_running_loop()
        with pytest.raises(BarrierTimeout) as caught:
            await barrier.wait("g", _arrival("a", loop), satisfied=lambda arrived: False, release=never, timeout=0.05)
        assert caught.value.waiting == {"w": 1}
        assert barrier.waiting("g") == []

    asyncio.run(main())


def test_a_failing_release_still_answers_everyone() -> None:
    async def broken(taken: list[Arrival]) -> None:
        raise RuntimeError("api down")

    async def main() -> str:
        barrier = BindBarrier()
        loop = asyncio.get_running_loop()
        return await barrier.wait("g", _arrival("a", loop), satisfied=lambda arrived: True, release=broken, timeout=1)

    assert "api down" in asyncio.run(main())


def test_a_retried_bind_replaces_its_stale_arrival() -> None:
    async def main() -> tuple[str, dict[str, int]]:
        clock = FakeClock()  # time moves only when told: the stale call cannot time out before it is replaced
        barrier = BindBarrier(timer=clock.sleep)
        loop = asyncio.get_running_loop()
        stale = _arrival("a", loop)
        first = asyncio.ensure_future(
            barrier.wait("g", stale, satisfied=lambda arrived: False, release=_never, timeout=1)
        )
        await clock.until_sleeping(1)
        second = asyncio.ensure_future(
            barrier.wait("g", _arrival("a", loop), satisfied=lambda arrived: False, release=_never, timeout=1)
        )
        outcome = await first
        counts = barrier.arrived_per_group("g")
        assert not second.done()
        clock.advance(1)
        with pytest.raises(BarrierTimeout):
            await second
        return outcome, counts

    outcome, counts = asyncio.run(main())
    assert "superseded" in outcome and counts == {"w": 1}


async def _never(taken: list[Arrival]) -> None:
    raise AssertionError("must not release")
