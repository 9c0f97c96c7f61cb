"""The run asks before tools run only through the approvals its agent passes in
(:class:`harnessed.run.approvals.Approvals`), whatever implements them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harnessed import HarnessAgent
from harnessed.events import AgentEndEvent, Event
from harnessed.messages import Msg
from harnessed.models import ScriptedModel, ScriptedResponse
from harnessed.permissions import Permissions
from harnessed.run.approvals import Approvals, ConfirmationMode, RunApprovals, StepApproval
from harnessed.state.agent_state import AgentState
from harnessed.state.parked import ParkedStep
from harnessed.tools.toolkit import ToolGuard
from tests.permissions.deployer import Deployer
from tests.support.fixtures import CTX, call


class Observed:
    """Wraps a run's approvals and writes down what the run asked of them."""

    def __init__(self, inner: RunApprovals, log: list[str]) -> None:
        self.inner = inner
        self.log = log

    @property
    def mode(self) -> ConfirmationMode:
        return self.inner.mode

    def parked(self, state: AgentState) -> ParkedStep | None:
        return self.inner.parked(state)

    def close_parked(self, state: AgentState, parked: ParkedStep) -> list[Msg]:
        return self.inner.close_parked(state, parked)

    async def decide(
        self, message: Msg, state: AgentState, parked: ParkedStep | None = None
    ) -> StepApproval:
        decision = await self.inner.decide(message, state, parked)
        self.log.append(f"decide {[c.name for c in message.tool_uses]} parked={decision.parked}")
        return decision

    def park_aborted(self, state: AgentState) -> bool:
        return self.inner.park_aborted(state)

    def pending_reply(self, step: ParkedStep) -> Msg:
        self.log.append("pending reply")
        return self.inner.pending_reply(step)

    def run_ended(self) -> None:
        self.log.append("run ended")
        self.inner.run_ended()


class ObservedPermissions(Permissions):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log: list[str] = []

    def for_run(
        self,
        session: tuple[str, str, str],
        *,
        mode: ConfirmationMode,
        base: Mapping[str, Any],
        queue_event: Callable[[Event], None],
        record: Callable[[str, Mapping[str, Any]], None],
        app_guard: ToolGuard | None,
    ) -> RunApprovals:
        self.log.append(f"for_run {session} {mode}")
        flow = super().for_run(
            session,
            mode=mode,
            base=base,
            queue_event=queue_event,
            record=record,
            app_guard=app_guard,
        )
        return Observed(flow, self.log)


async def test_the_run_asks_the_approvals_its_agent_passes_in() -> None:
    d = Deployer()
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("deploy", "c1", target="prod")])])
    permissions = ObservedPermissions(mode="default")
    agent = HarnessAgent("ops", model, tools=d.tools, capabilities=[permissions])
    approvals: Approvals = agent.approvals
    assert approvals is permissions
    events = [e async for e in agent.stream_events("ship", CTX, confirmations="park")]
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.status == "pending"
    assert d.deployed == []  # the approvals parked the step: nothing ran
    session = ("ops", CTX.user_id, CTX.session_id)
    assert permissions.log[0] == f"for_run {session} park"
    assert permissions.log[1].startswith("decide ['deploy'] parked=ParkedStep(")
    assert permissions.log[2:] == ["pending reply", "run ended"]
