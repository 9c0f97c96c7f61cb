"""The agents and the caller's sessions: create, list, read one, read its history."""

import contextlib
import secrets
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Response

from harnessed.gateway.gateway import UnknownAgentError
from harnessed.gateway.identity import check_session_id
from harnessed.gateway.routes.common import NOT_FOUND
from harnessed.gateway.routes.state import AgentName, AppState
from harnessed.gateway.schemas import (
    AgentList,
    Created,
    HistoryOut,
    SessionIn,
    SessionList,
    SessionOut,
)
from harnessed.log.record import RecordType
from harnessed.sessions import AgentSession
from harnessed.turns.feed import feed_of

__all__ = ["add_session_routes"]


def add_session_routes(router: APIRouter, state: AppState) -> None:
    """``/v1/agents`` and ``/v1/sessions[/{id}[/messages]]`` (reading; turns are elsewhere)."""
    gateway = state.gateway
    User = Annotated[str, Depends(state.current_user)]
    Owned = Annotated[AgentSession, Depends(state.owned)]

    @router.get("/v1/agents", response_model=AgentList, tags=["agents"])
    async def list_agents(_: User) -> AgentList:
        """The agents this server serves."""
        return AgentList(agents=list(gateway.agents), default=gateway.default_agent)

    @router.post(
        "/v1/sessions",
        response_model=Created,
        status_code=201,
        responses=NOT_FOUND,
        tags=["sessions"],
    )
    async def create_session(
        user: User, response: Response, body: SessionIn | None = None, agent: AgentName = None
    ) -> Created:
        """Create a session (or return the caller's existing one with that id)."""
        session_id = (body.session_id if body else None) or "s-" + secrets.token_hex(8)
        session = state.session_of(user, session_id, agent)
        created = await gateway.open(session, channel="http")
        if not created:
            response.status_code = 200
        return Created(**(await state.out_anywhere(session)).model_dump(), created=created)

    @router.get("/v1/sessions", response_model=SessionList, responses=NOT_FOUND, tags=["sessions"])
    async def list_sessions(user: User, agent: AgentName = None) -> SessionList:
        """The caller's sessions, most recent first."""
        return await _session_list(state, user, agent)

    @router.get(
        "/v1/sessions/{session_id}",
        response_model=SessionOut,
        responses=NOT_FOUND,
        tags=["sessions"],
    )
    async def get_session(session: Owned) -> SessionOut:
        """One session of the caller, with what it has spent so far; ``running_turn`` is the
        turn running in it on any server sharing the store."""
        usage = await session.agent.session_usage(session.ctx)
        view = await state.out_anywhere(session)
        return view.model_copy(update={"usage": usage})

    @router.get(
        "/v1/sessions/{session_id}/messages",
        response_model=HistoryOut,
        responses=NOT_FOUND,
        tags=["sessions"],
    )
    async def read_history(session: Owned) -> HistoryOut:
        """Every message of the session as it happened (nothing summarized), each with the
        ``run_id`` of the turn that added it."""
        records = await session.agent.session_log(session.ctx, types=[RecordType.MESSAGE])
        return HistoryOut(
            messages=[
                {**m.to_dict(), "run_id": r.run_id} for r in records if (m := r.message) is not None
            ]
        )


async def _session_list(state: AppState, user: str, agent: str | None) -> SessionList:
    gateway = state.gateway
    try:
        infos = await gateway.sessions(user, agent)
    except UnknownAgentError as exc:
        raise HTTPException(404, str(exc)) from None
    served = gateway.agent(agent)
    feed = feed_of(served)
    elsewhere: dict[str, str] = {}
    if feed is not None and infos:
        with contextlib.suppress(Exception):  # a store that is down: local turns only
            elsewhere = await feed.running_in(served.name, user)
    return SessionList(
        sessions=[
            state.out(
                state.session_of(user, i.session_id, agent),
                i.updated_at,
                elsewhere.get(i.session_id),
            )
            for i in infos
            if _valid_id(i.session_id)
        ]
    )


def _valid_id(session_id: str) -> bool:
    try:
        check_session_id(session_id)
    except ValueError:
        return False
    return True
