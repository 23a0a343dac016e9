"""``read_bounded``: what a file reports about itself never decides how much is read."""

from __future__ import annotations

import gzip
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.snapshot.files import CHUNK_BYTES, UnreadableFile, read_bounded

LIMIT = 3 * CHUNK_BYTES // 2  # a chunk and a half: the limit falls inside a read


def _fifo_fed(path: Path, parts: Iterator[bytes]) -> threading.Thread:
    """A FIFO at ``path`` whose writer sends ``parts`` one write at a time, then closes (or stops when the reader
    leaves)."""
    os.mkfifo(path)

    def write() -> None:
        with path.open("wb", buffering=0) as out:
            try:
                for part in parts:
                    out.write(part)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def _endless(part: bytes) -> Iterator[bytes]:
    while True:
        yield part


def test_a_regular_file_within_the_limit_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"x" * LIMIT)
    assert read_bounded(path, limit=LIMIT) == b"x" * LIMIT


def test_a_regular_file_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as out:
        out.truncate(LIMIT + 1)
    with pytest.raises(UnreadableFile, match=f"is {LIMIT + 1:,} bytes, more than {LIMIT:,} bytes"):
        read_bounded(path, limit=LIMIT)


def test_an_endless_pipe_of_text_stops_one_byte_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "endless"
    writer = _fifo_fed(path, _endless(b"- item\n" * 1000))
    with pytest.raises(UnreadableFile, match=f"holds more than {LIMIT:,} bytes \\(raise it\\)"):
        read_bounded(path, limit=LIMIT, hint="raise it")
    writer.join(timeout=30)
    assert not writer.is_alive(), "the reader left, so the writer's next write failed and it stopped"


def test_a_pipe_within_the_limit_is_read_whole_even_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "pieces"
    _fifo_fed(path, iter([b"{", b'"kind"', b": ", b'"List"}']))
    assert read_bounded(path, limit=LIMIT) == b'{"kind": "List"}'


def test_gzip_is_decompressed_within_the_limit_even_through_a_pipe_one_byte_at_a_time(tmp_path: Path) -> None:
    packed = gzip.compress(b"kind: List\n" * 10)
    path = tmp_path / "packed"
    _fifo_fed(path, iter([packed[:1], packed[1:2], packed[2:]]))  # the magic arrives split across writes
    assert read_bounded(path, limit=LIMIT, gunzip=True) == b"kind: List\n" * 10


def test_a_gzip_bomb_of_text_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "bomb.gz"
    path.write_bytes(gzip.compress(b" " * (8 * CHUNK_BYTES)))  # 8 MiB of spaces, a few KB on disk
    assert path.stat().st_size < LIMIT
    with pytest.raises(UnreadableFile, match=f"decompresses to more than {LIMIT:,} bytes"):
        read_bounded(path, limit=LIMIT, gunzip=True)


def test_gzip_is_left_alone_unless_the_caller_reads_gzip(tmp_path: Path) -> None:
    path = tmp_path / "f.gz"
    path.write_bytes(gzip.compress(b"x" * 100))
    with pytest.raises(UnreadableFile, match="NUL byte"):  # compressed bytes are not text
        read_bounded(path, limit=LIMIT)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        pytest.param(gzip.compress(b"x")[:12], "not valid gzip", id="truncated"),
        pytest.param(b"\x1f\x8b" + bytes(range(1, 256)) * 4, "not valid gzip", id="garbage-after-the-magic"),
        pytest.param(gzip.compress(b"a\0b"), "NUL byte at decompressed byte 1", id="nul-inside"),
    ],
)
def test_broken_gzip_is_one_line(tmp_path: Path, content: bytes, said: str) -> None:
    path = tmp_path / "bad.gz"
    path.write_bytes(content)
    with pytest.raises(UnreadableFile, match=said) as caught:
        read_bounded(path, limit=LIMIT, gunzip=True)
    assert "\n" not in str(caught.value)


def test_a_nul_byte_is_refused_at_its_position(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"kind: List\n" + b"\0" * 10)
    with pytest.raises(UnreadableFile, match="holds a NUL byte at byte 11: not text"):
        read_bounded(path, limit=LIMIT)


def test_a_sparse_file_under_a_high_limit_stops_at_its_first_chunk(tmp_path: Path) -> None:
    path = tmp_path / "sparse"
    with path.open("wb") as out:
        out.truncate(1 << 30)
    with pytest.raises(UnreadableFile, match="NUL byte at byte 0"):
        read_bounded(path, limit=2 << 30)


@pytest.mark.parametrize(
    ("target", "said"),
    [
        pytest.param("/dev/zero", "is a character device", id="dev-zero"),
        pytest.param("/dev/null", "is a character device", id="dev-null"),
        pytest.param(".", "is a directory", id="directory"),
    ],
)
def test_what_is_not_a_file_or_a_pipe_is_refused_unopened(tmp_path: Path, target: str, said: str) -> None:
    link = tmp_path / "link"
    link.symlink_to(tmp_path if target == "." else target)  # followed, as /dev/stdin is
    with pytest.raises(UnreadableFile, match=said):
        read_bounded(link, limit=LIMIT)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile, match="No such file or directory"):
        read_bounded(tmp_path / "missing", limit=LIMIT)
