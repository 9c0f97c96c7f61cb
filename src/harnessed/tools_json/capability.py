"""``ToolsJson``: the allow / deny lists of ``tools.json`` over every tool of the agent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harnessed.capabilities.base import CallContext, Capability
from harnessed.messages import ToolUseBlock
from harnessed.models.base import ToolSchema
from harnessed.tools.base import Tool
from harnessed.tools_json.config import ToolsConfig

__all__ = ["ToolsJson"]


@dataclass(eq=False)
class ToolsJson(Capability):
    """Offers only the tools ``config`` allows and does not deny. Added last, so it sees the
    tools of every other capability; tools that appear later (an MCP server's, at a call's
    start) are filtered the same way at each request."""

    config: ToolsConfig
    name = "tools-json"

    def filter_tools(self, call: CallContext, tools: Sequence[ToolSchema]) -> Sequence[ToolSchema]:
        return [t for t in tools if self.config.offers(t.name)]

    async def before_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
    ) -> str | None:
        if self.config.offers(tool_call.name):
            return None
        return (
            f"{tool_call.name} is not available here: the workspace's tools.json does not allow it"
        )
