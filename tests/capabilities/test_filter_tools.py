"""``Capability.filter_tools``: which tools each model request offers."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from harnessed import CallContext, Capability, HarnessAgent, ToolUseBlock, tool
from harnessed.models import ScriptedModel, ScriptedResponse, ToolSchema
from harnessed.tools import Tool
from tests.support.fixtures import CTX, call


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool(read_only=True)
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


class OneLookupPerSession(Capability):
    """``lookup`` is offered until the session has used it once (a count in the state)."""

    name = "one_lookup"

    def filter_tools(self, call: CallContext, tools: Sequence[ToolSchema]) -> Sequence[ToolSchema]:
        if (self.section(call.state) or {}).get("used", 0) < 1:
            return tools
        return [t for t in tools if t.name != "lookup"]

    async def before_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
    ) -> str | None:
        if tool_call.name != "lookup":
            return None
        used = (self.section(call.state) or {}).get("used", 0)
        if used >= 1:
            return "lookup was used already in this session"
        self.set_section(call.state, {"used": used + 1})
        return None


def names(model: ScriptedModel, request: int) -> list[str]:
    return [t.name for t in model.requests[request].tools]


async def test_a_tool_is_left_out_of_the_requests_once_it_has_nothing_to_do() -> None:
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("lookup", key="k")]), "done", "again"])
    agent = HarnessAgent("a", model, tools=[lookup, weather], capabilities=[OneLookupPerSession()])
    await agent.call("go", CTX)
    assert names(model, 0) == ["lookup", "weather"]
    assert names(model, 1) == ["weather"]  # the same call, the next request
    await agent.call("more", CTX)
    assert names(model, 2) == ["weather"]  # the state says so in the next call too
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.breakdown["tools"] > 0


async def test_each_capability_filters_what_the_one_before_left() -> None:
    seen: list[list[str]] = []

    class NoWeather(Capability):
        def filter_tools(
            self, call: CallContext, tools: Sequence[ToolSchema]
        ) -> Sequence[ToolSchema]:
            return [t for t in tools if t.name != "weather"]

    class Witness(Capability):
        def filter_tools(
            self, call: CallContext, tools: Sequence[ToolSchema]
        ) -> Sequence[ToolSchema]:
            seen.append([t.name for t in tools])
            return tools

    model = ScriptedModel(["done"])
    agent = HarnessAgent("a", model, tools=[lookup, weather], capabilities=[NoWeather(), Witness()])
    await agent.call("go", CTX)
    assert seen == [["lookup"]]
    assert names(model, 0) == ["lookup"]


async def test_a_filter_may_not_add_a_tool() -> None:
    class Adds(Capability):
        def filter_tools(
            self, call: CallContext, tools: Sequence[ToolSchema]
        ) -> Sequence[ToolSchema]:
            return [*tools, ToolSchema("made_up", "not a tool of the agent", {})]

    model = ScriptedModel(["done"])
    agent = HarnessAgent("a", model, tools=[lookup], capabilities=[Adds()])
    with pytest.raises(ValueError, match=r"filter_tools of capability 'adds' .*\['made_up'\]"):
        await agent.call("go", CTX)
    assert model.requests == []
