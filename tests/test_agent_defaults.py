"""The reference's defaults: a workspace with ``subagents/`` and ``skills/`` folders gives the
model both with no code; ``subagents=False, skills=False`` offer neither; a tool is offered
only when it has something to act on."""

from __future__ import annotations

from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext
from harnessed.context.meter import Meter
from harnessed.messages import ToolResultBlock
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.models.base import ModelRequest
from harnessed.tokens import default_estimator

CTX = RuntimeContext("alice", "s1")
TASK_TOOLS = {"agent_list", "agent_send", "task_output", "task_cancel", "task_list"}


def call(name: str, /, **arguments: object) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name, arguments)])


def names(request: ModelRequest) -> set[str]:
    return {t.name for t in request.tools}


def results(request: ModelRequest) -> list[str]:
    return [
        b.content for m in request.messages for b in m.content if isinstance(b, ToolResultBlock)
    ]


def workspace(root: Path) -> Path:
    (root / "subagents").mkdir(parents=True)
    (root / "subagents" / "reviewer.md").write_text(
        "---\ndescription: Reviews a change for bugs.\n---\nYou review changes. Say LGTM.\n"
    )
    (root / "skills" / "release").mkdir(parents=True)
    (root / "skills" / "release" / "SKILL.md").write_text(
        "---\nname: release\ndescription: How to cut a release.\n---\nTag, then push the tag.\n"
    )
    return root


async def test_a_workspace_alone_offers_its_subagents_and_skills(tmp_path: Path) -> None:
    ws = workspace(tmp_path)

    async def respond(request: ModelRequest) -> ScriptedResponse | str:
        if "You review changes" in request.messages[0].text:
            return "LGTM"
        return script.pop(0)

    script: list[ScriptedResponse | str] = [
        call("load_skill", name="release"),
        call("agent_spawn", agent_id="reviewer", task="review the release commit"),
        "released",
    ]
    model = ScriptedModel(responder=respond)
    agent = HarnessAgent("dev", model, workspace=ws, memory=False, shell=False)
    reply = await agent.call("cut a release", CTX)
    await agent.close()
    assert reply.text == "released"
    parent = [r for r in model.requests if "You review changes" not in r.messages[0].text]
    first = parent[0]
    assert {"load_skill", "agent_spawn", "web_fetch"} <= names(first)
    assert not names(first) & TASK_TOOLS  # no task yet: nothing for them to act on
    assert "release: How to cut a release." in first.messages[0].text
    assert any("reviewer: Reviews a change for bugs." in m.text for m in first.messages)
    done = results(parent[-1])
    assert "Tag, then push the tag." in done[0]
    assert "LGTM" in done[1]
    assert names(parent[-1]) >= TASK_TOOLS  # a task exists now


async def test_subagents_false_and_skills_false_offer_neither(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    model = ScriptedModel(["ok"])
    agent = HarnessAgent(
        "dev",
        model,
        workspace=ws,
        memory=False,
        shell=False,
        subagents=False,
        skills=False,
        web=False,
    )
    await agent.call("hi", CTX)
    await agent.close()
    offered = names(model.requests[0])
    assert not offered & {"load_skill", "agent_spawn", "agent_list", "web_fetch", *TASK_TOOLS}
    text = " ".join(m.text for m in model.requests[0].messages)
    assert "release" not in text and "reviewer" not in text
    assert agent.skills is None


async def test_load_skill_is_offered_only_while_there_is_a_skill(tmp_path: Path) -> None:
    model = ScriptedModel(["none yet", "one now"])
    agent = HarnessAgent("dev", model, workspace=tmp_path, memory=False, shell=False)
    await agent.call("hi", CTX)
    assert "load_skill" not in names(model.requests[0])
    (tmp_path / "skills" / "fresh").mkdir(parents=True)
    (tmp_path / "skills" / "fresh" / "SKILL.md").write_text(
        "---\nname: fresh\ndescription: Added while running.\n---\nBody.\n"
    )
    await agent.call("again", CTX)
    await agent.close()
    assert "load_skill" in names(model.requests[1])


async def test_without_a_workspace_nothing_is_added() -> None:
    model = ScriptedModel(["ok"])
    agent = HarnessAgent("bare", model)
    await agent.call("hi")
    await agent.close()
    assert not names(model.requests[0]) & {"load_skill", "agent_spawn", "web_fetch"}


async def test_a_hello_with_the_default_tools_stays_within_its_schema_budget(
    tmp_path: Path,
) -> None:
    """Each schema is sent with every request: the default set cost 2,258 estimated tokens
    (16 tools) before its descriptions were trimmed and 1,686 (15 tools) after (2026-12-06)."""
    model = ScriptedModel(["hi"])
    agent = HarnessAgent("dev", model, workspace=tmp_path)
    await agent.call("hello", CTX)
    await agent.close()
    request = model.requests[0]
    meter = Meter(default_estimator())
    costs = {schema.name: meter.tools([schema]) for schema in request.tools}
    assert {"read_file", "session_search", "memory_save", "agent_spawn"} <= set(costs)
    assert sum(costs.values()) <= 1_800, costs
    assert max(costs.values()) <= 200, costs
