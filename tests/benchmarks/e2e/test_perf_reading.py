"""Reading perf's samples back (``benchmarks.e2e.perf``): lines of ``perf script -F tid,ip,dso`` counted by thread
and shared object, and shares computed from them."""

from __future__ import annotations

from benchmarks.e2e.perf import by_object, by_thread, parse_script

SCRIPT = """\
    1450      7f159f7dc3eb (/usr/lib/x86_64-linux-gnu/libcrypto.so.3)
    1450      7f15a08fd93f (/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0)
    1450      7f15a08fd940 (/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0)
    1450  ffffffff8a2f1c10 ([kernel.kallsyms])
    1453      7f15a08fd93f (/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0)
    1453      7f0a1e3990 (/x/site-packages/pydantic_core/_pydantic_core.cpython-311-x86_64-linux-gnu.so)
    1453      7f0a1e3991 (/x/site-packages/uvloop/loop.cpython-311-x86_64-linux-gnu.so)
    1453      7f0a1e3992 (/x/site-packages/pydantic_core/_pydantic_core.cpython-311-x86_64-linux-gnu.so)
a line perf prints that is no sample
"""


def test_samples_are_counted_by_thread_and_shared_object() -> None:
    counted = parse_script(SCRIPT)
    assert counted == {
        (1450, "crypto"): 1,
        (1450, "python3.11"): 2,
        (1450, "kernel"): 1,
        (1453, "python3.11"): 1,
        (1453, "_pydantic_core"): 2,
        (1453, "loop"): 1,
    }
    assert by_thread(counted) == {1450: 50.0, 1453: 50.0}
    assert by_object(counted, 1450) == {"python3.11": 50.0, "crypto": 25.0, "kernel": 25.0}
    assert list(by_object(counted, 1453)) == ["_pydantic_core", "python3.11", "loop"], "busiest first"
    assert by_object(counted, 9999) == {}
