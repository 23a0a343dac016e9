"""``api.http.fences.h2_fence`` against h2 as installed, with a real h2 client: the swapped HPACK coders are the ones
h2 calls, and called as ``api.http.header_blocks`` expects; our settings go out in the first SETTINGS frame; with its
header checks off h2 hands malformed fields through, and ``api.http.request_fields`` refuses what h2's own checks
refuse."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    RemoteSettingsChanged,
    RequestReceived,
    StreamEnded,
)
from h2.exceptions import DenialOfServiceError, ProtocolError, TooManyStreamsError
from h2.settings import SettingCodes, Settings
from h2.utilities import HeaderValidationFlags, validate_headers
from hpack import Decoder, Encoder, HeaderTuple
from hyperframe.frame import RstStreamFrame

from api.http.fences.h2_fence import CONTROL, HEADERS, RESET, server_connection
from api.http.request_fields import request_fields


class RecordingDecoder(Decoder):
    def __init__(self, max_header_list_size: int) -> None:
        super().__init__(max_header_list_size=max_header_list_size)
        self.made_with = max_header_list_size
        self.calls: list[tuple[type, bool]] = []

    def decode(self, data: bytes, raw: bool = False) -> Iterable[HeaderTuple]:
        self.calls.append((type(data), raw))
        return super().decode(data, raw)


class RecordingEncoder(Encoder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Any] = []

    def encode(self, headers: Any, huffman: bool = True) -> bytes:
        headers = list(headers)
        self.calls.append(headers)
        return super().encode(headers, huffman)


SETTINGS = {SettingCodes.MAX_CONCURRENT_STREAMS: 7, SettingCodes.MAX_HEADER_LIST_SIZE: 1234}
REQUEST = [(b":method", b"POST"), (b":scheme", b"https"), (b":path", b"/filter"), (b":authority", b"extender")]


class Pair:
    def __init__(self) -> None:
        self.server = server_connection(settings=SETTINGS, decoder=RecordingDecoder, encoder=RecordingEncoder)
        self.server.initiate_connection()
        self.client = H2Connection(H2Configuration(client_side=True, header_encoding=None))
        self.client.initiate_connection()
        self.to_client: list[Event] = []

    def exchange(self) -> list[Event]:
        """Client to server, then server to client; the server's events."""
        events = self.server.receive_data(self.client.data_to_send())
        self.to_client.extend(self.client.receive_data(self.server.data_to_send()))
        return events


def test_h2_decodes_and_encodes_through_the_coders_swapped_in_and_as_header_blocks_expects() -> None:
    pair = Pair()
    decoder, encoder = pair.server.decoder, pair.server.encoder
    assert isinstance(decoder, RecordingDecoder) and isinstance(encoder, RecordingEncoder)
    pair.exchange()
    pair.client.send_headers(1, REQUEST, end_stream=True)
    (received,) = [e for e in pair.exchange() if isinstance(e, RequestReceived)]
    assert received.headers == REQUEST
    assert decoder.calls == [(bytes, True)], "h2 no longer decodes a header block as decoder.decode(bytes, raw=True)"
    reply = [(b":status", b"200"), (b"content-type", b"application/json"), (b"content-length", b"2")]
    pair.server.send_headers(1, reply)
    assert encoder.calls == [reply], "h2 no longer hands encoder.encode the fields it was given, as (bytes, bytes)"
    assert all(type(field) is tuple for field in encoder.calls[0])


def test_the_decoder_holds_to_the_limit_announced_and_h2_keeps_the_swapped_coders_limits() -> None:
    """h2 counts a ``Settings``' initial values as acknowledged and never applies them to its decoder: the fence makes
    the decoder with the limit it announces, and it stays so once the client acknowledges it."""
    pair = Pair()
    decoder = pair.server.decoder
    assert isinstance(decoder, RecordingDecoder)
    assert decoder.made_with == 1234
    pair.exchange()  # the client acknowledges our settings
    pair.exchange()
    assert decoder.max_header_list_size == 1234
    pair.client.update_settings({SettingCodes.HEADER_TABLE_SIZE: 512})
    pair.exchange()
    assert pair.server.encoder.header_table_size == 512, "h2 no longer resizes the encoder it holds"
    pair.client.send_headers(1, [*REQUEST, (b"x-big", b"x" * 2000)], end_stream=True)
    with pytest.raises(ProtocolError, match="Oversized header block"):
        pair.exchange()


def test_settings_h2_would_not_apply_from_the_first_frame_are_refused() -> None:
    with pytest.raises(ValueError, match="MAX_FRAME_SIZE"):
        server_connection(settings={SettingCodes.MAX_FRAME_SIZE: 32768}, decoder=Decoder, encoder=Encoder)


def test_our_settings_go_out_in_the_first_settings_frame_alone() -> None:
    pair = Pair()
    pair.exchange()
    changed = [e for e in pair.to_client if isinstance(e, RemoteSettingsChanged)]
    assert len(changed) == 1, "replacing local_settings before initiate_connection no longer sends them at once"
    sent = {code: setting.new_value for code, setting in changed[0].changed_settings.items()}
    assert {code: sent.get(code) for code in SETTINGS} == SETTINGS


MALFORMED = [
    pytest.param([*REQUEST, (b"Content-Type", b"application/json")], id="upper-case-name"),
    pytest.param([*REQUEST, (b"connection", b"keep-alive")], id="connection-header"),
    pytest.param([*REQUEST, (b"te", b"gzip")], id="te-not-trailers"),
    pytest.param([*REQUEST, (b"x-note", b"a\r\nx-injected: 1")], id="crlf-in-value"),
    pytest.param([*REQUEST, (b"x-note", b" padded")], id="blank-around-value"),
    pytest.param([*REQUEST, (b"x:y", b"1")], id="colon-in-name"),
    pytest.param([*REQUEST, (b":method", b"GET")], id="repeated-pseudo"),
    pytest.param([*REQUEST, (b":status", b"200")], id="response-pseudo"),
    pytest.param([*REQUEST[:3], (b"accept", b"*/*"), REQUEST[3]], id="pseudo-after-regular"),
    pytest.param([REQUEST[0], REQUEST[1], REQUEST[3]], id="no-path"),
    pytest.param([REQUEST[0], REQUEST[1], (b":path", b""), REQUEST[3]], id="empty-path"),
    pytest.param([*REQUEST, (b"host", b"elsewhere")], id="host-differs"),
]
_AS_SERVER = HeaderValidationFlags(is_client=False, is_trailer=False, is_response_header=False, is_push_promise=False)


@pytest.mark.parametrize("fields", MALFORMED)
def test_with_its_checks_off_h2_hands_a_malformed_request_through_and_request_fields_refuses_it(
    fields: list[tuple[bytes, bytes]],
) -> None:
    """What h2's own checks (``h2.utilities.validate_headers``) refuse, ``api.http.request_fields`` refuses too; with
    them off (``h2_fence``), h2 delivers the request untouched, so the second check is the only one."""
    with pytest.raises(ProtocolError):
        list(validate_headers(fields, _AS_SERVER))
    assert isinstance(request_fields(fields), str), "request_fields accepts what h2's own checks refuse"

    pair = Pair()
    pair.exchange()
    pair.client.config = H2Configuration(
        client_side=True, header_encoding=None, validate_outbound_headers=False, normalize_outbound_headers=False
    )
    pair.client.send_headers(1, fields, end_stream=True)
    (received,) = [e for e in pair.exchange() if isinstance(e, RequestReceived)]
    assert received.headers == fields, "h2 no longer hands header fields through untouched with its checks off"


def test_a_well_formed_request_passes_both() -> None:
    assert list(validate_headers(REQUEST, _AS_SERVER)) == REQUEST
    assert not isinstance(request_fields(REQUEST), str)


def test_h2_opens_streams_past_the_announced_limit_up_to_the_one_enforced() -> None:
    """The SETTINGS frame says ``MAX_CONCURRENT_STREAMS`` (7 here), while h2 itself lets 9 be open: the protocol refuses
    the 8th stream alone, where h2 would end the connection."""
    pair = Pair()
    pair.server = server_connection(
        settings=SETTINGS, decoder=RecordingDecoder, encoder=RecordingEncoder, streams_opened=9
    )
    pair.server.initiate_connection()
    pair.exchange()
    changed = [e for e in pair.to_client if isinstance(e, RemoteSettingsChanged)]
    assert changed[0].changed_settings[SettingCodes.MAX_CONCURRENT_STREAMS].new_value == 7
    pair.client.remote_settings = Settings(client=True, initial_values={SettingCodes.MAX_CONCURRENT_STREAMS: 100})
    for stream in range(1, 19, 2):
        pair.client.send_headers(stream, REQUEST)
    assert len([e for e in pair.exchange() if isinstance(e, RequestReceived)]) == 9
    pair.client.send_headers(19, REQUEST)
    with pytest.raises(TooManyStreamsError):
        pair.exchange()


@pytest.mark.parametrize("length", [b"abc", b"1"])
def test_h2_tracks_no_content_length_and_hands_a_bad_one_through(length: bytes) -> None:
    pair = Pair()
    pair.exchange()
    pair.client.send_headers(1, [*REQUEST, (b"content-length", length)])
    pair.client.send_data(1, b"{}{}", end_stream=True)
    events = pair.exchange()
    assert [e.headers for e in events if isinstance(e, RequestReceived)] == [[*REQUEST, (b"content-length", length)]]
    assert [e.data for e in events if isinstance(e, DataReceived)] == [b"{}{}"]
    assert any(isinstance(e, StreamEnded) for e in events)


def test_every_frame_but_a_requests_own_is_told_before_h2_handles_it_and_may_end_the_connection() -> None:
    heard: list[tuple[str, str]] = []
    pair = Pair()
    pair.server = server_connection(
        settings=SETTINGS,
        decoder=RecordingDecoder,
        encoder=RecordingEncoder,
        on_frame=lambda kind, name: heard.append((kind, name)),
    )
    pair.server.initiate_connection()
    pair.exchange()
    pair.exchange()
    heard.clear()  # the client's preface: SETTINGS, and its ACK of ours
    pair.client.send_headers(1, [*REQUEST, (b"x-big", b"x" * 1000)], end_stream=False)
    pair.client.send_data(1, b"body")
    pair.client.send_data(1, b"")
    pair.client.ping(b"12345678")
    pair.client.increment_flow_control_window(1)
    pair.client.reset_stream(1)
    pair.exchange()
    pair.server.receive_data(RstStreamFrame(3).serialize())  # a stream h2 never saw: no event, but told all the same
    assert heard == [
        (HEADERS, "HeadersFrame"),
        (CONTROL, "empty DATA"),
        (CONTROL, "PingFrame"),
        (CONTROL, "WindowUpdateFrame"),
        (RESET, "RstStreamFrame"),
        (RESET, "RstStreamFrame"),
    ]

    def refuse(kind: str, name: str) -> None:
        raise DenialOfServiceError("too much")

    pair.server._on_frame = refuse  # type: ignore[attr-defined]
    pair.client.ping(b"12345678")
    with pytest.raises(DenialOfServiceError):
        pair.exchange()
    assert any(
        isinstance(e, ConnectionTerminated) and e.error_code == ErrorCodes.ENHANCE_YOUR_CALM
        for e in pair.client.receive_data(pair.server.data_to_send())
    ), "h2 no longer answers a DenialOfServiceError raised while receiving with GOAWAY ENHANCE_YOUR_CALM"
