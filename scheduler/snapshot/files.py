"""Reading a file a user named — a snapshot, a levels file, a PodCliqueSet file, a shapes CSV — without letting the
file decide how much we read.

A limit on the size a file reports is no limit: ``/dev/zero``, a pipe and ``/proc`` files report 0, a sparse file
reports its holes, and a gzip bomb is small on disk. So every user file goes through ``read_bounded``, which:

- refuses what is neither a regular file nor a pipe (a directory, a device, a socket) before opening it, since
  opening some devices has effects of its own;
- refuses a regular file that says it is larger than the limit without reading it;
- reads in chunks and stops one byte past the limit, after decompression when the file is gzip (and the caller
  accepts gzip), so an endless pipe or a bomb costs at most the limit;
- refuses a NUL byte at once: JSON, YAML and CSV text never holds one, and it is what devices, holes in sparse files
  and the usual bombs are made of, so such input fails at its first chunk rather than at the limit.

A pipe is read as ``cat`` reads one: it waits for a writer. Kubeconfig files are left to the Kubernetes client.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from pathlib import Path

__all__ = ["CHUNK_BYTES", "UnreadableFile", "read_bounded"]

CHUNK_BYTES = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"


class UnreadableFile(ValueError):
    """The file cannot be read as a user file; the message is one line saying why (the caller names the file)."""


class _Replayed(io.RawIOBase):
    """A stream whose first bytes were already read (to look for gzip's magic), put back in front of the rest."""

    def __init__(self, head: bytes, rest: io.RawIOBase) -> None:
        super().__init__()
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        return self._rest.readinto(buffer) or 0


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file or a pipe is, for the message; ``None`` when it can be read."""
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _head(raw: io.RawIOBase, size: int) -> bytes:
    """The first ``size`` bytes (fewer only at the end of the file): a pipe may deliver them one write at a time."""
    head = b""
    while len(head) < size:
        chunk = raw.read(size - len(head))
        if not chunk:
            break
        head += chunk
    return head


def read_bounded(path: str | Path, *, limit: int, gunzip: bool = False, hint: str = "") -> bytes:
    """At most ``limit`` bytes of the file (after decompression when ``gunzip`` and the file starts like gzip).

    Raises ``UnreadableFile`` for a file that is not a regular file or a pipe, holds more than ``limit`` bytes,
    holds a NUL byte, is corrupt gzip, or cannot be opened; ``hint`` is added to the message about the limit (what
    raises it).
    """
    too_large = f"more than {limit:,} bytes{f' ({hint})' if hint else ''}"
    try:
        info = os.stat(path)
    except OSError as err:
        raise UnreadableFile(err.strerror or str(err)) from None
    kind = _kind(info.st_mode)
    if kind is not None:
        raise UnreadableFile(f"is {kind}, not a file to read")
    if stat.S_ISREG(info.st_mode) and info.st_size > limit:
        raise UnreadableFile(f"is {info.st_size:,} bytes, {too_large}")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as err:
        raise UnreadableFile(err.strerror or str(err)) from None
    with io.FileIO(descriptor, "rb") as raw:
        kind = _kind(os.fstat(descriptor).st_mode)  # swapped for something else since the stat
        if kind is not None:
            raise UnreadableFile(f"is {kind}, not a file to read")
        try:
            return _read(raw, limit=limit, gunzip=gunzip, too_large=too_large)
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:
            raise UnreadableFile(f"not valid gzip: {' '.join(str(err).split())}") from None
        except OSError as err:
            raise UnreadableFile(err.strerror or str(err)) from None


def _read(raw: io.RawIOBase, *, limit: int, gunzip: bool, too_large: str) -> bytes:
    head = _head(raw, len(_GZIP_MAGIC))
    stream: io.RawIOBase | gzip.GzipFile = _Replayed(head, raw)
    compressed = gunzip and head == _GZIP_MAGIC
    if compressed:
        stream = gzip.GzipFile(fileobj=io.BufferedReader(stream, CHUNK_BYTES))
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(CHUNK_BYTES, limit + 1 - size))
        if not chunk:
            break
        nul = chunk.find(b"\0")
        if nul >= 0:
            where = "decompressed " if compressed else ""
            raise UnreadableFile(f"holds a NUL byte at {where}byte {size + nul:,}: not text")
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise UnreadableFile(f"{'decompresses to' if compressed else 'holds'} {too_large}")
    return b"".join(chunks)
