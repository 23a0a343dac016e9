"""Loaded at start by a Python process whose PYTHONPATH begins with this folder (``bench_e2e --real --cprofile``);
it does something only in ``grove-extender serve`` with ``GROVE_BENCH_CPROFILE`` set to a file name.

Then the process's main thread (the event loop: the HTTP verbs, the release) can be profiled by function with
cProfile, timed by the thread's own CPU clock, so neither the other threads nor waiting for a core count: SIGUSR1
starts a profile afresh, SIGUSR2 stops it and writes it to that file (``pstats`` reads it). py-spy cannot tell which
function a thread is in only while it runs, and perf cannot name Python 3.11's functions. cProfile's own cost roughly
doubles that of small Python functions: read the figures as shares, not as what the thread spends unprofiled.
"""

from __future__ import annotations

import os
import sys

_OUTPUT = os.environ.get("GROVE_BENCH_CPROFILE", "")

if _OUTPUT and "serve" in sys.argv[1:2]:
    import cProfile
    import signal
    import time
    from types import FrameType

    _profile: list[cProfile.Profile] = []

    def _start(signum: int, frame: FrameType | None) -> None:
        for running in _profile:
            running.disable()
        _profile[:] = [cProfile.Profile(time.thread_time)]
        _profile[0].enable()

    def _stop(signum: int, frame: FrameType | None) -> None:
        for running in _profile:
            running.disable()
            running.dump_stats(_OUTPUT)
        _profile.clear()

    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
