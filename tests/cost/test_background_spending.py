"""Spending that is not a reasoning request of the call: memory's own requests (a flush before
compaction, during the call; the end-of-call flush, after it) and a background sub-agent still
working after its parent's call ended. All of it reaches the session's totals and limits, as
do the costs of a turn that was interrupted and resumed in another process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harnessed import CompactionConfig, HarnessAgent, RuntimeContext
from harnessed.cost import UsageLimits
from harnessed.memory import MemoryConfig
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.models.base import Usage
from harnessed.models.scripted import ScriptedResponse
from harnessed.subagents import SubagentSpec
from tests.compaction.helpers import conversation, seeded, summaries
from tests.compaction.test_summary import SUMMARY_1
from tests.cost.test_limits import Flat, end_of, events_of
from tests.sessions.helpers import Blocker, call, make_agent
from tests.subagents.helpers import calls, parent, spawn, wait_for_tasks
from tests.support.fixtures import CTX

FACTS = "- 2025-03-14: the user prefers tea.\n"


def memory(model: ScriptedModel, **config: object) -> MemoryConfig:
    return MemoryConfig(
        model=model,
        timezone="UTC",
        maintenance_interval_minutes=None,
        **config,  # type: ignore[arg-type]
    )


async def test_a_memory_flush_before_compaction_is_paid_by_the_call(tmp_path: Path) -> None:
    memory_model = ScriptedModel(
        responder=lambda request: ScriptedResponse(FACTS, usage=Usage(3_000, 40)), name="m"
    )
    summary = ScriptedResponse(SUMMARY_1, usage=Usage(4_000, 50))
    model = ScriptedModel([summary, ScriptedResponse("ok", usage=Usage(500, 5))], name="m")
    agent, _ = await seeded(
        conversation(6, output_chars=6_000),
        model,
        workspace=tmp_path,
        memory=memory(memory_model),
        compaction=CompactionConfig(trigger_tokens=6_000, keep_tokens=3_000),
        prices=Flat(),
    )
    end = end_of(await events_of(agent, "next", RuntimeContext("u", "s")))
    assert len(summaries(model)) == 1 and memory_model.requests
    flushes = len(memory_model.requests)
    assert end.usage is not None
    assert end.usage.requests == 2 + flushes
    assert end.usage.input_tokens == 4_500 + 3_000 * flushes
    assert end.usage.cost_usd is not None
    assert end.usage.cost_usd > 0.04 + 0.005 + 0.005 + 0.0005  # the flushes are priced too
    await agent.close()


async def test_the_end_of_call_memory_flush_is_added_to_the_session(tmp_path: Path) -> None:
    memory_model = ScriptedModel(
        responder=lambda request: ScriptedResponse(FACTS, usage=Usage(2_000, 20)), name="m"
    )
    model = ScriptedModel([ScriptedResponse("Sure.", usage=Usage(1_000, 10))], name="m")
    agent = HarnessAgent(
        "mem",
        model,
        workspace=tmp_path,
        memory=memory(memory_model, flush_after_call="always"),
        prices=Flat(),
    )
    end = end_of(await events_of(agent, "I prefer tea"))
    assert end.usage is not None and end.usage.requests == 1  # the reply came first
    assert agent.memory is not None
    await agent.memory.wait_idle()
    assert len(memory_model.requests) == 1
    total = await agent.session_usage(CTX)
    assert (total.requests, total.input_tokens) == (2, 3_000)
    [late] = await agent.session_log(CTX, types=["usage"])
    assert late.payload["usage"]["requests"] == 1
    assert late.payload["usage"]["cost_usd"] == 2_000 / 100_000 + 20 / 10_000
    await agent.close()


async def test_a_background_sub_agent_spending_after_the_call_counts_for_the_session() -> None:
    release = asyncio.Event()

    async def child_answer(request: ModelRequest) -> ScriptedResponse:
        await asyncio.wait_for(release.wait(), timeout=120)
        return ScriptedResponse("child done", usage=Usage(5_000, 100))

    child = SubagentSpec(
        "helper",
        "Helps.",
        system_prompt="You help.",
        model=ScriptedModel(responder=child_answer, name="priced-model"),
    )
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[spawn("helper", "help in the background", timeout_seconds=0)],
                usage=Usage(1_000, 100),
            ),
            ScriptedResponse("spawned", usage=Usage(1_000, 100)),
        ],
        name="priced-model",
    )
    agent = parent(model, child, prices=Flat())
    ctx = RuntimeContext("u1", "bg")
    end = end_of(await events_of(agent, "delegate", ctx))
    assert end.status == "completed"
    assert end.usage is not None and end.usage.requests == 2  # the child had not answered
    assert (await agent.session_usage(ctx)).requests == 2

    release.set()
    await wait_for_tasks(agent, ctx, 1)
    total = await agent.session_usage(ctx)
    assert (total.requests, total.input_tokens) == (3, 7_000)
    # the sub-agent prices with its own table, which does not know this model: unpriced
    assert (total.cost_usd, total.unpriced_requests) == (end.usage.cost_usd, 1)
    # and it counts against the session's limit: the next call stops before it spends
    model.add(calls(text="never sent"))
    after = end_of(
        await events_of(agent, "more", ctx, session_usage_limits=UsageLimits(input_tokens=7_000))
    )
    assert after.status == "limit" and len(model.requests) == 2
    await agent.close()


async def test_costs_of_an_interrupted_turn_and_its_resumption_add_up(tmp_path: Path) -> None:
    blocker = Blocker()
    first = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("wait_here", "c1", label="x")], usage=Usage(2_000, 50))],
        name="priced-model",
    )
    agent = make_agent(first, tmp_path, shell=False, tools=[blocker.tool], prices=Flat())
    session = agent.session(CTX)
    turn = await session.submit("please wait")
    await blocker.started.wait()
    session.interrupt()
    interrupted = await turn.result()
    assert interrupted.status == "interrupted"
    assert interrupted.usage is not None and interrupted.usage.requests == 1
    await agent.close()

    # resumed by another process: its totals continue from the log, and so do its limits
    second = ScriptedModel([ScriptedResponse("done", usage=Usage(3_000, 50))], name="priced-model")
    again = make_agent(
        second,
        tmp_path,
        shell=False,
        prices=Flat(),
        session_usage_limits=UsageLimits(input_tokens=5_000),
    )
    resumed = await (await again.session(CTX).resume()).result()
    assert resumed.status == "completed"
    assert resumed.usage is not None and resumed.usage.requests == 1
    total = await again.session_usage(CTX)
    assert (total.requests, total.input_tokens) == (2, 5_000)
    assert total.cost_usd == pytest.approx(
        (interrupted.usage.cost_usd or 0) + (resumed.usage.cost_usd or 0)
    )
    # the session has spent its 5,000 input tokens: the next turn stops before any request
    second.add("never sent")
    stopped = await (await again.session(CTX).submit("more")).result()
    assert stopped.status == "limit" and len(second.requests) == 1
    await again.close()
