"""``api.http.limits.head_line_ends``: however a head arrives, split into reads anywhere, the lines it counts are the
head's own, never a line of the body or of the next request behind it; so a head of many fields is refused before
its parser reads it, and a request within the limit never is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from api.http.limits import head_line_ends

FIELD = st.from_regex(rb"\A[a-z-]{1,8}: ?[ -~]{0,8}\Z", fullmatch=True).map(lambda field: field.rstrip())
BODY = st.binary(max_size=64).map(lambda body: body + b"\n\r\n\n" + body)  # empty lines, as a head ends


@given(
    fields=st.lists(FIELD, max_size=20),
    body=BODY,
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=8),
)
def test_a_head_split_anywhere_counts_its_own_lines_only(fields: list[bytes], body: bytes, cuts: list[int]) -> None:
    head = b"POST /filter HTTP/1.1\r\n" + b"".join(field + b"\r\n" for field in fields) + b"\r\n"
    sent = head + body + b"GET / HTTP/1.1\r\n" * 3
    counted, start, before = 0, 0, b""
    for end in [*sorted(set(cuts)), len(sent)]:
        if start >= len(head) or end <= start:  # the head's reads are over: the parser reports the rest
            continue
        counted += head_line_ends(sent[start:end], before)
        before, start = sent[max(0, end - 2) : end], end
    assert counted == 1 + len(fields)


def test_an_empty_line_ahead_of_the_request_line_is_the_one_line_counted_beyond_the_head() -> None:
    assert head_line_ends(b"\r\nGET / HTTP/1.1\r\nhost: x\r\n\r\n", b"") == 3
    assert head_line_ends(b"\r\n\r\nGET / HTTP/1.1\r\nhost: x\r\n\r\n", b"") == 1
