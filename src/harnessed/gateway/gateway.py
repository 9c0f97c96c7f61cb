"""Gateway: routes conversations from channels to agents and their sessions.

It maps a :class:`ChannelIdentity` to a session id (deterministically), picks one of several
agents by name, and hands out :class:`~harnessed.sessions.AgentSession` objects, whose turn
gate keeps one turn per session running at a time.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from harnessed.gateway.identity import ChannelIdentity, check_session_id
from harnessed.log.record import NewRecord
from harnessed.log.store import SessionInfo
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.sessions import AgentSession, Turn, TurnSlots
from harnessed.sessions.deps import SessionHost

if TYPE_CHECKING:
    from harnessed.gateway.channels.addresses import AddressBook
    from harnessed.gateway.channels.base import Channel, MessageKind
    from harnessed.gateway.channels.outbound import Outbound
    from harnessed.gateway.channels.scopes import SessionScope
    from harnessed.run.inputs import AgentInput

__all__ = ["Gateway", "SESSION_CREATED", "UnknownAgentError"]

logger = logging.getLogger(__name__)

SESSION_CREATED = "session/created"
"""The record that opens a session created through a channel (before its first message)."""


_KNOWN_SESSIONS = 100_000
_RECENT_SESSIONS = 256


class UnknownAgentError(LookupError):
    """No agent of that name is served by the gateway."""


class Gateway:
    """Serves one or more agents, by name, to channels.

    Args:
        agents: One agent, or several (a sequence, or a mapping name → agent).
        default_agent: The agent used when a request names none (default: the first).
        max_running_turns: How many turns of this gateway's sessions may run at once in this
            process (the others wait, queued); ``None`` (default) for no limit. A bound on the
            work (and memory) one process takes on at a time.
        channels: Chat channels (Slack, Feishu, a signed webhook ...) served beside the HTTP
            API (see :mod:`harnessed.gateway.channels`); more with :meth:`add_channel`.
    """

    def __init__(
        self,
        agents: SessionHost | Iterable[SessionHost] | Mapping[str, SessionHost],
        *,
        default_agent: str | None = None,
        max_running_turns: int | None = None,
        channels: Sequence[Channel] = (),
    ) -> None:
        if isinstance(agents, SessionHost):
            table = {agents.name: agents}
        elif isinstance(agents, Mapping):
            table = dict(agents)
        else:
            table = {}
            for agent in agents:
                if agent.name in table:
                    raise ValueError(f"two agents are named {agent.name!r}")
                table[agent.name] = agent
        if not table:
            raise ValueError("Gateway needs at least one agent")
        for name, agent in table.items():
            if not isinstance(agent, SessionHost):
                raise TypeError(f"Gateway agent {name!r} is not a HarnessAgent: {agent!r}")
        self.agents: dict[str, SessionHost] = table
        if default_agent is not None and default_agent not in table:
            raise ValueError(f"default_agent {default_agent!r} is not one of {sorted(table)}")
        self.default_agent = default_agent or next(iter(table))
        self._handed_out: weakref.WeakSet[AgentSession] = weakref.WeakSet()
        self.slots = TurnSlots(max_running_turns) if max_running_turns is not None else None
        self._recent: OrderedDict[int, AgentSession] = OrderedDict()
        self._known: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        """Sessions seen to exist (bounded LRU): a request on them needs no storage read."""
        from harnessed.gateway.channels.outbound import Outbound

        self.channels: dict[str, Channel] = {}
        self.outbound: Outbound = Outbound(self)
        self._started = False
        for channel in channels:
            self.add_channel(channel)

    # --------------------------------------------------------------- channels
    def add_channel(self, channel: Channel) -> None:
        """Serve ``channel`` too (before :meth:`start`; its routes join the HTTP app made
        after this)."""
        from harnessed.gateway.channels.base import Channel

        if not isinstance(channel, Channel):
            raise TypeError(f"not a Channel: {channel!r}")
        if channel.name in self.channels:
            raise ValueError(f"two channels are named {channel.name!r}")
        if self._started:
            raise RuntimeError("add channels before the gateway starts")
        self.channels[channel.name] = channel

    @property
    def addresses(self) -> AddressBook:
        """Where sessions were last reached (kept in their logs)."""
        return self.outbound.addresses

    async def start(self) -> None:
        """Start the channels and the watch for finished background tasks (the HTTP app
        does this when its server starts)."""
        if self._started:
            return
        self._started = True
        self.outbound.watch()
        for channel in self.channels.values():
            await channel.start(self)

    async def send(
        self,
        to: ChannelIdentity | AgentSession | tuple[str, str],
        text: str,
        *,
        agent: str | None = None,
        scope: SessionScope | None = None,
        kind: MessageKind = "message",
    ) -> bool:
        """Send ``text`` to the address a session was last reached at (a chat, a thread, a
        webhook's callback): ``to`` is a channel identity, an :class:`AgentSession` or
        ``(user_id, session_id)``. ``False`` when the session has no address here."""
        return await self.outbound.send(to, text, agent=agent, scope=scope, kind=kind)

    # --------------------------------------------------------------- routing
    def agent(self, name: str | None = None) -> SessionHost:
        """The agent called ``name`` (the default agent for ``None``)."""
        agent = self.agents.get(name or self.default_agent)
        if agent is None:
            raise UnknownAgentError(
                f"no agent named {name!r}; this gateway serves {sorted(self.agents)}"
            )
        return agent

    def session(self, user_id: str, session_id: str, agent: str | None = None) -> AgentSession:
        """The session ``session_id`` of ``user_id`` with an agent (sessions are per user: two
        users never share one, whatever ids they pick)."""
        check_session_id(session_id)
        live = self.agent(agent).session(RuntimeContext(user_id, session_id))
        self._handed_out.add(live)
        live.slots = self.slots
        # keep recently used sessions alive: a retried or reconnecting request replays the
        # events of turns that already ended
        self._recent[id(live)] = live
        self._recent.move_to_end(id(live))
        if len(self._recent) > _RECENT_SESSIONS:
            self._recent.popitem(last=False)
        return live

    def session_for(
        self, identity: ChannelIdentity, *, agent: str | None = None, user_id: str | None = None
    ) -> AgentSession:
        """The session of a channel identity (always the same one for the same identity)."""
        return self.session(user_id or identity.user_id, identity.session_id, agent)

    async def deliver(
        self,
        identity: ChannelIdentity,
        input: AgentInput,
        *,
        agent: str | None = None,
        user_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Turn:
        """Submit a message arriving on a channel to its session (queued behind a running
        turn); a channel's message id makes a good ``idempotency_key``."""
        session = self.session_for(identity, agent=agent, user_id=user_id)
        await self.open(session, channel=identity.channel)
        return await session.submit(input, idempotency_key)

    # ------------------------------------------------------------- sessions
    async def exists(self, session: AgentSession) -> bool:
        """Whether the session was created (or has any history) for its user."""
        known = (session.agent.name, session.user_id, session.session_id)
        if known in self._known:
            self._known.move_to_end(known)
            return True
        key = SessionRef(*known)
        if not await session.agent.session_store.read(key, limit=1):
            return False
        self._remember(known)
        return True

    def _remember(self, known: tuple[str, str, str]) -> None:
        self._known[known] = None
        if len(self._known) > _KNOWN_SESSIONS:
            self._known.popitem(last=False)

    async def open(self, session: AgentSession, *, channel: str = "api") -> bool:
        """Create the session if it does not exist yet; ``True`` when it was created."""
        if await self.exists(session):
            return False
        key = SessionRef(session.agent.name, session.user_id, session.session_id)
        await session.agent.session_store.append(
            key, [NewRecord(SESSION_CREATED, {"channel": channel})]
        )
        self._remember((key.agent_id, key.user_id, key.session_id))
        return True

    async def sessions(self, user_id: str, agent: str | None = None) -> list[SessionInfo]:
        """The sessions ``user_id`` has with an agent, most recent first."""
        return await self.agent(agent).sessions(user_id)

    async def close(self) -> None:
        """Stop the channels and interrupt running turns (their progress is saved;
        ``resume`` continues them)."""
        await self.outbound.close()
        for channel in self.channels.values():
            try:
                await channel.stop()
            except Exception:
                logger.exception("channel %r did not stop cleanly", channel.name)
        self._started = False
        for session in list(self._handed_out):
            await session.close()
