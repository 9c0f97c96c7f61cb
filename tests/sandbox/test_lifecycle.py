"""The sandbox lifecycle: same files as the file tools, snapshot at call end, restore elsewhere."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from harnessed import RuntimeContext
from harnessed.sandbox import BubblewrapSandbox, HostSandbox
from harnessed.workspace import FsspecFilesystem, PathNotInViewError, Workspace
from tests.sandbox.conftest import require_bwrap
from tests.sandbox.helpers import execute, run
from tests.support import s3_server as s3_support
from tests.support.fixtures import tool_step
from tests.support.s3_server import S3Server

s3_server = s3_support.s3_server  # the session-wide SeaweedFS fixture

BOB = RuntimeContext("bob", "s1")


def s3_workspace(server: S3Server, prefix: str) -> Workspace:
    return Workspace(FsspecFilesystem(server.url(prefix), **server.storage_options))


async def test_file_tools_and_execute_see_the_same_local_files(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    results = await run(
        tmp_path,
        bwrap,
        BOB,
        [
            tool_step("write_file", path="src/a.txt", content="from write_file\n"),
            execute("cat src/a.txt && echo from execute > src/b.txt && rm src/a.txt"),
            tool_step("read_file", path="src/b.txt"),
            tool_step("list_files", path="src"),
        ],
    )
    assert "from write_file" in results[1]
    assert "from execute" in results[2]
    assert "src/b.txt" in results[3] and "src/a.txt" not in results[3]


async def test_files_made_by_execute_survive_on_another_server_through_s3(
    s3_server: S3Server, tmp_path: Path
) -> None:
    prefix = f"sandbox-{uuid.uuid4().hex}"
    server_one = require_bwrap(BubblewrapSandbox(state_dir=tmp_path / "server-one"))
    first = await run(
        s3_workspace(s3_server, prefix),
        server_one,
        BOB,
        [
            tool_step("write_file", path="notes.md", content="hello from the file tools\n"),
            execute(
                "cat notes.md && mkdir -p build && echo built > build/out.txt && "
                "printf '#!/bin/sh\\necho ran\\n' > build/run.sh && chmod +x build/run.sh && "
                "ln -s out.txt build/latest && mkdir -p empty/dir"
            ),
            tool_step("read_file", path="build/out.txt"),
        ],
    )
    assert "hello from the file tools" in first[1] and "[exit code 0]" in first[1]
    assert "built" in first[2]  # execute's file is a workspace file at once
    workspace = s3_workspace(s3_server, prefix)
    snapshot = "agents/bot/sandboxes/bob/s1.tar.gz"
    assert await workspace.fs.exists(snapshot)
    with pytest.raises(PathNotInViewError):  # the snapshot is runtime data: hidden
        await workspace.view("bot", "bob", "s1").exists(snapshot)
    # A new agent object with an empty sandbox directory: another server.
    server_two = require_bwrap(BubblewrapSandbox(state_dir=tmp_path / "server-two"))
    second = await run(
        s3_workspace(s3_server, prefix),
        server_two,
        BOB,
        [
            tool_step("write_file", path="notes.md", content="changed on server two\n"),
            execute("cat build/out.txt; ./build/run.sh; readlink build/latest; ls -d empty/dir"),
            execute("cat notes.md"),
        ],
    )
    assert "built" in second[1] and "ran" in second[1] and "out.txt" in second[1]
    assert "empty/dir" in second[1]
    assert "changed on server two" in second[2]
    assert any((tmp_path / "server-two").rglob("out.txt"))  # restored into server two


async def test_other_sessions_get_their_own_sandbox(s3_server: S3Server, tmp_path: Path) -> None:
    prefix = f"sandbox-{uuid.uuid4().hex}"
    sandbox = require_bwrap(BubblewrapSandbox(state_dir=tmp_path / "state"))
    await run(
        s3_workspace(s3_server, prefix),
        sandbox,
        RuntimeContext("alice", "s1"),
        [execute("mkdir -p agents/bot/users/alice/memory && echo alice-only > mine.txt")],
    )
    [text] = await run(
        s3_workspace(s3_server, prefix),
        BubblewrapSandbox(state_dir=tmp_path / "state"),
        BOB,
        [execute("ls -R; cat agents/bot/sandboxes/alice/s1.tar.gz | head -c 20 | wc -c")],
    )
    assert "No such file" in text and "\n0\n" in text  # alice's snapshot is out of reach
    assert "mine.txt" in text  # a shared project file (written at the top level)


async def test_host_sandbox_runs_unisolated_only_when_chosen(tmp_path: Path) -> None:
    [text] = await run(tmp_path, HostSandbox(), BOB, [execute("pwd")])
    assert str(tmp_path) in text
