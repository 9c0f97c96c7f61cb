"""What a turn's workflow and its activities pass each other: plain dataclasses of JSON values.

Nothing here imports the rest of harnessed, so the workflow (which runs in Temporal's sandbox
and is replayed on any worker) depends on this module and ``temporalio`` only. Messages travel
as :meth:`harnessed.messages.Msg.to_dict` dictionaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ActivityOptions",
    "ModelStepInput",
    "StepOutcome",
    "StopInput",
    "TaskInput",
    "WakeupDue",
    "WakeupFiring",
    "WakeupStart",
    "WakeupWoken",
    "ToolInput",
    "TurnInput",
    "TurnResult",
]

WORKFLOW = "harnessed.turn"
MODEL = "harnessed.turn.model"
TOOL = "harnessed.turn.tool"
STOP = "harnessed.turn.stop"
FAIL = "harnessed.turn.fail"
TASK_WORKFLOW = "harnessed.task"
TASK = "harnessed.task.run"
WAKEUP_WORKFLOW = "harnessed.wakeup"
WAKEUP_PREPARE = "harnessed.wakeup.prepare"
WAKEUP_DONE = "harnessed.wakeup.done"
WAKEUP_START = "harnessed.wakeup.start"
WAKEUP_WOKEN = "harnessed.wakeup.woken"
WAKEUP_HOOK_PATCH = "harnessed-wakeup-on-woken"
"""The change that has the wake-up workflow wait for its turn and call the ``on_woken`` hooks
(histories from before it replay without that part)."""
STEER = "steer"
INTERRUPT = "interrupt"
PROGRESS = "progress"


@dataclass(frozen=True, slots=True)
class ActivityOptions:
    """Timeouts and retries of a turn's activities (seconds; attempts 0 = unlimited)."""

    heartbeat_timeout: float = 30.0
    model_timeout: float = 600.0
    tool_timeout: float = 1800.0
    model_attempts: int = 5
    task_timeout: float = 6 * 3600.0
    """The longest one attempt of a background sub-agent task may run."""
    retry_initial: float = 1.0
    retry_max: float = 30.0

    def __post_init__(self) -> None:
        for name in (
            "heartbeat_timeout",
            "model_timeout",
            "tool_timeout",
            "task_timeout",
            "retry_initial",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"ActivityOptions.{name} must be positive")
        if self.retry_max < self.retry_initial:
            raise ValueError("ActivityOptions.retry_max must be at least retry_initial")
        if self.model_attempts < 0:
            raise ValueError("ActivityOptions.model_attempts must be 0 (unlimited) or more")


@dataclass(frozen=True, slots=True)
class TurnInput:
    """One turn: whose session, its ids, and the input messages."""

    agent: str
    user_id: str
    session_id: str
    run_id: str
    turn_id: str
    messages: list[dict[str, Any]]
    extras: dict[str, Any] = field(default_factory=dict)
    options: ActivityOptions = field(default_factory=ActivityOptions)


@dataclass(frozen=True, slots=True)
class ModelStepInput:
    turn: TurnInput
    iteration: int
    steering: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ToolInput:
    turn: TurnInput
    iteration: int
    call_id: str


@dataclass(frozen=True, slots=True)
class StopInput:
    turn: TurnInput
    iteration: int
    status: str
    """``interrupted`` or ``error``."""
    reason: str | None = None
    error_type: str | None = None


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended (what :class:`~harnessed.events.AgentEndEvent` carries)."""

    status: str
    iterations: int
    reply: dict[str, Any]
    pending: list[str] = field(default_factory=list)
    error_type: str | None = None
    error: str | None = None
    unused_steering: list[dict[str, Any]] = field(default_factory=list)
    """Steering messages that came after the last model request (the caller keeps them)."""


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """A model step: the tool calls to run next, or the end of the turn."""

    call_ids: list[str] = field(default_factory=list)
    end: TurnResult | None = None


@dataclass(frozen=True, slots=True)
class TaskInput:
    """A background sub-agent task of a parent session (``record``: its
    ``TaskRecord.to_dict()`` as it was spawned)."""

    agent: str
    user_id: str
    session_id: str
    record: dict[str, Any]
    options: ActivityOptions = field(default_factory=ActivityOptions)


@dataclass(frozen=True, slots=True)
class WakeupFiring:
    """What a wake-up's workflow is started with (by its delayed start or its schedule)."""

    agent: str
    user_id: str
    session_id: str
    wakeup_id: str
    options: ActivityOptions = field(default_factory=ActivityOptions)


@dataclass(frozen=True, slots=True)
class WakeupDue:
    firing: WakeupFiring
    scheduled_at: float | None = None
    """The time of this firing by the schedule (epoch seconds; ``None``: the wake-up's own)."""


@dataclass(frozen=True, slots=True)
class WakeupStart:
    """The turn a firing starts, and the wake-up as it was fired (``Wakeup.to_dict()``)."""

    turn: TurnInput
    wakeup: dict[str, Any]


@dataclass(frozen=True, slots=True)
class WakeupWoken:
    """A woken turn that ended (``result``), or failed as a workflow (``error``): for the
    ``on_woken`` hooks."""

    firing: WakeupFiring
    wakeup: dict[str, Any]
    turn: TurnInput
    result: TurnResult | None = None
    error: str | None = None
