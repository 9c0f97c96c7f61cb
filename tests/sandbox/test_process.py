"""The execute tool: timeouts that kill the whole process group, capped output, exit codes,
a clean environment and the workspace as working directory."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from harnessed.messages import ToolResultBlock, ToolUseBlock
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.sandbox.process import ShellConfig, run_command, shell_tools
from harnessed.state.agent_state import AgentState
from harnessed.tools import Tool, ToolContext, Toolkit
from harnessed.workspace import MemoryFilesystem, Workspace


def alive(pid: int) -> bool:
    """True while ``pid`` is a running (not zombie) process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's process reused the pid
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    members = [
        p for p in Path("/proc").iterdir() if p.name.isdigit() and _pgid_of(int(p.name)) == pgid
    ]
    return any(alive(int(p.name)) for p in members)


def _pgid_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


async def wait_gone(check: object, *args: int, within: float = 60.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not check(*args):  # type: ignore[operator]
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


@pytest.fixture
def execute(workspace: Workspace) -> Tool:
    [tool] = shell_tools(workspace)
    return tool


async def run(tool: Tool, **args: object) -> ToolResultBlock:
    call = ToolUseBlock(id=f"call_{uuid.uuid4().hex[:8]}", name=tool.name, input=args)

    def make_context(c: ToolUseBlock) -> ToolContext:
        return ToolContext(
            agent_name="tester",
            runtime=RuntimeContext(),
            state=AgentState("tester", "default", "tester"),
            call_id=c.id,
        )

    [result] = await Toolkit([tool]).run_step([call], make_context)
    return result


async def test_output_and_exit_code_are_reported(execute: Tool) -> None:
    result = await run(execute, command="echo out; echo err >&2; exit 3")
    assert not result.is_error
    assert result.content == "out\nerr\n[exit code 3]"
    assert (await run(execute, command="true")).content == "(no output)\n[exit code 0]"


async def test_timeout_kills_the_whole_process_group(execute: Tool) -> None:
    started = time.monotonic()
    result = await run(execute, command="sleep 30 & echo bg=$!; echo shell=$$; sleep 30", timeout=1)
    elapsed = time.monotonic() - started
    assert elapsed < 3.0, f"execute took {elapsed:.2f} s to give up"
    assert "timed out after 1 s" in result.content
    pids = dict(line.split("=") for line in result.content.splitlines() if "=" in line)
    background, shell = int(pids["bg"]), int(pids["shell"])
    assert await wait_gone(alive, background), "the background sleep survived"
    assert await wait_gone(alive, shell)
    assert await wait_gone(group_alive, shell), "something of the process group survived"


async def test_a_command_ignoring_sigterm_is_killed(workspace: Workspace) -> None:
    assert workspace.local_root is not None
    config = ShellConfig(kill_grace=0.5)
    started = time.monotonic()
    result = await run_command(
        "trap '' TERM; sleep 30; sleep 30", cwd=workspace.local_root, timeout=0.5, config=config
    )
    assert time.monotonic() - started < 3.0
    assert result.timed_out and result.exit_code == -signal.SIGKILL
    assert await wait_gone(group_alive, result.pid)


async def test_endless_output_is_capped_with_a_note(execute: Tool) -> None:
    started = time.monotonic()
    result = await run(execute, command="yes", timeout=20)
    assert time.monotonic() - started < 10.0
    body, _, notes = result.content.partition("\n[output truncated")
    assert len(body.encode()) <= 100_000 + 200  # kept output plus the "omitted" marker line
    assert "bytes of output omitted" in body
    assert body.startswith("y\ny\n") and body.endswith("y")
    assert "only the first and last 50,000 bytes are shown" in notes
    assert "[stopped: the command produced more than" in notes


async def test_large_finite_output_keeps_head_and_tail(execute: Tool) -> None:
    result = await run(execute, command="seq 1 200000; echo done")
    lines = result.content.splitlines()
    assert lines[0] == "1"
    assert "done" in lines and lines[-1] == "[exit code 0]"
    assert any("bytes of output omitted" in line for line in lines)
    assert len(result.content) < 101_000


async def test_environment_is_not_inherited(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESSED_TEST_SECRET", "s3cr3t-value")
    [plain] = shell_tools(workspace)
    out = (await run(plain, command="env")).content
    assert "s3cr3t-value" not in out
    assert f"HOME={workspace.local_root}" in out and "PATH=" in out
    [inheriting] = shell_tools(workspace, inherit_env=True)
    assert "s3cr3t-value" in (await run(inheriting, command="env")).content
    [extra] = shell_tools(workspace, env={"API_TOKEN": "given"})
    command = "echo $API_TOKEN; echo ${HARNESSED_TEST_SECRET:-unset}"
    out = (await run(extra, command=command)).content
    assert out.splitlines()[:2] == ["given", "unset"]


async def test_runs_in_the_workspace_directory(workspace: Workspace, execute: Tool) -> None:
    out = (await run(execute, command="pwd; echo hi > made.txt")).content
    assert out.splitlines()[0] == str(workspace.local_root)
    assert await workspace.fs.read_text("made.txt") == "hi\n"


async def test_stdin_is_closed(execute: Tool) -> None:
    # a ``cat`` reading an open stdin would wait until the timeout and be reported as timed out
    result = await run(execute, command="cat; echo after", timeout=10)
    assert result.content == "after\n[exit code 0]"


async def test_cancelling_the_call_kills_the_command(workspace: Workspace) -> None:
    assert workspace.local_root is not None
    pid_file = workspace.local_root / "pid"
    task = asyncio.ensure_future(
        run_command(
            "echo $$ > pid; sleep 30", cwd=workspace.local_root, timeout=60, config=ShellConfig()
        )
    )
    deadline = time.monotonic() + 60  # against a hang only: the loop ends when the file is there
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    pgid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_gone(group_alive, pgid)


async def test_bad_arguments(execute: Tool) -> None:
    assert "empty" in (await run(execute, command="  ")).content
    assert "positive" in (await run(execute, command="true", timeout=0)).content
    clamped = await run(execute, command="true", timeout=10_000)
    assert "timeout lowered from 10000 s to the maximum of 600 s" in clamped.content


def test_flags_and_schema(execute: Tool) -> None:
    assert execute.name == "execute"
    assert not execute.read_only and not execute.concurrency_safe
    props = execute.parameters["properties"]
    assert set(props) == {"command", "timeout"} and props["timeout"]["default"] == 120


def test_needs_a_local_workspace() -> None:
    with pytest.raises(ValueError, match="local disk"):
        shell_tools(Workspace(MemoryFilesystem()))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_output_bytes": 0}, "max_output_bytes"),
        ({"default_timeout": 0}, "default_timeout"),
        ({"default_timeout": 900}, "max_timeout"),
        ({"kill_grace": 0}, "kill_grace"),
        ({"env": {"A=B": "x"}}, "env"),
        ({"runaway_output_bytes": 10}, "runaway_output_bytes"),
    ],
)
def test_config_is_validated(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ShellConfig(**kwargs)  # type: ignore[arg-type]


async def test_nul_bytes_in_output_are_shown_as_a_symbol(tmp_path: Path) -> None:
    execute = shell_tools(Workspace(tmp_path))[0]
    toolkit = Toolkit([execute])
    call = ToolUseBlock("n1", "execute", {"command": "printf 'a\\000b'"})
    state = AgentState.new(SessionRef("a", "u", "s"))
    context = ToolContext("a", RuntimeContext("u", "s"), state, "n1", Workspace(tmp_path))
    [result] = await toolkit.run_step([call], lambda c: context)
    assert "\x00" not in result.content and "a\u2400b" in result.content
