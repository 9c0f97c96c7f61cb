"""Where each session was last reached, kept in the session's own log (so every process of a
shared deployment, and a restarted one, knows where to send a message first)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from harnessed.gateway.channels.base import Address
from harnessed.log.record import NewRecord
from harnessed.runtime import SessionRef

if TYPE_CHECKING:
    from harnessed.sessions import AgentSession
    from harnessed.sessions.deps import SessionHost

__all__ = ["ADDRESS_RECORD", "AddressBook"]

logger = logging.getLogger(__name__)

ADDRESS_RECORD = "channel/address"
"""The session log record that says where the session was reached (its payload:
:meth:`Address.to_dict`); the last one counts."""


class AddressBook:
    """Reads and writes the ``channel/address`` records of sessions."""

    async def remember(self, session: AgentSession, address: Address) -> bool:
        """Record ``address`` for ``session`` unless it is the one on record; ``True`` when
        written."""
        key = SessionRef(session.agent.name, session.user_id, session.session_id)
        if await self._last(session.agent, key) == address:
            return False
        await session.agent.session_store.append(
            key, [NewRecord(ADDRESS_RECORD, address.to_dict())]
        )
        return True

    async def lookup(self, agent: SessionHost, user_id: str, session_id: str) -> Address | None:
        """The address a session was last reached at (``None``: never through a channel)."""
        return await self._last(agent, SessionRef(agent.name, user_id, session_id))

    @staticmethod
    async def _last(agent: SessionHost, key: SessionRef) -> Address | None:
        records = await agent.session_store.tail(key, 1, types=[ADDRESS_RECORD])
        if not records:
            return None
        try:
            return Address.from_dict(records[0].payload)
        except (KeyError, TypeError, ValueError):
            logger.warning("a malformed %s record in %s", ADDRESS_RECORD, key)
            return None
