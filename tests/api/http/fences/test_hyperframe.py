"""``api.http.fences.hyperframe_fence`` against hyperframe and h2 as installed: the short rendering still reaches every
frame, and h2 still renders every frame it receives unasked (the day it stops, the patch can go)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from typing import Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from hyperframe.frame import FRAMES, DataFrame, ExtensionFrame, Frame

from api.http.fences.hyperframe_fence import short_frame_repr, shorten_frame_reprs


def test_every_frame_class_renders_through_frame_repr() -> None:
    """The patch is on ``Frame.__repr__``: a frame class (or mixin) rendering itself would escape it."""
    own = sorted(
        {
            base.__name__
            for cls in [*FRAMES.values(), ExtensionFrame]
            for base in cls.__mro__
            if base not in (Frame, object) and "__repr__" in vars(base)
        }
    )
    assert not own, f"hyperframe's {own} define their own __repr__: hyperframe_fence's Frame.__repr__ misses them"
    assert "stream_id" in inspect.signature(Frame.__init__).parameters, "hyperframe's Frame has no stream_id any more"


def test_a_frame_renders_by_its_type_and_stream_once_shortened() -> None:
    shorten_frame_reprs()
    shorten_frame_reprs()  # idempotent: each HTTP/2 connection asks
    assert Frame.__repr__ is short_frame_repr
    assert repr(DataFrame(3, b"x" * 1600, flags=["END_STREAM"])) == "DataFrame(stream_id=3)"


class _Recorder:
    """An h2 logger keeping what each trace call was handed."""

    def __init__(self) -> None:
        self.traced: list[tuple[Any, ...]] = []

    def debug(self, *args: Any, **kwargs: Any) -> None:
        pass

    def trace(self, *args: Any, **kwargs: Any) -> None:
        self.traced.append(args)


def test_h2_still_renders_every_frame_it_receives_before_its_logger_can_decline() -> None:
    """Why the fence exists: h2 hands its trace log a frame already rendered (``repr(frame)`` in the private
    ``H2Connection._receive_frame``), whatever the logger does with it. If it hands the frame itself, or nothing,
    rendering costs only those who log, and ``hyperframe_fence`` can go."""
    shorten_frame_reprs()
    recorder = _Recorder()
    server = H2Connection(H2Configuration(client_side=False, logger=recorder))
    server.initiate_connection()
    client = H2Connection(H2Configuration(client_side=True))
    client.initiate_connection()
    server.receive_data(client.data_to_send())
    rendered = [args for args in recorder.traced if args and "frame" in str(args[0]).lower()]
    assert rendered, "h2 no longer traces the frames it receives: hyperframe_fence's Frame.__repr__ patch can go"
    assert any(arg == "SettingsFrame(stream_id=0)" for args in rendered for arg in args[1:]), (
        f"h2 no longer hands its logger each received frame rendered (repr(frame)): {rendered[:3]}; "
        "hyperframe_fence's Frame.__repr__ patch can go"
    )


def test_importing_the_http2_server_changes_no_frames_rendering() -> None:
    """The patch is installed when a connection is served, not as a side effect of an import (a fresh interpreter:
    this one has served connections in other tests)."""
    probe = "import api.http.http2, hyperframe.frame as f; print(repr(f.DataFrame(3, b'x')))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() != "DataFrame(stream_id=3)", "importing api.http.http2 patched Frame.__repr__"
