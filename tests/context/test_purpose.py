"""Auxiliary (``summary``) requests get the system instructions only (BEHAVIOUR.md §1)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from harnessed import (
    ContextBlock,
    ContextManifest,
    ContextPolicy,
    ContextRequest,
    HarnessAgent,
    Msg,
    TodoItem,
)
from harnessed.context import HistoryBudget, HistoryOutcome, ToolPairingError
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.plan import PLAN, PlanState
from harnessed.runtime import SessionRef
from harnessed.state import AgentState
from harnessed.todos import TODOS
from tests.context.helpers import info_for


def write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


async def test_a_summary_request_gets_instructions_and_its_own_messages_only(
    tmp_path: Path,
) -> None:
    write(tmp_path, "AGENTS.md", "AGENTS-RULE")
    write(tmp_path, "MEMORY.md", "MEMORY-FACT")
    write(tmp_path, "knowledge/KNOWLEDGE.md", "KNOWLEDGE-INDEX")
    write(tmp_path, "docs/spec.md", "SPEC-TEXT")
    source_calls: list[ContextRequest] = []
    compactions: list[int] = []
    seen: list[ContextManifest] = []

    async def would_fail(request: ContextRequest) -> list[ContextBlock]:
        source_calls.append(request)
        raise RuntimeError("must not be called for a summary")

    async def compactor(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        compactions.append(len(history))
        return HistoryOutcome(list(history)[-1:])

    model = ScriptedModel()
    agent = HarnessAgent(
        "sum",
        model,
        sys_prompt="SYS-PROMPT",
        workspace=tmp_path,
        context_files=["docs/spec.md"],
        instructions={"rule": "BUSINESS-RULE"},
        context_policy=ContextPolicy(observer=seen.append),
    )
    agent.add_context_source("crm", would_fail)
    agent.compiler.compactor = compactor
    state = AgentState.new(SessionRef("sum", "u", "s"))
    state.append(Msg.user("WORKING-HISTORY-1"), Msg.assistant("WORKING-HISTORY-2"))
    state.put(TODOS, (TodoItem("t1", "TODO-ITEM"),))
    state.put(PLAN, PlanState(active=True, plan_file="plans/PLAN.md"))
    history_before = list(state.history)

    own = (
        Msg.user("Summarize the conversation below."),
        Msg.assistant("Sure."),
        Msg.user("TRANSCRIPT: a, b, c"),
    )
    request = ModelRequest(messages=own, max_output_tokens=500, purpose="summary")
    prepared = await agent.compiler(
        state, request, info_for(agent, model, purpose="summary", call_id="mc_sum")
    )

    assert prepared.purpose == "summary"
    assert [m.role for m in prepared.messages] == ["system", "user", "assistant", "user"]
    assert [m.text for m in prepared.messages[1:]] == [m.text for m in own]
    system = prepared.messages[0].text
    for instruction in ("SYS-PROMPT", "AGENTS-RULE", "BUSINESS-RULE"):
        assert instruction in system
    everything = "\n".join(m.text for m in prepared.messages)
    for absent in (
        "MEMORY-FACT",
        "KNOWLEDGE-INDEX",
        "SPEC-TEXT",
        "<HARNESS_CONTEXT>",
        "<TASK_STATE",
        "<RUNTIME_STATE>",
        "TODO-ITEM",
        "WORKING-HISTORY",
    ):
        assert absent not in everything
    assert source_calls == []  # no sources loaded
    assert compactions == []  # no compaction
    assert state.history == history_before

    [manifest] = seen
    assert (manifest.purpose, manifest.validation, manifest.call_id) == (
        "summary",
        "passed",
        "mc_sum",
    )
    assert manifest.items and {i.placement for i in manifest.items} == {"system"}
    assert manifest.transforms == ()


async def test_the_same_agent_gives_a_reasoning_request_its_materials(tmp_path: Path) -> None:
    """The contrast case: what a summary leaves out, a reasoning request carries."""
    write(tmp_path, "MEMORY.md", "MEMORY-FACT")
    model = ScriptedModel()
    agent = HarnessAgent("sum", model, sys_prompt="SYS-PROMPT", workspace=tmp_path)
    state = AgentState.new(SessionRef("sum", "u", "s"))
    state.append(Msg.user("WORKING-HISTORY-1"))
    state.put(TODOS, (TodoItem("t1", "TODO-ITEM"),))
    prepared = await agent.compiler(
        state, agent.draft_request(state, "mc_r"), info_for(agent, model, call_id="mc_r")
    )
    everything = "\n".join(m.text for m in prepared.messages)
    for present in ("SYS-PROMPT", "MEMORY-FACT", "<TASK_STATE", "TODO-ITEM", "WORKING-HISTORY"):
        assert present in everything
    assert prepared.purpose == "reasoning"


async def test_a_reasoning_request_of_the_same_agent_does_load_sources() -> None:
    """The contrast case for sources: the summary test's failing source is really registered."""
    calls: list[str] = []

    async def would_fail(request: ContextRequest) -> list[ContextBlock]:
        calls.append(request.purpose)
        raise RuntimeError("source down")

    model = ScriptedModel()
    agent = HarnessAgent("sum", model)
    agent.add_context_source("crm", would_fail)
    state = AgentState.new(SessionRef("sum", "u", "s"))
    state.append(Msg.user("hello"))
    summary = ModelRequest(messages=(Msg.user("Summarize"),), purpose="summary")
    await agent.compiler(state, summary, info_for(agent, model, purpose="summary"))
    assert calls == []
    with pytest.raises(Exception, match="source down"):
        await agent.compiler(state, agent.draft_request(state, "mc_r"), info_for(agent, model))
    assert calls == ["reasoning"]


async def test_a_summary_request_with_unpaired_tool_messages_is_refused() -> None:
    model = ScriptedModel()
    agent = HarnessAgent("sum", model)
    state = AgentState.new(SessionRef("sum", "u", "s"))
    request = ModelRequest(
        messages=(Msg.user("Summarize"), Msg.tool_result("ghost", "orphan output")),
        purpose="summary",
    )
    with pytest.raises(ToolPairingError):
        await agent.compiler(state, request, info_for(agent, model, purpose="summary"))
