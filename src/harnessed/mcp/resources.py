"""MCP resources as reference material: one context source per chosen resource.

Each :class:`~harnessed.mcp.MCPResource` is shown as a ``reference`` block at every reasoning
request, with the budget, revision and manifest handling of any other source. A fixed URI the
server lets us subscribe to is read again only after the server says it was updated (see
:class:`~harnessed.mcp.ServerConnection`); anything else is read for each request, so a change on
the server is seen at the next step. A URI template is filled from the request
(``agent_id``, ``user_id``, ``session_id`` and ``RuntimeContext.extras``). A resource that is
not ``required`` is left out of a request when it cannot be read (the manifest records
``source_unavailable``); a required one fails the request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from harnessed.capabilities.sources import ContextBlock, ContextRequest
from harnessed.mcp.config import MCPResource
from harnessed.mcp.connection import ServerConnection
from harnessed.mcp.results import render_contents

__all__ = ["MCPResourceSource"]


class MCPResourceSource:
    """Reads one resource (or expands one template) for each request."""

    def __init__(self, resource: MCPResource, connection: Callable[[], ServerConnection]) -> None:
        self.resource = resource
        self._connection = connection
        self._template: UriTemplate | None = None
        if UriTemplate.is_template(resource.uri):
            try:
                self._template = UriTemplate.parse(resource.uri)
            except InvalidUriTemplate as exc:
                raise ValueError(
                    f"MCPResource.uri {resource.uri!r} is not a valid template: {exc}"
                ) from None

    def uri_for(self, request: ContextRequest) -> str:
        """The URI to read for ``request`` (the template filled in)."""
        if self._template is None:
            return self.resource.uri
        values: dict[str, Any] = {
            **self.resource.extra,
            **{k: v for k, v in request.extras.items() if isinstance(k, str)},
            "agent_id": request.agent_id,
            "user_id": request.user_id,
            "session_id": request.session_id,
        }
        missing = [n for n in self._template.variable_names if n not in values]
        if missing:
            raise KeyError(
                f"MCP resource template {self.resource.uri!r} needs {', '.join(missing)}: pass "
                "them in RuntimeContext.extras or MCPResource.extra"
            )
        return self._template.expand({n: str(values[n]) for n in self._template.variable_names})

    async def load(self, request: ContextRequest) -> list[ContextBlock]:
        connection = self._connection()
        uri = self.uri_for(request)
        result = await connection.read_resource(uri)
        text = render_contents(result.contents)
        limit = self.resource.max_chars
        if len(text) > limit:
            text = (
                f"{text[:limit]}\n[... {len(text) - limit} more characters of this resource "
                "were left out]"
            )
        header = f"MCP resource {uri} (server {connection.config.name!r})"
        block = ContextBlock.reference(self.resource.block_id, f"{header}\n{text}")
        block = block.with_priority(self.resource.priority)
        return [block.required() if self.resource.required else block]
