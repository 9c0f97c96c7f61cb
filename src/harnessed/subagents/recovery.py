"""After a restart: tasks the records call running, but no task of this process runs."""

from __future__ import annotations

from harnessed.capabilities.base import CallContext
from harnessed.cost.meter import METER_KEY
from harnessed.messages import Msg
from harnessed.permissions.forwarded import ForwardedLog
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.subagents.board import Running, TaskBook
from harnessed.subagents.child import LINK_KEY, ChildOutcome, ChildRun
from harnessed.subagents.core import (
    COMPLETED,
    RESUMED,
    SPAWNED,
    background,
    completed_payload,
    is_ended,
    owner_of,
    raw_tasks,
)
from harnessed.subagents.declarations import caller_ids
from harnessed.subagents.delegate import Delegate
from harnessed.subagents.records import TaskRecord, TaskStatus
from harnessed.subagents.spawning import Spawning, approvals_of
from harnessed.subagents.spec import SubagentSpec

__all__ = ["Recovery"]


class Recovery(Spawning):
    """Resuming or failing the tasks a stopped process left running."""

    async def _recover(self, call: CallContext) -> None:
        """Tasks the saved records call running but no task of this process runs: resume each
        from its sub-agent's log, or mark it failed with the reason."""
        board = self.shared.board
        raw = raw_tasks(self.section(call.state))
        if all(is_ended(t) or t.get("task_id") in board.running for t in raw):
            return
        book = self.book(call.state)
        stale = [r for r in book.tasks.values() if not r.ended and r.task_id not in board.running]
        specs = await self.declarations.all(*caller_ids(call))
        # requests the stopped process forwarded are closed: a resumed task asks again
        await ForwardedLog(self.host.session_store, owner_of(call)).close_tasks(
            {r.task_id for r in stale}
        )
        for record in stale:
            try:
                await self._resume(call, book, record, specs.get(record.agent_id))
            except Exception as exc:
                failed = record.moved(
                    TaskStatus.FAILED,
                    error=(
                        "the process running this task stopped, and the task could not be "
                        f"resumed: {type(exc).__name__}: {exc}"
                    ),
                )
                book.put(failed)
                call.record(COMPLETED, completed_payload(failed))
        self.set_section(call.state, book.data())

    async def _resume(
        self, call: CallContext, book: TaskBook, record: TaskRecord, spec: SubagentSpec | None
    ) -> None:
        if spec is None:
            raise LookupError(f"the sub-agent {record.agent_id!r} is no longer declared")
        child = self._child(spec, call.user_id, record.child_session)
        link = ChildRun(record.task_id, record.depth, record.agent_key)
        extras = {k: v for k, v in call.runtime.extras.items() if k not in (LINK_KEY, METER_KEY)}
        if METER_KEY in call.values:  # the sub-agent's spending counts toward this call's
            extras[METER_KEY] = call.values[METER_KEY]
        ctx = RuntimeContext(call.user_id, record.child_session, extras={**extras, LINK_KEY: link})
        since = await _since_spawn(child, ctx, record.task_id)
        started = any(m.role == "user" for m in since)
        record = background(record)
        book.put(record)
        running = Running(
            record, owner_of(call), call.runtime, link, approvals=approvals_of(call, spec)
        )
        last = since[-1] if since else None
        call.record(RESUMED, {"task_id": record.task_id, "child_session": record.child_session})
        if started and last is not None and last.role == "assistant" and not last.tool_uses:
            # it had finished; only its parent never heard
            outcome = ChildOutcome(
                "COMPLETED",
                result=last.text.strip(),
                reply=last,
                output=last.metadata.get("output"),
            )
            call.record(COMPLETED, completed_payload(book.finish(record, outcome, delivered=False)))
            return
        self._launch(running, child, ctx, None if started else record.task)


async def _since_spawn(child: Delegate, ctx: RuntimeContext, task_id: str) -> list[Msg]:
    """The messages the sub-agent's log holds for this task (after its ``subagent/spawned``
    record): what it was given and how far it got."""
    records = await child.session_store.read(SessionRef(child.name, ctx.user_id, ctx.session))
    start = next(
        (
            i
            for i, r in enumerate(records)
            if r.type == SPAWNED and r.payload.get("task_id") == task_id
        ),
        None,
    )
    if start is None:
        return []
    return [r.message for r in records[start + 1 :] if r.message is not None]
