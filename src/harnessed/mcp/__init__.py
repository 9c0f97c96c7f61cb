"""Model Context Protocol servers: their tools as agent tools, their resources as context.

Needs the ``mcp`` extra (``pip install 'harnessed[mcp]'``, the official MCP Python SDK)::

    from harnessed import HarnessAgent
    from harnessed.mcp import MCPServer, MCPResource

    agent = HarnessAgent(
        "helper", model,
        mcp_servers=[MCPServer.stdio("python", "-m", "mcp_server_time")],
    )
"""

from harnessed.mcp.capability import MCP
from harnessed.mcp.config import MCPResource, MCPServer
from harnessed.mcp.connection import ServerConnection
from harnessed.mcp.errors import MCPCallError, MCPError, MCPServerError, MCPTimeoutError
from harnessed.mcp.resources import MCPResourceSource
from harnessed.mcp.results import MCPToolOutput
from harnessed.mcp.tools import MCPTool

__all__ = [
    "MCP",
    "MCPCallError",
    "MCPError",
    "MCPResource",
    "MCPResourceSource",
    "MCPServer",
    "MCPServerError",
    "MCPTimeoutError",
    "MCPTool",
    "MCPToolOutput",
    "ServerConnection",
]
