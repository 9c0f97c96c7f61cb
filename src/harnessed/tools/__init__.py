"""Tools: the ``@tool`` decorator, the Toolkit that runs a step's calls, what a tool sees.

The built-in tools live with their features (``harnessed.files``, ``harnessed.todos`` ...)."""

from harnessed.tools.base import Tool, ToolError, ToolOutput, format_tool_output
from harnessed.tools.context import ToolContext
from harnessed.tools.decorator import tool
from harnessed.tools.toolkit import ToolGuard, Toolkit
from harnessed.tools.toolset import Toolset, toolset_tool

__all__ = [
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolGuard",
    "ToolOutput",
    "Toolkit",
    "Toolset",
    "format_tool_output",
    "tool",
    "toolset_tool",
]
