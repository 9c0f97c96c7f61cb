"""File tools: paging of huge files, wrapping, caps and the exact text the model sees."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from harnessed.files.tools import (
    MAX_GLOB_RESULTS,
    MAX_GREP_MATCHES,
    file_tools,
    format_page,
)
from harnessed.messages import ToolResultBlock, ToolUseBlock
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.tools import ToolContext, Toolkit
from harnessed.workspace import LinePage, MemoryFilesystem, Workspace


async def run(toolkit: Toolkit, name: str, **args: object) -> ToolResultBlock:
    call = ToolUseBlock(id=f"call_{uuid.uuid4().hex[:8]}", name=name, input=args)

    def make_context(c: ToolUseBlock) -> ToolContext:
        return ToolContext(
            agent_name="tester",
            runtime=RuntimeContext(),
            state=AgentState("tester", "default", "tester"),
            call_id=c.id,
        )

    [result] = await toolkit.run_step([call], make_context)
    return result


def memory_toolkit(files: dict[str, str | bytes]) -> Toolkit:
    return Toolkit(file_tools(Workspace(MemoryFilesystem(files))))


def make_big_file(path: Path, size: int, line: bytes) -> int:
    """Write about ``size`` bytes of repeated ``line`` to ``path``; returns the line count."""
    block = line * (1 << 20 // len(line))
    written = lines = 0
    with open(path, "wb") as out:
        while written < size:
            out.write(block)
            written += len(block)
            lines += block.count(b"\n")
    return lines


async def test_first_page_of_a_50_mb_file_is_quick_and_bounded(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    line = b"0123456789 the quick brown fox jumps over the lazy dog 0123456789 abcdefghij\n"
    total = make_big_file(root / "big.log", 50 << 20, line)
    toolkit = Toolkit(file_tools(Workspace(root)))
    started = time.perf_counter()
    result = await run(toolkit, "read_file", path="big.log")
    elapsed = time.perf_counter() - started
    assert not result.is_error
    assert elapsed < 2.0, f"first page took {elapsed:.2f} s"
    assert len(result.content) < 80_000  # one page: at most 50,000 chars of text plus numbers
    rows = result.content.splitlines()
    assert rows[0] == "     1\t" + line.decode().rstrip("\n")
    shown = len(rows) - 1
    assert rows[-1] == (
        f"[showing lines 1-{shown} of {total:,}; {total - shown:,} more lines. "
        f"Call read_file with offset={shown} to continue.]"
    )
    # A page deep inside the file is just as bounded.
    deep = await run(toolkit, "read_file", path="big.log", offset=500_000, limit=5)
    assert deep.content.splitlines()[0].startswith("500001\t")
    assert len(deep.content.splitlines()) == 6


async def test_a_single_endless_line_is_clipped_not_loaded(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "blob.json").write_bytes(b"[" + b'"x",' * (5 << 20) + b'"end"]')
    toolkit = Toolkit(file_tools(Workspace(root)))
    result = await run(toolkit, "read_file", path="blob.json")
    assert not result.is_error
    assert len(result.content) < 60_000
    assert "line 1 is longer than a page" in result.content
    assert "grep_files" in result.content


async def test_long_lines_wrap_into_numbered_rows() -> None:
    toolkit = memory_toolkit({"wide.txt": "a" * 4500 + "\nshort\n"})
    rows = (await run(toolkit, "read_file", path="wide.txt")).content.splitlines()
    assert [r.split("\t")[0].strip() for r in rows] == ["1", "1+", "1+", "2"]
    assert [len(r.split("\t")[1]) for r in rows] == [2000, 2000, 500, 5]


async def test_page_stops_at_the_character_budget() -> None:
    toolkit = memory_toolkit({"dense.txt": ("x" * 99 + "\n") * 3000})
    content = (await run(toolkit, "read_file", path="dense.txt")).content
    rows = content.splitlines()
    assert len(rows) - 1 == 500  # 500 lines of 100 characters fill the 50,000 budget
    assert "offset=500" in rows[-1] and "of 3,000" in rows[-1]


async def test_binary_files_are_refused_with_their_size() -> None:
    toolkit = memory_toolkit({"img.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 100})
    result = await run(toolkit, "read_file", path="img.png")
    assert result.is_error and "binary" in result.content and "img.png" in result.content


def test_format_page_without_a_known_total() -> None:
    page = LinePage("f.txt", 10, ("a", "b"), next_offset=12, total_lines=None)
    assert format_page(page) == (
        "    11\ta\n    12\tb\n"
        "[showing lines 11-12; the file continues. Call read_file with offset=12 to continue.]"
    )


async def test_crlf_files_read_cleanly_and_edit_with_plain_newlines() -> None:
    fs = MemoryFilesystem({"win.txt": b"one\r\ntwo\r\nthree\r\n"})
    toolkit = Toolkit(file_tools(Workspace(fs)))
    assert (await run(toolkit, "read_file", path="win.txt")).content.splitlines()[1] == (
        "     2\ttwo"
    )
    result = await run(toolkit, "edit_file", path="win.txt", old="one\ntwo", new="1\n2")
    assert not result.is_error, result.content
    assert await fs.read("win.txt") == b"1\r\n2\r\nthree\r\n"


async def test_grep_output_is_capped_with_a_note() -> None:
    toolkit = memory_toolkit({"many.txt": "hit\n" * (MAX_GREP_MATCHES + 50)})
    rows = (await run(toolkit, "grep_files", pattern="hit")).content.splitlines()
    assert len(rows) == MAX_GREP_MATCHES + 1
    assert rows[0] == "many.txt:1: hit"
    assert rows[-1].startswith(f"[showing the first {MAX_GREP_MATCHES} matches")


async def test_grep_clips_very_long_matching_lines() -> None:
    toolkit = memory_toolkit({"min.js": "a" * 100_000 + "NEEDLE" + "b" * 100_000})
    content = (await run(toolkit, "grep_files", pattern="NEEDLE")).content
    assert "NEEDLE" in content and len(content) < 1_000


async def test_glob_output_is_capped_with_a_note() -> None:
    files: dict[str, str | bytes] = {f"d/f{i:04}.txt": "" for i in range(MAX_GLOB_RESULTS + 5)}
    rows = (await run(memory_toolkit(files), "glob_files", pattern="**/*.txt")).content
    lines = rows.splitlines()
    assert len(lines) == MAX_GLOB_RESULTS + 1
    assert lines[0] == "d/f0000.txt"
    assert "there are more" in lines[-1]


async def test_write_file_reports_lines_and_creates_parents() -> None:
    fs = MemoryFilesystem()
    toolkit = Toolkit(file_tools(Workspace(fs)))
    result = await run(toolkit, "write_file", path="a/b/c.txt", content="x\ny")
    assert result.content == "Created a/b/c.txt (3 characters, 2 lines)"
    assert [i.path for i in await fs.ls("a")] == ["a/b"]


async def test_invalid_arguments_are_reported_by_name() -> None:
    toolkit = memory_toolkit({})
    result = await run(toolkit, "read_file", path="x", bogus=1)
    assert result.is_error and "bogus" in result.content
    result = await run(toolkit, "write_file", path="x")
    assert result.is_error and "content" in result.content
