"""session_list / session_history / session_search through the agent, as the model uses them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from harnessed import HarnessAgent, Msg, RuntimeContext, ToolResultEvent, tool
from harnessed.context import HistoryBudget, HistoryOutcome
from harnessed.messages import ToolResultBlock
from harnessed.models import ScriptedModel
from harnessed.session_tools.tools import SESSION_TOOL_NAMES
from harnessed.tools.context import ToolContext
from tests.support.fixtures import tool_step

NEEDLE = "NEEDLE-4242 the staging password rotates on Tuesdays"
BIG = ("report line\n" * 4_000) + NEEDLE + "\n" + ("tail line\n" * 4_000)


@tool(read_only=True)
def fetch_report() -> str:
    """Fetch the very long nightly report."""
    return BIG


async def tool_results(
    agent: HarnessAgent, text: str, ctx: RuntimeContext
) -> list[ToolResultBlock]:
    return [
        e.result async for e in agent.stream_events(text, ctx) if isinstance(e, ToolResultEvent)
    ]


async def evict_big_results(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
    """Stands in for tool-result eviction: long tool output is replaced by a short notice."""
    out = []
    for m in history:
        result = m.tool_results[0] if m.role == "tool" else None
        if result is not None and len(result.content) > 5_000:
            notice = ToolResultBlock(
                result.tool_use_id, "[output moved to a file]", name=result.name
            )
            m = m.replace(content=(notice,))
        out.append(m)
    return HistoryOutcome(out, ("tool_result_offload",) if out != list(history) else ())


async def summarize_old_turns(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
    """Stands in for compaction: everything before the last user turn becomes a summary."""
    users = [
        i
        for i, m in enumerate(history)
        if m.role == "user" and m.metadata.get("harness") != "summary"
    ]
    if len(users) < 2:
        return HistoryOutcome(history)
    summary = Msg.user("Summary: a report was fetched.", metadata={"harness": "summary"})
    return HistoryOutcome([summary, *history[users[-1] :]], ("history_compaction",))


async def test_the_log_keeps_what_eviction_and_compaction_took_away(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_step("fetch_report"),
            "The report is in.",
            tool_step("session_search", query="needle 4242"),
            tool_step("session_history", last_n=50),
            tool_step("session_search", query="fetch the nightly report"),
            "Found it.",
        ]
    )
    agent = HarnessAgent("ops", model, tools=[fetch_report], workspace=tmp_path)
    agent.compiler.evictor = evict_big_results
    agent.compiler.compactor = summarize_old_turns
    ctx = RuntimeContext("alice", "s1")
    await agent.call("Please fetch the nightly report", ctx)
    state = await agent.load_state(ctx)
    assert all(NEEDLE not in m.text for m in state.history)  # the working history lost it

    search, history, earlier = await tool_results(
        agent, "What did the report say about the needle?", ctx
    )
    state = await agent.load_state(ctx)
    assert state.history[0].text == "Summary: a report was fetched."  # compacted
    assert all(m.text != "Please fetch the nightly report" for m in state.history)
    sent = model.requests[3]  # the request that received the search result
    assert all(BIG not in m.text for m in sent.messages)

    assert not search.is_error
    logged = await agent.session_log(ctx, types=["message"])
    tool_seq = next(r.seq for r in logged if r.message is not None and r.message.role == "tool")
    assert f"s1#{tool_seq} [" in search.content and "tool fetch_report]" in search.content
    assert NEEDLE in search.content  # the original words around the match, from the log
    assert not history.is_error
    assert BIG in history.content  # the full original output
    assert "Please fetch the nightly report" in history.content  # summarized away, still here
    assert "→ call fetch_report {}" in history.content
    assert "s1#2 [" in earlier.content  # the summarized first message, found by its words
    assert "user]: Please fetch the nightly report" in earlier.content


async def test_history_pages_back_with_before_seq(tmp_path: Path) -> None:
    agent = HarnessAgent(
        "pager",
        ScriptedModel(["one", "two", "three"]),
        workspace=tmp_path,
    )
    ctx = RuntimeContext("u", "s")
    for text in ("first", "second", "third"):
        await agent.call(text, ctx)
    history_tool = agent.toolkit.get("session_history")
    assert history_tool is not None
    tool_ctx = ToolContext("pager", ctx.resolved("pager"), await agent.load_state(ctx), "c")
    newest = await history_tool.run({"last_n": 2}, tool_ctx)
    assert "user:\nthird" in newest and "assistant:\nthree" in newest
    assert "second" not in newest
    assert "call session_history with before_seq=" in newest
    before = int(newest.rsplit("before_seq=", 1)[1].rstrip("]"))
    older = await history_tool.run({"last_n": 2, "before_seq": before}, tool_ctx)
    assert "user:\nsecond" in older and "assistant:\ntwo" in older and "third" not in older


async def test_a_user_never_reaches_another_users_sessions(tmp_path: Path) -> None:
    alice = RuntimeContext("alice", "alice-private")
    bob = RuntimeContext("bob", "bob-1")
    model = ScriptedModel(
        [
            "noted",
            tool_step("session_list"),
            tool_step("session_search", query="launch code", match="all"),
            tool_step("session_history", session_id="alice-private"),
            tool_step("session_search", query="launch code", session_id="alice-private"),
            "nothing for you",
        ]
    )
    agent = HarnessAgent("shared", model, workspace=tmp_path)
    await agent.call("My launch code is 0000", alice)
    listing, search, history, scoped = await tool_results(agent, "what do you know?", bob)
    assert "bob-1 (this session)" in listing.content
    assert "alice" not in listing.content
    assert search.content.startswith("No message in your sessions matches")
    assert history.is_error and "no session 'alice-private'" in history.content
    assert scoped.content.startswith("No message in session alice-private matches")
    assert [s.session_id for s in await agent.sessions("bob")] == ["bob-1"]
    # bob's own searches are not indexed (they would echo), and alice's words never show up
    assert await agent.session_search("launch code", "bob", max_results=50) == []
    bobs = await agent.session_search("know", "bob", max_results=50)
    assert bobs and all(h.session_id == "bob-1" and "0000" not in h.text for h in bobs)
    assert [h.session_id for h in await agent.session_search("launch code", "alice")] == [
        "alice-private"
    ]


async def test_bad_arguments_become_clear_tool_errors(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_step("session_search", query="?!"),
            tool_step("session_search", query="x", max_results=500),
            tool_step("session_history", last_n=0),
            tool_step("session_list", limit=0),
            "ok",
        ]
    )
    agent = HarnessAgent("strict", model, workspace=tmp_path)
    results = await tool_results(agent, "go", RuntimeContext("u", "s"))
    assert all(r.is_error for r in results)
    assert "no words" in results[0].content
    assert "max_results must be between 1 and 50" in results[1].content
    assert "last_n must be between 1 and 200" in results[2].content
    assert "limit must be between 1 and 100" in results[3].content


def test_session_tools_are_registered_with_a_workspace_only(tmp_path: Path) -> None:
    names = set(HarnessAgent("a", ScriptedModel(), workspace=tmp_path).toolkit.names)
    assert set(SESSION_TOOL_NAMES) <= names
    assert {"memory_search", "memory_get", "memory_save"} <= names
    bare = set(HarnessAgent("a", ScriptedModel()).toolkit.names)
    assert not bare & {*SESSION_TOOL_NAMES, "memory_search"}
    off = set(
        HarnessAgent("a", ScriptedModel(), workspace=tmp_path, memory_tools=False).toolkit.names
    )
    assert not off & {*SESSION_TOOL_NAMES, "memory_search", "memory_get", "memory_save"}

    @tool
    def session_list() -> str:
        """The application's own listing."""
        return "mine"

    mine = HarnessAgent("a", ScriptedModel(), workspace=tmp_path, tools=[session_list])
    assert mine.toolkit.get("session_list") is session_list
    for name in (*SESSION_TOOL_NAMES, "memory_search", "memory_get"):
        found = mine.toolkit.get(name)
        assert found is not None and (found.read_only or found is session_list)


async def test_an_allowed_agent_reads_another_agents_sessions_of_the_same_user(
    tmp_path: Path,
) -> None:
    alice = RuntimeContext("alice", "sup-1")
    coder = HarnessAgent("coder", ScriptedModel(["patched", "hello bob"]), workspace=tmp_path)
    await coder.call("Fix the flaky migration test", RuntimeContext("alice", "c-1"))
    await coder.call("Bob's secret plan", RuntimeContext("bob", "c-bob"))
    await coder.close()

    asks = [
        tool_step("session_list", agent_id="coder"),
        tool_step("session_history", agent_id="coder", session_id="c-1"),
        tool_step("session_search", query="flaky migration", agent_id="coder"),
        tool_step("session_history", agent_id="coder", session_id="c-bob"),
        tool_step("session_list", agent_id="reviewer"),
        tool_step("session_history", agent_id="coder"),
        "summary done",
    ]
    supervisor = HarnessAgent(
        "supervisor",
        ScriptedModel(asks),
        workspace=tmp_path,
        readable_session_agents=["coder"],
    )
    listing, history, search, bobs, other, no_id = await tool_results(supervisor, "report", alice)
    assert "1 session(s) of agent coder" in listing.content and "- c-1 —" in listing.content
    assert "this session" not in listing.content and "c-bob" not in listing.content
    assert "Fix the flaky migration test" in history.content and "patched" in history.content
    assert not search.is_error and "c-1#" in search.content
    # another user's session of the same agent stays out of reach
    assert bobs.is_error and "no session 'c-bob' of agent coder" in bobs.content
    assert other.is_error and "may not read the sessions of agent 'reviewer'" in other.content
    assert no_id.is_error and "name the session of agent coder" in no_id.content
    described = {t.name: t.description for t in supervisor.toolkit.schemas()}
    assert (
        "you may read the sessions of these agents (pass agent_id): coder"
        in (described["session_list"])
    )
    await supervisor.close()

    # by default an agent reads only its own sessions
    plain = HarnessAgent(
        "plain",
        ScriptedModel([tool_step("session_list", agent_id="coder"), "ok"]),
        workspace=tmp_path,
    )
    (refused,) = await tool_results(plain, "peek", alice)
    assert refused.is_error and "agents you may read: plain" in refused.content
    await plain.close()
    with pytest.raises(ValueError, match="readable_agents: 'a b'"):
        HarnessAgent("x", ScriptedModel(), workspace=tmp_path, readable_session_agents=["a b"])
