"""``@tool``: turn a typed, documented function into a :class:`Tool`."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints, overload

from harnessed.tools.base import Tool
from harnessed.tools.context import ToolContext

__all__ = ["tool"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool | None = None,
    destructive: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool | None = None,
    destructive: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool from a sync or async function.

    The function's docstring gives the description (its first paragraphs) and the argument
    descriptions (an ``Args:`` / ``Parameters`` section); type hints give the JSON schema and
    the argument validation. A parameter annotated with :class:`ToolContext` receives the call's
    context and is hidden from the model.

    ``read_only`` marks a tool that changes nothing (plan mode lets only those run);
    ``concurrency_safe`` lets calls of one step run in parallel (defaults to ``read_only``);
    ``destructive`` marks a tool that may delete or overwrite data: it asks for confirmation
    even when no permission mode or rules are configured.
    """

    def build(func: Callable[..., Any]) -> Tool:
        return _build_tool(
            func,
            name=name,
            description=description,
            read_only=read_only,
            concurrency_safe=read_only if concurrency_safe is None else concurrency_safe,
            destructive=destructive,
        )

    if fn is not None:
        return build(fn)
    return build


def _build_tool(
    func: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    read_only: bool,
    concurrency_safe: bool,
    destructive: bool = False,
) -> Tool:
    if not callable(func):
        raise TypeError(f"@tool needs a function, got {func!r}")
    tool_name: str = name or str(getattr(func, "__name__", ""))
    if not _NAME.match(tool_name):
        raise ValueError(
            f"tool name {tool_name!r} is invalid: use 1-64 letters, digits, '_' or '-'"
        )
    import docstring_parser  # imported with the first tool, not with harnessed
    import pydantic

    doc = docstring_parser.parse(inspect.getdoc(func) or "")
    # the whole text before the sections: a first sentence wrapped over two lines stays one
    # paragraph (the parser's "short description" is only its first line)
    text = description or doc.description or ""
    if not text:
        raise ValueError(f"tool {tool_name!r} needs a description: add a docstring")
    text = lean_text(text)
    param_docs = {p.arg_name: lean_text(p.description or "") for p in doc.params}

    try:
        hints = get_type_hints(func, include_extras=True)
    except NameError as exc:
        raise TypeError(f"tool {tool_name!r}: cannot resolve type hints ({exc})") from exc
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args and **kwargs are not supported")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"tool {tool_name!r}: positional-only parameters are not supported")
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context_param = param.name
            continue
        if param.name not in hints:
            raise TypeError(f"tool {tool_name!r}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (
            annotation,
            pydantic.Field(default, description=param_docs.get(param.name) or None),
        )
    args_model = pydantic.create_model(
        f"{tool_name}_arguments",
        __config__=pydantic.ConfigDict(extra="forbid"),
        **fields,
    )
    return Tool(
        name=tool_name,
        description=text,
        fn=func,
        args_model=args_model,
        read_only=read_only,
        concurrency_safe=concurrency_safe,
        destructive=destructive,
        context_param=context_param,
        parameters=_clean_schema(args_model.model_json_schema()),
    )


_WRAPPED = re.compile(r"(?<!\n)\n(?![ \t]*(?:\n|[-*•] |\d+[.)] ))[ \t]*")
"""A line break inside a paragraph (not before a blank line or a list item)."""


def lean_text(text: str) -> str:
    """A docstring as the model needs it: hard-wrapped lines joined (paragraphs kept) and
    reST's double backticks made single — the same words for fewer tokens."""
    return _WRAPPED.sub(" ", text.strip()).replace("``", "`")


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop what costs tokens and tells the model nothing: pydantic's generated titles, and
    for an optional argument the ``anyOf`` with ``null`` and the ``null`` default (leaving it
    out says the same; an explicit ``null`` is still accepted)."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
            options = prop.get("anyOf")
            if (
                isinstance(options, list)
                and len(options) == 2
                and {"type": "null"} in options
                and prop.get("default", ...) is None
            ):
                (kept,) = [o for o in options if o != {"type": "null"}]
                del prop["anyOf"], prop["default"]
                prop.update(kept)
    for definition in schema.get("$defs", {}).values():
        if isinstance(definition, dict):
            _clean_schema(definition)
    schema.setdefault("properties", {})
    return schema
