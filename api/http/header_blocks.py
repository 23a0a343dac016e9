"""HPACK header blocks remembered while the compression context allows it: a decoder and an encoder for ``h2``.

kube-scheduler sends the same header fields with every call, and the extender answers with the same few. Once the
fields sit in the connection's dynamic table, each block is a handful of *indexed* field representations (RFC 7541
§6.1), and decoding or encoding it again costs h2's pure-Python ``hpack`` a field-by-field walk with a log call per
field, on every call, to reach the same fields as last time (``benchmarks/bench_http2.py`` measures a call's CPU;
figures in docs/bench_http2.md).

A block made only of indexed representations leaves the dynamic table as it found it, so while the table does not
change, the same bytes decode to the same fields and the same fields encode to the same bytes. Anything else (a
literal that inserts, a table size update, new settings) may change what an index means: it empties what is
remembered. ``h2`` takes these as drop-in replacements for its ``decoder`` and ``encoder`` attributes (swapped in by
``api.http.fences.h2_fence``); the one thing hpack tells only privately, whether the encoder owes a table size
update, is asked of ``api.http.fences.hpack_fence``.

The decoder also refuses, before decoding anything, a block longer than the header list it may decode to, or one of
more than ``MAX_HEADER_FIELDS`` fields: hpack checks the list's size only as it decodes, field by field in Python, so a
large block (a flood of CONTINUATION frames, CVE-2024-27316) or thousands of one-byte indexed fields held the event
loop for the whole walk before being refused. Every field representation decodes to at least as many bytes of the
header list as it takes in the block (RFC 9113 §6.5.2 counts each field's name and value plus 32), unless it uses
Huffman codes longer than the bytes they stand for, which no encoder chooses. The refusal ends the connection
(hpack's ``OversizedHeaderListError``, which h2 answers with GOAWAY ``ENHANCE_YOUR_CALM``): the block was not
decoded, so the compression context is lost.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hpack import Decoder, Encoder, HeaderTuple
from hpack.exceptions import OversizedHeaderListError

from api.http.fences.hpack_fence import owes_size_update
from api.http.limits import MAX_HEADER_FIELDS

__all__ = ["MAX_REMEMBERED", "RememberingDecoder", "RememberingEncoder", "fields_over", "indexed_only"]

MAX_REMEMBERED = 64
"""Blocks remembered per connection (kube-scheduler's two verbs need a few: one per body length); emptied when full."""

_MAX_BLOCK_BYTES = 1024
"""Longer blocks are not remembered: kube-scheduler's indexed blocks are a dozen bytes, and a peer must not make a
connection hold many large ones."""


def indexed_only(block: bytes) -> bool:
    """Whether ``block`` is made only of indexed field representations (RFC 7541 §6.1: the high bit set, then the
    index as an integer with a 7-bit prefix), which read the dynamic table and never change it."""
    at, end = 0, len(block)
    while at < end:
        first = block[at]
        if first < 0x80:
            return False  # a literal (§6.2) or a dynamic table size update (§6.3)
        at += 1
        if first == 0xFF:  # the index does not fit the prefix: continuation bytes follow while the high bit is set
            while at < end and block[at] >= 0x80:
                at += 1
            at += 1
    return at == end


def fields_over(block: bytes, limit: int) -> bool:
    """Whether ``block`` holds more than ``limit`` field representations (RFC 7541 §6), read without decoding any
    string and stopping at the first one over. A block cut short says False: hpack's decoder then says why."""
    at, end, fields = 0, len(block), 0
    while at < end:
        first = block[at]
        if first & 0x80:  # indexed (§6.1): an index alone
            at = _skip_integer(block, at, 0x7F)
        elif first & 0xE0 == 0x20:  # a dynamic table size update (§6.3): not a field
            at = _skip_integer(block, at, 0x1F)
            continue
        else:  # a literal (§6.2): an index, or a name when it is 0, then a value
            mask = 0x3F if first & 0xC0 == 0x40 else 0x0F
            named = first & mask == 0
            at = _skip_integer(block, at, mask)
            if named:
                at = _skip_string(block, at)
            at = _skip_string(block, at)
        fields += 1
        if fields > limit:
            return True
    return False


def _skip_integer(block: bytes, at: int, mask: int) -> int:
    """Past an integer whose prefix is ``mask`` of the byte at ``at`` (RFC 7541 §5.1)."""
    if block[at] & mask != mask:
        return at + 1
    at += 1
    while at < len(block) and block[at] & 0x80:
        at += 1
    return at + 1


def _skip_string(block: bytes, at: int) -> int:
    """Past a string literal (RFC 7541 §5.2): its length, then that many octets."""
    if at >= len(block):
        return len(block) + 1
    length, shift = block[at] & 0x7F, 0
    at += 1
    if length == 0x7F:
        while at < len(block):
            byte = block[at]
            at += 1
            length += (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80 or shift > 28:
                break
    return at + length


def _refuse_unread(block: bytes, max_list: int) -> None:
    if len(block) > max_list:
        raise OversizedHeaderListError(f"header block of {len(block)} bytes is over the {max_list}-byte list limit")
    if fields_over(block, MAX_HEADER_FIELDS):
        raise OversizedHeaderListError(f"header block of more than {MAX_HEADER_FIELDS} fields")


class RememberingDecoder(Decoder):
    """``hpack.Decoder`` that answers an indexed-only block it decoded before, while the table is unchanged."""

    def __init__(self, max_header_list_size: int) -> None:
        super().__init__(max_header_list_size=max_header_list_size)
        self._blocks: dict[bytes, list[HeaderTuple]] = {}
        self._bounds = self._current_bounds()

    def _current_bounds(self) -> tuple[int, int, int]:
        # What a remembered answer was checked against: the table's size (which an update may shrink), the largest
        # table the peer may use, and the largest header list we accept.
        return self.header_table_size, self.max_allowed_table_size, self.max_header_list_size

    def decode(self, data: bytes, raw: bool = False) -> Iterable[HeaderTuple]:
        if not raw or type(data) is not bytes:
            self._blocks.clear()
            _refuse_unread(bytes(data), self.max_header_list_size)
            return super().decode(data, raw)
        bounds = self._current_bounds()
        if bounds != self._bounds:
            self._blocks.clear()
            self._bounds = bounds
        else:
            known = self._blocks.get(data)
            if known is not None:
                return list(known)
        _refuse_unread(data, self.max_header_list_size)
        if not indexed_only(data):
            self._blocks.clear()  # before decoding: a block that fails halfway may have changed the table already
            return super().decode(data, raw)
        headers = list(super().decode(data, raw))
        if len(data) <= _MAX_BLOCK_BYTES:
            if len(self._blocks) >= MAX_REMEMBERED:
                self._blocks.clear()
            self._blocks[data] = headers
            return list(headers)
        return headers


class RememberingEncoder(Encoder):
    """``hpack.Encoder`` that repeats the block it made for the same fields, while it was indexed-only and the
    table has not changed since."""

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[tuple[tuple[Any, ...], bool], bytes] = {}
        self._size = self.header_table_size

    def encode(self, headers: Any, huffman: bool = True) -> bytes:
        if isinstance(headers, dict):
            return self._unremembered(headers, huffman)
        fields = tuple(headers)  # once: it may be a generator
        if not _plain(fields) or owes_size_update(self) or self.header_table_size != self._size:
            # A pending size update must be sent, and fields marked never-indexed keep their own encoding.
            return self._unremembered(fields, huffman)
        key = (fields, huffman)
        known = self._blocks.get(key)
        if known is not None:
            return known
        block = super().encode(fields, huffman)
        if not indexed_only(block):
            self._blocks.clear()  # it inserted into the table: every remembered index may point elsewhere now
        elif len(block) <= _MAX_BLOCK_BYTES:
            if len(self._blocks) >= MAX_REMEMBERED:
                self._blocks.clear()
            self._blocks[key] = block
        return block

    def _unremembered(self, headers: Any, huffman: bool) -> bytes:
        self._blocks.clear()
        block = super().encode(headers, huffman)
        self._size = self.header_table_size
        return block


def _plain(fields: tuple[Any, ...]) -> bool:
    """Whether ``fields`` are plain ``(bytes, bytes)`` pairs, as h2 hands them to the encoder: not text, not a
    ``HeaderTuple`` (which carries whether it may be indexed), not a triple (which says whether it is sensitive)."""
    return all(
        type(field) is tuple and len(field) == 2 and type(field[0]) is bytes and type(field[1]) is bytes
        for field in fields
    )
