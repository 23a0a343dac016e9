"""Fences: every reach into a library's internals that serving makes, one module per library, each with a test that
fails naming the internal when a release moves it (``tests/api/http/fences/``).

A fence module is the only place in the tree that names its library's private classes, attributes and hooks, or
patches them; the serving code calls the small functions and classes it exports instead. Each says in its docstring
which internals it relies on, why, and when it can go. ``pyproject.toml`` bounds each fenced library to the minor
version its test passed on: moving a bound means running those tests first.

Owns: ``uvicorn_fence`` (the HTTP/1.1 protocol, its server and their shutdown contract), ``h2_fence`` (the HTTP/2
connection as we configure it), ``hpack_fence`` (the header table's pending size update), ``hyperframe_fence`` (how a
frame renders), ``loop_fence`` (asyncio's and uvloop's ``start_tls`` taking over a connection that already read
bytes) and ``eager_fence`` (Python 3.12's eager tasks, re-created for 3.11). Does not own: the serving code
itself (``api.http``), nor any use of these libraries' public API.
"""
