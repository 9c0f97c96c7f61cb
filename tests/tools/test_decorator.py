"""@tool: schemas from type hints and docstrings, validation, flags."""

from __future__ import annotations

import dataclasses
from enum import StrEnum
from typing import Literal

import pydantic
import pytest

from harnessed import RuntimeContext, Tool, ToolContext, tool
from harnessed.runtime import SessionRef
from harnessed.state import AgentState


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Point(pydantic.BaseModel):
    x: int
    y: int


@tool(read_only=True)
def find(
    query: str,
    limit: int = 10,
    mode: Literal["all", "any"] = "all",
    colour: Colour | None = None,
    where: Point | None = None,
    tags: list[str] | None = None,
) -> str:
    """Search the catalogue.

    Longer explanation for the model.

    Args:
        query: Words to look for.
        limit: Most results to return.
        mode: Whether all or any words must match.
    """
    return f"{query}|{limit}|{mode}|{colour}|{where}|{tags}"


def context() -> ToolContext:
    key = SessionRef("a", "u", "s")
    return ToolContext("a", RuntimeContext("u", "s"), AgentState.new(key), "call_1")


def test_schema_from_hints_and_docstring() -> None:
    assert isinstance(find, Tool)
    assert find.name == "find"
    assert find.description == "Search the catalogue.\n\nLonger explanation for the model."
    params = find.parameters
    assert params["type"] == "object" and params["required"] == ["query"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["query"] == {"type": "string", "description": "Words to look for."}
    assert props["limit"]["type"] == "integer" and props["limit"]["default"] == 10
    assert props["mode"]["enum"] == ["all", "any"]
    assert "title" not in props["query"]
    assert find.read_only and find.concurrency_safe  # concurrency follows read_only


async def test_arguments_are_validated_and_coerced() -> None:
    out = await find.run({"query": "q", "where": {"x": 1, "y": 2}, "colour": "red"}, context())
    assert out == "q|10|all|red|x=1 y=2|None"
    with pytest.raises(pydantic.ValidationError):
        await find.run({"query": "q", "mode": "some"}, context())
    with pytest.raises(pydantic.ValidationError):
        await find.run({}, context())


async def test_context_parameter_is_injected_and_hidden() -> None:
    @tool(name="who-am-i", concurrency_safe=True)
    async def whoami(ctx: ToolContext, prefix: str = "") -> str:
        """Tell the caller's identity."""
        return f"{prefix}{ctx.user_id}/{ctx.session_id}/{ctx.call_id}"

    assert whoami.name == "who-am-i"
    assert "ctx" not in whoami.parameters["properties"]
    assert not whoami.read_only and whoami.concurrency_safe
    assert await whoami.run({"prefix": ">"}, context()) == ">u/s/call_1"


def test_bad_tool_definitions_fail_at_decoration() -> None:
    def undocumented(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="needs a description"):
        tool(undocumented)

    def untyped(x):  # type: ignore[no-untyped-def]
        """Doc."""

    with pytest.raises(TypeError, match="needs a type hint"):
        tool(untyped)

    def star(*args: int) -> None:
        """Doc."""

    with pytest.raises(TypeError, match=r"\*args"):
        tool(star)

    with pytest.raises(ValueError, match="invalid"):
        tool(name="has space")(lambda: None)


def test_a_tool_keeps_one_schema_object_and_a_subclass_still_has_one() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert add.schema is add.schema  # sent with every request: built once
    assert dataclasses.replace(add, description="Sum.").schema.description == "Sum."

    @dataclasses.dataclass(frozen=True, slots=True)
    class Labelled(Tool):
        label: str = ""

        def __post_init__(self) -> None:  # its own check, without calling Tool's
            if not isinstance(self.label, str):
                raise TypeError("label must be a string")

    labelled = Labelled("t", "a tool", add.fn, add.args_model, parameters=add.parameters, label="x")
    assert labelled.schema.name == "t" and labelled.schema is labelled.schema


def test_a_first_sentence_wrapped_over_two_lines_stays_one_paragraph() -> None:
    @tool
    def follow_up(message: str) -> str:
        """Send a follow-up to a session you started before (it remembers
        its earlier work).

        Waits like the first call.

        Args:
            message: What to say.
        """
        return message

    assert follow_up.description == (
        "Send a follow-up to a session you started before (it remembers its earlier work)."
        "\n\nWaits like the first call."
    )
