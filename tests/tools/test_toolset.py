"""Toolset: tools as methods of one object, built once, in definition order."""

from __future__ import annotations

from harnessed.messages import ToolUseBlock
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.tools import ToolContext, Toolkit
from harnessed.tools.toolset import Toolset, toolset_tool


class Greetings(Toolset):
    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    @toolset_tool(read_only=True)
    async def greet(self, name: str) -> str:
        """Greet someone.

        Args:
            name: Who to greet.
        """
        return f"{self.greeting}, {name}"

    @toolset_tool(name="shout_it")
    def shout(self, ctx: ToolContext, text: str) -> str:
        """Say it loudly."""
        return f"{text.upper()} (for {ctx.agent_name})"

    def helper(self) -> str:  # not marked: not a tool
        return "no"


class Quieter(Greetings):
    def shout(self, ctx: ToolContext, text: str) -> str:  # overridden unmarked: not a tool
        return text


def test_marked_methods_become_tools_in_definition_order() -> None:
    tools = Greetings("Hello").tools()
    assert [t.name for t in tools] == ["greet", "shout_it"]
    greet = tools[0]
    assert greet.read_only and greet.concurrency_safe
    assert greet.description == "Greet someone."
    assert greet.parameters["properties"] == {
        "name": {"type": "string", "description": "Who to greet."}
    }
    assert tools[1].context_param == "ctx" and not tools[1].read_only


def test_tools_are_built_once_per_instance_and_bound_to_it() -> None:
    hello, hi = Greetings("Hello"), Greetings("Hi")
    assert hello.tools()[0] is hello.tools()[0]
    assert hello.tools()[0] is not hi.tools()[0]


def test_an_unmarked_override_is_no_longer_a_tool() -> None:
    assert [t.name for t in Quieter("Hey").tools()] == ["greet"]


async def test_the_tools_run_with_the_instance_and_the_context() -> None:
    toolkit = Toolkit(Greetings("Hello").tools())
    calls = [
        ToolUseBlock("1", "greet", {"name": "Ada"}),
        ToolUseBlock("2", "shout_it", {"text": "hey"}),
    ]
    state = AgentState.new(SessionRef("a", "u", "s"))
    results = await toolkit.run_step(
        calls, lambda call: ToolContext("a", RuntimeContext("u", "s"), state, call.id)
    )
    assert [r.content for r in results] == ["Hello, Ada", "HEY (for a)"]
