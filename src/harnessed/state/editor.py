"""StateEditor: changes to a session's structured state made by application code.

A change (begin a task, confirm a requirement, enter plan mode, set a permission mode, record
an answer …) runs under the same per-session lock as the agent's calls: load the stored state,
apply the change, save, then append the change's records to the session log. If a call of that
session is running, the change waits until the call ends, so it can never interleave with a
step; a change that raises saves nothing. (Answers to confirmation requests do not wait for a
running call that is asking for them: see ``HarnessAgent.respond``.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harnessed.log.record import NewRecord
from harnessed.log.store import SessionLogStore
from harnessed.runtime import RuntimeContext, SessionLocks, SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.state.store import AgentStateStore

__all__ = ["Change", "StateEditor"]

Change = Callable[[AgentState], Sequence[tuple[str, Mapping[str, Any]]] | None]
"""Changes the state in place and returns the log records to append, or ``None`` when there
was nothing to change (then nothing is saved)."""


class StateEditor:
    def __init__(
        self,
        agent_id: str,
        state_store: AgentStateStore,
        session_store: SessionLogStore,
        locks: SessionLocks,
    ) -> None:
        self.agent_id = agent_id
        self.state_store = state_store
        self.session_store = session_store
        self.locks = locks

    def resolve(self, ctx: RuntimeContext | None) -> RuntimeContext:
        return (ctx or RuntimeContext()).resolved(self.agent_id)

    async def read(self, ctx: RuntimeContext | None) -> AgentState:
        """The stored state (without the lock: a snapshot as of the last saved step)."""
        ctx = self.resolve(ctx)
        key = SessionRef(self.agent_id, ctx.user_id, ctx.session)
        state = await self.state_store.load(key)
        return state if state is not None else AgentState.new(key)

    async def change(self, ctx: RuntimeContext | None, change: Change) -> AgentState:
        """Apply ``change`` to the stored state under the session lock; returns the state."""
        ctx = self.resolve(ctx)
        key = SessionRef(self.agent_id, ctx.user_id, ctx.session)
        async with self.locks.hold(self.agent_id, ctx.user_id, ctx.session):
            state = await self.state_store.load(key)
            if state is None:
                state = AgentState.new(key)
            records = change(state)
            if records is None:
                return state
            await self.state_store.save(state)
            if records:
                await self.session_store.append(
                    SessionRef(self.agent_id, ctx.user_id, ctx.session),
                    [
                        NewRecord(kind, {**payload, "by": "application"}, run_id=ctx.run_id)
                        for kind, payload in records
                    ],
                )
            return state
