"""An MCP server's tools as agent tools.

Each remote tool becomes an :class:`MCPTool`: its JSON schema is passed through to the model
(checked to be a valid object schema when listed) and the model's arguments are validated
against it before anything is sent. ``readOnlyHint`` makes the tool ``read_only`` (it runs in
plan mode and without asking in the default permission mode); ``destructiveHint`` marks it
``destructive`` (see :attr:`~harnessed.mcp.MCPServer.confirm_destructive`). A result with
``isError`` becomes an error tool result.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema
import mcp_types as types
import pydantic
from jsonschema.protocols import Validator

from harnessed.mcp.errors import MCPError
from harnessed.mcp.results import MCPToolOutput, render_result
from harnessed.tools.base import Tool, ToolError, ToolOutput

if TYPE_CHECKING:
    from harnessed.mcp.connection import ServerConnection
    from harnessed.tools.context import ToolContext

__all__ = ["MCPTool", "build_tools", "exposed_names"]

logger = logging.getLogger(__name__)

_MAX_NAME = 64


class _Arguments(pydantic.BaseModel):
    """Placeholder model: MCP tools validate against the server's JSON schema instead."""

    model_config = pydantic.ConfigDict(extra="allow")


@dataclass(frozen=True, slots=True)
class MCPTool(Tool):
    """A tool served by an MCP server (built by :func:`build_tools`)."""

    server: str = ""
    """Alias of the server."""
    remote_name: str = ""
    """The tool's name on the server (``name`` may carry the server's prefix)."""
    validator: Validator | None = None

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        args = dict(arguments)
        if self.validator is not None:
            problems = [
                f"{'.'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}"
                for e in sorted(self.validator.iter_errors(args), key=lambda e: list(e.path))
            ]
            if problems:
                raise ToolError(
                    f"Invalid arguments for tool {self.name!r}: " + "; ".join(problems[:10])
                )
        try:
            output: MCPToolOutput = await self.fn(**args)
        except MCPError as exc:
            raise ToolError(str(exc)) from exc
        if output.is_error:
            raise ToolError(output.text)
        return ToolOutput(output.text, output.images)


def _clean(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:_MAX_NAME] or "tool"


def exposed_names(
    listed: Mapping[str, Sequence[str]],
    taken: frozenset[str],
    always_prefix: frozenset[str] = frozenset(),
) -> dict[tuple[str, str], str]:
    """Agent-side names for ``{server: [tool names]}``.

    A tool keeps its own name (made safe for model APIs) unless it clashes with a local tool
    (``taken``) or a tool of another server, or its server is in ``always_prefix``; then it is
    ``<server>_<name>``. The result never holds a name twice.
    """
    counts: dict[str, int] = {}
    for names in listed.values():
        for name in set(names):
            counts[_clean(name)] = counts.get(_clean(name), 0) + 1
    out: dict[tuple[str, str], str] = {}
    used = set(taken)
    for server, names in listed.items():
        for name in names:
            plain = _clean(name)
            prefixed = server in always_prefix or plain in taken or counts[plain] > 1
            candidate = _clean(f"{server}_{name}") if prefixed else plain
            base, n = candidate, 2
            while candidate in used:
                suffix = f"_{n}"
                candidate = base[: _MAX_NAME - len(suffix)] + suffix
                n += 1
            used.add(candidate)
            out[(server, name)] = candidate
    return out


def _validator(remote: types.Tool, server: str) -> Validator | None:
    schema = remote.input_schema
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        logger.warning(
            "MCP server %r: tool %r skipped: its input schema is not an object schema",
            server,
            remote.name,
        )
        return None
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        logger.warning(
            "MCP server %r: tool %r skipped: invalid input schema: %s",
            server,
            remote.name,
            exc.message,
        )
        return None
    validator: Validator = cls(schema)
    return validator


def build_tools(
    connection: ServerConnection, remote_tools: Sequence[types.Tool], names: Mapping[str, str]
) -> list[MCPTool]:
    """Agent tools for ``remote_tools`` of one server, named by ``names`` (remote → exposed).

    Tools with an invalid input schema are skipped with a warning: the model could not call
    them correctly anyway, and the server's other tools stay usable.
    """
    config = connection.config
    tools: list[MCPTool] = []
    for remote in remote_tools:
        if remote.name not in names:
            continue
        validator = _validator(remote, config.name)
        if validator is None:
            continue
        hints = remote.annotations
        read_only = bool(hints is not None and hints.read_only_hint)
        # The protocol's default: a tool that is not read-only may be destructive unless it
        # says otherwise.
        destructive = not read_only and (hints is None or hints.destructive_hint is not False)
        schema = dict(remote.input_schema)
        schema.setdefault("properties", {})
        description = remote.description or (hints.title if hints and hints.title else "")
        tools.append(
            MCPTool(
                name=names[remote.name],
                description=description or f"Tool {remote.name!r} of MCP server {config.name!r}.",
                fn=_caller(connection, remote.name),
                args_model=_Arguments,
                read_only=read_only,
                concurrency_safe=read_only,
                parameters=schema,
                server=config.name,
                remote_name=remote.name,
                destructive=destructive and config.confirm_destructive,
                validator=validator,
            )
        )
    return tools


def _caller(connection: ServerConnection, remote_name: str) -> Any:
    async def call(**arguments: Any) -> MCPToolOutput:
        return render_result(await connection.call_tool(remote_name, arguments))

    call.__name__ = remote_name
    return call
