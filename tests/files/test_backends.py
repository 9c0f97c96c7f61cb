"""One file-tool suite, run against every workspace backend: local, memory and S3.

The S3 backend is SeaweedFS's real S3 API (``tests/support/s3_server.py``), reached through
fsspec/s3fs. Each test gets a fresh workspace (a new directory, a new memory filesystem or a
new S3 prefix) and calls the tools the way the agent does, through ``Toolkit.run_step``.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from harnessed.files.tools import file_tools
from harnessed.messages import ToolResultBlock, ToolUseBlock
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.tools import ToolContext, Toolkit
from harnessed.workspace import MemoryFilesystem, Workspace
from tests.support import s3_server as s3_support

s3_server = s3_support.s3_server  # the session-wide SeaweedFS fixture

BACKENDS = ["local", "memory", "s3"]


@pytest.fixture(params=BACKENDS)
def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Workspace:
    if request.param == "local":
        return Workspace(tmp_path / "ws")
    if request.param == "memory":
        return Workspace(MemoryFilesystem())
    server = request.getfixturevalue("s3_server")
    return Workspace(
        server.url(f"tools-{uuid.uuid4().hex}"), storage_options=server.storage_options
    )


@pytest.fixture
def toolkit(workspace: Workspace) -> Toolkit:
    return Toolkit(file_tools(workspace))


async def run(toolkit: Toolkit, name: str, **args: object) -> ToolResultBlock:
    """Run one tool call the way the agent loop does and return its result block."""
    call = ToolUseBlock(id=f"call_{uuid.uuid4().hex[:8]}", name=name, input=args)

    def make_context(c: ToolUseBlock) -> ToolContext:
        return ToolContext(
            agent_name="tester",
            runtime=RuntimeContext(user_id="u1", session_id="s1"),
            state=AgentState("tester", "u1", "s1"),
            call_id=c.id,
        )

    [result] = await toolkit.run_step([call], make_context)
    return result


async def ok(toolkit: Toolkit, name: str, **args: object) -> str:
    result = await run(toolkit, name, **args)
    assert not result.is_error, result.content
    return result.content


async def err(toolkit: Toolkit, name: str, **args: object) -> str:
    result = await run(toolkit, name, **args)
    assert result.is_error, f"expected an error, got: {result.content}"
    return result.content


# ---------------------------------------------------------------- write / read
async def test_write_then_read_with_line_numbers(toolkit: Toolkit) -> None:
    created = await ok(toolkit, "write_file", path="notes/a.md", content="alpha\nbeta\n")
    assert created.startswith("Created notes/a.md")
    text = await ok(toolkit, "read_file", path="notes/a.md")
    assert text == "     1\talpha\n     2\tbeta"
    replaced = await ok(toolkit, "write_file", path="./notes//a.md", content="gamma")
    assert replaced.startswith("Replaced notes/a.md")
    assert await ok(toolkit, "read_file", path="notes/a.md") == "     1\tgamma"


async def test_read_pages_with_a_continue_notice(toolkit: Toolkit) -> None:
    content = "".join(f"line {i}\n" for i in range(1, 31))
    await ok(toolkit, "write_file", path="long.txt", content=content)
    first = await ok(toolkit, "read_file", path="long.txt", limit=10)
    assert first.splitlines()[0] == "     1\tline 1"
    assert first.splitlines()[9] == "    10\tline 10"
    assert "showing lines 1-10 of 30; 20 more lines" in first
    assert "offset=10" in first
    second = await ok(toolkit, "read_file", path="long.txt", offset=10, limit=10)
    assert second.splitlines()[0] == "    11\tline 11"
    last = await ok(toolkit, "read_file", path="long.txt", offset=25)
    assert last.splitlines()[-2] == "    30\tline 30"
    assert "end of file" in last
    past = await err(toolkit, "read_file", path="long.txt", offset=99)
    assert "past the end" in past and "30 lines" in past


async def test_read_errors_name_the_path(toolkit: Toolkit) -> None:
    assert "missing.md" in await err(toolkit, "read_file", path="missing.md")
    await ok(toolkit, "write_file", path="dir/file.txt", content="x")
    assert "it is a directory" in await err(toolkit, "read_file", path="dir")
    assert "limit" in await err(toolkit, "read_file", path="dir/file.txt", limit=0)
    assert "offset" in await err(toolkit, "read_file", path="dir/file.txt", offset=-1)


async def test_empty_file(toolkit: Toolkit) -> None:
    await ok(toolkit, "write_file", path="empty.txt", content="")
    assert "empty" in await ok(toolkit, "read_file", path="empty.txt")


# ---------------------------------------------------------------- edit
async def test_edit_replaces_a_unique_match(toolkit: Toolkit) -> None:
    await ok(toolkit, "write_file", path="src/app.py", content="x = 1\ny = 2\n")
    done = await ok(toolkit, "edit_file", path="src/app.py", old="y = 2", new="y = 3")
    assert "replaced 1 occurrence" in done
    assert "y = 3" in await ok(toolkit, "read_file", path="src/app.py")


async def test_edit_errors_when_old_is_missing_or_ambiguous(toolkit: Toolkit) -> None:
    await ok(toolkit, "write_file", path="t.txt", content="a b a b a\n")
    missing = await err(toolkit, "edit_file", path="t.txt", old="zzz", new="q")
    assert "'t.txt'" in missing and "not found" in missing
    ambiguous = await err(toolkit, "edit_file", path="t.txt", old="a", new="q")
    assert "occurs 3 times" in ambiguous and "replace_all" in ambiguous
    assert "identical" in await err(toolkit, "edit_file", path="t.txt", old="a", new="a")
    assert "empty" in await err(toolkit, "edit_file", path="t.txt", old="", new="q")
    assert "a b a b a" in await ok(toolkit, "read_file", path="t.txt")  # unchanged
    done = await ok(toolkit, "edit_file", path="t.txt", old="a", new="q", replace_all=True)
    assert "replaced 3 occurrences" in done
    assert "q b q b q" in await ok(toolkit, "read_file", path="t.txt")
    assert "nope.txt" in await err(toolkit, "edit_file", path="nope.txt", old="a", new="b")


# ---------------------------------------------------------------- search and listing
async def _seed(toolkit: Toolkit) -> None:
    files = {
        "README.md": "# Project\nTODO: write docs\n",
        "src/main.py": "def main():\n    return 42  # TODO tidy\n",
        "src/util/helpers.py": "def helper():\n    pass\n",
        "notes/todo.md": "- buy milk\n",
    }
    for path, content in files.items():
        await ok(toolkit, "write_file", path=path, content=content)


async def test_grep_finds_lines_with_paths_and_numbers(toolkit: Toolkit) -> None:
    await _seed(toolkit)
    out = await ok(toolkit, "grep_files", pattern="TODO")
    assert out.splitlines() == [
        "README.md:2: TODO: write docs",
        "src/main.py:2:     return 42  # TODO tidy",
    ]
    only_py = await ok(toolkit, "grep_files", pattern="def \\w+", glob="*.py")
    assert only_py.splitlines() == [
        "src/main.py:1: def main():",
        "src/util/helpers.py:1: def helper():",
    ]
    in_dir = await ok(toolkit, "grep_files", pattern="def", path="src/util")
    assert in_dir == "src/util/helpers.py:1: def helper():"
    one_file = await ok(toolkit, "grep_files", pattern="(?i)milk", path="notes/todo.md")
    assert one_file == "notes/todo.md:1: - buy milk"
    assert "No matches" in await ok(toolkit, "grep_files", pattern="nothing-here")
    assert "invalid regular expression" in await err(toolkit, "grep_files", pattern="(")
    assert "gone" in await err(toolkit, "grep_files", pattern="x", path="gone")


async def test_glob_matches_relative_to_the_search_path(toolkit: Toolkit) -> None:
    await _seed(toolkit)
    assert (await ok(toolkit, "glob_files", pattern="**/*.py")).splitlines() == [
        "src/main.py",
        "src/util/helpers.py",
    ]
    assert await ok(toolkit, "glob_files", pattern="*.md") == "README.md"
    assert await ok(toolkit, "glob_files", pattern="*.py", path="src") == "src/main.py"
    assert (await ok(toolkit, "glob_files", pattern="**/*.{md,py}")).count("\n") == 3
    assert "No files match" in await ok(toolkit, "glob_files", pattern="*.rs")


async def test_list_files_shows_dirs_and_sizes(toolkit: Toolkit) -> None:
    assert "empty" in await ok(toolkit, "list_files")
    await _seed(toolkit)
    root = (await ok(toolkit, "list_files")).splitlines()
    assert root == ["notes/", "src/", "README.md (27 B)"]
    assert (await ok(toolkit, "list_files", path="src")).splitlines() == [
        "src/util/",
        "src/main.py (39 B)",
    ]
    assert "not a directory" in await err(toolkit, "list_files", path="README.md")
    assert "nowhere" in await err(toolkit, "list_files", path="nowhere")


# ---------------------------------------------------------------- confinement
TRAVERSALS = ["../x.txt", "../../etc/passwd", "notes/../../x.txt", "/etc/passwd", "/tmp"]


@pytest.mark.parametrize("bad", TRAVERSALS)
async def test_every_file_tool_rejects_paths_outside_the_workspace(
    toolkit: Toolkit, bad: str
) -> None:
    await ok(toolkit, "write_file", path="inside.txt", content="hello\n")
    calls: list[tuple[str, dict[str, object]]] = [
        ("read_file", {"path": bad}),
        ("write_file", {"path": bad, "content": "pwned"}),
        ("edit_file", {"path": bad, "old": "root", "new": "toor"}),
        ("grep_files", {"pattern": "root", "path": bad}),
        ("glob_files", {"pattern": "*", "path": bad}),
        ("list_files", {"path": bad}),
    ]
    for name, args in calls:
        message = await err(toolkit, name, **args)
        assert "not allowed" in message, (name, message)
        assert repr(bad) in message or bad in message, (name, message)


async def test_glob_patterns_cannot_climb_out(toolkit: Toolkit) -> None:
    for pattern in ["../*", "**/../../*", "/etc/*"]:
        assert "not allowed" in await err(toolkit, "glob_files", pattern=pattern)
    assert "not allowed" in await err(toolkit, "grep_files", pattern="x", glob="../*.py")


async def test_nothing_is_written_outside(tmp_path: Path) -> None:
    toolkit = Toolkit(file_tools(Workspace(tmp_path / "ws")))
    for bad in ["../escape.txt", str(tmp_path / "escape.txt")]:
        await err(toolkit, "write_file", path=bad, content="x")
    assert not (tmp_path / "escape.txt").exists()


async def test_absolute_path_inside_a_local_root_is_accepted(tmp_path: Path) -> None:
    toolkit = Toolkit(file_tools(Workspace(tmp_path / "ws")))
    absolute = tmp_path / "ws" / "notes" / "a.md"
    assert "Created notes/a.md" in await ok(toolkit, "write_file", path=str(absolute), content="x")
    assert await ok(toolkit, "read_file", path=str(absolute)) == "     1\tx"


async def test_symlinks_out_of_a_local_workspace_are_refused_by_every_tool(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("password=hunter2\n")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "link_dir").symlink_to(outside, target_is_directory=True)
    (root / "link_file").symlink_to(outside / "secret.txt")
    (root / "ok.txt").write_text("fine\n")
    toolkit = Toolkit(file_tools(Workspace(root)))
    calls: list[tuple[str, dict[str, object]]] = [
        ("read_file", {"path": "link_file"}),
        ("read_file", {"path": "link_dir/secret.txt"}),
        ("write_file", {"path": "link_dir/new.txt", "content": "x"}),
        ("write_file", {"path": "link_file", "content": "x"}),
        ("edit_file", {"path": "link_file", "old": "hunter2", "new": "x"}),
        ("grep_files", {"pattern": "password", "path": "link_dir"}),
        ("grep_files", {"pattern": "password", "path": "link_file"}),
        ("glob_files", {"pattern": "*", "path": "link_dir"}),
        ("list_files", {"path": "link_dir"}),
    ]
    for name, args in calls:
        message = await err(toolkit, name, **args)
        assert "outside the workspace through a symbolic link" in message, (name, message)
    # Walks from the root neither follow nor reveal what the links point at.
    assert "No matches" in await ok(toolkit, "grep_files", pattern="hunter2")
    assert await ok(toolkit, "glob_files", pattern="**/*") == "ok.txt"
    assert (outside / "secret.txt").read_text() == "password=hunter2\n"
    assert not (outside / "new.txt").exists()


async def test_symlinks_inside_the_workspace_work(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.txt").write_text("one\n")
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    toolkit = Toolkit(file_tools(Workspace(root)))
    assert await ok(toolkit, "read_file", path="alias/a.txt") == "     1\tone"
    await ok(toolkit, "edit_file", path="alias/a.txt", old="one", new="two")
    assert (root / "real" / "a.txt").read_text() == "two\n"
    assert (root / "alias").is_symlink()


def test_read_only_flags(workspace: Workspace) -> None:
    tools = {t.name: t for t in file_tools(workspace)}
    assert list(tools) == [
        "read_file",
        "write_file",
        "edit_file",
        "grep_files",
        "glob_files",
        "list_files",
    ]
    for name in ("read_file", "grep_files", "glob_files", "list_files"):
        assert tools[name].read_only and tools[name].concurrency_safe, name
    for name in ("write_file", "edit_file"):
        assert not tools[name].read_only and not tools[name].concurrency_safe, name
