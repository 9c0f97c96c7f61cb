"""The working history as a view of the session log (BEHAVIOUR.md §8), through the agent."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

import pytest

from harnessed import CompactionConfig, HarnessAgent, Msg, ToolUseBlock, tool
from harnessed.context import tool_pair_problems
from harnessed.log import NewRecord, RecordType
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.runtime import SessionRef
from harnessed.state import AgentState, InMemoryStateStore, JsonFileStateStore
from harnessed.state.conversation import ConversationStore
from harnessed.stores import InMemorySessionLogStore
from harnessed.todos import TODOS
from tests.support.fixtures import CTX

KEY = SessionRef("a", "u", "s")


class CountingStates(InMemoryStateStore):
    def __init__(self) -> None:
        super().__init__()
        self.saves = 0

    async def save(self, state: AgentState) -> None:
        self.saves += 1
        await super().save(state)


class CountingLog(InMemorySessionLogStore):
    def __init__(self) -> None:
        super().__init__()
        self.appends: list[list[str]] = []
        self.reads: list[int] = []

    async def append(self, key: SessionRef, records: Any) -> Any:
        self.appends.append([r.type for r in records])
        return await super().append(key, records)

    async def read(self, key: SessionRef, **kw: Any) -> Any:
        self.reads.append(kw.get("after_seq", 0))
        await asyncio.sleep(0)  # like a real store: other tasks run meanwhile
        return await super().read(key, **kw)


@tool
async def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


@tool
async def note(text: str) -> str:
    """Write a note."""
    return "noted"


def tool_step(*names: str) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(n, {"q": "x"}) for n in names])


async def test_a_step_writes_what_changed_and_the_state_only_when_it_changed() -> None:
    log, states = CountingLog(), CountingStates()
    model = ScriptedModel([tool_step("lookup"), "answer", "second answer"])
    agent = HarnessAgent(
        "a", model, tools=[lookup], session_store=log, state_store=states, enable_task_list=True
    )
    await agent.call("question", CTX)
    assert states.saves == 0  # nothing structured changed: no state file written
    # call start, the tool step's message (logged before its tool runs), its results, the end
    assert log.appends == [
        ["run/start", "message"],
        ["context/build", "message"],
        ["tool/execution", "message"],
        ["context/build", "message", "run/end"],
    ]
    reads_before = list(log.reads)
    await agent.call("again", CTX)
    assert log.reads[len(reads_before) :] == [9]  # only what came after the 9 records it knew
    todo = ScriptedToolCall("todo_write", {"todos": [{"id": "1", "content": "check"}]})
    model.add(ScriptedResponse(tool_calls=[todo]), "planned")
    await agent.call("plan it", CTX)
    assert states.saves == 1  # the task list changed: saved once
    assert (await agent.load_state(CTX)).get(TODOS)[0].content == "check"


async def test_sessions_being_worked_on_stay_loaded_beyond_the_bound() -> None:
    """Many concurrent calls on more sessions than the bound: a step's commit finds its
    session loaded (no replay of the log, no save of an unchanged state)."""
    log, states = CountingLog(), CountingStates()
    store = ConversationStore(log, states, max_sessions=2)
    keys = [SessionRef("a", "u", f"s{i}") for i in range(5)]
    running = await asyncio.gather(*(store.load(key, settle=True) for key in keys))
    log.reads.clear()
    for state in running:
        message = Msg.user(f"hi {state.session_id}")
        state.append(message)
        await store.commit(state, [NewRecord.message(message, run_id=None, turn_id=None)])
    assert log.reads == [] and states.saves == 0
    working = await store.load(SessionRef("a", "u", "w"), settle=True)
    for i in range(3):
        await store.load(SessionRef("a", "u", f"r{i}"))  # readers: dropped as usual
    assert SessionRef("a", "u", "w") in store._entries
    del working  # its call ended: the bound applies to it again
    gc.collect()
    for i in range(3):
        await store.load(SessionRef("a", "u", f"q{i}"))
    assert SessionRef("a", "u", "w") not in store._entries


async def test_recently_used_sessions_stay_loaded_within_a_bound() -> None:
    log = CountingLog()
    store = ConversationStore(log, InMemoryStateStore(), max_sessions=2)
    for session in ("s1", "s2", "s3"):
        await store.append(
            SessionRef("a", "u", session),
            [NewRecord.message(Msg.user(session), run_id=None, turn_id=None)],
        )
        await store.load(SessionRef("a", "u", session))
    assert len(store._entries) == 2
    log.reads.clear()
    state = await store.load(SessionRef("a", "u", "s3"))  # loaded: only the news is read
    assert [m.text for m in state.history] == ["s3"] and log.reads == [1]
    state = await store.load(SessionRef("a", "u", "s1"))  # dropped: read again from the start
    assert [m.text for m in state.history] == ["s1"] and log.reads[-1] == 0


def conversation(steps: int) -> list[Msg]:
    history = [Msg.user("Look through the logs.")]
    for i in range(steps):
        history.append(Msg.assistant([ToolUseBlock(f"c{i}", "lookup", {"q": str(i)})]))
        history.append(Msg.tool_result(f"c{i}", f"line {i} " * 30, name="lookup"))
    return history


async def test_a_summary_is_a_small_checkpoint_and_a_new_process_sees_the_same_history(
    tmp_path: Path,
) -> None:
    def make(model: ScriptedModel) -> HarnessAgent:
        return HarnessAgent(
            "a",
            model,
            tools=[lookup],
            workspace=tmp_path,
            memory=False,
            compaction=CompactionConfig(trigger_messages=12, keep_messages=4, keep_tokens=0),
        )

    agent = make(ScriptedModel(["## Session intent\nread logs", "done"]))
    await agent.conversation.append(
        KEY.__class__("a", "u", "s"),
        [NewRecord.message(m, run_id="r0", turn_id=None) for m in conversation(8)],
    )
    await agent.call("summarize please", CTX)
    history = (await agent.load_state(CTX)).history
    assert history[0].name is not None and "read logs" in history[0].text  # the summary
    [checkpoint] = await agent.session_log(CTX, types=[RecordType.CHECKPOINT])
    ops = checkpoint.payload["ops"]
    literals = [op for op in ops if isinstance(op, dict)]
    assert len(literals) == 1 and literals[0]["message"]["id"] == history[0].id
    assert all(isinstance(op, list) for op in ops[1:])  # the kept tail: ranges, not copies
    await agent.close()

    fresh = make(ScriptedModel(["next"]))  # another process opening the workspace
    again = (await fresh.load_state(CTX)).history
    assert [m.to_dict() for m in again] == [m.to_dict() for m in history]
    await fresh.call("and now?", CTX)
    assert tool_pair_problems((await fresh.load_state(CTX)).history) == []
    await fresh.close()


async def test_a_state_of_the_previous_format_is_converted_once(tmp_path: Path) -> None:
    old = conversation(2)
    # the previous format: the state file held the working history itself
    legacy = AgentState.new(SessionRef("a", "u", "s"))
    legacy.append(*old)
    await JsonFileStateStore(tmp_path / ".harnessed" / "state").save(legacy)
    path = tmp_path / ".harnessed/state/a/u/s.json"
    assert len(json.loads(path.read_text())["history"]) == 5

    agent = HarnessAgent("a", ScriptedModel(["hello", "again"]), workspace=tmp_path, memory=False)
    await agent.call("hi", CTX)
    stored = json.loads(path.read_text())
    assert stored["history"] == [] and stored["log_seq"] > 0  # converted: small now
    history = (await agent.load_state(CTX)).history
    assert [m.id for m in history[:5]] == [m.id for m in old]
    assert [m.text for m in history[5:]] == ["hi", "hello"]
    await agent.call("more", CTX)
    converted = await agent.session_log(CTX, types=[RecordType.CHECKPOINT])
    assert [c.payload.get("reason") for c in converted] == ["converted"]  # once
    await agent.close()


async def test_a_parked_step_is_not_taken_for_an_interrupted_one(tmp_path: Path) -> None:
    deployed: list[str] = []

    @tool
    async def deploy(target: str) -> str:
        """Deploy."""
        deployed.append(target)
        return "deployed"

    def make(model: ScriptedModel) -> HarnessAgent:
        return HarnessAgent(
            "a", model, tools=[deploy], workspace=tmp_path, memory=False, permission_mode="default"
        )

    first = make(
        ScriptedModel(
            [ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"target": "prod"})])]
        )
    )
    await first.call("ship", CTX)
    [request] = await first.pending_confirmations(CTX)
    await first.close()

    second = make(ScriptedModel(["shipped"]))  # a restarted process
    state = await second.load_state(CTX)
    assert [m.role for m in state.history] == ["user"]
    await second.respond(CTX, request.request_id, True)
    assert (await second.call(None, CTX)).text == "shipped"
    assert deployed == ["prod"]
    history = (await second.load_state(CTX)).history
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[2].metadata.get("harness") != "interrupted"
    assert tool_pair_problems(history) == []
    await second.close()


async def test_a_remote_workspace_keeps_state_and_history_beyond_the_process() -> None:
    import uuid

    url = f"memory://state-{uuid.uuid4().hex}"
    todo = ScriptedToolCall("todo_write", {"todos": [{"id": "1", "content": "check the logs"}]})
    first = HarnessAgent(
        "a",
        ScriptedModel([ScriptedResponse(tool_calls=[todo]), "planned"]),
        workspace=url,
        memory=False,
        enable_task_list=True,
    )
    assert type(first.state_store).__name__ == "FilesystemStateStore"
    await first.call("plan the work", CTX)
    await first.close()
    # a new agent object on the same workspace (as another process on the same bucket would)
    second = HarnessAgent("a", ScriptedModel(["ok"]), workspace=url, memory=False)
    state = await second.load_state(CTX)
    assert [t.content for t in state.get(TODOS)] == ["check the logs"]
    assert [m.role for m in state.history] == ["user", "assistant", "tool", "assistant"]
    assert await second.state_store.list_sessions("a", "u") == ["s"]
    await second.close()


async def test_a_step_that_failed_in_its_tools_is_dropped_but_stays_in_the_log() -> None:
    from harnessed import Capability
    from harnessed.capabilities import CallContext
    from harnessed.messages import ToolResultBlock

    class Broken(Capability):
        broken = True

        async def after_tool_call(
            self, call: CallContext, tool_call: ToolUseBlock, result: ToolResultBlock
        ) -> ToolResultBlock | None:
            if self.broken:
                raise SystemError("the capability broke")
            return None

    model = ScriptedModel([ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"q": "x"})])])
    broken = Broken()
    agent = HarnessAgent("a", model, tools=[lookup], capabilities=[broken])
    with pytest.raises(SystemError):
        await agent.call("go", CTX)
    logged = await agent.session_messages(CTX)
    assert [m.role for m in logged] == ["user", "assistant"]  # the log tells what happened
    assert [m.role for m in (await agent.load_state(CTX)).history] == ["user"]  # no half step
    broken.broken = False  # the application fixed its capability
    model.add("ok")
    assert (await agent.call("try again", CTX)).text == "ok"
    history = (await agent.load_state(CTX)).history
    assert [m.text for m in history] == ["go", "try again", "ok"]
    assert tool_pair_problems(history) == []
    [dropped] = await agent.session_log(CTX, types=[RecordType.CHECKPOINT])
    assert dropped.payload["reason"] == "unfinished step dropped"
