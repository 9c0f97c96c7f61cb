"""Compaction's summary requests go through a small protocol, not through the compiler: an
agent given ``prepare=`` sends them through its own preparer."""

from __future__ import annotations

from typing import Any

import pytest

from harnessed import CompactionConfig
from harnessed.compaction import PreparerSummaries, is_summary
from harnessed.context import ContextCompiler, HistoryBudget, PrepareInfo
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.state import AgentState
from harnessed.tokens import default_estimator
from tests.compaction.helpers import conversation, reasoning, seeded, summaries
from tests.support.fixtures import CTX

BY_MESSAGES = CompactionConfig(trigger_messages=10, keep_messages=4, keep_tokens=0)


async def test_a_custom_preparer_with_compaction_never_touches_the_compiler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def untouchable(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the context compiler was used")

    for method in (
        "__call__",
        "_prepare",
        "_summary_request",
        "count_text",
        "summary_room",
        "prepare_summary",
    ):
        monkeypatch.setattr(ContextCompiler, method, untouchable)

    purposes: list[str] = []
    estimator = default_estimator()

    async def prepare(state: AgentState, request: ModelRequest, info: PrepareInfo) -> ModelRequest:
        purposes.append(info.purpose)
        if info.purpose == "summary":
            return request
        compactor = agent.history_transforms.compactor  # the agent's compaction, run here
        assert compactor is not None
        budget = HistoryBudget(100_000, estimator.count_message, info, state)
        outcome = await compactor(state.history, budget)
        history = list(outcome.history)
        if history != state.history:
            state.replace_history(history)
        system = tuple(m for m in request.messages if m.role == "system")
        return ModelRequest(
            messages=(*system, *history), tools=request.tools, call_id=request.call_id
        )

    model = ScriptedModel(["## Session intent\nRead the logs.", "all clear"])
    agent, _ = await seeded(
        conversation(5), model, sys_prompt="You read logs.", compaction=BY_MESSAGES, prepare=prepare
    )
    assert isinstance(agent.summary_requests, PreparerSummaries)
    reply = await agent.call("what now?", CTX)
    assert reply.text == "all clear"

    assert purposes == ["reasoning", "summary"]  # the summary went through our preparer
    [summary_request] = summaries(model)
    assert "call c0" in summary_request.messages[-1].text
    [request] = reasoning(model)
    assert request.messages[0].text == "You read logs."
    assert is_summary(request.messages[1]) and "Read the logs." in request.messages[1].text
    state = await agent.load_state(CTX)
    assert is_summary(state.history[0])


async def test_the_compiler_prepares_the_summaries_of_an_agent_without_prepare() -> None:
    model = ScriptedModel(["## Session intent\nRead the logs.", "all clear"])
    agent, _ = await seeded(
        conversation(5), model, sys_prompt="You read logs.", compaction=BY_MESSAGES
    )
    assert agent.summary_requests is agent.compiler
    await agent.call("what now?", CTX)
    [summary_request] = summaries(model)
    # the compiler's summary request: its instructions, with the summary's own system text
    assert "You read logs." in summary_request.messages[0].text
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.purpose == "reasoning"
