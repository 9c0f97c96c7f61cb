"""Errors raised while preparing a request. Each carries the manifest validation status."""

from __future__ import annotations

__all__ = [
    "ContextBudgetExceededError",
    "ContextConflictError",
    "ContextError",
    "ToolPairingError",
]


class ContextError(RuntimeError):
    """Request preparation failed; ``validation`` is the manifest status it produced."""

    validation: str = "build_failed"


class ContextBudgetExceededError(ContextError):
    """System instructions and required material (or the final request) do not fit the limit."""

    validation = "budget_exceeded"

    def __init__(self, message: str, *, estimate: int, limit: int) -> None:
        super().__init__(message)
        self.estimate = estimate
        self.limit = limit


class ToolPairingError(ContextError):
    """The request would contain a tool call without its result, or a result without its call."""

    validation = "invalid_tool_pairs"

    def __init__(self, problems: list[str]) -> None:
        shown = "; ".join(problems[:5]) + (
            f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        )
        super().__init__(f"the history has unpaired tool calls/results: {shown}")
        self.problems = problems


class ContextConflictError(ContextError):
    """Task/plan state or the history changed while the request was being prepared."""

    def __init__(self, message: str, *, validation: str) -> None:
        super().__init__(message)
        self.validation = validation
