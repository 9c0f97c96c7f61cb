"""The approval gate: decides a step's tool calls before they run, and guards them as they run.

Before a step's tools run, :meth:`ApprovalGate.review` decides every call (see
:mod:`harnessed.permissions.policy`): it runs, it is refused, or it needs the user's answer.
Asking happens *before* any tool of the step runs, so a step waiting for answers can be parked
and resumed without anything having half-happened.

While the calls run, :class:`StepGuard` (part of the toolkit's guard for that step, after the
capabilities' ``before_tool_call`` hooks — plan mode among them) applies refusals, re-runs a
tool's own check for calls that were not approved (the state may have changed earlier in the
step), and finally asks the application's own ``tool_guard``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

from harnessed.messages import INVALID_ARGUMENTS_KEY, ToolUseBlock
from harnessed.permissions.broker import ConfirmationBroker
from harnessed.permissions.forwarded import ForwardedRequests
from harnessed.permissions.policy import PermissionSettings, ToolPermissionCheck, evaluate
from harnessed.permissions.rules import PermissionMode, PermissionRule
from harnessed.permissions.state import PERMISSIONS
from harnessed.state.agent_state import AgentState
from harnessed.state.parked import ParkedStep, PendingConfirmation
from harnessed.tools.base import Tool
from harnessed.tools.context import ToolContext
from harnessed.tools.toolkit import ToolGuard

__all__ = [
    "ApprovalGate",
    "Refusal",
    "ToolLookup",
    "StepGuard",
    "Verdict",
    "declined_text",
]

Refusal: TypeAlias = Callable[[ToolUseBlock, Tool, AgentState], "str | None"]
"""A rule that refuses a call before it runs whatever the permissions say (plan mode's): the
gate never asks the user about a call that one of them refuses."""


def declined_text(request: PendingConfirmation) -> str:
    text = request.declined_message or (
        f"The user declined this call to {request.call.name!r}, so it did not run."
    )
    if request.feedback:
        text += f" The user said: {request.feedback}"
    return text


class ToolLookup(Protocol):
    """Finds the agent's tool for a call (a :class:`~harnessed.tools.Toolkit` is one)."""

    def get(self, name: str) -> Tool | None: ...


@dataclass(frozen=True, slots=True)
class Verdict:
    """What happens to one call: it runs, it runs because the user approved, or it is refused."""

    kind: Literal["run", "approved", "refused"]
    text: str = ""
    feedback: str | None = None
    """What the user said with an approval (a question's answer: :attr:`ApprovalGate.answers`)."""


@dataclass(frozen=True, slots=True)
class Review:
    """The decisions for one step: verdicts, and the requests still needing an answer."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    asks: list[PendingConfirmation] = field(default_factory=list)


class ApprovalGate:
    """The agent's permission configuration and the tools' own checks."""

    def __init__(
        self,
        toolkit: ToolLookup,
        *,
        mode: PermissionMode | str | None = None,
        rules: Sequence[PermissionRule] = (),
        checks: Mapping[str, ToolPermissionCheck] | None = None,
        confirmation_timeout: float | None = None,
    ) -> None:
        if confirmation_timeout is not None and confirmation_timeout <= 0:
            raise ValueError("confirmation_timeout must be positive seconds or None")
        for name, check in (checks or {}).items():
            if not isinstance(name, str) or not name or not callable(check):
                raise TypeError(
                    f"permission_checks must map tool names to async check functions, got "
                    f"{name!r}: {check!r}"
                )
        for rule in rules:
            if not isinstance(rule, PermissionRule):
                raise TypeError(f"permission_rules must hold PermissionRule objects, got {rule!r}")
        self.toolkit = toolkit
        self.mode = PermissionMode.parse(mode) if mode is not None else None
        self.rules = tuple(rules)
        self.checks: dict[str, ToolPermissionCheck] = dict(checks or {})
        self.confirmation_timeout = confirmation_timeout
        self.broker = ConfirmationBroker()
        self.answers: dict[str, str] = {}
        """Answers given with the approval of a call to a tool in :attr:`answer_tools`, by call
        id, from the moment the call runs until the tool takes its answer (``ask_user``)."""
        self.answer_tools: set[str] = set()
        self.forwarded = ForwardedRequests()
        """Sub-agents' requests shown in this agent's streams, answered through it."""
        self._tool_checks: dict[str, tuple[Tool, ToolPermissionCheck]] = {}
        self._refusals: list[Refusal] = []

    def add_refusal(self, refusal: Refusal) -> None:
        """A rule that refuses calls before they run (checked by its owner's
        ``before_tool_call``): calls it refuses are never put to the user."""
        self._refusals.append(refusal)

    def _refused(self, call: ToolUseBlock, tool: Tool, state: AgentState) -> bool:
        refusals = self._refusals
        return bool(refusals) and any(r(call, tool, state) is not None for r in refusals)

    def add_tool_check(self, tool: Tool, check: ToolPermissionCheck) -> None:
        """A tool's own check (``plan_exit`` asks to approve the plan). It applies only while
        that very tool is the one registered under its name, and a check given for the name
        in ``checks`` wins over it."""
        self._tool_checks[tool.name] = (tool, check)

    def check_for(self, name: str, tool: Tool) -> ToolPermissionCheck | None:
        """The check for a call to ``tool`` (``None``: rules and mode decide)."""
        check = self.checks.get(name)
        if check is not None:
            return check
        own = self._tool_checks.get(name)
        return own[1] if own is not None and own[0] is tool else None

    def settings(self, state: AgentState) -> PermissionSettings:
        return PermissionSettings.resolve(self.mode, self.rules, state.get(PERMISSIONS))

    async def review(
        self, calls: Sequence[ToolUseBlock], state: AgentState, parked: ParkedStep | None = None
    ) -> Review:
        """Decide every call; answers already given for a ``parked`` step are honoured."""
        settings = self.settings(state)
        review = Review()
        for call in calls:
            tool = self.toolkit.get(call.name)
            if (
                tool is None  # the toolkit answers with "unknown tool"
                or INVALID_ARGUMENTS_KEY in call.input
                or self._refused(call, tool, state)  # blocked anyway: never ask
            ):
                review.verdicts[call.id] = Verdict("run")
                continue
            earlier = parked.for_call(call.id) if parked is not None else None
            # Rules and mode are decided first: a deny set after the user approved still wins.
            decision = await evaluate(call, tool, state, settings, self.check_for(call.name, tool))
            if decision.behavior == "allow":
                review.verdicts[call.id] = Verdict("run")
            elif decision.behavior == "deny":
                review.verdicts[call.id] = Verdict(
                    "refused", f"Permission denied: {decision.reason}. The call did not run."
                )
            elif earlier is not None and earlier.answered:
                review.verdicts[call.id] = (
                    Verdict("approved", feedback=earlier.feedback)
                    if earlier.approved
                    else Verdict("refused", declined_text(earlier))
                )
            elif earlier is not None:
                review.asks.append(earlier)
            else:
                review.asks.append(
                    PendingConfirmation.new(
                        call, decision.reason, decision.details, decision.declined_message
                    )
                )
        return review

    def guard(
        self, verdicts: Mapping[str, Verdict], app_guard: ToolGuard | None = None
    ) -> StepGuard:
        return StepGuard(self, dict(verdicts), app_guard)


class StepGuard:
    """The toolkit guard for one step (see the module docstring)."""

    def __init__(
        self, gate: ApprovalGate, verdicts: dict[str, Verdict], app_guard: ToolGuard | None
    ) -> None:
        self.gate = gate
        self.verdicts = verdicts
        self.app_guard = app_guard

    async def __call__(self, call: ToolUseBlock, tool: Tool, context: ToolContext) -> str | None:
        state = context.state
        verdict = self.verdicts.get(call.id, Verdict("run"))
        if verdict.kind == "refused":
            return verdict.text
        if verdict.kind == "approved" and call.name in self.gate.answer_tools:
            self.gate.answers[call.id] = verdict.feedback or ""
        if verdict.kind == "run":
            # Decided before the step ran; the state may have changed since (plan mode left,
            # a tool's own check): decide again with everything, rules and mode included.
            gate = self.gate
            decision = await evaluate(
                call, tool, state, gate.settings(state), gate.check_for(call.name, tool)
            )
            if decision.behavior == "deny":
                return f"Permission denied: {decision.reason}. The call did not run."
            if decision.behavior == "ask":
                return (
                    f"This call now needs the user's approval ({decision.reason}) because the "
                    "state changed earlier in this step; it did not run. Call it again to ask."
                )
        if self.app_guard is not None:
            return await self.app_guard(call, tool, context)
        return None
