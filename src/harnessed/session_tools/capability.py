"""Session tools as a capability: the model lists, reads and searches its earlier sessions."""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.capabilities.base import Capability, CapabilityHost
from harnessed.session_tools.tools import session_tools
from harnessed.stores.local.indexed import IndexedSessionLogStore
from harnessed.tools.base import Tool

__all__ = ["SessionTools"]


class SessionTools(Capability):
    """``session_list``, ``session_history`` and ``session_search`` over the agent's log.

    Args:
        readable_agents: Other agents whose sessions (of the same user, in the same store) the
            tools may read with ``agent_id``; default none: only this agent's own.
    """

    name = "session_tools"

    def __init__(self, readable_agents: Sequence[str] = ()) -> None:
        self.readable_agents = tuple(readable_agents)
        self._tools: list[Tool] = []

    def setup(self, host: CapabilityHost) -> None:
        store = host.session_store
        if not isinstance(store, IndexedSessionLogStore):
            raise TypeError("SessionTools needs the agent's indexed session store")
        self._tools = session_tools(store, readable_agents=self.readable_agents)

    def tools(self) -> Sequence[Tool]:
        return self._tools
