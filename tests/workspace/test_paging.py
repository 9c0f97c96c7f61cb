"""read_lines: streamed pages, exact line counts, budgets, clipping and binary detection."""

from __future__ import annotations

import io
import re

import pytest

from harnessed.workspace import LinePage, MemoryFilesystem
from harnessed.workspace.textscan import CHUNK_BYTES, apply_edit, grep_stream, scan_page


def page(
    data: bytes, offset: int = 0, limit: int = 100, max_chars: int = 1000, chunk: int = 0
) -> LinePage:
    """scan_page over ``data``; a tiny ``chunk`` exercises the chunk boundaries."""
    return scan_page(
        io.BytesIO(data),
        path="f",
        offset=offset,
        limit=limit,
        max_chars=max_chars,
        count_rest=True,
        chunk_bytes=chunk or CHUNK_BYTES,
    )


@pytest.mark.parametrize("chunk", [0, 1, 3, 7])
@pytest.mark.parametrize(
    ("data", "count"),
    [
        (b"", 0),
        (b"\n", 1),
        (b"a", 1),
        (b"a\n", 1),
        (b"a\nb", 2),
        (b"a\nb\n", 2),
        (b"a\n\n\nb\n", 4),
    ],
)
def test_line_counts(data: bytes, count: int, chunk: int) -> None:
    whole = page(data, chunk=chunk)
    assert len(whole.lines) == count and whole.total_lines == count and not whole.has_more
    first = page(data, limit=1, chunk=chunk)
    assert first.total_lines == count
    assert first.has_more == (count > 1)
    if count:
        rest = page(data, offset=1, chunk=chunk)
        assert rest.lines == whole.lines[1:] and rest.total_lines == count


@pytest.mark.parametrize("chunk", [0, 2, 5])
def test_offsets_and_limits(chunk: int) -> None:
    data = b"".join(b"line %d\n" % i for i in range(1, 11))
    p = page(data, offset=3, limit=4, chunk=chunk)
    assert p.lines == ("line 4", "line 5", "line 6", "line 7")
    assert (p.first_line, p.next_offset, p.total_lines) == (4, 7, 10)
    end = page(data, offset=7, chunk=chunk)
    assert end.lines == ("line 8", "line 9", "line 10") and end.next_offset is None
    past = page(data, offset=20, chunk=chunk)
    assert past.lines == () and past.total_lines == 10 and past.next_offset is None


@pytest.mark.parametrize("chunk", [0, 4])
def test_budget_holds_back_the_line_that_does_not_fit(chunk: int) -> None:
    data = b"aaaa\nbbbb\ncccc\n"
    p = page(data, max_chars=12, chunk=chunk)  # "aaaa" + newline + "bbbb" + newline = 10
    assert p.lines == ("aaaa", "bbbb") and p.next_offset == 2 and p.total_lines == 3
    p = page(b"aaaa\nbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", max_chars=8)
    assert p.lines == ("aaaa",) and p.next_offset == 1 and p.total_lines == 2


def test_a_line_longer_than_the_page_is_clipped() -> None:
    data = b"x" * 5000 + b"\nnext\n"
    p = page(data, max_chars=100)
    assert p.lines == ("x" * 100,) and p.clipped
    assert p.next_offset == 1 and p.total_lines == 2
    assert page(data, offset=1, max_chars=100).lines == ("next",)


def test_multibyte_text_and_crlf() -> None:
    data = "héllo wörld\r\nsecond\r\n".encode()
    assert page(data).lines == ("héllo wörld", "second")
    clipped = page("é".encode() * 50, max_chars=7)
    assert clipped.lines == ("é" * 7,) and clipped.clipped
    assert page(b"bad \xff byte\n").lines == ("bad \ufffd byte",)


def test_binary_detection() -> None:
    p = page(b"PK\x03\x04\x00\x00binary")
    assert p.binary and p.lines == ()


async def test_read_lines_validates_arguments() -> None:
    fs = MemoryFilesystem({"f": "x\n"})
    for kwargs in ({"offset": -1}, {"limit": 0}, {"max_chars": 0}):
        with pytest.raises(ValueError):
            await fs.read_lines("f", **kwargs)


def test_grep_stream_counts_lines_across_long_lines() -> None:
    data = b"short\n" + b"y" * 3_000_000 + b"\nneedle here\n"
    found = grep_stream(io.BytesIO(data), re.compile("needle"), path="f", limit=None)
    assert [(m.line_number, m.line) for m in found] == [(3, "needle here")]
    assert grep_stream(io.BytesIO(b"\x00needle"), re.compile("needle"), path="f", limit=5) == []


def test_apply_edit() -> None:
    assert apply_edit("a-b-a", "a", "c", replace_all=True, path="f") == ("c-b-c", 2)
    assert apply_edit("x\r\ny\r\n", "x\ny", "1\n2", replace_all=False, path="f") == (
        "1\r\n2\r\n",
        1,
    )


@pytest.mark.parametrize("chunk", [1, 2, 5, 16, CHUNK_BYTES])
def test_grep_stream_line_numbers_across_chunk_boundaries(chunk: int) -> None:
    data = b"alpha\nbeta\r\n\ngamma beta\n" + b"z" * 40 + b"beta\nlast beta"
    found = grep_stream(
        io.BytesIO(data), re.compile("beta"), path="f", limit=None, chunk_bytes=chunk
    )
    assert [m.line_number for m in found] == [2, 4, 5, 6]
    assert found[0].line == "beta" and found[-1].line == "last beta"
    limited = grep_stream(
        io.BytesIO(data), re.compile("beta"), path="f", limit=2, chunk_bytes=chunk
    )
    assert [m.line_number for m in limited] == [2, 4]


def test_grep_stream_long_lines_keep_multibyte_characters() -> None:
    data = ("é" * 10 + "needle" + "é" * 10).encode()
    found = grep_stream(
        io.BytesIO(data), re.compile("é{3}needle"), path="f", limit=None, chunk_bytes=3
    )
    assert [m.line_number for m in found] == [1]
    assert "\ufffd" not in found[0].line
