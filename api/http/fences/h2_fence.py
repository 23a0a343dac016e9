"""h2's internals that serving relies on: the HTTP/2 connection as ``api.http.http2`` configures it.

- **Its HPACK coders swapped.** ``H2Connection.decoder`` and ``.encoder`` are plain attributes, not API: h2 decodes
  every header block through ``self.decoder.decode(block, raw=True)`` (``h2.connection._decode_headers``) and encodes
  through ``self.encoder.encode(headers)`` (``H2Stream._build_headers_frames``), and updates their limits as settings
  are acknowledged (``decoder.max_header_list_size``, ``decoder.max_allowed_table_size``,
  ``encoder.header_table_size``). We put ``hpack.Decoder``/``Encoder`` subclasses there that remember blocks
  (``api.http.header_blocks``), so they must keep being called that way: with a block of ``bytes`` and ``raw=True``,
  and, with outbound normalising off, with the fields as the plain ``(bytes, bytes)`` pairs we hand ``send_headers``.
- **Our settings in the first SETTINGS frame.** ``H2Connection.local_settings`` is replaced before
  ``initiate_connection``, which sends it as it stands; ``update_settings`` would send a second frame. h2 takes a
  ``Settings``' initial values as already acknowledged, so it never applies them where it applies an acknowledged
  change: the decoder is made with our ``MAX_HEADER_LIST_SIZE`` here (h2 would have left its own default there), and
  settings h2 copies elsewhere at construction (``MAX_FRAME_SIZE``, ``HEADER_TABLE_SIZE``) are refused.
- **Header checks off, and done again.** With ``validate_inbound_headers`` and ``normalize_inbound_headers`` off, h2
  hands a request's header fields through as decoded, malformed or not: ``api.http.request_fields`` checks them in
  one pass and a malformed request is answered 400 on its own stream, where h2's checks (generators over every byte
  of every value, a large share of receiving a request) close the whole connection. Outbound checks and normalising
  are off too: the headers we send are the app's, lowercased and stripped of connection headers by the server.

- **Stream limits enforced by us.** h2 refuses a stream past the ``MAX_CONCURRENT_STREAMS`` we announced by ending
  the whole connection (``_receive_headers_frame`` reads ``local_settings.max_concurrent_streams``), where RFC 9113
  §5.1.2 lets a server refuse that one stream. Our ``Settings`` announce our limit (the SETTINGS frame is built from
  its items) but answer that property with a larger one, so the protocol can refuse the stream itself
  (``REFUSED_STREAM``) and count a stream until its work ends, which h2 cannot know.
- **Content-Length checked by us.** h2 ends the whole connection on a bad or unmet ``content-length``
  (``H2Stream._initialize_content_length`` and ``_track_content_length``): each new stream
  (``H2Connection._begin_new_stream``) gets a ``_initialize_content_length`` that records nothing, so h2 tracks no
  length and the protocol answers such a request 400 on its own stream.
- **Every received frame seen first.** ``H2Connection._receive_frame`` handles one parsed frame; ours first tells
  ``on_frame`` what kind it is (``HEADERS``, ``RESET`` or ``CONTROL``: anything but a request's HEADERS, CONTINUATION
  or DATA with a payload or its end), which may raise h2's ``DenialOfServiceError``: ``receive_data`` then ends the
  connection with GOAWAY ``ENHANCE_YOUR_CALM``, as for h2's own checks. Frames h2 handles without an event (a
  RST_STREAM or WINDOW_UPDATE for a stream it forgot) are seen too.

``tests/api/http/fences/test_h2.py`` checks each against a real h2 client, and that ``api.http.request_fields`` refuses
what h2's own validator (``h2.utilities.validate_headers``) refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from h2.config import H2Configuration
from h2.connection import AllowedStreamIDs, H2Connection
from h2.settings import SettingCodes, Settings
from h2.stream import H2Stream
from hpack import Decoder, Encoder
from hyperframe.frame import ContinuationFrame, DataFrame, Frame, HeadersFrame, RstStreamFrame

__all__ = ["CONTROL", "HEADERS", "RESET", "server_connection"]

HEADERS, RESET, CONTROL = "headers", "reset", "control"
"""What ``on_frame`` hears of a frame: a request's HEADERS, a RST_STREAM, or a control frame (named second)."""

_KINDS = {HeadersFrame: HEADERS, RstStreamFrame: RESET, ContinuationFrame: None}


_SETTINGS = frozenset({SettingCodes.MAX_CONCURRENT_STREAMS, SettingCodes.MAX_HEADER_LIST_SIZE})
"""What h2 reads from ``local_settings`` as it goes, or what ``server_connection`` applies itself."""


class _Settings(Settings):
    """Announces its ``MAX_CONCURRENT_STREAMS`` but lets h2 open up to ``enforced`` inbound streams."""

    def __init__(self, initial_values: Mapping[SettingCodes, int], enforced: int) -> None:
        super().__init__(client=False, initial_values=dict(initial_values))
        self._enforced = enforced

    @property  # type: ignore[misc]
    def max_concurrent_streams(self) -> int:
        return self._enforced


class _ServerConnection(H2Connection):
    def __init__(self, config: H2Configuration, on_frame: Callable[[str, str], None]) -> None:
        super().__init__(config=config)
        self._on_frame = on_frame

    def _receive_frame(self, frame: Frame) -> Any:
        kind = frame.__class__
        if kind is DataFrame:
            if not cast(DataFrame, frame).data and "END_STREAM" not in frame.flags:
                self._on_frame(CONTROL, "empty DATA")
        elif (what := _KINDS.get(kind, CONTROL)) is not None:
            self._on_frame(what, kind.__name__)
        return super()._receive_frame(frame)

    def _begin_new_stream(self, stream_id: int, allowed_ids: AllowedStreamIDs) -> H2Stream:
        stream = super()._begin_new_stream(stream_id, allowed_ids)
        stream._initialize_content_length = _no_length  # type: ignore[method-assign]
        return stream


def _no_length(headers: object) -> None:
    return None


def _ignore(kind: str, name: str) -> None:
    return None


def server_connection(
    *,
    settings: Mapping[SettingCodes, int],
    decoder: Callable[[int], Decoder],
    encoder: Callable[[], Encoder],
    streams_opened: int | None = None,
    on_frame: Callable[[str, str], None] = _ignore,
) -> H2Connection:
    """A server-side connection that checks no header field either way (bytes in, bytes out), whose first SETTINGS
    frame carries ``settings`` (``MAX_CONCURRENT_STREAMS``, ``MAX_HEADER_LIST_SIZE``), and whose HPACK coders are
    ``decoder(max_header_list_size)``, held to the limit it announces, and ``encoder()``. h2 itself lets up to
    ``streams_opened`` streams be open at once (the announced limit unless given), tracks no ``content-length``, and
    tells ``on_frame`` the kind and name of each frame it receives (but CONTINUATION and DATA with a payload or an
    end) before handling it. Call ``initiate_connection`` on it next."""
    if unsupported := set(settings) - _SETTINGS:
        raise ValueError(f"settings h2 would not apply from the first SETTINGS frame: {sorted(unsupported)}")
    config = H2Configuration(
        client_side=False,
        header_encoding=None,
        validate_outbound_headers=False,
        normalize_outbound_headers=False,
        validate_inbound_headers=False,
        normalize_inbound_headers=False,
    )
    connection = _ServerConnection(config, on_frame)
    announced = settings.get(SettingCodes.MAX_CONCURRENT_STREAMS)
    enforced = streams_opened if streams_opened is not None else announced
    if enforced is None:
        connection.local_settings = Settings(client=False, initial_values=dict(settings))
    else:
        connection.local_settings = _Settings(settings, enforced)
    connection.decoder = decoder(
        connection.local_settings.max_header_list_size or connection.decoder.max_header_list_size
    )
    connection.encoder = encoder()
    return connection
