"""Validation and commit (BEHAVIOUR.md §1 "Validation and commit")."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from harnessed import (
    ContextManifest,
    ContextPolicy,
    HarnessAgent,
    Msg,
    RuntimeContext,
    TodoItem,
    ToolUseBlock,
)
from harnessed.context import (
    ContextBudgetExceededError,
    ContextConflictError,
    HistoryBudget,
    HistoryOutcome,
    ToolPairingError,
)
from harnessed.models import ScriptedModel
from harnessed.runtime import SessionRef
from harnessed.state import AgentState, InMemoryStateStore
from harnessed.todos import TODOS
from tests.context.helpers import builds, collect_failing, info_for, manifest_json
from tests.support.fixtures import CTX

SECRET = "SECRET-CUSTOMER-DATA 4111-1111"


async def seeded_agent(
    history: list[Msg], model: ScriptedModel, **kwargs: object
) -> tuple[HarnessAgent, InMemoryStateStore]:
    store = InMemoryStateStore()
    state = AgentState.new(SessionRef("val", "u", "s"))
    state.append(*history)
    await store.save(state)
    agent = HarnessAgent("val", model, state_store=store, **kwargs)  # type: ignore[arg-type]
    return agent, store


def use(call_id: str, name: str = "lookup") -> Msg:
    return Msg.assistant([ToolUseBlock(call_id, name, {"q": SECRET})])


def result(call_id: str, text: str = SECRET) -> Msg:
    return Msg.tool_result(call_id, text, name="lookup")


BROKEN_HISTORIES = pytest.mark.parametrize(
    "history",
    [
        [Msg.user(f"hello {SECRET}"), result("ghost")],
        [Msg.user(f"hello {SECRET}"), use("c1")],
        [Msg.user(f"hello {SECRET}"), use("c1"), result("c1"), result("c1")],
        [Msg.user(f"hello {SECRET}"), use("c1"), Msg.user("interrupting"), result("c1")],
    ],
    ids=["result-without-call", "call-without-result", "two-results", "result-not-after-call"],
)


@BROKEN_HISTORIES
async def test_unpaired_tool_messages_fail_the_call_without_repair(history: list[Msg]) -> None:
    model = ScriptedModel(["never sent"])
    agent, _ = await seeded_agent(history, model)
    events, error = await collect_failing(agent, "continue", CTX)
    assert isinstance(error, ToolPairingError)
    assert model.requests == []
    [build] = builds(events)
    assert build["status"] == "failed" and build["error_type"] == "ToolPairingError"
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "invalid_tool_pairs"
    assert build["context_manifest"]["validation"] == "invalid_tool_pairs"
    # the manifest describes, it never quotes
    text = manifest_json(manifest) + json.dumps(build["context_manifest"])
    for fragment in (SECRET, "hello", "continue", "interrupting", "lookup"):
        assert fragment not in text
    # nothing fabricated; nothing stored but the user's input (BEHAVIOUR.md §8)
    stored = await agent.load_state(CTX)
    assert [m.to_dict() for m in stored.history[:-1]] == [m.to_dict() for m in history]
    assert stored.history[-1].role == "user" and stored.history[-1].text == "continue"


async def test_a_well_paired_history_passes() -> None:
    history = [Msg.user("hello"), use("c1"), result("c1"), Msg.assistant("done")]
    model = ScriptedModel(["fine"])
    agent, _ = await seeded_agent(history, model)
    await agent.call("continue", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "passed"
    assert manifest.history_messages == 5


# ------------------------------------------------------------- compaction


def keep_last(n: int):  # type: ignore[no-untyped-def]
    async def compactor(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        return HistoryOutcome(list(history)[-n:], ("history_compaction",))

    return compactor


async def test_a_valid_compaction_is_committed_into_the_state() -> None:
    history = [Msg.user("old question"), use("c1"), result("c1"), Msg.assistant("old answer")]
    model = ScriptedModel(["new answer"])
    agent, _ = await seeded_agent(history, model)
    agent.compiler.compactor = keep_last(1)
    await agent.call("new question", CTX)
    assert [m.text for m in model.requests[0].messages[1:]] == ["new question"]
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert manifest.transforms == ("history_compaction",) and manifest.history_messages == 1
    stored = await agent.load_state(CTX)
    assert stored is not None
    assert [m.text for m in stored.history] == ["new question", "new answer"]


def compiler_state(history: list[Msg]) -> AgentState:
    state = AgentState.new(SessionRef("val", "u", "s"))
    state.append(*history)
    return state


async def test_a_compaction_that_breaks_tool_pairs_is_not_committed() -> None:
    model = ScriptedModel()
    agent = HarnessAgent("val", model)
    agent.compiler.compactor = keep_last(1)  # keeps the result, drops its call
    state = compiler_state([Msg.user("q"), use("c1"), result("c1")])
    before = ([m.id for m in state.history], state.history_revision)
    info = info_for(agent, model)
    with pytest.raises(ToolPairingError):
        await agent.compiler(state, agent.draft_request(state, "mc_test"), info)
    assert ([m.id for m in state.history], state.history_revision) == before


async def test_a_compaction_that_still_does_not_fit_is_not_committed() -> None:
    model = ScriptedModel()
    agent = HarnessAgent("val", model, context_policy=ContextPolicy(max_input_tokens=400))
    agent.compiler.compactor = keep_last(1)
    big = " ".join(f"word{i}" for i in range(600))
    state = compiler_state([Msg.user("small"), Msg.assistant("ok"), Msg.user(big)])
    before = [m.id for m in state.history]
    with pytest.raises(ContextBudgetExceededError):
        await agent.compiler(state, agent.draft_request(state, "mc_test"), info_for(agent, model))
    assert [m.id for m in state.history] == before


@pytest.mark.parametrize(
    ("mutation", "validation"),
    [
        (lambda s: s.put(TODOS, (TodoItem("x", "sneaky todo"),)), "state_conflict"),
        (lambda s: s.append(Msg.user("another writer")), "history_conflict"),
    ],
    ids=["task-state", "history"],
)
async def test_a_transform_that_changes_the_state_commits_nothing(
    mutation: object, validation: str
) -> None:
    seen: list[ContextManifest] = []

    async def meddling(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        mutation(budget.state)  # type: ignore[operator]
        return HistoryOutcome(list(history)[-1:], ("history_compaction",))

    model = ScriptedModel()
    agent = HarnessAgent("val", model, context_policy=ContextPolicy(observer=seen.append))
    agent.compiler.compactor = meddling
    original = [Msg.user("one"), Msg.assistant("two"), Msg.user("three")]
    state = compiler_state(original)
    with pytest.raises(ContextConflictError) as caught:
        await agent.compiler(state, agent.draft_request(state, "mc_test"), info_for(agent, model))
    assert caught.value.validation == validation
    assert seen and {m.validation for m in seen} == {validation}
    # the candidate (shortened) history was never committed
    assert [m.id for m in state.history[:3]] == [m.id for m in original]


async def test_a_conflict_seen_by_the_agent_stores_nothing() -> None:
    async def meddling(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        budget.state.put(TODOS, (TodoItem("x", "sneaky todo"),))
        return HistoryOutcome(history)

    model = ScriptedModel(["never"])
    agent = HarnessAgent("val", model)
    agent.compiler.compactor = meddling
    events, error = await collect_failing(agent, "hi", CTX)
    assert isinstance(error, ContextConflictError)
    assert model.requests == []
    statuses = {
        (b["status"], b["error_type"], b["context_manifest"]["validation"]) for b in builds(events)
    }
    assert statuses == {("failed", "ContextConflictError", "state_conflict")}
    stored = await agent.load_state(CTX)
    assert [m.text for m in stored.history] == ["hi"] and stored.get(TODOS) == ()  # input kept


async def test_after_a_conflict_a_clean_attempt_commits() -> None:
    observed: list[tuple[str, int]] = []
    state = compiler_state([Msg.user("one"), Msg.assistant("two"), Msg.user("three")])
    first_time = True

    async def meddling_once(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        nonlocal first_time
        if first_time:
            first_time = False
            budget.state.put(TODOS, (TodoItem("x", "from another writer"),))
        return HistoryOutcome(list(history)[-1:], ("history_compaction",))

    model = ScriptedModel()
    agent = HarnessAgent(
        "val",
        model,
        context_policy=ContextPolicy(
            observer=lambda m: observed.append((m.validation, len(state.history)))
        ),
    )
    agent.compiler.compactor = meddling_once
    prepared = await agent.compiler(
        state, agent.draft_request(state, "mc_test"), info_for(agent, model)
    )
    # the conflicting attempt committed nothing; the clean one committed its history
    assert observed == [("state_conflict", 3), ("passed", 1)]
    assert [m.text for m in state.history] == ["three"]
    assert next(m.text for m in prepared.messages if m.role == "user") == "three"
    assert [t.content for t in state.get(TODOS)] == ["from another writer"]


def offload_results(marker: str):  # type: ignore[no-untyped-def]
    async def evictor(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        out = [
            Msg.tool_result(m.tool_results[0].tool_use_id, marker, name="lookup")
            if m.role == "tool"
            else m
            for m in history
        ]
        return HistoryOutcome(out, ("tool_result_offload",))

    return evictor


async def test_a_valid_eviction_is_committed_and_recorded() -> None:
    history = [Msg.user("q"), use("c1"), result("c1", "BIG OUTPUT " * 50), Msg.assistant("a")]
    model = ScriptedModel(["ok"])
    agent, _ = await seeded_agent(history, model)
    agent.compiler.evictor = offload_results("[offloaded to a file]")
    await agent.call("next", CTX)
    sent_tool = [m for m in model.requests[0].messages if m.role == "tool"]
    assert [m.text for m in sent_tool] == ["[offloaded to a file]"]
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.transforms == ("tool_result_offload",)
    stored = await agent.load_state(CTX)
    assert stored is not None
    assert [m.text for m in stored.history if m.role == "tool"] == ["[offloaded to a file]"]


async def test_an_eviction_in_a_request_that_fails_is_not_committed() -> None:
    model = ScriptedModel()
    agent = HarnessAgent("val", model, context_policy=ContextPolicy(max_input_tokens=300))
    agent.compiler.evictor = offload_results("[offloaded]")
    big = " ".join(f"word{i}" for i in range(600))
    state = compiler_state([Msg.user("q"), use("c1"), result("c1", "BIG"), Msg.user(big)])
    before = [m.to_dict() for m in state.history]
    with pytest.raises(ContextBudgetExceededError):
        await agent.compiler(state, agent.draft_request(state, "mc_test"), info_for(agent, model))
    assert [m.to_dict() for m in state.history] == before
    manifest = agent.last_manifest(RuntimeContext("u", "s"))
    assert manifest is not None and manifest.validation == "budget_exceeded"
    assert manifest.transforms == ("tool_result_offload",)
