"""Tool: a callable the model can request, with its JSON schema and execution flags."""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harnessed.messages import ImageBlock
from harnessed.models.base import ToolSchema

if TYPE_CHECKING:
    import pydantic

    from harnessed.tools.context import ToolContext

__all__ = ["Tool", "ToolError", "ToolOutput", "format_tool_output"]


class ToolError(Exception):
    """Raise from a tool to return a clean error result (the message is shown to the model)."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """Return this from a tool to give the model images besides the text."""

    text: str
    images: tuple[ImageBlock, ...] = ()


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the agent can run.

    ``args_model`` validates the model's arguments; ``context_param`` names the parameter that
    receives the :class:`~harnessed.tools.context.ToolContext` (``None`` if the function takes
    none). Build tools with :func:`harnessed.tool` rather than by hand.
    """

    name: str
    description: str
    fn: Callable[..., Any]
    args_model: type[pydantic.BaseModel]
    read_only: bool = False
    concurrency_safe: bool = False
    context_param: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    destructive: bool = False
    """The tool may destroy data: it asks for confirmation even when no permission mode or
    rules are configured (with permissions on it is decided like any tool that changes things)."""

    _schema: ToolSchema | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # one schema object per tool, sent with every request
        object.__setattr__(
            self, "_schema", ToolSchema(self.name, self.description, self.parameters)
        )

    @property
    def schema(self) -> ToolSchema:
        schema = self._schema
        if schema is None:  # a subclass whose __post_init__ does not call this one
            schema = ToolSchema(self.name, self.description, self.parameters)
            object.__setattr__(self, "_schema", schema)
        return schema

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        """Validate ``arguments`` and run the function (sync functions run in a thread).

        Raises :class:`pydantic.ValidationError` for invalid arguments; whatever the function
        raises propagates.
        """
        parsed = self.args_model.model_validate(dict(arguments))
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self.context_param is not None:
            kwargs[self.context_param] = context
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(**kwargs)
        result = await asyncio.to_thread(self.fn, **kwargs)
        if inspect.isawaitable(result):
            return await result
        return result


def format_tool_output(value: Any) -> str:
    """Turn a tool's return value into the text the model sees."""
    if value is None:
        return ""
    if isinstance(value, ToolOutput):
        return value.text
    if isinstance(value, str):
        return value
    pydantic = sys.modules.get("pydantic")  # not imported: the value cannot be a model
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return str(value.model_dump_json())
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
