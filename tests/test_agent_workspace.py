"""HarnessAgent with a workspace: built-in tools, opt-outs, backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.sandbox import HostSandbox
from harnessed.sandbox.process import ShellConfig
from harnessed.shell import Shell
from harnessed.workspace import MemoryFilesystem, Workspace

FILE_TOOLS = {"read_file", "write_file", "edit_file", "grep_files", "glob_files", "list_files"}


def names(agent: HarnessAgent) -> set[str]:
    return set(agent.toolkit.names)


def test_a_local_workspace_gets_file_tools_and_execute(tmp_path: Path) -> None:
    agent = HarnessAgent("ws", ScriptedModel(), workspace=tmp_path)
    assert FILE_TOOLS | {"execute"} <= names(agent)
    read_only = {t.name for t in agent.toolkit if t.read_only}
    assert read_only >= {"read_file", "grep_files", "glob_files", "list_files"}
    assert not read_only & {"write_file", "edit_file", "execute"}


def test_tool_groups_can_be_turned_off(tmp_path: Path) -> None:
    assert "execute" not in names(
        HarnessAgent("a", ScriptedModel(), workspace=tmp_path, shell=False)
    )
    no_files = HarnessAgent("b", ScriptedModel(), workspace=tmp_path, file_tools=False)
    assert not FILE_TOOLS & names(no_files) and "execute" in names(no_files)
    assert names(HarnessAgent("c", ScriptedModel())) == set()  # no workspace, no file tools


def test_a_remote_workspace_has_no_shell_and_refuses_shell_true() -> None:
    ws = Workspace(MemoryFilesystem())
    agent = HarnessAgent("mem", ScriptedModel(), workspace=ws)
    assert names(agent) >= FILE_TOOLS and "execute" not in names(agent)
    with pytest.raises(ValueError, match="local disk"):
        HarnessAgent("mem", ScriptedModel(), workspace=ws, shell=True)
    with pytest.raises(ValueError, match="needs a workspace"):
        HarnessAgent("none", ScriptedModel(), shell=True)


def test_an_application_tool_replaces_the_built_in_of_the_same_name(tmp_path: Path) -> None:
    @tool(read_only=True)
    def read_file(path: str) -> str:
        """My own reader."""
        return f"custom {path}"

    agent = HarnessAgent("own", ScriptedModel(), workspace=tmp_path, tools=[read_file])
    assert agent.toolkit.get("read_file") is read_file


async def test_the_model_uses_the_built_in_tools_end_to_end(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("write_file", {"path": "notes/a.txt", "content": "hi"})
                ]
            ),
            ScriptedResponse(
                tool_calls=[ScriptedToolCall("execute", {"command": "cat notes/a.txt; echo $HOME"})]
            ),
            ScriptedResponse(tool_calls=[ScriptedToolCall("read_file", {"path": "../escape"})]),
            "done",
        ]
    )
    agent = HarnessAgent(
        "e2e",
        model,
        workspace=tmp_path,
        # on the host, explicitly: HOME is the workspace directory there
        capabilities=[Shell(ShellConfig(env={"GREETING": "x"}), sandbox=HostSandbox())],
    )
    await agent.call("go", RuntimeContext("u", "s"))
    assert (tmp_path / "notes/a.txt").read_text() == "hi"
    executed = model.requests[2].messages[-1].tool_results[0]
    assert "hi" in executed.content and str(tmp_path) in executed.content
    escaped = model.requests[3].messages[-1].tool_results[0]
    assert escaped.is_error and "../escape" in escaped.content


async def test_a_memory_workspace_keeps_files_and_state_in_process() -> None:
    fs = MemoryFilesystem()
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[ScriptedToolCall("write_file", {"path": "x.md", "content": "data"})]
            ),
            "ok",
        ]
    )
    agent = HarnessAgent("memws", model, workspace=fs)
    await agent.call("write", RuntimeContext("u", "s"))
    assert await fs.read_text("x.md") == "data"
    assert len((await agent.load_state(RuntimeContext("u", "s"))).history) == 4
