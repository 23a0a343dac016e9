"""The JSON/YAML text users hand us — snapshots, levels files, PodCliqueSet files — parsed under one set of rules,
so every kind of file refuses the same bad text with the same one-line reason instead of a traceback or a hang.

The rules: JSON when the text starts like JSON (the fast path for `kubectl get -o json` dumps), else YAML through
PyYAML's safe loader; nesting deeper than the parsers can follow is refused; YAML aliases are allowed (people write
anchors in hand-made manifests) only while what they expand to stays under ``MAX_ALIAS_NODES`` — a few nested
aliases in a small file otherwise become billions of nodes for whatever walks the result.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

__all__ = ["MAX_ALIAS_NODES", "UnreadableText", "parse_stream", "parse_text"]

MAX_ALIAS_NODES = 100_000


class UnreadableText(ValueError):
    """The text is not JSON or YAML we will read; the message is one line saying why (the caller names the file)."""


class _BoundedAliasLoader(yaml.SafeLoader):
    """A safe loader that counts the nodes its aliases stand for and refuses a document past the budget."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}
        self._expanded = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        alias = self.peek_event() if self.check_event(yaml.AliasEvent) else None  # type: ignore[no-untyped-call]
        node = super().compose_node(parent, index)
        if alias is not None and node is not None:
            self._expanded += self._size(node)
            if self._expanded > MAX_ALIAS_NODES:
                mark = alias.start_mark
                raise UnreadableText(
                    f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} nodes, which is not allowed "
                    f"(*{alias.anchor} at line {mark.line + 1}, column {mark.column + 1})"
                )
        return node

    def _size(self, node: yaml.Node) -> int:
        """Nodes in the subtree with every alias expanded; memoised, so shared subtrees cost one walk."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._size(key) + self._size(value) for key, value in node.value)
        self._sizes[id(node)] = size
        return size


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def _text(raw: str | bytes) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UnreadableText(f"not UTF-8 text (byte {err.start})") from None


def parse_text(raw: str | bytes) -> Any:
    """One JSON value or YAML document (bytes must be UTF-8)."""
    text = _text(raw)
    try:
        if text.lstrip()[:1] in ("{", "["):
            return json.loads(text)
        return yaml.load(text, Loader=_BoundedAliasLoader)
    except UnreadableText:
        raise
    except RecursionError:  # both parsers recurse: [[[[…]]]] thousands deep
        raise UnreadableText("nested too deeply to parse") from None
    except (ValueError, yaml.YAMLError) as err:
        # ValueError covers JSONDecodeError and integers longer than Python's 4,300-digit conversion limit.
        raise UnreadableText(f"not valid JSON or YAML: {_one_line(err)}") from None


def parse_stream(raw: str | bytes) -> list[Any]:
    """Every non-empty document of a YAML stream (``---``-separated; JSON is one document; bytes must be UTF-8)."""
    text = _text(raw)
    try:
        return [doc for doc in yaml.load_all(text, Loader=_BoundedAliasLoader) if doc is not None]
    except UnreadableText:
        raise
    except RecursionError:
        raise UnreadableText("nested too deeply to parse") from None
    except (ValueError, yaml.YAMLError) as err:
        raise UnreadableText(f"not valid JSON or YAML: {_one_line(err)}") from None
