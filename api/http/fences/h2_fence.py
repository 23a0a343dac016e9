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

``tests/api/http/fences/test_h2.py`` checks each against a real h2 client, and that ``api.http.request_fields`` refuses
what h2's own validator (``h2.utilities.validate_headers``) refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.settings import SettingCodes, Settings
from hpack import Decoder, Encoder

__all__ = ["server_connection"]


_SETTINGS = frozenset({SettingCodes.MAX_CONCURRENT_STREAMS, SettingCodes.MAX_HEADER_LIST_SIZE})
"""What h2 reads from ``local_settings`` as it goes, or what ``server_connection`` applies itself."""


def server_connection(
    *,
    settings: Mapping[SettingCodes, int],
    decoder: Callable[[int], Decoder],
    encoder: Callable[[], Encoder],
) -> H2Connection:
    """A server-side connection that checks no header field either way (bytes in, bytes out), whose first SETTINGS
    frame carries ``settings`` (``MAX_CONCURRENT_STREAMS``, ``MAX_HEADER_LIST_SIZE``), and whose HPACK coders are
    ``decoder(max_header_list_size)``, held to the limit it announces, and ``encoder()``. Call
    ``initiate_connection`` on it next."""
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
    connection = H2Connection(config=config)
    connection.local_settings = Settings(client=False, initial_values=dict(settings))
    connection.decoder = decoder(
        connection.local_settings.max_header_list_size or connection.decoder.max_header_list_size
    )
    connection.encoder = encoder()
    return connection
