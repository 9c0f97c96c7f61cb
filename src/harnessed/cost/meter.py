"""The usage meter of one call: what it spent, what its session spent, and its limits.

Each call has a :class:`UsageMeter` (capabilities find it in ``CallContext.values``). A
sub-agent's call finds its parent's meter in its :class:`~harnessed.runtime.RuntimeContext`
extras (the sub-agents capability puts it there when it spawns the sub-agent), so what
a sub-agent spends is added to its parent's call as it happens, and the sub-agent stops when
any agent above it has reached a limit.

A call's end record holds what the call spent up to then. Work that goes on after it — a
memory flush after the call, a sub-agent still running in the background — keeps adding to the
meter; once the call is closed (:meth:`UsageMeter.close`) those additions are handed to the
call's late sink, which writes them to the session log as ``usage`` records, so the session's
totals (and its limit) include them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from harnessed.cost.limits import LimitReached, Unset, UsageLimits
from harnessed.cost.prices import PriceTable, default_prices
from harnessed.models.base import Usage
from harnessed.models.usage import UsageTotals
from harnessed.runtime import RuntimeContext

__all__ = ["METER_KEY", "LateSink", "UsageMeter"]

logger = logging.getLogger(__name__)

LateSink = Callable[[UsageTotals], Awaitable[None]]
"""Writes spending that came after the call's end (a ``usage`` record in the session log)."""

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
        self.closed = False
        """The call has ended: its end record holds :attr:`tree` as it was then."""
        self._sink: LateSink | None = None
        self._late = UsageTotals()
        self._writer: asyncio.Task[None] | None = None

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
        if self.closed:
            self._late = self._late.add(usage, cost)
            self._schedule()
        if self.parent is not None:
            self.parent._add_to_tree(usage, cost)

    # -------------------------------------------------------- after the call's end
    def close(self, sink: LateSink | None) -> None:
        """The call has ended and recorded :attr:`tree`: what is added from now on is handed
        to ``sink`` (``None``: kept in :attr:`tree` only)."""
        if not self.closed:
            self.closed, self._sink = True, sink

    def _schedule(self) -> None:
        if self._sink is None or (self._writer is not None and not self._writer.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the event loop: the next addition on it writes this too
            return
        self._writer = loop.create_task(self._drain(), name="usage-after-call")

    async def _drain(self) -> None:
        while self._late.requests and self._sink is not None:
            late, self._late = self._late, UsageTotals()
            try:
                await self._sink(late)
            except Exception:
                logger.warning(
                    "could not record %d request(s) made after the call ended", late.requests,
                    exc_info=True,
                )  # fmt: skip

    async def settled(self) -> None:
        """Wait until the spending added after the end of this call and of the calls above it
        has been written."""
        meter: UsageMeter | None = self
        while meter is not None:
            while meter._writer is not None and not meter._writer.done():
                await asyncio.shield(meter._writer)
            meter = meter.parent

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
