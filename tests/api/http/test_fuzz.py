"""Seeded fuzzing of the extender's HTTP surface from the recorded kube-scheduler requests (both modes).

Each case takes a recorded request and breaks it one way: an absurd quantity where a quantity belongs, a required
field removed or of the wrong type, a random value anywhere, deep nesting, truncated or corrupted bytes. The real
coordinator answers, over the recording's own cluster. Whatever arrives: never a 500, never an "internal error";
where the case knows the field it broke, the 400 names it (and the resource, for quantities). Quantities are read
from a request only in the Nodes of NodeList mode: a Pod's (the request's, preempt's victims') is read for its
identity alone — the extender plans from the API's copy — so an absurd one there is answered 200, as if unbroken.

``GROVE_FUZZ_REQUESTS`` and ``GROVE_FUZZ_SEED`` change the size and seed (make test: 3,000 requests, seed 10).
"""

from __future__ import annotations

import copy
import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.extender_support import SyncClient, harness
from tests.recorded import MODES, infer_gang, recorded_cluster, recordings

REQUESTS = int(os.environ.get("GROVE_FUZZ_REQUESTS", "3000"))
SEED = int(os.environ.get("GROVE_FUZZ_SEED", "10"))

# Absurd for any resource (negative, past int64 or past every sane maximum, or not a quantity at all).
ABSURD_QUANTITIES = ("1e40", "9Ei", "12345678901234567890", "-4", "1e999999999", "4x", "", "0x10", 1e300, "1Ei")
QUANTITY_MAPS = frozenset({"requests", "limits", "overhead", "allocatable", "capacity"})
REQUIRED = {"/filter": ("Pod",), "/prioritize": ("Pod",), "/bind": ("PodName", "PodNamespace", "PodUID", "Node")}

Path = tuple[str | int, ...]


@dataclass
class Case:
    verb: str
    body: bytes
    kind: str
    named: tuple[str, ...] = ()  # what a 400 must contain; empty: any 200 or 4xx is fine
    status: int | None = None  # the one status it must get, when the case knows it


def _paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


def _set(document: Any, path: Path, value: Any) -> None:
    for step in path[:-1]:
        document = document[step]
    document[path[-1]] = value


def _random_value(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            -1,
            2**70,
            0.5,
            "",
            "x" * rng.randint(1, 5000),
            "é\u202e\x00",
            [],
            {},
            [1, "a", None],
            {"a": {"b": [{}]}},
            rng.choice(ABSURD_QUANTITIES),
        ]
    )


_DEEP = "\u2063deep\u2063"  # a placeholder json.dumps leaves alone; replaced by nesting it could not encode


def _quantity_case(rng: random.Random, verb: str, request: dict[str, Any]) -> Case | None:
    maps = [p for p in _paths(request) if p and p[-1] in QUANTITY_MAPS and isinstance(_get(request, p), dict)]
    if not maps:
        return None
    read = [p for p in maps if p[0] == "Nodes"]
    path = rng.choice(read if read and rng.random() < 0.75 else maps)
    resource = rng.choice([*_get(request, path), "nvidia.com/gpu", "example.com/widget"])
    # 5,000 GPUs: a real number, but beyond the sane maximum for GPUs only.
    value = "5000" if resource == "nvidia.com/gpu" and rng.random() < 0.3 else rng.choice(ABSURD_QUANTITIES)
    broken = copy.deepcopy(request)
    _set(broken, (*path, resource), value)
    if path[0] != "Nodes":
        return Case(verb, json.dumps(broken).encode(), "unread quantity", status=200)
    where = ".".join(str(step) for step in path)
    return Case(verb, json.dumps(broken).encode(), "quantity", named=(where, resource))


def _get(document: Any, path: Path) -> Any:
    for step in path:
        document = document[step]
    return document


def cases(count: int, seed: int) -> Iterator[Case]:
    rng = random.Random(seed)
    recorded = [(r["path"], r["request"]) for mode in MODES for r in recordings(mode)]
    with_nodes = [(verb, request) for verb, request in recorded if request.get("Nodes")]
    for _ in range(count):
        verb, request = rng.choice(recorded)
        kind = rng.choice(["quantity", "quantity", "required", "replace", "replace", "delete", "deep", "bytes"])
        if kind == "quantity" and rng.random() < 0.8:
            verb, request = rng.choice(with_nodes)  # where quantities are read from a request
        if kind == "quantity" and (case := _quantity_case(rng, verb, request)) is not None:
            yield case
            continue
        if kind == "quantity" or (kind == "required" and verb not in REQUIRED):
            kind = "replace"  # no quantity or required field to break in this request: break something else
        broken = copy.deepcopy(request)
        if kind == "required":
            field = rng.choice(REQUIRED[verb])
            if rng.random() < 0.5:
                del broken[field]
            else:
                broken[field] = rng.choice([7, [field], None if field == "Pod" else {"a": 1}])
            yield Case(verb, json.dumps(broken).encode(), "required", named=(field,))
            continue
        if kind == "bytes":
            raw = json.dumps(request).encode()
            cut = rng.randrange(1, len(raw) - 1)
            if rng.random() < 0.5:
                yield Case(verb, raw[:cut], "truncated", named=(f"{verb.lstrip('/')}: ", "Invalid JSON"))
            else:
                yield Case(verb, raw[:cut] + bytes(rng.randrange(256) for _ in range(8)) + raw[cut:], "garbage")
            continue
        path = rng.choice([p for p in _paths(broken) if p])
        if kind == "delete":
            parent = _get(broken, path[:-1])
            del parent[path[-1]]
        else:
            _set(broken, path, _DEEP if kind == "deep" else _random_value(rng))
        text = json.dumps(broken)
        depth = rng.randint(300, 5000)
        yield Case(verb, text.replace(json.dumps(_DEEP), "[" * depth + "0" + "]" * depth).encode(), kind)


@pytest.fixture(scope="module")
def client() -> SyncClient:
    nodes, pods = recorded_cluster("node-names")
    # Bind calls wait for their gang only briefly: fuzzing asks for answers, not for gangs to complete.
    return SyncClient(harness(nodes=nodes, pods=pods, podgangs=[infer_gang(pods)], bind_wait=0.02).app)


def test_fuzzed_requests_never_fail_the_server_and_bad_fields_are_named(client: SyncClient) -> None:
    tally: dict[tuple[str, int], int] = {}
    wrong: list[str] = []
    for case in cases(REQUESTS, SEED):
        reply = client.post(case.verb, content=case.body, headers={"content-type": "application/json"})
        tally[(case.kind, reply.status_code)] = tally.get((case.kind, reply.status_code), 0) + 1
        text = reply.text
        if reply.status_code not in (200, 400, 413) or "internal error" in text:
            wrong.append(f"{case.kind} {case.verb}: {reply.status_code} {text[:300]}")
        elif case.status is not None and reply.status_code != case.status:
            wrong.append(f"{case.kind} {case.verb}: wanted {case.status}, got {reply.status_code} {text[:300]}")
        elif case.named and (reply.status_code != 400 or not all(name in reply.json()["Error"] for name in case.named)):
            wrong.append(
                f"{case.kind} {case.verb}: wanted a 400 naming {case.named}, got {reply.status_code} {text[:300]}"
            )
        elif reply.status_code == 200:
            json.loads(text)  # a well-formed reply kube-scheduler can decode
    print(f"fuzzed {REQUESTS} requests (seed {SEED}):", dict(sorted(tally.items())))
    assert wrong == []
    quantities_refused = sum(n for (kind, status), n in tally.items() if kind == "quantity" and status == 400)
    assert quantities_refused >= REQUESTS // 10, "the generator must exercise the quantity checks"
    unread = sum(n for (kind, _), n in tally.items() if kind == "unread quantity")
    assert unread >= REQUESTS // 50, "and the quantities a request carries but the extender does not read"
