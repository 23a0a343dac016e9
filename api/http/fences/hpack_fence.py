"""hpack's internals that serving relies on: whether an encoder owes its peer a dynamic table size update.

Why: ``api.http.header_blocks.RememberingEncoder`` repeats the block it made for the same header fields while the
dynamic table is unchanged. A block owed a size update (RFC 7541 §6.3: the peer's ``SETTINGS_HEADER_TABLE_SIZE``
changed, and h2 set ``Encoder.header_table_size``) must not be repeated from memory: hpack's ``Encoder.encode`` puts
the update at the head of the next block it makes, and only then. hpack says so through no public name: the encoder's
``header_table`` (a ``hpack.table.HeaderTable``) sets ``resized`` when its size changes, and ``encode`` clears it once
the update is written.

The decoder needs nothing private: ``header_table_size``, ``max_allowed_table_size`` and ``max_header_list_size`` are
hpack's documented attributes. ``tests/api/http/fences/test_hpack.py`` checks ``resized`` still means what ``encode``
does.
"""

from __future__ import annotations

from hpack import Encoder

__all__ = ["owes_size_update"]


def owes_size_update(encoder: Encoder) -> bool:
    """Whether ``encoder``'s next block will start with a dynamic table size update (RFC 7541 §6.3)."""
    return bool(encoder.header_table.resized)
