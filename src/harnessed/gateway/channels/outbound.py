"""Messages the gateway sends first: an application's ``gateway.send(...)``, the news of a
background task that finished while nobody was talking to its session, and the reply of a turn
started by a wake-up.

All go to the address the session was last reached at (:mod:`.addresses`), through the
channel of that address. A process that serves no HTTP (``harnessed worker``, where Temporal
fires the wake-ups) sends woken turns' replies through :class:`SendingChannels`: channels
started for sending only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harnessed.gateway.channels.addresses import AddressBook
from harnessed.gateway.channels.base import Address, Channel, MessageKind
from harnessed.gateway.channels.scopes import SessionScope, route
from harnessed.gateway.identity import ChannelIdentity
from harnessed.messages import Msg

if TYPE_CHECKING:
    from harnessed.gateway.gateway import Gateway
    from harnessed.sessions import AgentSession
    from harnessed.sessions.deps import SessionHost
    from harnessed.subagents import TaskFinished
    from harnessed.turns.ended import TurnView
    from harnessed.wakeups import Wakeup

__all__ = ["WAKE_TEXT", "Outbound", "SendingChannels", "send_woken"]

logger = logging.getLogger(__name__)

WAKE_TEXT = (
    "<system-reminder>Background work of this conversation finished while the user was "
    "away (the outcome follows). Tell the user about it in a short message: they will read it "
    "in their chat, without having asked again.</system-reminder>"
)


class Outbound:
    """The gateway's outbound side (``gateway.outbound``; ``gateway.send`` uses it)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.addresses = AddressBook()
        self._stops: list[Callable[[], None]] = []
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------- sending
    async def send(
        self,
        to: ChannelIdentity | AgentSession | tuple[str, str],
        text: str,
        *,
        agent: str | None = None,
        scope: SessionScope | None = None,
        kind: MessageKind = "message",
    ) -> bool:
        """Send ``text`` to where a session was last reached. ``to`` is a channel identity
        (its session under ``scope``, default: its channel's scope), an
        :class:`AgentSession`, or ``(user_id, session_id)``. ``False`` when the session was
        never reached through a channel, or its channel is not served here."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("gateway.send needs non-empty text")
        session = self._session(to, agent, scope)
        address = await self.addresses.lookup(session.agent, session.user_id, session.session_id)
        channel = self._channel(address)
        if address is None or channel is None:
            return False
        await channel.send(address, text, kind=kind)
        return True

    def _session(
        self,
        to: ChannelIdentity | AgentSession | tuple[str, str],
        agent: str | None,
        scope: SessionScope | None,
    ) -> AgentSession:
        from harnessed.sessions import AgentSession

        if isinstance(to, AgentSession):
            return to
        if isinstance(to, ChannelIdentity):
            channel = self.gateway.channels.get(to.channel)
            config = getattr(channel, "config", None)
            scope = scope or getattr(config, "scope", SessionScope.ACCOUNT_CHANNEL_PEER)
            agent = agent or getattr(config, "agent", None)
            where = route(to, scope or SessionScope.ACCOUNT_CHANNEL_PEER)
            return self.gateway.session(where.user_id, where.session_id, agent)
        if isinstance(to, tuple) and len(to) == 2:
            return self.gateway.session(to[0], to[1], agent)
        raise TypeError(
            "gateway.send needs a ChannelIdentity, an AgentSession or (user_id, session_id)"
        )

    def _channel(self, address: Address | None) -> Channel | None:
        return _served(self.gateway.channels, address)

    # ------------------------------------------------------------- wake-ups
    async def woken(self, wakeup: Wakeup, turn: TurnView) -> None:
        """Send the reply of a turn a wake-up started to where its session was last reached
        (an :data:`~harnessed.wakeups.OnWoken` hook: ``create_app`` gives it to its wake-up
        dispatcher). A session never reached through a channel served here is left alone: its
        reply is in the log, and the person sees it when they come back."""
        agent = self.gateway.agents.get(wakeup.agent)
        if agent is not None:
            await send_woken(self.gateway.channels, agent, wakeup, turn, self.addresses)

    # ----------------------------------------------- finished background tasks
    def watch(self) -> None:
        """Start listening for finished background tasks of the served agents."""
        from harnessed.subagents import Subagents

        if self._stops:
            return
        for agent in self.gateway.agents.values():
            capability = getattr(agent, "capability", None)
            subagents = capability(Subagents) if capability is not None else None
            if subagents is not None:
                self._stops.append(subagents.on_task_finished(self._on_task))

    def _on_task(self, news: TaskFinished) -> None:
        agent = self.gateway.agents.get(news.agent)
        if agent is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._tell(news), name=f"outbound:{news.task_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _tell(self, news: TaskFinished) -> None:
        from harnessed.subagents import Subagents

        try:
            agent = self.gateway.agents[news.agent]
            address = await self.addresses.lookup(agent, news.user_id, news.session_id)
            channel = self._channel(address)
            if address is None or channel is None:
                return  # not a channel's session: its next turn tells the user
            mode = getattr(getattr(channel, "config", None), "on_task_finished", "turn")
            if mode == "none":
                return
            session = self.gateway.session(news.user_id, news.session_id, news.agent)
            await session.wait_idle()  # a running turn tells the user itself
            subagents = getattr(agent, "capability", lambda _: None)(Subagents)
            if subagents is None:
                return
            records = {r.task_id: r for r in await subagents.tasks(session.ctx)}
            record = records.get(news.task_id)
            if record is None or record.delivered:
                return
            if mode == "message":
                from harnessed.subagents.texts import outcome_line

                await channel.send(
                    address, "Background task finished:\n" + outcome_line(record), kind="notice"
                )
                return
            turn = await session.submit(
                Msg.user(WAKE_TEXT, metadata={"harness": "channel_wakeup"}),
                f"task-finished:{news.task_id}",
            )
            await channel.follow(turn, address)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("could not tell the user about task %s", news.task_id)

    async def close(self) -> None:
        for stop in self._stops:
            stop()
        self._stops.clear()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task


def _served(channels: Mapping[str, Channel], address: Address | None) -> Channel | None:
    if address is None:
        return None
    channel = channels.get(address.channel)
    if channel is None:
        logger.warning("no channel %r is served here; a message for it is dropped", address.channel)
    return channel


async def send_woken(
    channels: Mapping[str, Channel],
    agent: SessionHost,
    wakeup: Wakeup,
    turn: TurnView,
    addresses: AddressBook | None = None,
) -> bool:
    """Follow a woken ``turn`` of ``agent`` to the address its session was last reached at,
    through that address's channel among ``channels``. ``False``: the session was never
    reached through a channel, or not through one of these."""
    book = addresses or AddressBook()
    address = await book.lookup(agent, wakeup.user_id, wakeup.session_id)
    channel = _served(channels, address)
    if address is None or channel is None:
        return False
    await channel.follow(turn, address)
    return True


class SendingChannels:
    """Channels started for sending only, for a process that takes no inbound messages
    (``harnessed worker --channels FILE``): no routes are mounted, no finished background
    task is watched; :meth:`woken` (an ``on_woken`` hook) sends a woken turn's reply to the
    session's last address, as ``harnessed serve`` does.

    Args:
        agents: The agents whose sessions' replies are sent.
        channels: The channels (as ``harnessed serve --channels`` builds them).
    """

    def __init__(self, agents: Sequence[SessionHost], channels: Sequence[Channel]) -> None:
        from harnessed.gateway.gateway import Gateway

        self.gateway = Gateway(agents, channels=channels)  # never started: no inbound side
        self._started: list[Channel] = []

    def __repr__(self) -> str:
        return f"SendingChannels({sorted(self.gateway.channels)!r})"

    async def start(self) -> None:
        """Open the channels' clients."""
        for channel in self.gateway.channels.values():
            if channel not in self._started:
                await channel.start(self.gateway)
                self._started.append(channel)

    async def woken(self, wakeup: Wakeup, turn: TurnView) -> None:
        agent = self.gateway.agents.get(wakeup.agent)
        if agent is not None:
            await send_woken(self.gateway.channels, agent, wakeup, turn)

    async def close(self) -> None:
        started, self._started = self._started, []
        for channel in started:
            try:
                await channel.stop()
            except Exception:
                logger.exception("channel %r did not stop cleanly", channel.name)
