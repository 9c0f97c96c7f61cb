"""The application's side of permissions (the agent offers these methods).

Set a session's permission mode or rules, list the confirmation requests waiting for an answer
and answer them. Changes run under the session lock and are written to the session log as
``permission/changed`` (answers to a running call that is asking reach it at once).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harnessed.log.record import RecordType
from harnessed.permissions.answers import (
    QuestionAnswerError,
    check_answer,
    encode_answer,
    is_question,
)
from harnessed.permissions.broker import Answer, ConfirmationError, Posted, SessionId
from harnessed.permissions.forwarded import ForwardedLog
from harnessed.permissions.gate import ApprovalGate
from harnessed.permissions.rules import PermissionMode, PermissionRule
from harnessed.permissions.state import PERMISSIONS
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.state.editor import StateEditor
from harnessed.state.parked import ParkedStep, PendingConfirmation

__all__ = ["NO_ANSWER", "PermissionControls"]

NO_ANSWER: Any = object()
"""``respond``'s ``answer`` when none is given."""

Records = list[tuple[str, Mapping[str, Any]]]


class PermissionControls:
    """Permission controls: a part of :class:`~harnessed.HarnessAgent`."""

    def __init__(self, name: str, editor: StateEditor, gate: Callable[[], ApprovalGate]) -> None:
        self.name = name
        self._editor = editor
        self._gate = gate

    @property
    def approval_gate(self) -> ApprovalGate:
        """The agent's approval gate (looked up when used: capabilities may replace it)."""
        return self._gate()

    # ------------------------------------------------------------- permissions
    async def set_permission_mode(
        self, ctx: RuntimeContext | None, mode: PermissionMode | str | None
    ) -> None:
        """Set the session's permission mode (``None``: back to the agent's configuration)."""
        parsed = PermissionMode.parse(mode) if mode is not None else None

        def change(state: AgentState) -> Records:
            permissions = {k: v for k, v in state.get(PERMISSIONS).items() if k != "mode"}
            if parsed is not None:
                permissions["mode"] = parsed.value
            state.put(PERMISSIONS, permissions)
            return [
                (
                    RecordType.PERMISSION_CHANGED,
                    {"action": "mode", "mode": parsed.value if parsed else None},
                )
            ]

        await self._editor.change(ctx, change)

    async def set_permission_rules(
        self, ctx: RuntimeContext | None, rules: Sequence[PermissionRule]
    ) -> None:
        """Replace the session's own rules (checked before, and together with, the agent's)."""
        for rule in rules:
            if not isinstance(rule, PermissionRule):
                raise TypeError(f"expected PermissionRule objects, got {rule!r}")
        data = [r.to_dict() for r in rules]

        def change(state: AgentState) -> Records:
            settings = state.get(PERMISSIONS)
            state.put(PERMISSIONS, {**settings, "rules": data})
            return [(RecordType.PERMISSION_CHANGED, {"action": "rules", "rules": data})]

        await self._editor.change(ctx, change)

    async def pending_confirmations(
        self, ctx: RuntimeContext | None = None
    ) -> list[PendingConfirmation]:
        """Requests waiting for an answer: those a running call is asking now, and those of
        the step the session left waiting."""
        ctx = self._editor.resolve(ctx)
        session = _session(self.name, ctx)
        live = self.approval_gate.broker.waiting(session)
        live += [f.request for f in self.approval_gate.forwarded.waiting(session)]
        seen = {r.request_id for r in live}
        # sub-agents' requests waiting in another process sharing the stores
        logged = await self._forwarded_log(ctx).open_requests()
        live += [r for r in logged if r.request_id not in seen]
        parked = ParkedStep.of(await self._editor.read(ctx))
        seen = {r.request_id for r in live}
        stored = [r for r in (parked.open_requests if parked else []) if r.request_id not in seen]
        return [*live, *stored]

    def _forwarded_log(self, ctx: RuntimeContext) -> ForwardedLog:
        return ForwardedLog(self._editor.session_store, _session(self.name, ctx))

    async def respond(
        self,
        ctx: RuntimeContext | None,
        request_id: str,
        approved: bool,
        *,
        feedback: str | None = None,
        answer: Any = NO_ANSWER,
    ) -> None:
        """Answer a confirmation request, or a question the model asked (``ask_user``).

        A call that is waiting for this answer (``stream_events``) gets it at once and goes
        on. For a call that ended with status ``pending`` the answer is stored with the
        session; call the agent again without input to continue. ``feedback`` is passed on to
        the model when the call is declined. A sub-agent's request shown in this session's
        stream (``source`` set) is answered in the sub-agent, which goes on — also from another
        process sharing the stores (the request is logged beside the session's log). Raises
        :class:`~harnessed.permissions.ConfirmationError` for an unknown request or one
        already answered differently.

        A question is answered with ``approved=True`` and ``answer=`` (text, or JSON data for a
        question with a schema), checked against its choices or schema
        (:class:`~harnessed.questions.QuestionAnswerError`); ``approved=False`` declines it.
        """
        if not isinstance(approved, bool):
            raise TypeError(f"approved must be True or False, got {approved!r}")
        ctx = self._editor.resolve(ctx)
        forwarded = self.approval_gate.forwarded.get(_session(self.name, ctx), request_id)
        if forwarded is not None:  # a sub-agent's request: answered in the sub-agent
            await forwarded.relay(approved, feedback, answer)
            self.approval_gate.forwarded.discard(_session(self.name, ctx), request_id)
            return
        if approved or answer is not NO_ANSWER:
            feedback = await self._question_answer(ctx, request_id, approved, feedback, answer)
        logged = self._forwarded_log(ctx)
        if await logged.find(request_id) is not None:
            # a sub-agent's request waiting in another process: that process watches the
            # log and hands the answer on
            await logged.answer(request_id, approved, feedback)
            return
        session = _session(self.name, ctx)
        broker = self.approval_gate.broker
        live = {r.request_id for r in broker.waiting(session)}
        if live and request_id not in live:
            # a call of this session is running and waiting for other answers: the stored
            # state cannot hold this request now, and waiting for the lock would wait for ever
            raise ConfirmationError(_unknown(request_id, ctx))
        if request_id in broker.parking(session):
            # The running call stopped waiting (confirmation_timeout) and is parking the step;
            # waiting for its session lock from inside its own stream would never end.
            raise ConfirmationError(
                f"confirmation request {request_id!r} timed out while the call was running and "
                "its step is being parked; answer it again once the call has ended"
            )
        posted = broker.post(session, request_id, Answer(approved, feedback))
        if posted.consumed.is_set():
            return
        store = asyncio.ensure_future(self._store_answer(ctx, session, request_id, posted))
        taken = asyncio.ensure_future(posted.consumed.wait())
        try:
            await asyncio.wait({store, taken}, return_when=asyncio.FIRST_COMPLETED)
            if store.done() and not posted.consumed.is_set():
                store.result()
        finally:
            broker.withdraw(session, request_id, posted)
            for task in (store, taken):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task

    async def _question_answer(
        self,
        ctx: RuntimeContext,
        request_id: str,
        approved: bool,
        feedback: str | None,
        answer: Any,
    ) -> str | None:
        """The feedback that carries a question's answer (checked); others' as given."""
        found = [r for r in await self.pending_confirmations(ctx) if r.request_id == request_id]
        if not found:
            return feedback  # unknown here: answering it says so
        question = found[0] if is_question(found[0].details) else None
        if question is None:
            if answer is not NO_ANSWER:
                raise ConfirmationError(
                    f"request {request_id!r} is not a question waiting in session "
                    f"{ctx.session!r}; answer= is only for questions (ask_user)"
                )
            return feedback
        if not approved:
            raise ConfirmationError("a question is declined with approved=False and no answer")
        if answer is NO_ANSWER:
            raise QuestionAnswerError(
                f"request {request_id!r} is a question: pass answer=... with approved=True"
            )
        check_answer(question.details, answer)
        return encode_answer(answer)

    async def _store_answer(
        self, ctx: RuntimeContext, session: SessionId, request_id: str, posted: Posted
    ) -> None:
        answer = posted.answer

        def change(state: AgentState) -> Records | None:
            if posted.consumed.is_set():  # a call of this session took it meanwhile
                return None
            parked = ParkedStep.of(state)
            request = parked.request(request_id) if parked is not None else None
            if parked is None or request is None:
                raise ConfirmationError(_unknown(request_id, ctx))
            if request.answered:
                if request.approved == answer.approved:
                    return None
                raise ConfirmationError(
                    f"confirmation request {request_id!r} was already "
                    f"{'approved' if request.approved else 'declined'}"
                )
            parked.with_answer(request_id, answer.approved, answer.feedback).park(state)
            self.approval_gate.broker.withdraw(session, request_id, posted)
            return [
                (
                    RecordType.PERMISSION_CHANGED,
                    {
                        "action": "answered",
                        "request_id": request_id,
                        "approved": answer.approved,
                        "feedback": answer.feedback,
                    },
                )
            ]

        await self._editor.change(ctx, change)


def _unknown(request_id: str, ctx: RuntimeContext) -> str:
    return (
        f"no confirmation request {request_id!r} is waiting in session {ctx.session!r} of "
        f"user {ctx.user_id!r}"
    )


def _session(agent: str, ctx: RuntimeContext) -> SessionId:
    return (agent, ctx.user_id, ctx.session)
