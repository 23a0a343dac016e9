"""Single-point corruption of a JSON document, for the fuzz tests of every loader that reads user files."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def corrupt(document: Any, *, pick: int, replacement: Any) -> Any:
    """A copy of `document` with the value at one of its paths (chosen by `pick`, the root included) replaced."""
    copied = copy.deepcopy(document)
    paths = _paths(copied)
    path = paths[pick % len(paths)]
    if not path:
        return replacement
    target = copied
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = replacement
    return copied
