"""A session's pending confirmations and questions, and the caller's answers to them."""

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Response

from harnessed.gateway.routes.common import NOT_FOUND
from harnessed.gateway.routes.state import AppState
from harnessed.gateway.schemas import AnswerIn, ConfirmationOut, Problem
from harnessed.permissions import ConfirmationError
from harnessed.permissions.answers import QuestionAnswerError, is_question
from harnessed.sessions import AgentSession

__all__ = ["add_confirmation_routes"]


def add_confirmation_routes(router: APIRouter, state: AppState) -> None:
    """``GET …/confirmations`` and ``POST …/confirmations/{request_id}``."""
    Owned = Annotated[AgentSession, Depends(state.owned)]

    @router.get(
        "/v1/sessions/{session_id}/confirmations",
        response_model=list[ConfirmationOut],
        responses=NOT_FOUND,
        tags=["confirmations"],
    )
    async def confirmations(session: Owned) -> list[ConfirmationOut]:
        """Tool calls waiting for the user's approval."""
        pending = await session.agent.pending_confirmations(session.ctx)
        return [
            ConfirmationOut(
                request_id=p.request_id,
                tool=p.call.name,
                arguments=dict(p.call.input),
                reason=p.reason,
                kind="question" if is_question(p.details) else "confirmation",
                details=dict(p.details),
            )
            for p in pending
        ]

    @router.post(
        "/v1/sessions/{session_id}/confirmations/{request_id}",
        status_code=204,
        responses={
            **NOT_FOUND,
            409: {"model": Problem, "description": "Already answered otherwise."},
        },
        tags=["confirmations"],
    )
    async def answer(
        session: Owned,
        request_id: Annotated[str, Path(max_length=200)],
        body: AnswerIn,
    ) -> Response:
        """Approve or decline a tool call, or answer a question (``answer``)."""
        given = {"answer": body.answer} if "answer" in body.model_fields_set else {}
        try:
            await session.respond(request_id, body.approved, feedback=body.feedback, **given)
        except QuestionAnswerError as exc:
            raise HTTPException(422, str(exc)) from None
        except ConfirmationError as exc:
            status = 404 if str(exc).startswith("no confirmation request") else 409
            raise HTTPException(status, str(exc)) from None
        return Response(status_code=204)
