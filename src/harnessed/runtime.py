"""RuntimeContext (who is calling) and the per-session locks that serialize calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from harnessed.messages import new_id

if TYPE_CHECKING:
    from harnessed.events import Event
    from harnessed.messages import Msg
    from harnessed.turns.control import TurnControl

__all__ = ["RuntimeContext", "SessionLocks", "SessionRef", "TurnRuntime"]


@dataclass(frozen=True, slots=True)
class SessionRef:
    """One session of one user with one agent: the key of its log, its state and its turn gate.

    Every part is a non-empty string. Stores decide how a ref names a file or a row (and
    refuse what cannot); :attr:`token` is the one text form used where a single string is
    needed (the turn gate, notes between processes).
    """

    agent_id: str
    user_id: str
    session_id: str

    def __post_init__(self) -> None:
        for name in ("agent_id", "user_id", "session_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"SessionRef.{name} must be a non-empty string, got {value!r}")

    @property
    def token(self) -> str:
        """The ref as one string (a JSON array), the same in every process."""
        return json.dumps([self.agent_id, self.user_id, self.session_id])

    @classmethod
    def token_of(cls, agent_id: str, user_id: str, session_id: str) -> str:
        """:attr:`token` of the ref of these three ids."""
        return cls(agent_id, user_id, session_id).token

    @classmethod
    def of(cls, agent_id: str, ctx: RuntimeContext) -> SessionRef:
        """The session a resolved context names for ``agent_id``."""
        return cls(agent_id, ctx.user_id, ctx.session)


@dataclass(frozen=True, slots=True)
class RuntimeContext:
    """Identity of one call: the user, the session and the run.

    ``session_id`` defaults to the agent's name when left ``None``; ``run_id`` is generated per
    call when left ``None``. ``extras`` carries application data for tools and sources; nothing
    in a RuntimeContext ever becomes prompt text by itself.
    """

    user_id: str = "default"
    session_id: str | None = None
    run_id: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.user_id, str) or not self.user_id:
            raise ValueError("RuntimeContext.user_id must be a non-empty string")
        if self.session_id is not None and (
            not isinstance(self.session_id, str) or not self.session_id
        ):
            raise ValueError("RuntimeContext.session_id must be a non-empty string or None")
        if self.run_id is not None and (not isinstance(self.run_id, str) or not self.run_id):
            raise ValueError("RuntimeContext.run_id must be a non-empty string or None")

    def resolved(self, agent_name: str) -> RuntimeContext:
        """A copy with the session id defaulted to ``agent_name`` and a run id assigned."""
        return RuntimeContext(
            user_id=self.user_id,
            session_id=self.session_id or agent_name,
            run_id=self.run_id or new_id("run_"),
            extras=self.extras,
        )

    @property
    def session(self) -> str:
        """The session id; only valid on a resolved context."""
        if self.session_id is None:
            raise ValueError("RuntimeContext has no session id yet (call resolved() first)")
        return self.session_id


class SessionLocks:
    """One asyncio lock per key, created on demand and dropped when nobody holds or waits.

    Dropping idle locks keeps memory flat with many sessions and lets one agent object be used
    from different event loops over time (an asyncio lock binds to the loop that first waits).
    """

    def __init__(self) -> None:
        self._locks: dict[tuple[str, ...], tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, *key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            _, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


class TurnRuntime(Protocol):
    """Where an agent's turns run when not in the calling process (``HarnessAgent(runtime=)``,
    e.g. :class:`harnessed.temporal.TemporalRuntime`): it runs the turn and yields its events,
    ending with :class:`~harnessed.events.AgentEndEvent` (or raising)."""

    def stream(
        self,
        agent: Any,
        messages: list[Msg],
        ctx: RuntimeContext,
        control: TurnControl | None = None,
    ) -> AsyncGenerator[Event, None]: ...
