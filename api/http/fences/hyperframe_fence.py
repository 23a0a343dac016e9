"""hyperframe's internals that serving relies on: how every HTTP/2 frame renders (``Frame.__repr__``).

Why: h2 formats every frame it receives for a trace log (``self.config.logger.trace("Received frame: %s",
repr(frame))`` in the private ``H2Connection._receive_frame``) before its logger, which by default does nothing, can
decline it, and no setting turns that off. hyperframe's ``Frame.__repr__`` renders a frame's flags, sorted, and its
body in hex (``Frame._body_repr``): a large share of the HTTP/2 server's CPU per call (``benchmarks.bench_http2``,
under py-spy). This process never logs frames, so a frame is shown by its type and stream alone.

Why process-wide: Python looks ``__repr__`` up on a frame's type, never on the instance, and h2 dispatches each frame
it parses on its exact class (``H2Connection._frame_dispatch_table[frame.__class__]``), so our connections cannot be
handed frames of a subclass of their own. The patch is therefore on hyperframe's ``Frame`` itself and every frame in
the process renders short once it is installed, our HTTP/2 clients' (tests, benchmarks) included. It is installed
explicitly, by ``api.http.http2.Http2Protocol`` when it serves a connection, not as a side effect of an import.

Relies on: every frame class of ``hyperframe.frame`` inherits ``__repr__`` from ``Frame`` (none defines its own) and
carries ``stream_id``. Can go: when h2 no longer renders each frame it receives unasked (its ``_receive_frame`` without
``repr(frame)``, or behind a check of its logger). ``tests/api/http/fences/test_hyperframe.py`` checks all three.
"""

from __future__ import annotations

from hyperframe.frame import Frame

__all__ = ["short_frame_repr", "shorten_frame_reprs"]


def short_frame_repr(frame: Frame) -> str:
    """A frame as its type and stream: ``DataFrame(stream_id=3)``."""
    return f"{type(frame).__name__}(stream_id={frame.stream_id})"


def shorten_frame_reprs() -> None:
    """Make every hyperframe frame render as ``short_frame_repr`` does, for the rest of the process (see the module's
    docstring for why it cannot be narrower). Idempotent and cheap: called for each HTTP/2 connection served."""
    if Frame.__repr__ is not short_frame_repr:
        Frame.__repr__ = short_frame_repr  # type: ignore[method-assign]
