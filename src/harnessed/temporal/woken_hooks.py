"""The ``on_woken`` hooks on Temporal: called by the worker that runs the wake-up workflow's
last activity, once the woken turn has ended.

The hooks get the wake-up and an :class:`~harnessed.turns.ended.EndedTurn` (the read API of
a live turn over the turn's end: ``result()``, ``events()``, ``batches()``), since the turn
ran as its own workflow, its steps on any worker.

Once per firing, as far as the world allows: after the hooks returned, a ``wakeup/woken``
record with the turn's id goes to the session log; an attempt of the activity that finds it
(a retry after the worker died once the record was written) calls nothing. A worker that dies
after a hook sent its message but before the record was written leaves the retry to send it
again: at least once, with the turn's id (``turn.id``, the same in every attempt) as the
idempotency key a receiver can drop a repeat by.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from harnessed.events import AgentEndEvent
from harnessed.log.record import NewRecord
from harnessed.messages import Msg
from harnessed.runtime import SessionRef
from harnessed.temporal.runtime import TurnFailedError
from harnessed.temporal.schema import WakeupWoken
from harnessed.turns.ended import EndedTurn

__all__ = ["WOKEN_RECORD", "OnWokenHook", "call_woken_hooks", "ended_turn"]

logger = logging.getLogger(__name__)

WOKEN_RECORD = "wakeup/woken"
"""The session log record saying the hooks of a woken turn were called (payload: ``wakeup``,
``turn``)."""

OnWokenHook = Callable[[Any, Any], Awaitable[None]]
"""``(wakeup, turn)``: the shape of ``harnessed.wakeups.OnWoken``."""

_LOOK_BACK = 100
"""How many ``wakeup/woken`` records of a session are searched for the firing's turn."""


def ended_turn(woken: WakeupWoken) -> EndedTurn:
    """The woken turn as its hooks read it."""
    turn = woken.turn
    messages = [Msg.from_dict(m) for m in turn.messages]
    result = woken.result
    if result is None:
        error = TurnFailedError("WorkflowError", woken.error or "the turn's workflow failed")
        return EndedTurn(turn.run_id, None, error=error, messages=messages)
    if result.status == "error":
        error = TurnFailedError(result.error_type or "Error", result.error or "")
        return EndedTurn(turn.run_id, None, error=error, messages=messages)
    end = AgentEndEvent(
        reply=Msg.from_dict(result.reply),
        status=result.status,  # type: ignore[arg-type]
        iterations=result.iterations,
        pending=tuple(result.pending),
        run_id=turn.run_id,
        session_id=turn.session_id,
    )
    return EndedTurn(turn.run_id, end, messages=messages)


async def call_woken_hooks(
    agent: Any,
    capability: Any,
    woken: WakeupWoken,
    extra: OnWokenHook | None,
    lease: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
) -> bool:
    """Call the capability's ``on_woken`` and ``extra`` with the firing's wake-up and ended
    turn, unless the session log says they were called; ``lease`` holds the session's steps
    while the record is written. ``False``: called before."""
    turn = woken.turn
    key = SessionRef(agent.name, turn.user_id, turn.session_id)
    hooks = [h for h in (getattr(capability, "on_woken", None), extra) if h is not None]
    if not hooks:
        return True
    if await _called(agent, key, turn.run_id):
        return False
    wakeup = capability.restore(woken.wakeup)
    ended = ended_turn(woken)
    for hook in hooks:
        try:
            await hook(wakeup, ended)
        except Exception:  # as in process: logged, nothing else changes
            logger.exception("the on_woken hook failed for wake-up %s", wakeup.id)
    payload = {"wakeup": wakeup.id, "turn": turn.run_id}
    async with lease():
        if not await _called(agent, key, turn.run_id):
            await agent.session_store.append(key, [NewRecord(WOKEN_RECORD, payload)])
    return True


async def _called(agent: Any, key: SessionRef, run_id: str) -> bool:
    records = await agent.session_store.tail(key, _LOOK_BACK, types=[WOKEN_RECORD])
    return any(r.payload.get("turn") == run_id for r in records)
