"""After a restart: tasks the records call running, but no task of this process runs; and
running one task to its end for a runtime that runs background tasks itself (Temporal)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnessed.capabilities.base import CallContext
from harnessed.cost.meter import METER_KEY
from harnessed.log.record import SessionRecord
from harnessed.messages import Msg
from harnessed.permissions.forwarded import ForwardedLog
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.subagents.board import Running, TaskBook
from harnessed.subagents.child import LINK_KEY, ChildOutcome, ChildRun, run_child
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
from harnessed.subagents.durable import task_runner
from harnessed.subagents.records import TaskRecord, TaskStatus
from harnessed.subagents.spawning import Spawning, approvals_of
from harnessed.subagents.spec import SubagentSpec
from harnessed.tools.base import ToolError
from harnessed.turns.holders import holder_is_gone
from harnessed.turns.notes import TurnNotes

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
        runner = task_runner(self.host)
        if runner is not None:  # the runtime runs them: make sure each one does (once)
            for record in stale:
                record = background(record)
                await runner.start_task(*owner_of(call), record.to_dict())
                book.put(record)
            self.set_section(call.state, book.data())
            return
        specs = await self.declarations.all(*caller_ids(call))
        # a task another live process runs (another server of the same stores) is its: that
        # process holds the sub-agent session's turn lease while the task runs
        elsewhere = {
            r.task_id
            for r in stale
            if await self._runs_elsewhere(r, specs.get(r.agent_id), call.user_id)
        }
        stale = [r for r in stale if r.task_id not in elsewhere]
        if not stale:
            return
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

    async def _runs_elsewhere(
        self, record: TaskRecord, spec: SubagentSpec | None, user_id: str
    ) -> bool:
        """Whether a live process holds the turn lease of the task's sub-agent session (its
        run holds it from start to end; a lease of a process of this host that is gone, or
        one that expired, does not count)."""
        if spec is None:
            return False
        try:
            child = self._child(spec, user_id, record.child_session)
        except ToolError:
            return False  # it cannot be built here: resuming says why
        gate = getattr(child, "turn_gate", None)
        if not isinstance(gate, TurnNotes):  # a gate that cannot say who holds a lease
            return False
        ctx = RuntimeContext(user_id, record.child_session)
        lease = await gate.holder(SessionRef.of(child.name, ctx).token)
        return lease is not None and not holder_is_gone(lease.holder)

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

    # ------------------------------------------------- for a runtime's workers
    async def run_task(
        self, user_id: str, session_id: str, data: Mapping[str, Any]
    ) -> ChildOutcome:
        """Run the background task of ``data`` (a ``TaskRecord.to_dict()`` of the parent
        session ``session_id``) to its end in this process: start it, or continue it from its
        sub-agent's log where an earlier attempt stopped (a tool call that attempt was in is
        answered as interrupted, never run again), or find how it ended. Its end is logged in
        the sub-agent's session once."""
        record = TaskRecord.from_dict(data)
        specs = await self.declarations.all(self.host.name, user_id, session_id)
        spec = specs.get(record.agent_id)
        if spec is None:
            why = f"the sub-agent {record.agent_id!r} is no longer declared"
            return ChildOutcome("FAILED", error=why)
        try:
            child = self._child(spec, user_id, record.child_session)
        except ToolError as exc:  # its declaration cannot be built (say, an unknown model)
            return ChildOutcome("FAILED", error=str(exc))
        link = ChildRun(record.task_id, record.depth, record.agent_key)
        ctx = RuntimeContext(user_id, record.child_session, extras={LINK_KEY: link})
        records = await _task_records(child, ctx, record.task_id)
        messages = [r.message for r in records if r.message is not None]
        last = messages[-1] if messages else None
        ended = next((r for r in records if r.type == COMPLETED), None)
        if ended is not None:  # an earlier attempt finished it and logged that
            status = str(ended.payload.get("status", "FAILED"))
            done = status == "COMPLETED" and last is not None
            return ChildOutcome(
                status,
                result=last.text.strip() if done and last is not None else None,
                error=ended.payload.get("error"),
                reply=last if done else None,
            )
        started = any(m.role == "user" for m in messages)
        if started and last is not None and last.role == "assistant" and not last.tool_uses:
            outcome = ChildOutcome("COMPLETED", result=last.text.strip(), reply=last)
        else:
            approvals = "deny" if spec.on_approval == "deny" else "fail"  # nobody attends it
            text = None if started else record.task
            outcome = await run_child(child, ctx, text, _drop, approvals=approvals)
        owner = (self.host.name, user_id, session_id)
        running = Running(record, owner, RuntimeContext(user_id, session_id), link)
        running.outcome = outcome
        await self._log_child_end(child, ctx, running)
        return outcome

    async def deliver_task(
        self, user_id: str, session_id: str, data: Mapping[str, Any], outcome: ChildOutcome
    ) -> bool:
        """Save how the task of ``data`` ended in its parent session's records (once: a
        record that ended already is left as it is); whether this saved it. The caller keeps
        the parent's steps out meanwhile (the Temporal runtime holds its step lease)."""
        record = TaskRecord.from_dict(data)
        owner = (self.host.name, user_id, session_id)
        link = ChildRun(record.task_id, record.depth, record.agent_key)
        running = Running(record, owner, RuntimeContext(user_id, session_id), link)
        running.outcome = outcome
        saving = self._saving([running])
        saved: list[bool] = []

        def change(state: Any) -> Any:
            records = saving(state)
            saved.append(records is not None)
            return records

        await self.host.change_state(running.parent_ctx, change)
        if saved and saved[-1]:
            self._tell_watchers(owner, [running])
            return True
        return False


def _drop(event: object) -> None:
    """A durable task's events go nowhere live (its parent may be in another process)."""


async def _from_spawn(
    child: Delegate, ctx: RuntimeContext, task_id: str
) -> tuple[list[SessionRecord], int | None]:
    """The sub-agent's log, and where this task's ``subagent/spawned`` record is in it."""
    records = await child.session_store.read(SessionRef(child.name, ctx.user_id, ctx.session))
    start = next(
        (
            i
            for i, r in enumerate(records)
            if r.type == SPAWNED and r.payload.get("task_id") == task_id
        ),
        None,
    )
    return records, start


async def _task_records(child: Delegate, ctx: RuntimeContext, task_id: str) -> list[SessionRecord]:
    """The records of the sub-agent's log since this task's ``subagent/spawned``."""
    records, start = await _from_spawn(child, ctx, task_id)
    if start is None:
        return []
    found: list[SessionRecord] = []
    for record in records[start + 1 :]:
        if record.type == SPAWNED:
            break  # the session's next task
        if record.type != COMPLETED or record.payload.get("task_id") == task_id:
            found.append(record)
    return found


async def _since_spawn(child: Delegate, ctx: RuntimeContext, task_id: str) -> list[Msg]:
    """The messages the sub-agent's log holds for this task (after its ``subagent/spawned``
    record): what it was given and how far it got."""
    records, start = await _from_spawn(child, ctx, task_id)
    if start is None:
        return []
    return [r.message for r in records[start + 1 :] if r.message is not None]
