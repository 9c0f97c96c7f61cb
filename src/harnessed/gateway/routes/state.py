"""What the HTTP channel's routers share: the gateway, the bearer auth, and the dependencies
and helpers built on them (the caller's user, the caller's session, a turn as a stream)."""

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from harnessed.gateway.auth import BearerAuth
from harnessed.gateway.gateway import Gateway, UnknownAgentError
from harnessed.gateway.identity import SESSION_ID_PATTERN
from harnessed.gateway.routes.streaming import EventStreamResponse
from harnessed.gateway.schemas import MessageIn, SessionOut
from harnessed.gateway.sse import turn_stream
from harnessed.sessions import AgentSession, IdempotencyConflictError, SessionBusyError, Turn
from harnessed.turns.feed import running_turn_id

__all__ = ["AgentName", "AppState", "SessionId"]

AgentName = Annotated[
    str | None, Query(max_length=100, description="The agent (default: the default one).")
]
SessionId = Annotated[str, Path(pattern=SESSION_ID_PATTERN)]

STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class AppState:
    """The dependency object of the HTTP channel's routers.

    Args:
        gateway: The agents served.
        auth: Bearer token → user id.
        keepalive: Seconds between SSE keep-alive comments while a turn is quiet.

    Attributes:
        current_user: The route dependency for the caller's user id (401 without a valid
            bearer token).
        owned: The route dependency for the caller's session of the path's ``session_id``
            (404 when the caller has none by that id); it depends on ``current_user``, so a
            request without a valid token gets 401 before its path is checked.
    """

    def __init__(self, gateway: Gateway, auth: BearerAuth, keepalive: float) -> None:
        self.gateway = gateway
        self.auth = auth
        self.keepalive = keepalive
        self.current_user = _current_user(auth)
        self.owned = _owned(self, self.current_user)

    def session_of(self, user: str, session_id: str, agent: str | None) -> AgentSession:
        """The user's session by id on the named agent (404 for an unknown agent)."""
        try:
            return self.gateway.session(user, session_id, agent)
        except UnknownAgentError as exc:
            raise HTTPException(404, str(exc)) from None

    @staticmethod
    def out(
        session: AgentSession, updated_at: float | None = None, running: str | None = None
    ) -> SessionOut:
        turn = session.running
        return SessionOut(
            session_id=session.session_id,
            agent=session.agent.name,
            updated_at=updated_at,
            running_turn=turn.id if turn is not None else running,
        )

    async def out_anywhere(self, session: AgentSession) -> SessionOut:
        """``out`` with the turn running on any server of a shared store."""
        return self.out(session, running=await running_turn_id(session))

    def stream(self, turn: Turn) -> StreamingResponse:
        return EventStreamResponse(turn_stream(turn, self.keepalive), headers=STREAM_HEADERS)

    async def start_turn(self, session: AgentSession, body: MessageIn) -> StreamingResponse:
        """Submit the message and stream its turn (the route's handler, and the fast path's)."""
        try:
            turn = await session.submit(body.text, body.idempotency_key, wait=body.wait)
        except (SessionBusyError, IdempotencyConflictError) as exc:
            raise HTTPException(409, str(exc)) from None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return self.stream(turn)


_BEARER = HTTPBearer(auto_error=False, description="A token the server maps to a user id.")


def _current_user(auth: BearerAuth) -> Callable[..., Awaitable[str]]:
    async def current_user(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
    ) -> str:
        user = await auth.user_for(credentials.credentials) if credentials else None
        if user is None:
            raise HTTPException(
                401,
                "a valid bearer token is required" if credentials else "missing bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return user

    return current_user


def _owned(
    state: AppState, current_user: Callable[..., Awaitable[str]]
) -> Callable[..., Awaitable[AgentSession]]:
    User = Annotated[str, Depends(current_user)]

    async def owned(user: User, session_id: SessionId, agent: AgentName = None) -> AgentSession:
        session = state.session_of(user, session_id, agent)
        if not await state.gateway.exists(session):
            raise HTTPException(404, f"no session {session_id!r}")
        return session

    return owned
