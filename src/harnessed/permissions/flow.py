"""ApprovalFlow: one run's side of asking the user before tools run (the permissions
package's :class:`~harnessed.run.approvals.RunApprovals`).

For each step the run asks :class:`ApprovalFlow` to :meth:`decide` the assistant message's
calls. Calls that need an answer are announced as :class:`ConfirmationRequestEvent` (after their
futures are registered with the broker, so no answer can be missed) and recorded in the session
log. Then, depending on how the run was started:

* ``"wait"`` (``stream_events``): wait until every request is answered through
  ``agent.respond`` — or until ``confirmation_timeout`` passes, which parks the step;
* ``"park"`` (``call``): do not wait; park the step at once.

A parked step is stored in the session's state, never in its history, and the call ends with
status ``pending``. The next call resumes it (no input) or closes it (new input: every call of
the step gets a "not run" result, so the history stays valid and nothing is pretended).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harnessed.events import ConfirmationRequestEvent, Event
from harnessed.log.record import RecordType
from harnessed.messages import Msg, ToolResultBlock
from harnessed.permissions.broker import Answer, SessionId
from harnessed.permissions.gate import ApprovalGate, StepGuard, Verdict, declined_text
from harnessed.run.approvals import ConfirmationMode
from harnessed.state.agent_state import AgentState
from harnessed.state.parked import ParkedStep, PendingConfirmation
from harnessed.tools.toolkit import ToolGuard

__all__ = ["ApprovalFlow", "ConfirmationMode", "StepDecision", "pending_reply"]

Record = Callable[[str, Mapping[str, Any]], None]


@dataclass(frozen=True, slots=True)
class StepDecision:
    """Run the step with ``guard``, or (``parked`` set) stop and wait for answers."""

    guard: StepGuard | None = None
    parked: ParkedStep | None = None
    resumed: bool = False
    """The step came from the session's parked step (clear it when the step commits)."""


class ApprovalFlow:
    """Asks about one run's tool calls through the agent's :class:`ApprovalGate`."""

    def __init__(
        self,
        gate: ApprovalGate,
        session: SessionId,
        *,
        mode: ConfirmationMode,
        base: Mapping[str, Any],
        queue_event: Callable[[Event], None],
        record: Record,
        app_guard: ToolGuard | None = None,
    ) -> None:
        if mode not in ("wait", "park"):
            raise ValueError(f"confirmations must be 'wait' or 'park', got {mode!r}")
        self.gate = gate
        self.session = session
        self.mode: ConfirmationMode = mode
        self.base = dict(base)
        self.queue_event = queue_event
        self.record = record
        self.app_guard = app_guard
        self.in_flight: ParkedStep | None = None
        """The step whose requests are announced and not all answered (for parking on abort)."""

    # ------------------------------------------------------------ parked steps
    @staticmethod
    def parked(state: AgentState) -> ParkedStep | None:
        return ParkedStep.of(state)

    def close_parked(self, state: AgentState, parked: ParkedStep) -> list[Msg]:
        """New input arrived: every call of the parked step ends as "not run"."""
        results = [
            Msg(
                "tool",
                (
                    ToolResultBlock(
                        call.id,
                        "This call did not run: its step was waiting for the user's approval "
                        "when the user sent a new message instead.",
                        is_error=True,
                        name=call.name,
                    ),
                ),
                name=call.name,
            )
            for call in parked.message.tool_uses
        ]
        ParkedStep.unpark(state)
        self.record(
            RecordType.PERMISSION_CHANGED,
            {
                "action": "cancelled",
                "request_ids": [r.request_id for r in parked.requests],
                "reason": "new input",
            },
        )
        return results

    # ------------------------------------------------------------------ decide
    async def decide(
        self, message: Msg, state: AgentState, parked: ParkedStep | None = None
    ) -> StepDecision:
        review = await self.gate.review(message.tool_uses, state, parked)
        resumed = parked is not None
        if not review.asks:
            return StepDecision(self.gate.guard(review.verdicts, self.app_guard), resumed=resumed)
        step = ParkedStep(message, tuple(_merge(parked, review.asks)))
        answers = await self._ask(step, review.asks, asked_before=parked is not None)
        verdicts = dict(review.verdicts)
        for request in review.asks:
            answer = answers.get(request.request_id)
            if answer is None:
                continue
            answered = request.answer(answer.approved, answer.feedback)
            step = step.with_answer(request.request_id, answer.approved, answer.feedback)
            verdicts[request.call.id] = (
                Verdict("approved", feedback=answer.feedback)
                if answer.approved
                else Verdict("refused", declined_text(answered))
            )
        if step.open_requests:
            self.record(
                RecordType.PERMISSION_CHANGED,
                {"action": "parked", "request_ids": [r.request_id for r in step.open_requests]},
            )
            return StepDecision(parked=step, resumed=resumed)
        return StepDecision(self.gate.guard(verdicts, self.app_guard), resumed=resumed)

    async def _ask(
        self, step: ParkedStep, asks: list[PendingConfirmation], *, asked_before: bool
    ) -> dict[str, Answer]:
        """Announce the requests and collect the answers given (all of them, or — not waiting,
        timed out or stopped — those given so far)."""
        ids = [r.request_id for r in asks]
        futures = self.gate.broker.open(self.session, asks)
        self.in_flight = step
        answers: dict[str, Answer] = {}
        try:
            for request in asks:
                self.record(
                    RecordType.PERMISSION_CHANGED,
                    {"action": "requested", "again": asked_before, **request.to_dict()},
                )
                self.queue_event(
                    ConfirmationRequestEvent(
                        request_id=request.request_id,
                        call=request.call,
                        reason=request.reason,
                        details=dict(request.details),
                        **self.base,
                    )
                )
            open_futures = [f for f in futures.values() if not f.done()]
            if self.mode == "wait" and open_futures:
                await asyncio.wait(open_futures, timeout=self.gate.confirmation_timeout)
        finally:
            for request_id, future in futures.items():
                if future.done() and not future.cancelled():
                    answers[request_id] = future.result()
            self.gate.broker.close(self.session, ids)
            for request_id, answer in answers.items():
                self.record(
                    RecordType.PERMISSION_CHANGED,
                    {
                        "action": "answered",
                        "request_id": request_id,
                        "approved": answer.approved,
                        "feedback": answer.feedback,
                    },
                )
                if self.in_flight is not None:
                    self.in_flight = self.in_flight.with_answer(
                        request_id, answer.approved, answer.feedback
                    )
        self.in_flight = None
        return answers

    def park_aborted(self, state: AgentState) -> bool:
        """The run stopped while waiting (the stream was closed or cancelled): park the step."""
        step, self.in_flight = self.in_flight, None
        if step is None:
            return False
        step.park(state)
        self.record(
            RecordType.PERMISSION_CHANGED,
            {"action": "parked", "request_ids": [r.request_id for r in step.open_requests]},
        )
        return True

    def pending_reply(self, step: ParkedStep) -> Msg:
        return pending_reply(step)

    def run_ended(self) -> None:
        self.gate.broker.run_ended(self.session)


def _merge(parked: ParkedStep | None, asks: list[PendingConfirmation]) -> list[PendingConfirmation]:
    """The requests of a step: earlier answers kept, the open ones are those in ``asks``."""
    asked = {r.call.id for r in asks}
    kept = [r for r in (parked.requests if parked else ()) if r.answered and r.call.id not in asked]
    return [*kept, *asks]


def pending_reply(step: ParkedStep) -> Msg:
    """The reply of a call that ended waiting for answers (never stored in the history)."""
    lines = ["Waiting for your approval before continuing:"]
    for request in step.open_requests:
        lines.append(f"- {request.call.name}: {request.reason} (request {request.request_id})")
    lines.append(
        "Answer each request with agent.respond(ctx, request_id, approved), then call the agent "
        "again without input to continue."
    )
    return Msg.assistant(
        "\n".join(lines),
        metadata={
            "harness": "pending_confirmation",
            "requests": [r.to_dict() for r in step.open_requests],
        },
    )
