"""Usage limits: each kind, per call and per session, in a sub-agent tree, and never inside a
tool step; cost totals kept across calls and processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnessed import AgentEndEvent, CompactionConfig, HarnessAgent, RuntimeContext, tool
from harnessed.cost import UsageLimits, UsageTotals
from harnessed.events import Event, ModelCallEndEvent, ToolResultEvent, UsageLimitEvent
from harnessed.models import ScriptedModel
from harnessed.models.base import Usage
from harnessed.models.scripted import ScriptedResponse, ScriptedToolCall
from harnessed.subagents import SubagentSpec
from tests.compaction.helpers import conversation, seeded, summaries
from tests.compaction.test_summary import SUMMARY_1
from tests.subagents.helpers import parent, spawn
from tests.support.fixtures import CTX


class Flat:
    """A price table: one cent per 1,000 input tokens and per 100 output tokens; the model
    named ``free-model`` has no known price."""

    def price(self, model: str, usage: Usage | None, provider: str | None = None) -> float | None:
        if usage is None or model == "free-model":
            return None
        return usage.input_tokens / 100_000 + usage.output_tokens / 10_000


ran: list[str] = []


@tool
def work(step: int) -> str:
    """Do one step of work.

    Args:
        step: Which step.
    """
    ran.append(f"work {step}")
    return f"step {step} done"


def step(n: int, *, input_tokens: int = 1_000, output_tokens: int = 100) -> ScriptedResponse:
    return ScriptedResponse(
        tool_calls=[ScriptedToolCall("work", {"step": n})],
        usage=Usage(input_tokens, output_tokens),
    )


def endless(**usage: int) -> ScriptedModel:
    """A model that never finishes: one tool step after another."""
    count = 0

    def respond(request: Any) -> ScriptedResponse:
        nonlocal count
        count += 1
        return step(count, **usage)

    return ScriptedModel(responder=respond, name="priced-model")


def agent_with(model: ScriptedModel, **kw: Any) -> HarnessAgent:
    kw.setdefault("max_iters", 50)
    return HarnessAgent("capped", model, tools=[work], prices=Flat(), **kw)


async def events_of(
    agent: HarnessAgent, text: str | None, ctx: RuntimeContext = CTX, **kw: Any
) -> list[Event]:
    return [e async for e in agent.stream_events(text, ctx, **kw)]


def end_of(events: list[Event]) -> AgentEndEvent:
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.source is None
    return end


@pytest.mark.parametrize(
    ("limits", "limit", "requests"),
    [
        (UsageLimits(requests=3), "requests", 3),
        (UsageLimits(input_tokens=2_500), "input_tokens", 3),  # 1,000 per request
        (UsageLimits(output_tokens=400), "output_tokens", 4),  # 100 per request
        (UsageLimits(cost_usd=0.05), "cost_usd", 3),  # 0.02 per request
    ],
)
async def test_each_limit_ends_the_call_with_status_limit(
    limits: UsageLimits, limit: str, requests: int
) -> None:
    model = endless()
    agent = agent_with(model, usage_limits=limits)
    events = await events_of(agent, "go")
    end = end_of(events)
    assert end.status == "limit"
    assert len(model.requests) == requests
    [hit] = [e for e in events if isinstance(e, UsageLimitEvent)]
    assert (hit.limit, hit.scope) == (limit, "call")
    assert limit in end.reply.text and "this call" in end.reply.text
    assert end.reply.metadata["harness"] == "limit"
    assert end.usage is not None and end.usage.requests == requests
    # every step that started finished: each tool call has its result
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert len(results) == requests
    log = await agent.session_log(CTX, types=["run/end"])
    assert log[-1].payload["status"] == "limit"
    assert log[-1].payload["usage"]["requests"] == requests


async def test_a_call_may_override_the_agents_limits() -> None:
    model = ScriptedModel([step(1), step(2), step(3), "finished"], name="priced-model")
    agent = agent_with(model, usage_limits=UsageLimits(requests=1))
    end = end_of(await events_of(agent, "go", usage_limits=None))
    assert end.status == "completed" and len(model.requests) == 4
    model.add(step(4), step(5), "again")
    end = end_of(await events_of(agent, "more", usage_limits=UsageLimits(requests=2)))
    assert end.status == "limit" and len(model.requests) == 6


async def test_a_session_limit_counts_every_call_of_the_session() -> None:
    model = ScriptedModel([step(1), "one", step(2), "two"], name="priced-model")
    agent = agent_with(model, session_usage_limits=UsageLimits(requests=3))
    assert end_of(await events_of(agent, "first")).status == "completed"
    second = await events_of(agent, "second")
    assert end_of(second).status == "limit"
    assert len(model.requests) == 3
    [hit] = [e for e in second if isinstance(e, UsageLimitEvent)]
    assert (hit.limit, hit.scope, hit.used, hit.maximum) == ("requests", "session", 3, 3)
    # another session of the same agent is not affected
    model.add("fresh")
    other = RuntimeContext("u", "other")
    assert end_of(await events_of(agent, "hello", other)).status == "completed"
    # and once the limit is reached, the session's next call stops before any request
    third = await events_of(agent, "third")
    assert end_of(third).status == "limit" and len(model.requests) == 4


async def test_a_limit_reached_in_a_step_lets_the_step_finish() -> None:
    ran.clear()
    # one answer with three tool calls crosses the limit: all three run, then the call stops
    three = ScriptedResponse(
        tool_calls=[ScriptedToolCall("work", {"step": i}) for i in (1, 2, 3)],
        usage=Usage(5_000, 100),
    )
    model = ScriptedModel([three, "never asked"], name="priced-model")
    agent = agent_with(model, usage_limits=UsageLimits(input_tokens=1_000))
    events = await events_of(agent, "go")
    assert end_of(events).status == "limit"
    assert ran == ["work 1", "work 2", "work 3"]
    assert len(model.requests) == 1
    state = await agent.load_state(CTX)
    assert [m.role for m in state.history][-5:] == [
        "assistant",
        "tool",
        "tool",
        "tool",
        "assistant",
    ]


def spender(reply_after: int, usage: Usage) -> SubagentSpec:
    """A sub-agent working ``reply_after`` tool steps, each reported with ``usage``."""
    count = 0

    def respond(request: Any) -> ScriptedResponse | str:
        nonlocal count
        count += 1
        if count > reply_after:
            return ScriptedResponse("child done", usage=usage)
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall("work", {"step": 100 + count})], usage=usage
        )

    model = ScriptedModel(responder=respond, name="priced-model")
    return SubagentSpec("helper", "Helps.", system_prompt="You help.", model=model, tools=["work"])


async def test_sub_agents_count_toward_the_parent_and_the_tree_has_one_total() -> None:
    ran.clear()
    child = spender(2, Usage(1_000, 100))
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[spawn("helper", "help me"), ScriptedToolCall("work", {"step": 1})],
                usage=Usage(1_000, 100),
            ),
            ScriptedResponse("never asked"),
        ],
        name="priced-model",
    )
    agent = parent(model, child, tools=[work], prices=Flat(), usage_limits=UsageLimits(requests=3))
    events = await events_of(agent, "delegate")
    end = end_of(events)
    # the parent's one request and the child's (capped at the parent's remaining two) reach
    # the limit during the parent's tool step: the step finishes, then the parent stops
    assert end.status == "limit"
    assert len(model.requests) == 1
    assert "work 1" in ran
    child_ends = [e for e in events if isinstance(e, AgentEndEvent) and e.source is not None]
    assert [e.status for e in child_ends] == ["limit"]
    child_hits = [e for e in events if isinstance(e, UsageLimitEvent) and e.source is not None]
    assert [h.scope for h in child_hits] == ["parent"]
    assert end.usage is not None and end.usage.requests == 3
    own = [e for e in events if isinstance(e, ModelCallEndEvent)]
    assert sum(e.cost_usd or 0 for e in own) == pytest.approx(end.usage.cost_usd or 0)
    assert (await agent.session_usage(CTX)).requests == 3


async def test_costs_add_up_across_calls_and_a_new_process(tmp_path: Path) -> None:
    model = ScriptedModel([step(1, input_tokens=2_000), "one"], name="priced-model")
    agent = agent_with(model, workspace=tmp_path)
    first = end_of(await events_of(agent, "first"))
    assert first.usage is not None
    assert first.usage.requests == 2
    assert first.usage.cost_usd is not None and first.usage.cost_usd > 0.03  # 0.03: step 1
    await agent.close()

    # a new agent object (another process) on the same workspace continues the totals
    again = ScriptedModel([step(2), "two"], name="priced-model")
    resumed = agent_with(again, workspace=tmp_path, session_usage_limits=UsageLimits(requests=10))
    second = end_of(await events_of(resumed, "second"))
    assert second.usage is not None and second.usage.requests == 2
    total = await resumed.session_usage(CTX)
    assert total.requests == 4
    assert total.input_tokens == first.usage.input_tokens + second.usage.input_tokens
    assert total.cost_usd == pytest.approx(
        (first.usage.cost_usd or 0) + (second.usage.cost_usd or 0)
    )
    await resumed.close()


async def test_an_unknown_price_is_none_never_zero() -> None:
    model = ScriptedModel([step(1), "done"], name="free-model")
    agent = agent_with(model, usage_limits=UsageLimits(cost_usd=0.000001))
    events = await events_of(agent, "go")
    end = end_of(events)
    assert end.status == "completed"  # a cost limit cannot be reached at unknown prices
    assert end.usage == UsageTotals(
        2, end.usage.input_tokens, end.usage.output_tokens, 0, 0, None, 2
    )
    ends = [e for e in events if isinstance(e, ModelCallEndEvent)]
    assert [e.cost_usd for e in ends] == [None, None]
    assert end.usage.describe_cost() == "unknown"


async def test_a_server_reporting_no_usage_still_counts_requests() -> None:
    class Silent(ScriptedModel):
        async def stream(self, request: Any):  # type: ignore[no-untyped-def,override]
            async for event in super().stream(request):
                if getattr(event, "type", "") == "response":
                    event = type(event)(event.message, None, event.stop_reason, event.model)
                yield event

    model = Silent(responder=lambda r: step(1), name="priced-model")
    agent = agent_with(model, usage_limits=UsageLimits(requests=2, input_tokens=10))
    end = end_of(await events_of(agent, "go"))
    assert end.status == "limit" and len(model.requests) == 2
    assert end.usage is not None and end.usage.input_tokens == 0 and end.usage.cost_usd is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"requests": 0},
        {"input_tokens": -1},
        {"output_tokens": 1.5},
        {"cost_usd": 0},
        {"cost_usd": float("nan")},
        {"requests": True},
    ],
)
def test_invalid_limits_name_the_field(kwargs: dict[str, Any]) -> None:
    field = next(iter(kwargs))
    with pytest.raises(ValueError, match=f"UsageLimits.{field}"):
        UsageLimits(**kwargs)


def test_the_agent_rejects_a_wrong_limits_type() -> None:
    with pytest.raises(TypeError, match="usage_limits"):
        HarnessAgent("x", ScriptedModel(), usage_limits={"requests": 1})  # type: ignore[arg-type]


async def test_summary_requests_are_paid_by_the_call_that_needed_them() -> None:
    summary = ScriptedResponse(SUMMARY_1, usage=Usage(4_000, 50))
    model = ScriptedModel([summary, ScriptedResponse("ok", usage=Usage(500, 5))], name="m")
    agent, _ = await seeded(
        conversation(6, output_chars=6_000),
        model,
        compaction=CompactionConfig(trigger_tokens=6_000, keep_tokens=3_000),
        prices=Flat(),
        usage_limits=UsageLimits(input_tokens=4_000),
    )
    end = end_of(await events_of(agent, "next", RuntimeContext("u", "s")))
    assert len(summaries(model)) == 1
    assert end.usage is not None
    assert (end.usage.requests, end.usage.input_tokens) == (2, 4_500)
    assert end.usage.cost_usd == pytest.approx(0.04 + 0.005 + 0.005 + 0.0005)
    assert end.status == "completed"  # the limit is checked before the next step


@pytest.mark.parametrize(
    ("limits", "limit"),
    [
        (UsageLimits(requests=2), "requests"),
        (UsageLimits(input_tokens=2_000), "input_tokens"),
        (UsageLimits(output_tokens=200), "output_tokens"),
        (UsageLimits(cost_usd=0.04), "cost_usd"),
    ],
)
async def test_each_session_limit_stops_the_next_call_before_it_spends(
    limits: UsageLimits, limit: str
) -> None:
    answer = ScriptedResponse("one", usage=Usage(1_000, 100))
    model = ScriptedModel([step(1), answer, "never asked"], name="priced-model")
    agent = agent_with(model, session_usage_limits=limits)
    assert end_of(await events_of(agent, "first")).status == "completed"
    second = await events_of(agent, "second")
    end = end_of(second)
    assert end.status == "limit" and len(model.requests) == 2
    assert end.usage is not None and end.usage.requests == 0
    [hit] = [e for e in second if isinstance(e, UsageLimitEvent)]
    assert (hit.limit, hit.scope) == (limit, "session")
    assert "this session" in end.reply.text
    # the per-call override can lift the session's limit for one call
    end = end_of(await events_of(agent, "third", session_usage_limits=None))
    assert end.status == "completed" and len(model.requests) == 3
