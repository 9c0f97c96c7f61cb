"""The usage meter of one call: what it spent, what its session spent, and its limits.

Each call has a :class:`UsageMeter` (capabilities find it in ``CallContext.values``). A
sub-agent's call finds its parent's meter in its :class:`~harnessed.runtime.RuntimeContext`
extras (the sub-agents capability puts it there when it spawns the sub-agent), so what
a sub-agent spends is added to its parent's call as it happens, and the sub-agent stops when
any agent above it has reached a limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.cost.limits import LimitReached, Unset, UsageLimits
from harnessed.cost.prices import PriceTable, default_prices
from harnessed.models.base import Usage
from harnessed.models.usage import UsageTotals
from harnessed.runtime import RuntimeContext

__all__ = ["METER_KEY", "UsageMeter"]

METER_KEY = "harnessed.usage_meter"
"""The key of a call's meter in ``CallContext.values``, and of the parent call's meter in a
sub-agent's ``RuntimeContext.extras``."""


class UsageMeter:
    """Adds up one call's requests (its own and its sub-agents') and checks its limits."""

    def __init__(
        self,
        *,
        limits: UsageLimits | None = None,
        session_limits: UsageLimits | None = None,
        parent: UsageMeter | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.limits = limits
        self.session_limits = session_limits
        self.parent = parent
        self.prices = prices or default_prices()
        self.own = UsageTotals()
        """This agent's own requests in this call."""
        self.tree = UsageTotals()
        """This call's requests and those of the sub-agents it ran."""
        self.before = UsageTotals()
        """The session's totals before this call (read from its log when a session limit
        needs them)."""

    @classmethod
    def for_call(
        cls,
        agent: tuple[UsageLimits | None, UsageLimits | None],
        call: tuple[UsageLimits | Unset | None, UsageLimits | Unset | None],
        runtime: RuntimeContext,
        prices: PriceTable,
    ) -> UsageMeter:
        """The meter of one call: the call's limits where given (``DEFAULT``: the agent's),
        counting toward the meter of the call that spawned it, if any."""
        limits, session = (
            mine if isinstance(given, Unset) else given
            for mine, given in zip(agent, call, strict=True)
        )
        return cls(
            limits=limits, session_limits=session, parent=cls.of_parent(runtime), prices=prices
        )

    @classmethod
    def of_parent(cls, runtime: RuntimeContext) -> UsageMeter | None:
        found = runtime.extras.get(METER_KEY)
        return found if isinstance(found, UsageMeter) else None

    # ----------------------------------------------------------------- counting
    def add(
        self, usage: Usage | None, models: Sequence[str | None], provider: str | None = None
    ) -> float | None:
        """Count one of this agent's requests; return its cost (``None``: unknown). The first
        of ``models`` (the name the server reported, the name asked for) with a price wins."""
        cost = None
        for model in dict.fromkeys(m for m in models if m):
            cost = self.prices.price(model, usage, provider)
            if cost is not None:
                break
        self.own = self.own.add(usage, cost)
        self._add_to_tree(usage, cost)
        return cost

    def _add_to_tree(self, usage: Usage | None, cost: float | None) -> None:
        self.tree = self.tree.add(usage, cost)
        if self.parent is not None:
            self.parent._add_to_tree(usage, cost)

    @property
    def session(self) -> UsageTotals:
        """The session's totals with its sub-agents, this call included."""
        return self.before + self.tree

    # ------------------------------------------------------------------- limits
    def reached(self) -> LimitReached | None:
        """The first limit reached: this call's, this session's, then any parent's."""
        if self.limits is not None:
            hit = self.limits.reached(self.tree)
            if hit is not None:
                return LimitReached(hit[0], "call", hit[1], hit[2])
        if self.session_limits is not None:
            hit = self.session_limits.reached(self.session)
            if hit is not None:
                return LimitReached(hit[0], "session", hit[1], hit[2])
        if self.parent is not None:
            above = self.parent.reached()
            if above is not None:
                return LimitReached(above.limit, "parent", above.used, above.maximum)
        return None
