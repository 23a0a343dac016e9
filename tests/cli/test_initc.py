"""``grove-extender initc``: flags as Grove's init container takes them, the wait, backoff and SIGTERM — the wait
against the fake API server over HTTP, the command as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from benchmarks.sim.fakeapi import PODS, FakeApiServer, running
from scheduler.cli import main
from scheduler.kube.backoff import Backoff
from scheduler.reconcile.initc import ParentWait, parse_podcliques, wait_for_parents
from tests.conftest import REPO_ROOT

NS = "default"


def _pod(name: str, clique: str, *, ready: bool) -> dict[str, Any]:
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    labels = {"grove.io/podclique": clique}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": status,
    }


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param(["pcs-0-leader:1"], {"pcs-0-leader": 1}, id="one"),
        pytest.param(["a-0-x:2", "a-0-sg-0-y:3"], {"a-0-x": 2, "a-0-sg-0-y": 3}, id="flag-per-parent"),
        pytest.param(["a:0"], ValueError, id="zero"),
        pytest.param(["a"], ValueError, id="no-count"),
        pytest.param([":2"], ValueError, id="no-name"),
        pytest.param(["a:x"], ValueError, id="not-a-number"),
        pytest.param([], ValueError, id="none"),
    ],
)
def test_podcliques_flags_parse_as_groves_initc_does(values: list[str], expected: Any) -> None:
    if expected is ValueError:
        with pytest.raises(ValueError, match="podcliques"):
            parse_podcliques(values)
    else:
        assert parse_podcliques(values) == expected


def test_wait_counts_ready_pods_of_each_parent_only() -> None:
    wait = ParentWait({"p-0-a": 2, "p-0-b": 1})
    wait.relist([_pod("a1", "p-0-a", ready=True), _pod("x", "p-0-other", ready=True)])
    assert not wait.satisfied() and wait.progress() == "p-0-a=1/2,p-0-b=0/1"
    wait.observe("ADDED", _pod("a2", "p-0-a", ready=True))
    wait.observe("MODIFIED", _pod("b1", "p-0-b", ready=True))
    assert wait.satisfied()
    wait.observe("DELETED", _pod("a2", "p-0-a", ready=True))
    assert not wait.satisfied()


def test_backoff_doubles_to_its_cap_and_resets() -> None:
    backoff = Backoff(initial=0.5, cap=4.0, jitter=False)
    assert [backoff.delay() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    backoff.reset()
    assert backoff.delay() == 0.5


def _api(server: FakeApiServer) -> client.ApiClient:
    return client.ApiClient(client.Configuration(host=server.url))


def test_waits_over_http_through_api_errors_until_parents_are_ready() -> None:
    with running() as server:
        server.put(PODS, _pod("leader-1", "pcs-0-leader", ready=False))
        server.fail("GET", r"/pods$", 500, reason="InternalError", times=2)  # two failed lists, then it works
        done: list[bool] = []
        stop = threading.Event()
        waiter = threading.Thread(
            target=lambda: done.append(
                wait_for_parents(
                    _api(server),
                    namespace=NS,
                    wait=ParentWait({"pcs-0-leader": 1}),
                    stop=stop,
                    backoff=Backoff(initial=0.01, cap=0.05, jitter=False),
                )
            ),
            daemon=True,
        )
        waiter.start()
        deadline = time.monotonic() + 60
        while len([r for r in server.requests if r.query.get("watch") == "true"]) == 0:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert not done
        server.put(PODS, _pod("leader-1", "pcs-0-leader", ready=True))  # the kubelet marks it Ready
        waiter.join(timeout=60)
        assert done == [True]
    lists = [r for r in server.requests if r.method == "GET" and r.path.endswith("/pods") and "watch" not in r.query]
    assert len(lists) == 3  # 2 refused + 1 good
    assert lists[-1].query["labelSelector"] == "grove.io/podclique in (pcs-0-leader)"


def test_command_exits_zero_once_parents_are_ready(tmp_path: Path) -> None:
    with running() as server:
        server.put(PODS, _pod("w1", "pcs-0-worker", ready=True))
        server.put(PODS, _pod("l1", "pcs-0-leader", ready=False))
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        later = threading.Timer(0.5, lambda: server.put(PODS, _pod("l1", "pcs-0-leader", ready=True)))
        later.start()
        args = ["initc", "--podcliques=pcs-0-leader:1", "--podcliques=pcs-0-worker:1", "--namespace", NS]
        assert main([*args, "--kubeconfig", str(kubeconfig)]) == 0
        later.join()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["initc", "--namespace", NS], "--podcliques is required", id="no-parents"),
        pytest.param(["initc", "--podcliques=a:0", "--namespace", NS], "positive integer", id="bad-count"),
    ],
)
def test_command_refuses_bad_flags_with_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_command_stops_on_sigterm_with_143(tmp_path: Path) -> None:
    with running() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        command = Path(sys.executable).parent / "grove-extender"  # the console script the image installs
        process = subprocess.Popen(
            [str(command), "initc", "--podcliques=pcs-0-leader:1", "--namespace", NS, "--kubeconfig", str(kubeconfig)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not [r for r in server.requests if r.query.get("watch") == "true"]:
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 143, err
    assert "initc waiting namespace=default parents=pcs-0-leader=0/1" in err
    assert "initc stopped before parents were ready" in err
