"""A pass's independent writes sent together: a PodClique's missing pods, a gang's gates.

One after another, a pass of a PodCliqueSet of N pods waits N round trips for its creates and N more for its gate
lifts, and a 1,000-pod clique waits a thousand; the API server, meanwhile, is idle for that pass. ``Fanout.map``
sends up to ``concurrency`` of them at once on a pool every worker shares (so the process never has more in flight
than that), still through the client's QPS/burst bucket. It returns when all have answered, in the order given; the
first error is raised then, after the others ended (the pass fails as a whole and the next pass sees what was
written). Only leaf calls go in: a call that itself fanned out could wait on a pool it fills.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["Fanout"]

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


class Fanout:
    def __init__(self, concurrency: int = 1) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.concurrency = concurrency
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="reconcile-write") if concurrency > 1 else None

    def map(self, call: Callable[[ItemT], ResultT], items: Sequence[ItemT]) -> list[ResultT]:
        if self._pool is None or len(items) < 2:
            return [call(item) for item in items]
        futures: list[Future[ResultT]] = [self._pool.submit(call, item) for item in items]
        error: BaseException | None = None
        results: list[ResultT] = []
        for future in futures:
            try:
                results.append(future.result())
            except BaseException as err:  # every call ends before the pass goes on; the first error is the pass's
                error = error or err
        if error is not None:
            raise error
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
