"""Usage added up: requests, tokens and their price in USD over a call, a session or a tree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harnessed.models.base import Usage

__all__ = ["UsageTotals"]


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Requests, tokens and cost added up.

    ``input_tokens`` is the whole prompt (cached parts included), as :class:`Usage` reports it.
    ``cost_usd`` adds up the requests whose price is known; ``unpriced_requests`` counts the
    others (an unknown model, or a server that reported no usage). When no request could be
    priced ``cost_usd`` is ``None``: unknown, never 0.
    """

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    unpriced_requests: int = 0

    def add(self, usage: Usage | None, cost_usd: float | None) -> UsageTotals:
        """These totals plus one request with ``usage`` (``None``: not reported) that cost
        ``cost_usd`` (``None``: unknown)."""
        u = usage or Usage()
        priced = cost_usd is not None
        cost = self.cost_usd
        if cost_usd is not None:
            cost = (cost or 0.0) + cost_usd
        return UsageTotals(
            self.requests + 1,
            self.input_tokens + u.input_tokens,
            self.output_tokens + u.output_tokens,
            self.cache_read_tokens + u.cache_read_tokens,
            self.cache_write_tokens + u.cache_write_tokens,
            cost,
            self.unpriced_requests + (not priced),
        )

    def __add__(self, other: UsageTotals) -> UsageTotals:
        if not isinstance(other, UsageTotals):
            return NotImplemented
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return UsageTotals(
            self.requests + other.requests,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            sum(costs) if costs else None,
            self.unpriced_requests + other.unpriced_requests,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": self.cost_usd,
            "unpriced_requests": self.unpriced_requests,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> UsageTotals:
        """Totals from :meth:`to_dict` data; missing or malformed fields count as 0."""
        if not isinstance(data, Mapping):
            return cls()

        def number(name: str) -> int:
            value = data.get(name)
            return value if isinstance(value, int) and value >= 0 else 0

        cost = data.get("cost_usd")
        return cls(
            number("requests"),
            number("input_tokens"),
            number("output_tokens"),
            number("cache_read_tokens"),
            number("cache_write_tokens"),
            float(cost) if isinstance(cost, int | float) and cost >= 0 else None,
            number("unpriced_requests"),
        )

    def describe_cost(self) -> str:
        """The cost for people: ``$0.0123``, ``$0.0123 + 2 unpriced requests``, ``unknown``."""
        if self.cost_usd is None:
            return "unknown" if self.requests else "$0"
        text = f"${self.cost_usd:.4f}"
        if self.unpriced_requests:
            plural = "s" if self.unpriced_requests != 1 else ""
            text += f" + {self.unpriced_requests} unpriced request{plural}"
        return text
