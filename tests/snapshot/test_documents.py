"""The shared reader of users' JSON/YAML text: what it accepts, and the one-line reasons for what it refuses."""

from __future__ import annotations

import pytest

from scheduler.snapshot.documents import MAX_ALIAS_NODES, UnreadableText, parse_stream, parse_text


def test_json_and_yaml_read_alike() -> None:
    assert parse_text('{"kind": "List", "items": []}') == parse_text("kind: List\nitems: []\n")


def test_anchors_in_a_hand_written_manifest_are_read() -> None:
    text = """
    kind: PodCliqueSet
    resources: &gpu {limits: {nvidia.com/gpu: 8}}
    cliques:
      - {name: leader, resources: *gpu}
      - {name: worker, resources: *gpu}
    """
    cliques = parse_text(text.replace("\n    ", "\n"))["cliques"]
    assert [c["resources"] for c in cliques] == [{"limits": {"nvidia.com/gpu": 8}}] * 2


def test_aliases_past_the_budget_are_refused_with_where() -> None:
    # each level repeats the previous one 10 times: level k stands for about 10^(k+1) nodes, so the budget
    # (10^5) is passed at level 4 (~10^5 + 10^4 + …), long before the 10^8 the whole file would expand to
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]" for k in range(1, 8)]
    with pytest.raises(UnreadableText, match=r"aliases expand to more than 100,000 nodes.*\(\*a\d at line \d+"):
        parse_text("\n".join(lines))
    assert MAX_ALIAS_NODES == 100_000


def test_aliases_within_the_budget_are_read() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]" for k in range(1, 4)]  # ~11,000 nodes
    assert len(parse_text("\n".join(lines))["a3"]) == 10


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("[" * 50_000 + "]" * 50_000, "nested too deeply", id="deep-json"),
        pytest.param("a: " + "[" * 5_000 + "]" * 5_000, "nested too deeply", id="deep-yaml"),
        pytest.param('{"a": ', "not valid JSON or YAML", id="broken-json"),
        pytest.param("a: [\n  - b\n c: }\n", "not valid JSON or YAML", id="broken-yaml"),
        pytest.param('{"n": ' + "9" * 5_000 + "}", "not valid JSON or YAML", id="huge-integer"),
    ],
)
def test_unreadable_text_is_one_line(text: str, reason: str) -> None:
    with pytest.raises(UnreadableText) as caught:
        parse_text(text)
    assert reason in str(caught.value) and "\n" not in str(caught.value)


def test_bytes_must_be_utf8() -> None:
    assert parse_text(b"kind: Pod\n") == {"kind": "Pod"}
    with pytest.raises(UnreadableText, match=r"not UTF-8 text \(byte 6\)"):
        parse_stream(b"kind: \xff\n")


def test_a_stream_keeps_its_non_empty_documents() -> None:
    assert parse_stream("---\nkind: A\n---\n---\nkind: B\n") == [{"kind": "A"}, {"kind": "B"}]
    with pytest.raises(UnreadableText, match="nested too deeply"):
        parse_stream("kind: A\n---\n" + "[" * 5_000 + "]" * 5_000)
