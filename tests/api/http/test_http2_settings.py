"""``api.http.http2`` when the client changes its SETTINGS mid-connection (h2's ``RemoteSettingsChanged``), against h2's
own client state machine (``tests.api.http.test_http2.Client``): a new ``SETTINGS_INITIAL_WINDOW_SIZE`` moves the send
window of every open stream with no WINDOW_UPDATE to say so. A reply blocked on its window must resume when it grows,
and send no byte past it when it shrinks (h2's client raises on any byte beyond its window), and nothing of the reply
may be lost or left hanging."""

from __future__ import annotations

import asyncio

from h2.events import DataReceived, Event, StreamEnded
from h2.settings import SettingCodes

from tests.api.http.test_http2 import Client, echo

BODY = b"0123456789abcdef" * 13  # echo answers it 1,000 times: 208,000 bytes, over three default windows
REPLY = BODY * 1000
DEFAULT_WINDOW = 65_535


def _data(events: list[Event], stream: int) -> bytes:
    return b"".join(e.data or b"" for e in events if isinstance(e, DataReceived) and e.stream_id == stream)


def _ended(events: list[Event], stream: int) -> bool:
    return any(isinstance(e, StreamEnded) and e.stream_id == stream for e in events)


def test_a_reply_blocked_on_its_window_resumes_when_the_client_raises_its_initial_window() -> None:
    async def run() -> tuple[int, bytes, bool]:
        client = Client(echo)
        client.h2.increment_flow_control_window(1_000_000)  # the connection's window is not what holds the reply
        stream = client.request(b"/filter", BODY)
        for _ in range(5):  # nothing acknowledged on the stream: the reply stops at the default window
            await client.pump()
        blocked_at = len(_data(client.events, stream))
        client.h2.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 1_000_000})  # +934,465 for the open stream
        for _ in range(20):
            await client.pump()
            if _ended(client.events, stream):
                break
        return blocked_at, _data(client.events, stream), _ended(client.events, stream)

    blocked_at, received, ended = asyncio.run(run())
    assert blocked_at == DEFAULT_WINDOW
    assert ended and received == REPLY  # whole, in order, nothing dropped


def test_a_shrunk_window_is_respected_below_zero_and_the_reply_ends_whole_once_it_grows_again() -> None:
    async def run() -> list[tuple[str, int, bool]]:
        client = Client(echo)
        client.h2.increment_flow_control_window(1_000_000)
        stream = client.request(b"/filter", BODY)
        seen: list[tuple[str, int, bool]] = []

        async def step(label: str, pumps: int = 5) -> None:
            for _ in range(pumps):
                await client.pump()
            seen.append((label, len(_data(client.events, stream)), _ended(client.events, stream)))

        await step("default window")
        # 65,535 sent, none acknowledged: the stream's window goes from 0 to 1,000 - 65,535 = -64,535.
        client.h2.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 1_000})
        await step("shrunk below zero")
        client.h2.increment_flow_control_window(DEFAULT_WINDOW, stream_id=stream)  # -64,535 + 65,535 = 1,000
        await step("a WINDOW_UPDATE opens 1,000")
        client.h2.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 1_000_000})  # 0 + 999,000
        await step("grown again", pumps=20)
        return seen

    assert asyncio.run(run()) == [
        ("default window", DEFAULT_WINDOW, False),
        ("shrunk below zero", DEFAULT_WINDOW, False),
        ("a WINDOW_UPDATE opens 1,000", DEFAULT_WINDOW + 1_000, False),
        ("grown again", len(REPLY), True),
    ]


def test_a_stream_opened_after_the_change_starts_with_the_new_window() -> None:
    async def run() -> tuple[int, bool]:
        client = Client(echo)
        client.h2.increment_flow_control_window(1_000_000)
        client.request(b"/filter", b"a")  # one exchange first: the change comes mid-connection
        await client.pump()
        client.h2.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 10_000})
        await client.pump()
        stream = client.request(b"/filter", BODY)
        for _ in range(5):
            await client.pump()
        return len(_data(client.events, stream)), _ended(client.events, stream)

    assert asyncio.run(run()) == (10_000, False)
