"""Per-group sums, largest-first prefix sums and fewest-to-cover counts, for many groups of nodes in one pass.

The bounds ask the same question of every candidate domain of a required pack ("how many NVLink domains inside
it, largest first, hold 16 GPUs?"), and of several needs at once (pods of each group, units of each resource);
asking it domain by domain and need by need cost a hundred small numpy calls per domain. Here a *group* is a set
of candidate nodes (``groups[i]`` is node ``i``'s group, -1 for none) and, inside a group, nodes are pooled by a
sub-domain id (a level's domain, or the node itself). One ``bincount`` and one ``lexsort`` answer the question for
every need and every group at once: answers are arrays of shape (needs, groups).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from placement.arrays import Ints

__all__ = ["NEVER", "Pools", "Ranked", "fewest_to_cover"]

NEVER = np.iinfo(np.int64).max // 4  # "no number of pools covers it"; large, yet safe to add a few of
_DENSE = 8  # number pools by a dense table when it has at most this many slots per node (no sort needed)


def fewest_to_cover(capacities: Iterable[int], need: int) -> int | None:
    """How many of ``capacities``, largest first, it takes to reach ``need``; ``None`` if all of them fall short
    (the one-group question, for callers holding a single list)."""
    if need <= 0:
        return 0
    values = capacities if isinstance(capacities, np.ndarray) else np.fromiter(capacities, np.int64)
    ordered = np.sort(values)[::-1]
    total = np.cumsum(ordered)
    if not len(total) or total[-1] < need:
        return None
    return int(np.searchsorted(total, need)) + 1


class Pools:
    """Nodes pooled per (group, sub-domain). The structure is built once and reused for every weight vector."""

    def __init__(self, groups: Ints, sub: Ints, count: int) -> None:
        self.count = count
        self.keep = np.flatnonzero(groups >= 0)
        span = int(sub.max()) + 1 if len(sub) else 1
        pairs = groups[self.keep] * span + sub[self.keep]
        if count * span <= _DENSE * len(groups) + 1024:
            present = np.bincount(pairs, minlength=count * span) > 0
            unique = np.flatnonzero(present)
            self.inverse: Ints = (np.cumsum(present) - 1)[pairs]
        else:
            unique, inverse = np.unique(pairs, return_inverse=True)
            self.inverse = inverse.reshape(-1)
        self.group: Ints = unique // span  # each pool's group
        self.sub: Ints = unique % span  # each pool's sub-domain id

    def sums(self, weights: Sequence[Ints]) -> Ints:
        """Each pool's total of each weight vector (one value per node): shape (vectors, pools)."""
        pools = len(self.group)
        rows = np.arange(len(weights), dtype=np.int64)[:, None] * pools
        stacked = np.stack([w[self.keep] for w in weights]) if len(weights) else np.zeros((0, len(self.keep)))
        flat = np.bincount((rows + self.inverse[None, :]).ravel(), weights=stacked.ravel(), minlength=rows.size * pools)
        return flat.astype(np.int64).reshape(len(weights), pools)

    def ranked(self, weights: Sequence[Ints], only: npt.NDArray[np.bool_] | None = None) -> Ranked:
        """Pool totals of each weight vector, largest first within each (vector, group); ``only`` (one flag per
        pool) keeps some pools."""
        sums = self.sums(weights)
        group = self.group
        if only is not None:
            sums, group = sums[:, only], group[only]
        rows = np.arange(len(weights), dtype=np.int64)[:, None] * self.count
        return Ranked((rows + group[None, :]).ravel(), sums.ravel(), rows=len(weights), count=self.count)


class Ranked:
    """Values per (row, group), largest first: prefix sums and cover counts for every row and group at once.
    Arguments and answers are arrays of shape (rows, groups); a (rows, 1) or scalar argument is broadcast."""

    def __init__(self, slot: Ints, values: Ints, *, rows: int, count: int) -> None:
        self.shape = (rows, count)
        values = np.maximum(values, 0)  # a negative value never helps cover anything
        order = np.lexsort((-values, slot))
        self._slot = slot[order]
        self._size = np.bincount(self._slot, minlength=rows * count).astype(np.int64)
        self._start = np.concatenate(([0], np.cumsum(self._size)[:-1])).astype(np.int64)
        self._prefix = np.concatenate(([0], np.cumsum(values[order]))).astype(np.int64)

    @property
    def size(self) -> Ints:
        return self._size.reshape(self.shape)

    def top(self, taken: Ints | int) -> Ints:
        """Per (row, group), the sum of its ``taken`` largest values (all of them when it has fewer)."""
        wanted = np.broadcast_to(taken, self.shape).ravel()
        end = self._start + np.minimum(np.maximum(wanted, 0), self._size)
        found: Ints = (self._prefix[end] - self._prefix[self._start]).reshape(self.shape)
        return found

    def fewest(self, amount: Ints | int) -> Ints:
        """Per (row, group), how many of its values, largest first, reach ``amount``: 0 when it is not positive,
        :data:`NEVER` when all of them fall short."""
        wanted = np.broadcast_to(amount, self.shape).ravel()
        inclusive = self._prefix[1:] - self._prefix[self._start[self._slot]]  # running total within the slot
        short = inclusive < wanted[self._slot]
        # Values are non-negative, so the running total only grows: the values before the first one that reaches
        # the amount are exactly those still short of it.
        count = np.bincount(self._slot[short], minlength=len(wanted)).astype(np.int64) + 1
        count[self._prefix[self._start + self._size] - self._prefix[self._start] < wanted] = NEVER
        count[wanted <= 0] = 0
        return count.reshape(self.shape)
