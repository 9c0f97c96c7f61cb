"""A model (or its server) chooses tool-call ids: repeated, empty, reused, huge or odd ones
must never brick a session.

Before the fix two calls with one id both ran and every later request of the session failed
with ``ToolPairingError`` (the log kept the bad pair). Each test here drives the public API —
``HarnessAgent`` with ``ScriptedModel``, or the OpenAI and Anthropic adapters against local
servers that check the request the way the real APIs do — and then makes three more calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessed import HarnessAgent, Msg, RuntimeContext, tool
from harnessed.context.pairs import tool_pair_problems
from harnessed.log import NewRecord
from harnessed.messages import ToolResultBlock, ToolUseBlock
from harnessed.models import (
    AnthropicModel,
    ModelRequest,
    OpenAIChatModel,
    ScriptedModel,
    ScriptedResponse,
    ScriptedToolCall,
)
from harnessed.models.retry import RetryPolicy
from harnessed.runtime import SessionRef
from tests.support.http_server import LocalServer, Recorded, Reply

FAST_RETRY = RetryPolicy(max_attempts=1, initial_delay=0.01, jitter=0)
ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")
WELL_FORMED = re.compile(r"[A-Za-z0-9_-]{1,40}")  # what every provider takes
RENAMED_KEY = "renamed_tool_call_ids"


def well_formed(call_id: str) -> bool:
    return WELL_FORMED.fullmatch(call_id) is not None


@tool(read_only=True)
def echo(text: str) -> str:
    """Say ``text`` back.

    Args:
        text: What to say.
    """
    return f"echo:{text}"


def calls(*pairs: tuple[str | None, str]) -> ScriptedResponse:
    """A response calling ``echo`` once per ``(id, text)``."""
    return ScriptedResponse(
        tool_calls=[ScriptedToolCall("echo", {"text": text}, id=cid) for cid, text in pairs]
    )


def conversation_problems(messages: tuple[Msg, ...] | list[Msg]) -> list[str]:
    """What a strict provider refuses: unpaired calls, ids used twice anywhere in the request,
    ids that are empty, longer than 40 characters or outside ``A-Za-z0-9_-``."""
    problems = tool_pair_problems(list(messages))
    seen: set[str] = set()
    for message in messages:
        for call in message.tool_uses:
            if not well_formed(call.id):
                problems.append(f"malformed id {call.id[:50]!r}")
            if call.id in seen:
                problems.append(f"id {call.id!r} used twice")
            seen.add(call.id)
    return problems


def results_by_call(messages: tuple[Msg, ...] | list[Msg]) -> dict[str, str]:
    """``{call's text argument: its result}``: which result answers which call."""
    by_id: dict[str, str] = {}
    for message in messages:
        for result in message.tool_results:
            by_id[result.tool_use_id] = result.content
    answered: dict[str, str] = {}
    for message in messages:
        for call in message.tool_uses:
            answered[str(call.input.get("text"))] = by_id.get(call.id, "<none>")
    return answered


async def three_more(agent: HarnessAgent, model: ScriptedModel, ctx: RuntimeContext) -> None:
    model.add("one", "two", "three")
    for expected in ("one", "two", "three"):
        reply = await agent.call(f"say {expected}", ctx)
        assert reply.text == expected
        assert conversation_problems(model.requests[-1].messages) == []


# --------------------------------------------------------------- ScriptedModel, public API
async def test_duplicate_ids_in_one_response_then_three_more_calls(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("dup", "a"), ("dup", "b")), "both done"])
    agent = HarnessAgent("ids", model, tools=[echo], workspace=tmp_path)
    ctx = RuntimeContext(session_id="s")
    assert (await agent.call("go", ctx)).text == "both done"
    second = model.requests[1].messages
    assert conversation_problems(second) == []
    # each call is answered by its own result, in order, and kept its arguments
    assert results_by_call(second) == {"a": "echo:a", "b": "echo:b"}
    assistant = next(m for m in second if m.tool_uses)
    first_id, second_id = (c.id for c in assistant.tool_uses)
    assert first_id == "dup"  # a first use that is fine is kept
    assert assistant.metadata[RENAMED_KEY] == {second_id: "dup"}  # the renaming is noted
    await three_more(agent, model, ctx)
    await agent.close()


HOSTILE_IDS = {
    "empty": "",
    "long": "x" * 10_000,
    "path": "../../MEMORY.md",
    "space": "call 1",
    "nul": "a\x00b",
    "newline": "a\nb",
    "unicode": "éé",
    "bidi": "call_\u202e1",
    "surrogate": "call_\ud800",
    "json": '"},{"id":"x',
    "41 chars": "c" * 41,
}


@pytest.mark.parametrize("hostile", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
async def test_malformed_ids_are_replaced(tmp_path: Path, hostile: str) -> None:
    model = ScriptedModel([calls((hostile, "a"), (hostile, "b")), "done"])
    agent = HarnessAgent("ids", model, tools=[echo], workspace=tmp_path)
    ctx = RuntimeContext(session_id="s")
    assert (await agent.call("go", ctx)).text == "done"
    request = model.requests[1].messages
    assert conversation_problems(request) == []
    assert results_by_call(request) == {"a": "echo:a", "b": "echo:b"}
    await three_more(agent, model, ctx)
    # the log holds well-formed ids only (and the id the model sent, clipped, as a note)
    state = await agent.load_state(ctx)
    for message in state.history:
        for call in message.tool_uses:
            assert well_formed(call.id)
        for old in message.metadata.get(RENAMED_KEY, {}).values():
            assert len(old) <= 200
    await agent.close()


async def test_ids_reused_from_an_earlier_response(tmp_path: Path) -> None:
    """A server whose counter starts again with each response, and a model that echoes the
    id the harness gave one of its calls."""
    model = ScriptedModel([calls(("call_0", "a")), calls(("", "b"))])
    agent = HarnessAgent("ids", model, tools=[echo], workspace=tmp_path)
    ctx = RuntimeContext(session_id="s")
    given: list[str] = []

    def respond(request: ModelRequest) -> ScriptedResponse | str:
        uses = [c.id for m in request.messages for c in m.tool_uses]
        given.extend(uses)
        step = len(model.requests)
        if step == 3:  # the counter restarted
            return calls(("call_0", "c"))
        if step == 4:  # the id the harness generated for the empty one
            return calls((uses[1], "d"))
        return "done"

    model.responder = respond
    assert (await agent.call("go", ctx)).text == "done"
    last = model.requests[-1].messages
    assert conversation_problems(last) == []
    assert results_by_call(last) == {"a": "echo:a", "b": "echo:b", "c": "echo:c", "d": "echo:d"}
    await three_more(agent, model, ctx)
    await agent.close()


async def test_the_events_the_log_and_the_tools_see_the_same_ids(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("dup", "a"), ("dup", "b"), ("", "c")), "done"])
    agent = HarnessAgent("ids", model, tools=[echo], workspace=tmp_path)
    ctx = RuntimeContext(session_id="s")
    events = [e async for e in agent.stream_events("go", ctx)]
    shown = [e.call.id for e in events if e.type == "tool_call"]
    answered = [e.result.tool_use_id for e in events if e.type == "tool_result"]
    ended = next(e.message for e in events if e.type == "model_call_end")
    assert len(set(shown)) == 3 and all(map(well_formed, shown))
    assert sorted(answered) == sorted(shown)
    assert [c.id for c in ended.tool_uses] == shown
    log = await agent.session_store.read(SessionRef("ids", "default", "s"))
    logged = [r.payload["call_id"] for r in log if r.type == "tool/execution"]
    assert sorted(logged) == sorted(shown)
    await agent.close()


# ---------------------------------------------------- a log that already holds a bad pair
def bad_pair_log(call_ids: tuple[str, str], results: int = 2) -> list[Msg]:
    """What today's code logged for a response with two calls sharing an id."""
    first, second = call_ids
    return [
        Msg.user("go"),
        Msg.assistant(
            [
                ToolUseBlock(first, "echo", {"text": "a"}),
                ToolUseBlock(second, "echo", {"text": "b"}),
            ]
        ),
        *[
            Msg("tool", (ToolResultBlock(cid, f"echo:{t}", name="echo"),), name="echo")
            for cid, t in list(zip(call_ids, "ab", strict=True))[:results]
        ],
    ]


async def write_log(agent: HarnessAgent, key: SessionRef, messages: list[Msg], run: str) -> None:
    records = [NewRecord("run/start", {"agent": "ids", "user_id": key.user_id}, run_id=run)]
    records += [NewRecord.message(m, run_id=run, turn_id="t") for m in messages]
    await agent.session_store.append(key, records)


@pytest.mark.parametrize("shape", [("dup", "dup"), ("", ""), ("ok", "x" * 300)])
async def test_a_log_holding_a_duplicate_pair_opens_and_continues(
    tmp_path: Path, shape: tuple[str, str]
) -> None:
    key = SessionRef("ids", "default", "s")
    ctx = RuntimeContext(session_id="s")
    model = ScriptedModel(["after"])
    agent = HarnessAgent("ids", model, tools=[echo], workspace=tmp_path)
    logged = bad_pair_log(shape)
    await write_log(agent, key, logged, "run_old")
    await agent.session_store.append(key, [NewRecord("run/end", {"status": "ok"}, "run_old")])

    assert (await agent.call("and now?", ctx)).text == "after"
    request = model.requests[0].messages
    assert conversation_problems(request) == []
    assert results_by_call(request) == {"a": "echo:a", "b": "echo:b"}
    await three_more(agent, model, ctx)

    # append-only: the original records are still there, unchanged; the repair is a
    # checkpoint after them that names each renaming
    log = await agent.session_store.read(key)
    originals = [r.message for r in log if r.type == "message"][: len(logged)]
    assert [m.to_dict() for m in originals if m is not None] == [m.to_dict() for m in logged]
    repairs = [r for r in log if r.type == "history/checkpoint"]
    assert len(repairs) == 1
    assert repairs[0].payload["reason"] == "tool call ids repaired"
    rows = repairs[0].payload["renamed_call_ids"]
    assert [row[0] for row in rows] == [logged[1].id] * len(rows)
    await agent.close()

    # a new process reads the same repaired history and goes on
    model2 = ScriptedModel(["again"])
    agent2 = HarnessAgent("ids", model2, tools=[echo], workspace=tmp_path)
    assert (await agent2.call("still there?", ctx)).text == "again"
    assert conversation_problems(model2.requests[0].messages) == []
    assert results_by_call(model2.requests[0].messages) == {"a": "echo:a", "b": "echo:b"}
    log2 = await agent2.session_store.read(key)
    assert sum(r.type == "history/checkpoint" for r in log2) == 1  # repaired once
    await agent2.close()


async def test_a_process_that_died_while_duplicate_calls_ran(tmp_path: Path) -> None:
    """Two calls with one id, one result logged, then the process died: the renamed second
    call gets its "interrupted" result and the session goes on."""
    key = SessionRef("ids", "default", "s")
    ctx = RuntimeContext(session_id="s")
    model = ScriptedModel(["after"])
    agent = HarnessAgent("ids", model, tools=[echo], workspace=tmp_path)
    await write_log(agent, key, bad_pair_log(("dup", "dup"), results=1), "run_dead")
    assert (await agent.call("and now?", ctx)).text == "after"
    request = model.requests[0].messages
    assert conversation_problems(request) == []
    answered = results_by_call(request)
    assert answered["a"] == "echo:a" and answered["b"].startswith("interrupted")
    await three_more(agent, model, ctx)
    await agent.close()


async def test_reading_a_broken_session_shows_it_repaired(tmp_path: Path) -> None:
    key = SessionRef("ids", "default", "s")
    agent = HarnessAgent("ids", ScriptedModel(), tools=[echo], workspace=tmp_path)
    await write_log(agent, key, bad_pair_log(("dup", "dup")), "run_old")
    await agent.session_store.append(key, [NewRecord("run/end", {"status": "ok"}, "run_old")])
    first = await agent.load_state(RuntimeContext(session_id="s"))
    again = await agent.load_state(RuntimeContext(session_id="s"))
    assert conversation_problems(first.history) == []
    assert [m.to_dict() for m in first.history] == [m.to_dict() for m in again.history]
    log = await agent.session_store.read(key)
    assert not any(r.type == "history/checkpoint" for r in log)  # reading writes nothing
    await agent.close()


# ------------------------------------------------------ the adapters against strict servers
def strict_openai(recorded: Recorded) -> Reply | None:
    """Refuse what the Chat Completions API refuses; else let the queue answer."""
    if recorded.method != "POST" or not recorded.path.endswith("/chat/completions"):
        return None
    body = recorded.json()
    seen: set[str] = set()
    open_calls: set[str] = set()
    for at, message in enumerate(body["messages"]):
        for call in message.get("tool_calls") or ():
            cid = call["id"]
            if len(cid) > 40:
                return _refuse(f"Invalid 'messages[{at}].tool_calls[0].id': string too long")
            if not cid or cid in seen:
                return _refuse(f"Duplicate or empty tool call id {cid!r} in messages[{at}]")
            seen.add(cid)
            open_calls.add(cid)
        if message["role"] == "tool":
            if message["tool_call_id"] not in open_calls:
                return _refuse(f"messages[{at}]: tool message does not answer a tool call")
            open_calls.discard(message["tool_call_id"])
    return None


def strict_anthropic(recorded: Recorded) -> Reply | None:
    if recorded.method != "POST" or not recorded.path.endswith("/messages"):
        return None
    seen: set[str] = set()
    for at, message in enumerate(recorded.json()["messages"]):
        content = message["content"]
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_use":
                cid = block["id"]
                if not ANTHROPIC_ID.fullmatch(cid) or len(cid) > 64:
                    return _refuse(f"messages.{at}.content.tool_use.id: String should match")
                if cid in seen:
                    return _refuse(f"messages.{at}: `tool_use` ids must be unique")
                seen.add(cid)
            if block.get("type") == "tool_result" and block["tool_use_id"] not in seen:
                return _refuse(f"messages.{at}: unexpected `tool_use_id` found in `tool_result`")
    return None


def _refuse(message: str) -> Reply:
    return Reply(
        400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    )


@pytest.fixture
def strict_server() -> Iterator[LocalServer]:
    server = LocalServer().start()
    try:
        yield server
    finally:
        server.stop()


def openai_sse(*chunks: dict[str, Any]) -> Reply:
    return Reply(sse=[f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"])


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "local",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def openai_calls(*pairs: tuple[str | None, str]) -> Reply:
    fragments = []
    for index, (cid, text) in enumerate(pairs):
        fragment: dict[str, Any] = {
            "index": index,
            "type": "function",
            "function": {"name": "echo", "arguments": json.dumps({"text": text})},
        }
        if cid is not None:
            fragment["id"] = cid
        fragments.append(openai_chunk({"tool_calls": [fragment]}))
    return openai_sse(*fragments, openai_chunk({}, "tool_calls"))


def openai_text(text: str) -> Reply:
    return openai_sse(openai_chunk({"content": text}), openai_chunk({}, "stop"))


@pytest.fixture
async def openai_agent(
    strict_server: LocalServer, tmp_path: Path
) -> AsyncIterator[tuple[HarnessAgent, LocalServer]]:
    strict_server.handler = strict_openai
    model = OpenAIChatModel(
        "local",
        base_url=strict_server.url + "/v1",
        api_key="sk-test",
        context_window=32_000,
        retry=FAST_RETRY,
        timeout=10,
    )
    agent = HarnessAgent("ids", model, tools=[echo], workspace=tmp_path)
    yield agent, strict_server
    await agent.close()


async def openai_three_more(agent: HarnessAgent, server: LocalServer, ctx: RuntimeContext) -> None:
    for word in ("one", "two", "three"):
        server.queue(openai_text(word))
        assert (await agent.call(f"say {word}", ctx)).text == word


@pytest.mark.parametrize(
    "first",
    [
        (("call_1", "a"), ("call_1", "b")),  # one id twice
        (("", "a"), ("", "b")),  # empty ids
        ((None, "a"), ("call_x", "b")),  # no id at all
        (("c" * 64, "a"), ("c" * 64, "b")),  # longer than OpenAI takes
    ],
    ids=["duplicate", "empty", "missing", "long"],
)
async def test_openai_duplicate_ids_then_three_more_calls(
    openai_agent: tuple[HarnessAgent, LocalServer], first: tuple[tuple[str | None, str], ...]
) -> None:
    agent, server = openai_agent
    ctx = RuntimeContext(session_id="s")
    server.queue(openai_calls(*first), openai_text("done"))
    assert (await agent.call("go", ctx)).text == "done"
    sent = server.requests[1].json()["messages"]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    calls_sent = [c for m in sent for c in m.get("tool_calls") or ()]
    assert [results[c["id"]] for c in calls_sent] == ["echo:a", "echo:b"]
    await openai_three_more(agent, server, ctx)


async def test_openai_counter_that_restarts_each_response(
    openai_agent: tuple[HarnessAgent, LocalServer],
) -> None:
    agent, server = openai_agent
    ctx = RuntimeContext(session_id="s")
    server.queue(
        openai_calls(("call_0", "a")),
        openai_calls(("call_0", "b")),
        openai_text("done"),
    )
    assert (await agent.call("go", ctx)).text == "done"
    await openai_three_more(agent, server, ctx)
    assert len(server.requests) == 6


def anthropic_event(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def anthropic_reply(blocks: list[dict[str, Any]], stop: str) -> Reply:
    start = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-local",
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    events = [anthropic_event("message_start", message=start)]
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            arguments = json.dumps(block.pop("input"))
            events.append(
                anthropic_event(
                    "content_block_start", index=index, content_block={**block, "input": {}}
                )
            )
            events.append(
                anthropic_event(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": arguments},
                )
            )
        else:
            events.append(
                anthropic_event(
                    "content_block_start", index=index, content_block={"type": "text", "text": ""}
                )
            )
            events.append(
                anthropic_event(
                    "content_block_delta",
                    index=index,
                    delta={"type": "text_delta", "text": block["text"]},
                )
            )
        events.append(anthropic_event("content_block_stop", index=index))
    events.append(
        anthropic_event("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": 5})
    )
    events.append(anthropic_event("message_stop"))
    return Reply(sse=events)


def anthropic_calls(*pairs: tuple[str, str]) -> Reply:
    blocks = [
        {"type": "tool_use", "id": cid, "name": "echo", "input": {"text": text}}
        for cid, text in pairs
    ]
    return anthropic_reply(blocks, "tool_use")


def anthropic_text(text: str) -> Reply:
    return anthropic_reply([{"type": "text", "text": text}], "end_turn")


@pytest.mark.parametrize(
    "first",
    [
        (("toolu_1", "a"), ("toolu_1", "b")),
        (("", "a"), ("", "b")),
        (("toolu 1/../x", "a"), ("toolu_2", "b")),
    ],
    ids=["duplicate", "empty", "odd characters"],
)
async def test_anthropic_duplicate_ids_then_three_more_calls(
    strict_server: LocalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    first: tuple[tuple[str, str], ...],
) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    strict_server.handler = strict_anthropic
    model = AnthropicModel(
        "claude-local",
        base_url=strict_server.url,
        api_key="test-key",
        context_window=32_000,
        retry=FAST_RETRY,
    )
    agent = HarnessAgent("ids", model, tools=[echo], workspace=tmp_path)
    ctx = RuntimeContext(session_id="s")
    strict_server.queue(anthropic_calls(*first), anthropic_text("done"))
    assert (await agent.call("go", ctx)).text == "done"
    sent = strict_server.requests[1].json()["messages"]
    uses = [b for m in sent if isinstance(m["content"], list) for b in m["content"]]
    results = {b["tool_use_id"]: b["content"] for b in uses if b["type"] == "tool_result"}
    calls_sent = [b for b in uses if b["type"] == "tool_use"]
    assert [_text(results[c["id"]]) for c in calls_sent] == ["echo:a", "echo:b"]
    for word in ("one", "two", "three"):
        strict_server.queue(anthropic_text(word))
        assert (await agent.call(f"say {word}", ctx)).text == word
    await agent.close()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


async def test_openai_calls_without_index_that_share_an_id_stay_two_calls(
    openai_agent: tuple[HarnessAgent, LocalServer],
) -> None:
    """Gemini's compatible API sends each call whole and without ``index``: a repeated id
    must not glue the second call's arguments to the first one."""
    agent, server = openai_agent
    ctx = RuntimeContext(session_id="s")
    whole = [
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": "echo", "arguments": json.dumps({"text": text})},
                    }
                ]
            }
        )
        for cid, text in (("same", "a"), ("same", "b"), ("", "c"))
    ]
    server.queue(openai_sse(*whole, openai_chunk({}, "tool_calls")), openai_text("done"))
    assert (await agent.call("go", ctx)).text == "done"
    sent = server.requests[1].json()["messages"]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    calls_sent = [c for m in sent for c in m.get("tool_calls") or ()]
    assert [results[c["id"]] for c in calls_sent] == ["echo:a", "echo:b", "echo:c"]
    await openai_three_more(agent, server, ctx)


def test_a_pairing_problem_quotes_a_huge_id_clipped() -> None:
    huge = "x" * 100_000
    history = [Msg.assistant([ToolUseBlock(huge, "echo", {})])]
    (problem,) = tool_pair_problems(history)
    assert len(problem) < 200 and problem.startswith("tool call 'xxx")


async def test_an_answer_to_one_of_two_calls_sharing_an_id_decides_that_call_only(
    tmp_path: Path,
) -> None:
    """Approvals are kept by call id: with a shared id, declining the call that asked also
    refused the harmless call beside it (and the session then failed for good)."""
    deployed: list[str] = []
    reads: list[str] = []

    @tool
    def deploy(target: str) -> str:
        """Deploy to a target."""
        deployed.append(target)
        return f"deployed to {target}"

    @tool(read_only=True)
    def status() -> str:
        """Read the deployment status."""
        reads.append("status")
        return "green"

    orders = [
        (("deploy", {"target": "prod"}), ("status", {})),
        (("status", {}), ("deploy", {"target": "prod"})),
    ]
    for order in orders:
        deployed.clear()
        reads.clear()
        script = ScriptedResponse(
            tool_calls=[ScriptedToolCall(name, args, id="same") for name, args in order]
        )
        model = ScriptedModel([script, "declined, status read"])
        agent = HarnessAgent(
            "ids",
            model,
            tools=[deploy, status],
            permission_mode="default",
            workspace=tmp_path / order[0][0],
        )
        ctx = RuntimeContext(session_id="s")
        asked = 0
        async for event in agent.stream_events("ship it", ctx):
            if event.type == "confirmation_request":
                asked += 1
                assert event.call.name == "deploy"
                await agent.respond(ctx, event.request_id, False)
        assert asked == 1
        assert deployed == [] and reads == ["status"]
        assert conversation_problems(model.requests[-1].messages) == []
        await three_more(agent, model, ctx)
        await agent.close()


async def test_a_log_holding_a_duplicate_pair_on_postgres_opens_and_continues() -> None:
    from tests.support.postgres import postgres_store

    async for pg in postgres_store():
        key = SessionRef("ids", "default", "s")
        ctx = RuntimeContext(session_id="s")
        model = ScriptedModel(["after"])
        agent = HarnessAgent("ids", model, tools=[echo], store=pg, memory=False)
        logged = bad_pair_log(("dup", "dup"))
        await write_log(agent, key, logged, "run_old")
        await agent.session_store.append(key, [NewRecord("run/end", {"status": "ok"}, "run_old")])
        assert (await agent.call("and now?", ctx)).text == "after"
        assert conversation_problems(model.requests[0].messages) == []
        await three_more(agent, model, ctx)
        other = ScriptedModel(["again"])
        second = HarnessAgent("ids", other, tools=[echo], store=pg, memory=False)
        assert (await second.call("still there?", ctx)).text == "again"
        assert results_by_call(other.requests[0].messages) == {"a": "echo:a", "b": "echo:b"}
        log = await second.session_store.read(key)
        assert sum(r.type == "history/checkpoint" for r in log) == 1
        await second.close()
        await agent.close()


async def test_a_history_handed_in_as_input_gets_the_same_checks(tmp_path: Path) -> None:
    """An application that passes earlier turns as input (messages with tool calls) with a
    repeated id, or an id the session used already: the call goes on, never a 400."""
    model = ScriptedModel([calls(("seen", "a")), "first", "second"])
    agent = HarnessAgent("ids", model, tools=[echo], workspace=tmp_path)
    ctx = RuntimeContext(session_id="s")
    assert (await agent.call("go", ctx)).text == "first"
    handed = [
        *bad_pair_log(("dup", "dup")),
        Msg.assistant([ToolUseBlock("seen", "echo", {"text": "c"})]),
        Msg("tool", (ToolResultBlock("seen", "echo:c", name="echo"),), name="echo"),
        Msg.user("and now?"),
    ]
    assert (await agent.call(handed, ctx)).text == "second"
    request = model.requests[-1].messages
    assert conversation_problems(request) == []
    assert results_by_call(request) == {"a": "echo:a", "b": "echo:b", "c": "echo:c"}
    await three_more(agent, model, ctx)
    await agent.close()
