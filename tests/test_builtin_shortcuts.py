"""The keyword shortcuts only build capabilities: passing the capabilities does the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed import HarnessAgent, PermissionRule, TaskContractConfig
from harnessed.contract import TaskContract
from harnessed.files import FileTools
from harnessed.memory import Memory, MemoryConfig
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.permissions import Permissions
from harnessed.plan import PlanMode
from harnessed.session_tools.capability import SessionTools
from harnessed.shell import Shell
from harnessed.todos import TaskList
from tests.support.fixtures import CTX


def names(agent: HarnessAgent) -> list[str]:
    return [c.capability_name for c in agent.capabilities]


def test_keywords_and_capabilities_build_the_same_agent(tmp_path: Path) -> None:
    by_keywords = HarnessAgent(
        "k",
        ScriptedModel(),
        workspace=tmp_path / "k",
        enable_task_list=True,
        enable_plan_mode=True,
        task_contract=TaskContractConfig(allow_requirement_proposals=True),
        permission_mode="accept_edits",
    )
    by_capabilities = HarnessAgent(
        "c",
        ScriptedModel(),
        workspace=tmp_path / "c",
        file_tools=False,
        shell=False,
        memory=False,
        memory_tools=False,
        capabilities=[
            Permissions("accept_edits"),
            FileTools(),
            Shell(),
            SessionTools(),
            Memory(MemoryConfig()),
            TaskList(),
            PlanMode(),
            TaskContract(TaskContractConfig(allow_requirement_proposals=True)),
        ],
    )
    assert by_keywords.toolkit.names == by_capabilities.toolkit.names
    assert "todo_write" in by_keywords.toolkit and "plan_exit" in by_keywords.toolkit
    assert names(by_keywords) == [
        "permissions",
        "file_tools",
        "shell",
        "session_tools",
        "memory",
        "task_list",
        "plan_mode",
        "plan_status",
        "task_contract",
        "skills",  # on by default with a workspace, like the reference's
        "subagents",
        "web",
    ]
    assert by_capabilities.approval_gate.mode is not None
    assert by_capabilities.approval_gate.mode.value == "accept_edits"
    assert by_capabilities.memory is not None


def test_an_agent_without_workspace_gets_no_workspace_capabilities() -> None:
    agent = HarnessAgent("bare", ScriptedModel())
    assert names(agent) == ["permissions", "plan_status", "task_contract"]
    assert agent.toolkit.names == []
    assert agent.memory is None


def test_a_capability_and_its_keywords_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Permissions in capabilities or permission_"):
        HarnessAgent(
            "p",
            ScriptedModel(),
            permission_rules=[PermissionRule.deny("x")],
            capabilities=[Permissions()],
        )
    with pytest.raises(ValueError, match="TaskContract in capabilities or task_contract="):
        HarnessAgent(
            "p", ScriptedModel(), task_contract=TaskContractConfig(), capabilities=[TaskContract()]
        )
    with pytest.raises(ValueError, match="two capabilities are named 'task_list'"):
        HarnessAgent("p", ScriptedModel(), enable_task_list=True, capabilities=[TaskList()])


def test_workspace_capabilities_need_a_workspace() -> None:
    for capability, message in [
        (FileTools(), "FileTools needs a workspace"),
        (Shell(), "shell needs a workspace"),
        (Memory(), "memory needs a workspace"),
        (PlanMode(), "enable_plan_mode needs a workspace"),
    ]:
        with pytest.raises(ValueError, match=message):
            HarnessAgent("w", ScriptedModel(), capabilities=[capability])


async def test_plan_mode_passed_as_a_capability_asks_before_leaving_plan_mode(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[ScriptedToolCall("plan_enter", {})]),
            ScriptedResponse(
                tool_calls=[ScriptedToolCall("write_file", {"path": "a", "content": "x"})]
            ),
            ScriptedResponse(tool_calls=[ScriptedToolCall("plan_write", {"content": "# Plan"})]),
            ScriptedResponse(tool_calls=[ScriptedToolCall("plan_exit", {})]),
        ]
    )
    agent = HarnessAgent(
        "p", model, workspace=tmp_path, shell=False, memory=False, capabilities=[PlanMode()]
    )
    reply = await agent.call("plan it", CTX)
    assert reply.metadata["harness"] == "pending_confirmation"  # plan_exit asks the user
    blocked = [r for m in model.requests[2].messages for r in m.tool_results][-1]
    assert blocked.is_error and blocked.content.startswith("Blocked in plan mode")
    assert not (tmp_path / "a").exists()
    (pending,) = await agent.pending_confirmations(CTX)
    assert pending.call.name == "plan_exit"
