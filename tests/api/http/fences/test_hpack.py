"""``api.http.fences.hpack_fence`` against hpack as installed: a pending table size update is still told by the
encoder's header table, as ``Encoder.encode`` acts on it; and the coders' methods and attributes that
``api.http.header_blocks`` overrides or reads are still there."""

from __future__ import annotations

import inspect

from hpack import Decoder, Encoder

from api.http.fences.hpack_fence import owes_size_update


def _starts_with_size_update(block: bytes) -> bool:
    return bool(block) and block[0] & 0xE0 == 0x20  # RFC 7541 §6.3: 001xxxxx


def test_an_encoder_owes_a_size_update_from_a_resize_until_its_next_block() -> None:
    encoder = Encoder()
    assert not owes_size_update(encoder)
    assert not _starts_with_size_update(encoder.encode([(b"x-a", b"1")]))
    encoder.header_table_size = 1024  # what h2 does when the peer's SETTINGS_HEADER_TABLE_SIZE changes
    assert owes_size_update(encoder), "hpack's Encoder.header_table.resized no longer says a size update is owed"
    block = encoder.encode([(b"x-a", b"1")])
    assert _starts_with_size_update(block), "hpack's encoder no longer writes a pending size update first"
    assert not owes_size_update(encoder), "hpack's Encoder.encode no longer clears header_table.resized"
    encoder.header_table_size = 1024  # the same size again: nothing owed
    assert not owes_size_update(encoder)
    assert not _starts_with_size_update(encoder.encode([(b"x-a", b"1")]))


def test_the_coders_header_blocks_overrides_keep_their_signatures() -> None:
    """``RememberingDecoder.decode`` and ``RememberingEncoder.encode`` override these and call them back."""
    assert list(inspect.signature(Decoder.decode).parameters) == ["self", "data", "raw"], "hpack's Decoder.decode"
    assert list(inspect.signature(Encoder.encode).parameters) == ["self", "headers", "huffman"], (
        "hpack's Encoder.encode"
    )
    assert list(inspect.signature(Decoder.__init__).parameters) == ["self", "max_header_list_size"], "Decoder()"


def test_the_decoders_bounds_are_its_documented_attributes() -> None:
    """``RememberingDecoder`` forgets what it remembered when any of these change; h2 sets the last two."""
    decoder = Decoder(max_header_list_size=1234)
    assert (decoder.header_table_size, decoder.max_allowed_table_size, decoder.max_header_list_size) == (
        4096,
        4096,
        1234,
    )
    decoder.header_table_size = 100
    assert decoder.header_table_size == 100
