"""Errors of the MCP integration: each names the server and says what to do next."""

from __future__ import annotations

__all__ = ["MCPCallError", "MCPError", "MCPServerError", "MCPTimeoutError"]


class MCPError(RuntimeError):
    """Base class of the errors raised by :mod:`harnessed.mcp`."""


class MCPServerError(MCPError):
    """A server could not be started or reached, or its connection broke."""


class MCPTimeoutError(MCPError):
    """A call or read did not finish within the server's ``timeout``."""


class MCPCallError(MCPError):
    """The server answered a request with a protocol error (unknown tool, bad URI ...)."""
