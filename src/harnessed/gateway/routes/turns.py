"""A session's turns: start one with a message, resume one, follow one's events, steer or
interrupt the running one."""

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path
from fastapi.responses import StreamingResponse

from harnessed.gateway.routes.common import NOT_FOUND, SSE
from harnessed.gateway.routes.state import STREAM_HEADERS, AppState
from harnessed.gateway.routes.streaming import EventStreamResponse
from harnessed.gateway.schemas import (
    CompactOut,
    InterruptOut,
    MessageIn,
    Problem,
    SteerIn,
    SteerOut,
)
from harnessed.gateway.sse import feed_stream
from harnessed.sessions import AgentSession, NothingToResumeError, SessionIdleError
from harnessed.turns.feed import remote_turn

__all__ = ["add_control_routes", "add_turn_routes"]


def add_turn_routes(router: APIRouter, state: AppState) -> None:
    """``POST …/messages``, ``POST …/resume`` and ``GET …/turns/{turn_id}/events``: each
    answers with the turn's events as server-sent events."""
    Owned = Annotated[AgentSession, Depends(state.owned)]

    @router.post(
        "/v1/sessions/{session_id}/messages",
        response_class=StreamingResponse,
        responses=SSE,
        tags=["turns"],
    )
    async def post_message(session: Owned, body: MessageIn) -> StreamingResponse:
        """Send a message and stream the turn it starts (queued behind a running turn)."""
        return await state.start_turn(session, body)

    @router.post(
        "/v1/sessions/{session_id}/resume",
        response_class=StreamingResponse,
        responses=SSE,
        tags=["turns"],
    )
    async def resume(session: Owned) -> StreamingResponse:
        """Continue an interrupted turn or a step that waited for confirmations."""
        try:
            return state.stream(await session.resume())
        except NothingToResumeError as exc:
            raise HTTPException(409, str(exc)) from None

    @router.get(
        "/v1/sessions/{session_id}/turns/{turn_id}/events",
        response_class=StreamingResponse,
        responses=SSE,
        tags=["turns"],
    )
    async def turn_events(
        session: Owned, turn_id: Annotated[str, Path(max_length=100)]
    ) -> StreamingResponse:
        """A turn's events again, from its start and then live (a page that reconnects).
        Turns are kept in the server's memory for a while; with a shared store a turn of
        another server streams from the store's feed; an unknown one is 404."""
        for turn in session.tasks:
            if turn.id == turn_id:
                return state.stream(turn)
        remote = await remote_turn(session, turn_id)
        if remote is not None:
            return EventStreamResponse(feed_stream(remote, state.keepalive), headers=STREAM_HEADERS)
        raise HTTPException(404, f"no turn {turn_id!r} in this session on this server")


def add_control_routes(router: APIRouter, state: AppState) -> None:
    """``POST …/steer`` and ``POST …/interrupt``: reach the running turn wherever it runs;
    ``POST …/compact``: summarize the session's earlier history between turns."""
    Owned = Annotated[AgentSession, Depends(state.owned)]

    @router.post(
        "/v1/sessions/{session_id}/steer",
        response_model=SteerOut,
        status_code=202,
        responses={
            **NOT_FOUND,
            409: {"model": Problem, "description": "No turn of the session is running anywhere."},
        },
        tags=["turns"],
    )
    async def steer(session: Owned, body: SteerIn) -> SteerOut:
        """Give the running turn a message it reads at its next reasoning step, wherever it
        runs: a turn of another server process gets it within a quarter of a second
        (``turn_id`` is then unknown here: null)."""
        try:
            sent = await session.send_steer(body.text)
        except SessionIdleError as exc:
            raise HTTPException(409, str(exc)) from None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        assert sent.message_id is not None
        return SteerOut(message_id=sent.message_id, turn_id=sent.turn_id)

    @router.post(
        "/v1/sessions/{session_id}/interrupt",
        response_model=InterruptOut,
        status_code=202,
        responses=NOT_FOUND,
        tags=["turns"],
    )
    async def interrupt(session: Owned) -> InterruptOut:
        """Stop the running turn at its next safe point (its progress is saved), wherever it
        runs (``turn_id`` is null for a turn of another server process)."""
        sent = await session.send_interrupt()
        return InterruptOut(interrupted=sent is not None, turn_id=sent.turn_id if sent else None)

    @router.post(
        "/v1/sessions/{session_id}/compact",
        response_model=CompactOut,
        responses={
            **NOT_FOUND,
            409: {"model": Problem, "description": "A turn of the session is running here."},
        },
        tags=["sessions"],
    )
    async def compact(session: Owned) -> CompactOut:
        """Summarize the session's earlier history now (``/compact``): what it summarized and
        the working history's size before and after. The message history keeps every original
        message; a summary that fails changes nothing (``status`` failed, with ``error``)."""
        turn = session.running
        if turn is not None and not turn.done:  # one that just ended gives its lease back
            raise HTTPException(409, "a turn of this session is running: compact after it ends")
        return await session.agent.compact(session.ctx)
