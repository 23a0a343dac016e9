"""``api.http.header_blocks`` against hpack's own encoder and decoder: remembering a block never changes what it
means."""

from __future__ import annotations

import random

import pytest
from hpack import Decoder, Encoder, HeaderTuple, NeverIndexedHeaderTuple, OversizedHeaderListError
from hypothesis import given
from hypothesis import strategies as st

from api.http.header_blocks import RememberingDecoder, RememberingEncoder, fields_over, indexed_only

SCHEDULER = [
    (b":method", b"POST"),
    (b":scheme", b"https"),
    (b":authority", b"grove-extender.grove-system.svc:8443"),
    (b"content-type", b"application/json"),
    (b"accept-encoding", b"gzip"),
    (b"user-agent", b"kube-scheduler/v1.36.2 (linux/amd64) kubernetes/abcdef0"),
]


def request(path: bytes, length: int) -> list[tuple[bytes, bytes]]:
    return [*SCHEDULER[:2], (b":path", path), *SCHEDULER[2:], (b"content-length", b"%d" % length)]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (b"", True),
        (b"\x82\x86\x84", True),  # static entries
        (b"\xbe\xff\x80\x01\xc0", True),  # dynamic ones, one index past the 7-bit prefix (127 + 128)
        (b"\x82\x40\x01a\x01b", False),  # a literal that inserts
        (b"\x82\x00\x01a\x01b", False),  # one that does not insert still is not indexed
        (b"\x3f\xe1\x1f\x82", False),  # a table size update
        (b"\x82\xff\x80", False),  # an index cut short
    ],
)
def test_indexed_only_reads_the_field_representations(block: bytes, expected: bool) -> None:
    assert indexed_only(block) is expected


def test_the_same_bytes_decode_to_what_they_mean_after_an_insertion_moved_the_indexes() -> None:
    """``\\xbe`` is the newest entry of the dynamic table: it names another field once one more is inserted."""
    encoder, decoder = Encoder(), RememberingDecoder(max_header_list_size=65536)
    a, b = [(b"x-a", b"1")], [(b"x-b", b"2")]
    blocks = [encoder.encode(a), encoder.encode(a), encoder.encode(b), encoder.encode(b), encoder.encode(a)]
    assert blocks[1] == blocks[3] == b"\xbe"  # the same bytes, meaning first a, then b
    decoded = [[tuple(field) for field in decoder.decode(block, raw=True)] for block in blocks]
    assert decoded == [a, a, b, b, a]


@pytest.mark.parametrize("seed", range(6))
def test_a_long_exchange_decodes_and_encodes_exactly_as_hpack_does(seed: int) -> None:
    """kube-scheduler-like traffic (a few header sets, new body lengths now and then, table size changes) through a
    remembering pair and through hpack's own: the same blocks, the same fields."""
    rng = random.Random(seed)
    plain_encoder, remembering_encoder = Encoder(), RememberingEncoder()
    plain_decoder, remembering_decoder = Decoder(), RememberingDecoder(max_header_list_size=65536)
    lengths = [1_658, 1_702, 139]
    remembered_hits = 0
    for _ in range(600):
        roll = rng.random()
        if roll < 0.05:
            lengths.append(rng.randrange(100, 5_000))  # a new body length: a literal that inserts
        elif roll < 0.07:
            size = rng.choice([256, 1_024, 4_096])  # the peer's SETTINGS_HEADER_TABLE_SIZE changes
            plain_encoder.header_table_size = remembering_encoder.header_table_size = size
        fields = request(rng.choice([b"/filter", b"/bind"]), rng.choice(lengths))
        block = remembering_encoder.encode(fields)
        assert block == plain_encoder.encode(fields)
        remembered_hits += indexed_only(block)
        assert list(remembering_decoder.decode(block, raw=True)) == list(plain_decoder.decode(block, raw=True))
        assert [tuple(field) for field in plain_decoder.header_table.dynamic_entries] == [
            tuple(field) for field in remembering_decoder.header_table.dynamic_entries
        ]
    assert remembered_hits > 150  # the exchange did exercise the remembered path


def test_a_remembered_block_is_checked_again_when_the_header_list_limit_shrinks() -> None:
    encoder, decoder = Encoder(), RememberingDecoder(max_header_list_size=65536)
    fields = request(b"/filter", 1_658)
    decoder.decode(encoder.encode(fields), raw=True)
    block = encoder.encode(fields)
    assert indexed_only(block) and list(decoder.decode(block, raw=True)) == fields  # now remembered
    decoder.max_header_list_size = 64  # as h2 does when our SETTINGS_MAX_HEADER_LIST_SIZE is acknowledged
    with pytest.raises(OversizedHeaderListError):
        decoder.decode(block, raw=True)


def test_a_table_size_change_is_sent_even_for_fields_whose_block_was_remembered() -> None:
    encoder, decoder = RememberingEncoder(), Decoder()
    fields = request(b"/bind", 139)
    decoder.decode(encoder.encode(fields))
    remembered = encoder.encode(fields)
    assert decoder.decode(remembered, raw=True) == fields and indexed_only(remembered)
    encoder.header_table_size = 0  # evicts everything: the indexes it remembered mean nothing now
    block = encoder.encode(fields)
    assert block != remembered and block[0] & 0xE0 == 0x20  # starts with the size update
    assert decoder.decode(block, raw=True) == fields


def test_fields_that_must_never_be_indexed_keep_their_encoding() -> None:
    encoder = RememberingEncoder()
    secret = [(b":status", b"200"), NeverIndexedHeaderTuple(b"authorization", b"token")]
    first, second = encoder.encode(secret), encoder.encode(iter(secret))  # a generator is read once, whole
    assert first == second == Encoder().encode(secret)
    assert not indexed_only(first)


_FIELD = st.tuples(
    st.sampled_from([b":method", b":path", b"content-type", b"x-a", b"x-" + b"n" * 200]),
    st.binary(min_size=0, max_size=300),
    st.booleans(),  # sensitive: a never-indexed literal
)


@given(
    fields=st.lists(_FIELD, max_size=40),
    limit=st.integers(min_value=0, max_value=45),
    huffman=st.booleans(),
    table=st.sampled_from([None, 0, 256]),
)
def test_fields_over_counts_every_representation_as_hpack_decodes_it(
    fields: list[tuple[bytes, bytes, bool]], limit: int, huffman: bool, table: int | None
) -> None:
    """Indexed fields, literals with and without indexing, new names and indexed ones, long lengths and table size
    updates: ``fields_over`` reads as many fields from a block as hpack decodes from it."""
    encoder = Encoder()
    if table is not None:
        encoder.header_table_size = table  # the next block starts with a table size update
    headers = [NeverIndexedHeaderTuple(n, v) if sensitive else HeaderTuple(n, v) for n, v, sensitive in fields]
    first = encoder.encode(headers, huffman=huffman)
    again = encoder.encode(headers, huffman=huffman)  # now mostly indexed
    for block in (first, again):
        assert fields_over(block, limit) == (len(fields) > limit)
    assert len(Decoder().decode(first, raw=True)) == len(fields)


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(b"\x00\x01x\x7f\x81\x80" + b"a" * 70_000, id="longer-than-the-list-limit"),
        pytest.param(b"\x82" * 101, id="more-fields-than-the-limit"),
    ],
)
def test_a_block_over_a_limit_is_refused_before_hpack_decodes_any_of_it(
    block: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[bytes] = []
    monkeypatch.setattr(Decoder, "decode", lambda self, data, raw=False: decoded.append(data) or [])
    with pytest.raises(OversizedHeaderListError):
        RememberingDecoder(64 * 1024).decode(block, raw=True)
    assert decoded == [], "hpack walked the block before it was refused"
    RememberingDecoder(64 * 1024).decode(b"\x82" * 100, raw=True)
    assert decoded == [b"\x82" * 100], "a block within the limits is decoded"
