"""The channel seam: a :class:`Channel` takes messages from a platform to gateway turns and
sends what the agent says back to the conversation it came from.

:class:`ChatChannel` is the common part of the chat adapters: it acknowledges an inbound
message at once and handles it afterwards (remember the address, answer a waiting
confirmation or start a turn), follows the turn and sends its reply — as one message, or as a
message edited while the text streams — and tells the person about confirmations the turn
waits for. An adapter adds the platform: its inbound routes (with the platform's signature
checks) and :meth:`Channel.send` / :meth:`Channel.update`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from harnessed.events import (
    AgentEndEvent,
    ConfirmationRequestEvent,
    CustomEvent,
    ErrorEvent,
    ModelCallStartEvent,
    TextDeltaEvent,
)
from harnessed.gateway.channels.scopes import SessionScope, route
from harnessed.gateway.identity import ChannelIdentity

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from harnessed.gateway.gateway import Gateway
    from harnessed.sessions import AgentSession, Turn
    from harnessed.turns.ended import TurnView

__all__ = [
    "Address",
    "Channel",
    "ChannelConfig",
    "ChatChannel",
    "Inbound",
    "MessageKind",
    "answer_of",
]

logger = logging.getLogger(__name__)

MessageKind: TypeAlias = Literal["reply", "update", "question", "notice", "message"]
"""What an outbound message is: a turn's ``reply``; a ``question`` the turn waits on (a
confirmation); a ``notice`` (a sub-agent that needs approval, a failed turn); a ``message``
pushed by the application (``gateway.send``)."""

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@dataclass(frozen=True, slots=True)
class Address:
    """Where a conversation is reached on a channel: the channel's name and the platform's
    coordinates (a Slack channel and thread, a Feishu chat and message ...), as strings."""

    channel: str
    data: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.channel, str) or not self.channel:
            raise ValueError("Address.channel must be a non-empty string")
        clean = {str(k): str(v) for k, v in dict(self.data).items() if v is not None}
        object.__setattr__(self, "data", clean)

    def get(self, key: str) -> str | None:
        return self.data.get(key)

    def to_dict(self) -> dict[str, Any]:
        return {"channel": self.channel, "data": dict(self.data)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Address:
        data = raw.get("data")
        return cls(str(raw["channel"]), dict(data) if isinstance(data, Mapping) else {})


@dataclass(frozen=True, slots=True)
class Inbound:
    """A message a person sent through a channel."""

    identity: ChannelIdentity
    address: Address
    text: str
    message_id: str | None = None
    """The platform's id of the message (or delivery): a retried delivery is the same turn."""


@runtime_checkable
class Channel(Protocol):
    """A way people reach the gateway's agents (a chat app, a webhook ...)."""

    name: str

    def routes(self) -> Sequence[BaseRoute]:
        """The HTTP routes the platform calls (mounted in the gateway's app)."""
        ...

    async def start(self, gateway: Gateway) -> None:
        """Begin serving ``gateway`` (open clients, accept inbound messages)."""
        ...

    async def stop(self) -> None:
        """Stop: no new messages; work in flight is cancelled."""
        ...

    async def send(
        self, address: Address, text: str, *, kind: MessageKind = "message"
    ) -> str | None:
        """Send ``text`` to ``address``; the platform's id of the sent message (or ``None``)."""
        ...

    async def update(self, address: Address, ref: str, text: str) -> bool:
        """Replace the text of a message this channel sent (``False``: not supported)."""
        ...

    async def follow(self, turn: TurnView, address: Address) -> None:
        """Send what ``turn`` says to ``address`` as it happens, until it ends (a live
        :class:`~harnessed.sessions.Turn`, or an ended one read from elsewhere)."""
        ...


@dataclass(frozen=True, kw_only=True)
class ChannelConfig:
    """What every chat channel is configured with.

    Attributes:
        name: The channel's name (its addresses and session ids carry it).
        scope: Which messages share a session (:class:`SessionScope`).
        agent: The gateway's agent that answers (``None``: its default agent).
        stream: ``"final"`` sends the reply when the turn ends; ``"edit"`` sends the text as
            it comes and edits that message as more arrives (where the platform can edit).
        min_update_chars: In ``"edit"`` mode, how much new text makes an edit.
        on_task_finished: When a background task of a session ends while no one is talking
            to it: ``"turn"`` runs a turn that tells the person (the agent words it),
            ``"message"`` sends the outcome as it is, ``"none"`` waits for the person.
    """

    name: str
    scope: SessionScope = SessionScope.ACCOUNT_CHANNEL_PEER
    agent: str | None = None
    stream: Literal["final", "edit"] = "final"
    min_update_chars: int = 80
    on_task_finished: Literal["turn", "message", "none"] = "turn"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(
                f"{type(self).__name__}.name must be 1-32 lower-case letters, digits, '-' or "
                f"'_' starting with a letter, got {self.name!r}"
            )
        object.__setattr__(self, "scope", SessionScope(self.scope))
        if self.stream not in ("final", "edit"):
            raise ValueError(f"{type(self).__name__}.stream must be 'final' or 'edit'")
        if not isinstance(self.min_update_chars, int) or self.min_update_chars < 1:
            raise ValueError(f"{type(self).__name__}.min_update_chars must be at least 1")
        if self.on_task_finished not in ("turn", "message", "none"):
            raise ValueError(
                f"{type(self).__name__}.on_task_finished must be 'turn', 'message' or 'none'"
            )


def require_text(config: object, name: str, value: object, minimum: int = 1) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is a string of ``minimum``+ chars."""
    if not isinstance(value, str) or len(value) < minimum:
        raise ValueError(
            f"{type(config).__name__}.{name} must be a string of at least {minimum} characters"
        )


_YES = frozenset(
    {"y", "yes", "ok", "okay", "approve", "approved", "allow", "go", "sure", "是", "好", "同意"}
)
_NO = frozenset(
    {"n", "no", "deny", "denied", "decline", "reject", "stop", "cancel", "否", "不", "拒绝"}
)


def answer_of(text: str) -> tuple[bool, str | None]:
    """A person's reply to a confirmation question: ``(approved, feedback)``. Yes-words
    approve; no-words decline; anything else declines with the text as feedback (the agent
    reads why)."""
    word = text.strip().strip(".! \u3002\uff01").lower()  # also the full-width stop and bang
    if word in _YES:
        return True, None
    if word in _NO:
        return False, None
    return False, text.strip()


def question_text(event: ConfirmationRequestEvent) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in dict(event.call.input).items())
    return (
        f"The agent wants to run {event.call.name}({args[:500]}): {event.reason}\n"
        "Reply yes to allow it, no to refuse (or say what to do instead)."
    )


_RECENT_TURNS = 1000


class ChatChannel:
    """The shared part of chat adapters (see the module docstring). Subclasses implement
    :meth:`routes`, :meth:`send` and, where the platform can edit messages, :meth:`update`."""

    def __init__(self, config: ChannelConfig) -> None:
        self.config = config
        self.name = config.name
        self._gateway: Gateway | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._followed: OrderedDict[str, None] = OrderedDict()
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # ------------------------------------------------------------ lifecycle
    @property
    def gateway(self) -> Gateway:
        if self._gateway is None:
            raise RuntimeError(f"{self!r} is not started (Gateway.start starts its channels)")
        return self._gateway

    def routes(self) -> Sequence[BaseRoute]:
        return ()

    async def start(self, gateway: Gateway) -> None:
        self._gateway = gateway

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._gateway = None

    # ------------------------------------------------------------- outbound
    async def send(
        self, address: Address, text: str, *, kind: MessageKind = "message"
    ) -> str | None:
        raise NotImplementedError

    async def update(self, address: Address, ref: str, text: str) -> bool:
        return False

    # -------------------------------------------------------------- inbound
    def accept(self, message: Inbound) -> None:
        """Take ``message`` for handling after the platform has its acknowledgement: this
        returns at once; the turn runs in a task of the channel."""
        if self._gateway is None:
            raise RuntimeError(f"{self!r} is not started")
        self.spawn(self.handle(message), f"{self.name}:inbound")

    def spawn(self, work: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("%r: a task failed", self, exc_info=task.exception())

    def session_of(self, identity: ChannelIdentity) -> AgentSession:
        where = route(identity, self.config.scope)
        return self.gateway.session(where.user_id, where.session_id, self.config.agent)

    async def handle(self, message: Inbound) -> Turn | None:
        """Handle one inbound message: remember where it came from, answer the confirmation
        the session waits on, or start a turn and follow it. Returns the turn followed."""
        gateway = self.gateway
        session = self.session_of(message.identity)
        lock = self._locks.get(session.session_id)
        if lock is None:
            lock = self._locks[session.session_id] = asyncio.Lock()
        async with lock:  # messages of one conversation start turns in the order they came
            await gateway.open(session, channel=self.name)
            await gateway.addresses.remember(session, message.address)
            pending = await session.agent.pending_confirmations(session.ctx)
            if pending:
                approved, feedback = answer_of(message.text)
                try:
                    await session.respond(pending[0].request_id, approved, feedback=feedback)
                except Exception as exc:  # answered meanwhile elsewhere
                    logger.info("%r: answering %s failed: %s", self, pending[0].request_id, exc)
                    return None
                if session.running is not None or len(pending) > 1:
                    return None  # the waiting turn goes on (and its follower replies)
                # the step was parked by a turn that is gone (a restart): continue it here
                turn = await session.resume()
            else:
                turn = await session.submit(message.text, message.message_id)
        if not self._first_follow(turn.id):
            return None  # a retried delivery of a message whose turn is followed already
        await self.follow(turn, message.address)
        return turn

    def _first_follow(self, turn_id: str) -> bool:
        if turn_id in self._followed:
            return False
        self._followed[turn_id] = None
        if len(self._followed) > _RECENT_TURNS:
            self._followed.popitem(last=False)
        return True

    async def follow(self, turn: TurnView, address: Address) -> None:
        """Send the turn's reply (and its questions) to ``address``."""
        edit = self.config.stream == "edit"
        ref: str | None = None
        text, shown = "", 0
        final: str | None = None
        async for batch in turn.batches():
            for event in batch:
                if event.source is not None:
                    if isinstance(event, CustomEvent) and event.name == "subagent_needs_approval":
                        await self._safe_send(
                            address,
                            f"A sub-agent ({event.source}) stopped: {event.data.get('tool')} "
                            f"needs approval ({event.data.get('reason')}).",
                            "notice",
                        )
                    continue
                if isinstance(event, ModelCallStartEvent):
                    text = ""
                elif isinstance(event, TextDeltaEvent):
                    text += event.text
                elif isinstance(event, ConfirmationRequestEvent):
                    await self._safe_send(address, question_text(event), "question")
                elif isinstance(event, AgentEndEvent):
                    final = event.reply.text
                elif isinstance(event, ErrorEvent):
                    final = None
            if edit and final is None and len(text) - shown >= self.config.min_update_chars:
                ref = await self._stream_text(address, ref, text)
                shown = len(text)
        if final is None:
            why = type(turn.error).__name__ if turn.error else "error"
            await self._safe_send(address, f"Sorry, I could not answer that ({why}).", "notice")
            return
        final = final.strip() or "(no text)"
        if ref is not None and (
            final == text[:shown].strip() or await self._safe_update(address, ref, final)
        ):
            return
        await self._safe_send(address, final, "reply")

    async def _stream_text(self, address: Address, ref: str | None, text: str) -> str | None:
        if ref is None:
            return await self._safe_send(address, text, "update")
        await self._safe_update(address, ref, text)
        return ref

    async def _safe_send(self, address: Address, text: str, kind: MessageKind) -> str | None:
        try:
            return await self.send(address, text, kind=kind)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%r could not send a %s to %s", self, kind, address.data)
            return None

    async def _safe_update(self, address: Address, ref: str, text: str) -> bool:
        try:
            return await self.update(address, ref, text)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%r could not update message %s", self, ref)
            return False
