"""What a run needs to ask before tools run: the approvals protocol.

The run does not know how calls are decided. Its agent gives it an :class:`Approvals` (the
permissions capability is the one every agent has); for each call the run opens a
:class:`RunApprovals` with :meth:`Approvals.for_run` and, at each tool step, asks it to
:meth:`~RunApprovals.decide` the assistant message's calls. The decision either gives the
guard the step's tools run under, or a step *parked* to wait for answers (stored in the
session's state with :meth:`~harnessed.state.parked.ParkedStep.park`; the call ends with status
``pending``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TypeAlias

from harnessed.events import Event
from harnessed.messages import Msg
from harnessed.state.agent_state import AgentState
from harnessed.state.parked import ParkedStep
from harnessed.tools.toolkit import ToolGuard

__all__ = ["Approvals", "ConfirmationMode", "RunApprovals", "StepApproval"]

ConfirmationMode: TypeAlias = Literal["wait", "park"]
"""How a call meets confirmation requests: ``wait`` (someone answers while it runs, as with
``stream_events``) or ``park`` (the step is parked at once, as with ``call``)."""


class StepApproval(Protocol):
    """The decision for one step's calls."""

    @property
    def guard(self) -> ToolGuard | None:
        """The guard the step's tools run under (``None`` with ``parked`` set)."""
        ...

    @property
    def parked(self) -> ParkedStep | None:
        """Set when the step must wait for answers: the run parks it and ends ``pending``."""
        ...

    @property
    def resumed(self) -> bool:
        """The step was the session's parked one (the run clears it when the step commits)."""
        ...


class RunApprovals(Protocol):
    """One run's approvals, opened by :meth:`Approvals.for_run`."""

    @property
    def mode(self) -> ConfirmationMode: ...

    def parked(self, state: AgentState) -> ParkedStep | None:
        """The step of the session left waiting for answers, if any."""
        ...

    def close_parked(self, state: AgentState, parked: ParkedStep) -> list[Msg]:
        """New input arrived: the parked step is closed; the results its calls get ("not
        run") are returned for the run to append after the step's message."""
        ...

    async def decide(
        self, message: Msg, state: AgentState, parked: ParkedStep | None = None
    ) -> StepApproval:
        """Decide the calls of ``message`` (answers already given to ``parked`` count),
        asking the user when needed."""
        ...

    def park_aborted(self, state: AgentState) -> bool:
        """The run stopped while it was asking: park the step being asked about (``True``)
        or say there was none (``False``)."""
        ...

    def pending_reply(self, step: ParkedStep) -> Msg:
        """The reply of a call that ends waiting for the answers of ``step``."""
        ...

    def run_ended(self) -> None:
        """The run is over: requests it still announced are withdrawn."""
        ...


class Approvals(Protocol):
    """Where a run's approvals come from (the agent's permissions capability is one)."""

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
        """The approvals of one run of ``session`` (agent, user, session): it announces
        requests with ``queue_event`` (events carrying ``base``), writes log records with
        ``record``, and lets ``app_guard`` have the last word on each call."""
        ...
