"""The end-of-call flush position and throttle live in the session log: app servers share them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harnessed import HarnessAgent, ModelError, RuntimeContext
from harnessed.log import RecordType
from harnessed.models import ScriptedModel
from tests.memory.helpers import Clock, memory_agent
from tests.support.postgres import postgres_store

CTX = RuntimeContext("u1", "s1")


@pytest.fixture(params=["files", "postgres"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if request.param == "files":
        yield None
        return
    async for pg in postgres_store():
        yield pg


def flush_prompts(model: ScriptedModel) -> list[str]:
    return [request.messages[-1].text for request in model.requests]


def two_servers(
    root: Path, store: Any, clock: Clock, **config: Any
) -> tuple[HarnessAgent, ScriptedModel, HarnessAgent, ScriptedModel]:
    first, second = (ScriptedModel(responder=lambda request: "NOTHING") for _ in range(2))
    a = memory_agent(root, first, clock=clock, store=store, **config)
    b = memory_agent(root, second, clock=clock, store=store, **config)
    return a, first, b, second


async def test_a_second_server_flushes_only_what_the_first_did_not(
    tmp_path: Path, store: Any
) -> None:
    clock = Clock()
    a, first, b, second = two_servers(tmp_path, store, clock, flush_after_call="always")
    await a.call("tea please", CTX)
    await a.close()
    assert len(first.requests) == 1 and "user: tea please" in flush_prompts(first)[0]
    await b.call("my name is Bob", CTX)
    await b.close()
    (prompt,) = flush_prompts(second)
    assert "user: my name is Bob" in prompt
    assert "tea please" not in prompt  # already flushed by the first server
    marks = await b.session_log(CTX, types=[RecordType.MEMORY_FLUSHED])
    assert len(marks) == 2


async def test_the_throttle_holds_across_servers(tmp_path: Path, store: Any) -> None:
    clock = Clock()
    a, first, b, second = two_servers(tmp_path, store, clock, flush_after_call=10)
    await a.call("a", CTX)
    await a.close()
    assert len(first.requests) == 1
    clock.advance(5)
    await b.call("b", CTX)  # 5 minutes after the first server's flush: throttled
    await b.close()
    assert second.requests == []
    clock.advance(6)
    await b.call("c", CTX)
    await b.close()
    (prompt,) = flush_prompts(second)
    assert "user: b" in prompt and "user: c" in prompt  # nothing was skipped
    assert "user: a" not in prompt  # nor read twice


async def test_a_failed_flush_moves_no_position(tmp_path: Path, store: Any) -> None:
    clock = Clock()
    failing = ScriptedModel([ModelError("memory model down")])
    a = memory_agent(tmp_path, failing, clock=clock, store=store, flush_after_call=10)
    await a.call("tea please", CTX)
    await a.close()
    assert len(failing.requests) == 1
    assert await a.session_log(CTX, types=[RecordType.MEMORY_FLUSHED]) == []
    second = ScriptedModel(responder=lambda request: "NOTHING")
    b = memory_agent(tmp_path, second, clock=clock, store=store, flush_after_call=10)
    await b.call("more", CTX)  # no throttle, and the failed messages are read again
    await b.close()
    (prompt,) = flush_prompts(second)
    assert "user: tea please" in prompt and "user: more" in prompt


async def test_after_a_failed_flush_the_next_one_reads_those_messages_again(
    tmp_path: Path, store: Any
) -> None:
    model = ScriptedModel([ModelError("memory model down"), "NOTHING"])
    agent = memory_agent(tmp_path, model, store=store, flush_after_call="always")
    await agent.call("tea please", CTX)
    await agent.memory.wait_idle()  # type: ignore[union-attr]
    await agent.call("more", CTX)
    await agent.close()
    assert len(model.requests) == 2
    assert "user: tea please" in flush_prompts(model)[1]
