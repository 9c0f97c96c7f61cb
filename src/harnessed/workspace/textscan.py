"""Streaming text helpers shared by every backend: paging, grep and edits.

They work on any binary file object (a local file, ``io.BytesIO``, an fsspec file) and read it
in bounded chunks, so a page of a 50 MB file costs a few chunks and a file made of one endless
line never lands in memory whole. They are synchronous; backends run them in a worker thread.
"""

from __future__ import annotations

import codecs
import re
from typing import BinaryIO

from harnessed.workspace.errors import EditError
from harnessed.workspace.filesystem import GrepMatch, LinePage

__all__ = ["apply_edit", "grep_stream", "looks_binary", "scan_page"]

CHUNK_BYTES = 1 << 20
BINARY_SNIFF_BYTES = 8192
GREP_LINE_CHARS = 500
"""Longest line text a grep match carries; longer lines are clipped around the match."""
GREP_OVERLAP_CHARS = 4096
"""A line longer than a chunk is searched in pieces that overlap by this much, so a match
shorter than this is found even where it straddles two pieces."""


def looks_binary(head: bytes) -> bool:
    """A file is treated as binary when its first bytes contain a NUL."""
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


class _Reader:
    """Chunked reading with line-level helpers over a binary stream."""

    def __init__(self, stream: BinaryIO, chunk: int = CHUNK_BYTES) -> None:
        self._stream = stream
        self._chunk = chunk
        self._buf = b""
        self._pos = 0
        self.eof = False

    def _fill(self) -> bool:
        if self.eof:
            return False
        data = self._stream.read(self._chunk)
        if not data:
            self.eof = True
            return False
        self._buf = self._buf[self._pos :] + data
        self._pos = 0
        return True

    def head(self) -> bytes:
        """The first bytes of the stream (call before reading anything else)."""
        if len(self._buf) - self._pos < BINARY_SNIFF_BYTES:
            self._fill()
        return self._buf[self._pos : self._pos + BINARY_SNIFF_BYTES]

    def at_end(self) -> bool:
        while self._pos >= len(self._buf):
            if not self._fill():
                return True
        return False

    def skip_lines(self, count: int) -> int:
        """Skip ``count`` lines; returns how many existed (fewer at end of file)."""
        skipped = 0
        while skipped < count:
            if self._pos >= len(self._buf) and not self._fill():
                return skipped
            want = count - skipped
            found = self._buf.count(b"\n", self._pos)
            if found < want:
                skipped += found
                self._pos = len(self._buf)
                if not self._fill():
                    # A final line without a newline still counts.
                    return skipped + (1 if self._buf_had_tail else 0)
                continue
            for _ in range(want):
                self._pos = self._buf.index(b"\n", self._pos) + 1
            skipped += want
        return skipped

    @property
    def _buf_had_tail(self) -> bool:
        return bool(self._buf) and not self._buf.endswith(b"\n")

    def read_line(self, max_bytes: int) -> tuple[bytes, bool] | None:
        """Next line without its newline, at most ``max_bytes`` long; ``None`` at end of file.

        The flag tells whether the whole line was returned (``False``: it was longer).
        """
        while True:
            end = self._buf.find(b"\n", self._pos, self._pos + max_bytes + 1)
            if end != -1:
                line = self._buf[self._pos : end]
                self._pos = end + 1
                return line, True
            if len(self._buf) - self._pos > max_bytes:
                line = self._buf[self._pos : self._pos + max_bytes]
                self._pos += max_bytes
                return line, False
            if not self._fill():
                if self._pos >= len(self._buf):
                    return None
                line = self._buf[self._pos :]
                self._pos = len(self._buf)
                return line, True

    def read_block(self) -> bytes | None:
        """Whole lines from the buffer (up to its last newline); ``None`` at end of file.

        Returns ``b""`` when the next line alone is longer than a chunk (read it with
        :meth:`read_line`). The last line of a file without a final newline comes back alone.
        """
        while True:
            end = self._buf.rfind(b"\n", self._pos)
            if end != -1:
                block = self._buf[self._pos : end + 1]
                self._pos = end + 1
                return block
            if len(self._buf) - self._pos > self._chunk:
                return b""
            if not self._fill():
                if self._pos >= len(self._buf):
                    return None
                block = self._buf[self._pos :]
                self._pos = len(self._buf)
                return block

    def skip_rest_of_line(self) -> None:
        while True:
            end = self._buf.find(b"\n", self._pos)
            if end != -1:
                self._pos = end + 1
                return
            self._pos = len(self._buf)
            if not self._fill():
                return

    def count_lines(self, *, at_line_start: bool) -> int:
        """Count the lines from here to the end of the stream (consumes it)."""
        count = self._buf.count(b"\n", self._pos)
        last = self._buf[-1:] if len(self._buf) > self._pos else b""
        while True:
            data = self._stream.read(self._chunk)
            if not data:
                break
            count += data.count(b"\n")
            last = data[-1:]
        self._buf, self._pos, self.eof = b"", 0, True
        if at_line_start:
            return count + (1 if last not in (b"", b"\n") else 0)
        return count + (1 if last != b"\n" else 0)


def _decode(data: bytes, final: bool = True) -> str:
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=final)
    return text[:-1] if text.endswith("\r") else text


def scan_page(
    stream: BinaryIO,
    *,
    path: str,
    offset: int,
    limit: int,
    max_chars: int,
    count_rest: bool,
    chunk_bytes: int = CHUNK_BYTES,
) -> LinePage:
    """Read one :class:`LinePage` from ``stream`` (see :meth:`Filesystem.read_lines`).

    ``count_rest`` asks for the file's total line count, which means scanning to its end.
    """
    reader = _Reader(stream, chunk_bytes)
    if looks_binary(reader.head()):
        return LinePage(path, offset, (), None, binary=True)
    skipped = reader.skip_lines(offset)
    if skipped < offset:
        return LinePage(path, offset, (), None, total_lines=skipped)

    lines: list[str] = []
    used = 0
    clipped = False
    held_back: bool | None = None  # a line was read but left for the next page: was it whole?
    while len(lines) < limit and used < max_chars:
        room = max_chars - used
        got = reader.read_line(room * 4 + 4)
        if got is None:
            break
        data, complete = got
        text = _decode(data, final=complete)
        if complete and len(text) <= room:
            lines.append(text)
            used += len(text) + 1
            continue
        if lines:  # does not fit: the next page starts with this line
            held_back = complete
            break
        lines.append(text[:room])
        clipped = True
        if not complete:  # the rest of this line is still unread: skip it, not the next line
            reader.skip_rest_of_line()
        break

    more = held_back is not None or not reader.at_end()
    next_offset = offset + len(lines) if more else None
    total: int | None = None
    if not more:
        total = offset + len(lines)
    elif count_rest:
        total = offset + len(lines)
        if held_back is None:
            total += reader.count_lines(at_line_start=True)
        elif held_back:  # the held-back line was read whole, newline included
            total += 1 + reader.count_lines(at_line_start=True)
        else:  # we stopped inside it: counting to its newline counts it
            total += reader.count_lines(at_line_start=False)
    return LinePage(path, offset, tuple(lines), next_offset, total, clipped)


def grep_stream(
    stream: BinaryIO,
    regex: re.Pattern[str],
    *,
    path: str,
    limit: int | None,
    chunk_bytes: int = CHUNK_BYTES,
) -> list[GrepMatch]:
    """Matching lines of one file; an empty list for binary files.

    Blocks of whole lines are searched at once and only a block with a hit is split into
    lines, so a large file without matches costs little more than reading it. A line longer
    than a chunk is searched piece by piece.
    """
    reader = _Reader(stream, chunk_bytes)
    if looks_binary(reader.head()):
        return []
    matches: list[GrepMatch] = []
    number = 0
    while limit is None or len(matches) < limit:
        block = reader.read_block()
        if block is None:
            break
        if not block:  # one line longer than a chunk: search it in overlapping pieces
            number += 1
            carry = ""
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            while (got := reader.read_line(chunk_bytes)) is not None:
                data, complete = got
                text = carry + decoder.decode(data, final=complete).removesuffix("\r")
                found = regex.search(text)
                if found is not None and (not matches or matches[-1].line_number != number):
                    matches.append(GrepMatch(path, number, _clip(text, found)))
                if complete:
                    break
                carry = text[-GREP_OVERLAP_CHARS:]
            continue
        text = block.decode("utf-8", "replace")
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if regex.search(text) is None:
            number += len(lines)
            continue
        for line in lines:
            number += 1
            line = line.removesuffix("\r")
            found = regex.search(line)
            if found is not None:
                matches.append(GrepMatch(path, number, _clip(line, found)))
                if limit is not None and len(matches) >= limit:
                    break
    return matches


def _clip(text: str, found: re.Match[str]) -> str:
    if len(text) <= GREP_LINE_CHARS:
        return text
    start = max(0, min(found.start() - GREP_LINE_CHARS // 4, len(text) - GREP_LINE_CHARS))
    piece = text[start : start + GREP_LINE_CHARS]
    return ("…" if start else "") + piece + ("…" if start + GREP_LINE_CHARS < len(text) else "")


def apply_edit(text: str, old: str, new: str, *, replace_all: bool, path: str) -> tuple[str, int]:
    """Replace ``old`` with ``new`` in ``text``; returns the new text and the replacement count.

    Raises :class:`EditError` when ``old`` is empty, equal to ``new``, missing, or (without
    ``replace_all``) found more than once. Text written with ``\\n`` also matches a file that
    uses ``\\r\\n`` line endings.
    """
    if not old:
        raise EditError(path, "old text is empty; use write_file to create or overwrite a file")
    if old == new:
        raise EditError(path, "old and new text are identical, so nothing would change")
    count = text.count(old)
    if count == 0 and "\n" in old and "\r\n" in text:
        crlf_old = old.replace("\r\n", "\n").replace("\n", "\r\n")
        if text.count(crlf_old):
            old, new = crlf_old, new.replace("\r\n", "\n").replace("\n", "\r\n")
            count = text.count(old)
    if count == 0:
        raise EditError(
            path,
            "old text not found; read the file again and copy the exact text, "
            "including whitespace and indentation",
        )
    if count > 1 and not replace_all:
        raise EditError(
            path,
            f"old text occurs {count} times; include more surrounding lines to make it "
            "unique, or set replace_all=true to replace every occurrence",
        )
    return text.replace(old, new), count
