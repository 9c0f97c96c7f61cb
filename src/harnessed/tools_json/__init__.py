"""The workspace as configuration: ``tools.json`` (BEHAVIOUR.md §7 as amended).

A workspace may hold a ``tools.json``::

    {
      "allow": ["read_file", "grep_files", "mcp_*"],
      "deny": ["execute"],
      "mcpServers": {
        "github": {"command": "github-mcp", "args": ["stdio"],
                   "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
        "docs": {"url": "https://docs.example.com/mcp",
                 "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
      }
    }

* :mod:`.config` reads it once per agent (``${NAME}`` is replaced by the environment variable;
  a missing one is warned about and becomes empty text);
* :mod:`.capability` applies ``allow`` / ``deny`` after every capability has registered its
  tools (MCP tools found at a call's start included): a tool that is not allowed, or is
  denied (deny wins), is not offered to the model and a call of it is refused.
"""

from harnessed.tools_json.capability import ToolsJson
from harnessed.tools_json.config import TOOLS_JSON, ToolsConfig, parse_tools_json, read_tools_json

__all__ = ["TOOLS_JSON", "ToolsConfig", "ToolsJson", "parse_tools_json", "read_tools_json"]
