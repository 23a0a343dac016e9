"""Replay every recorded kube-scheduler request against the app, in both nodeCacheCapable modes.

The cluster is the recording's own: its three nodes, and every pod it asked about (pending), with the PodGang
Grove would have made for ``infer-0`` (leader 1/1, workers 2/2). Binds are replayed for the node our filter chose
(kube-scheduler binds to what filter left), concurrently as kube-scheduler's binding goroutines run.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from api.core import Pod
from tests.extender_support import assert_no_overcommit, harness, run
from tests.recorded import FIXTURES, MODES, infer_gang, recorded_cluster, recordings


def _check_filter(mode: str, request: dict[str, Any], reply: dict[str, Any]) -> str | None:
    asked = request["NodeNames"] if mode == "node-names" else [n["metadata"]["name"] for n in request["Nodes"]["items"]]
    if mode == "node-names":
        assert reply["Nodes"] is None
        chosen = reply["NodeNames"]
    else:
        assert reply["NodeNames"] is None
        chosen = [n["metadata"]["name"] for n in reply["Nodes"]["items"]]
    assert set(chosen) <= set(asked)
    assert len(chosen) <= 1, "a planned pod is pinned to one node"
    if chosen:
        return str(chosen[0])
    assert set(reply["FailedNodes"]) == set(asked) and len(set(reply["FailedNodes"].values())) == 1, reply
    assert all(reply["FailedNodes"].values())
    return None


@pytest.mark.parametrize("mode", MODES)
def test_replay_every_recorded_request(mode: str) -> None:
    nodes, pods = recorded_cluster(mode)
    h = harness(nodes=nodes, pods=pods, podgangs=[infer_gang(pods)])
    by_name = {pod.metadata.name: pod for pod in pods}

    async def main() -> None:
        chosen: dict[str, str | None] = {}
        binds: list[asyncio.Task[Any]] = []
        async with h.client() as client:
            for recording in recordings(mode):
                request = recording["request"]
                path = recording["path"]
                if path == "/bind":
                    node = chosen.get(request["PodName"])
                    if node is None:
                        continue  # filter left no node: kube-scheduler would not bind
                    body = {**request, "Node": node}
                    binds.append(asyncio.create_task(client.post(path, json=body)))
                    await asyncio.sleep(0)
                    continue
                if path == "/preempt":
                    for task in binds:
                        assert (await task).json() == {"Error": ""}
                reply = await client.post(path, json=request)
                assert reply.status_code == 200, reply.text
                body = reply.json()
                if path == "/filter":
                    chosen[request["Pod"]["metadata"]["name"]] = _check_filter(mode, request, body)
                elif path == "/prioritize":
                    planned = chosen.get(request["Pod"]["metadata"]["name"])
                    asked = request["NodeNames"] or [n["metadata"]["name"] for n in request["Nodes"]["items"]]
                    assert [s["Host"] for s in body] == asked
                    assert {s["Host"] for s in body if s["Score"] == 10} == ({planned} & set(asked))
                    assert all(s["Score"] in (0, 10) for s in body)
                elif path == "/preempt":
                    _check_preempt(request, body, by_name)
        for name in ("infer-0-model-0-leader-0x", "infer-0-model-0-worker-0x", "infer-0-model-0-worker-1x"):
            assert by_name[name].key in h.writer.bound_nodes(), f"{name} of the gang was not bound"
        assert_no_overcommit(h.store)

    run(main)


def _check_preempt(request: dict[str, Any], reply: dict[str, Any], by_name: dict[str, Pod]) -> None:
    # Every worker of infer-0 is bound now; a node whose victims include one must be struck out.
    workers = {by_name[n].metadata.uid for n in ("infer-0-model-0-worker-0x", "infer-0-model-0-worker-1x")}
    proposal = request["NodeNameToMetaVictims"] or {
        # node-list mode sends whole victim pods; the reply names them by UID either way
        node: {"Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]], "NumPDBViolations": v["NumPDBViolations"]}
        for node, v in request["NodeNameToVictims"].items()
    }
    assert set(reply["NodeNameToMetaVictims"]) <= set(proposal)
    for node, victims in proposal.items():
        breaks_gang = any(v["UID"] in workers for v in victims["Pods"])
        assert (node in reply["NodeNameToMetaVictims"]) == (not breaks_gang), node
        if not breaks_gang:
            assert reply["NodeNameToMetaVictims"][node] == victims


def test_fixture_folder_is_complete() -> None:
    for mode in MODES:
        paths = {json.loads(p.read_text())["path"] for p in Path(FIXTURES / mode).glob("*.json")}
        assert paths == {"/filter", "/prioritize", "/bind", "/preempt"}
