"""Usage limits: how many requests, tokens or dollars a call or a session may spend."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, TypeAlias

from harnessed.models.usage import UsageTotals

__all__ = ["DEFAULT", "LimitName", "LimitReached", "LimitScope", "UsageLimits", "Unset"]


class Unset:
    """The type of :data:`DEFAULT`: "the agent's own setting" for a per-call argument."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = Unset()
"""A per-call limit argument left as the agent's setting."""

LimitName: TypeAlias = Literal["requests", "input_tokens", "output_tokens", "cost_usd"]
LimitScope: TypeAlias = Literal["call", "session", "parent"]


@dataclass(frozen=True, slots=True)
class UsageLimits:
    """Most a call (or a session) may spend; ``None`` means no limit of that kind.

    A limit counts the model requests of the agent and of the sub-agents it runs meanwhile.
    Once one is reached the call ends at its next safe point (before a model request, never
    inside a tool) with status ``limit``: a limit stops further spending, it cannot undo the
    request that crossed it.
    """

    requests: int | None = None
    """Model requests."""
    input_tokens: int | None = None
    """Prompt tokens, cached ones included (as the provider reports them)."""
    output_tokens: int | None = None
    """Generated tokens."""
    cost_usd: float | None = None
    """US dollars, at the price table's prices. Requests of a model without a known price
    cost nothing here: with only such requests this limit is never reached."""

    def __post_init__(self) -> None:
        for name in ("requests", "input_tokens", "output_tokens"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(
                    f"UsageLimits.{name} must be a positive integer or None, got {value!r}"
                )
        cost = self.cost_usd
        if cost is not None and (
            isinstance(cost, bool)
            or not isinstance(cost, int | float)
            or not math.isfinite(cost)
            or cost <= 0
        ):
            raise ValueError(
                f"UsageLimits.cost_usd must be a positive number or None, got {cost!r}"
            )

    def reached(self, totals: UsageTotals) -> tuple[LimitName, float, float] | None:
        """The first limit ``totals`` reached, with what was used and the limit."""
        checks: list[tuple[LimitName, float | None, float]] = [
            ("requests", self.requests, totals.requests),
            ("input_tokens", self.input_tokens, totals.input_tokens),
            ("output_tokens", self.output_tokens, totals.output_tokens),
            ("cost_usd", self.cost_usd, totals.cost_usd or 0.0),
        ]
        for name, limit, used in checks:
            if limit is not None and used >= limit:
                return name, used, limit
        return None


@dataclass(frozen=True, slots=True)
class LimitReached:
    """A limit a call reached: which (``limit``), whose (``scope``: this call, this session,
    or the call of a parent agent running this one as a sub-agent), how much was used."""

    limit: LimitName
    scope: LimitScope
    used: float
    maximum: float

    def describe(self) -> str:
        whose = {
            "call": "this call",
            "session": "this session",
            "parent": "the agent that delegated this task",
        }[self.scope]
        if self.limit == "cost_usd":
            amounts = f"${self.used:.4f} of ${self.maximum:.4f}"
        else:
            amounts = f"{int(self.used):,} of {int(self.maximum):,}"
        noun = {
            "requests": "model requests",
            "input_tokens": "input tokens",
            "output_tokens": "output tokens",
            "cost_usd": "cost",
        }[self.limit]
        return f"{whose} reached its limit on {noun} ({self.limit}: {amounts})"
