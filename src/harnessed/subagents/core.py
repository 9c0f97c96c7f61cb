"""The core of the sub-agents capability: what it shares with the sub-agents it builds, the
session's task records, and saving the outcomes of finished tasks."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harnessed.capabilities.base import CallContext, Capability
from harnessed.events import CustomEvent
from harnessed.models.base import Model
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.state.editor import Change
from harnessed.subagents.board import Board, Owner, Running, TaskBook
from harnessed.subagents.declarations import Declarations
from harnessed.subagents.records import TaskRecord, TaskStatus
from harnessed.tools.base import Tool

if TYPE_CHECKING:
    from harnessed.subagents.delegate import Delegate

__all__ = [
    "COMPLETED",
    "MAX_DEPTH",
    "RESUMED",
    "SPAWNED",
    "Shared",
    "TaskFinished",
    "TaskWatcher",
    "SubagentsCore",
    "background",
    "completed_payload",
    "is_ended",
    "owner_of",
    "raw_tasks",
]

logger = logging.getLogger(__name__)

SPAWNED = "subagent/spawned"
COMPLETED = "subagent/completed"
RESUMED = "subagent/resumed"
MAX_DEPTH = 3


@dataclass(frozen=True, slots=True)
class TaskFinished:
    """A sub-agent task of a parent session ended and its outcome was saved in the parent's
    records (so a turn of that session started now sees it)."""

    agent: str
    user_id: str
    session_id: str
    """The parent session."""
    task_id: str
    status: str


TaskWatcher = Callable[[TaskFinished], None]


@dataclass(slots=True)
class Shared:
    """What a parent and the sub-agents built for it share."""

    declarations: Declarations
    board: Board = field(default_factory=Board)
    max_depth: int = MAX_DEPTH
    models: dict[str, Model] = field(default_factory=dict)
    """The models of specs that name their own (built once, closed with the parent)."""
    watchers: list[TaskWatcher] = field(default_factory=list)
    """Told about every task that ended and was saved (see ``Subagents.on_task_finished``)."""


class SubagentsCore(Capability):
    """State and bookkeeping shared by the parts of :class:`~harnessed.subagents.Subagents`."""

    host: Delegate
    _shared: Shared | None
    _live: dict[Owner, CallContext]
    """The running call of each parent session (its stream gets the sub-agents' events)."""
    _children: dict[str, Delegate]
    _tools: list[Tool]

    @property
    def shared(self) -> Shared:
        if self._shared is None:
            raise RuntimeError("the Subagents capability is not set up on an agent yet")
        return self._shared

    @property
    def declarations(self) -> Declarations:
        """What may be spawned (``await subagents.declarations.all()``; ``.problems`` lists
        workspace files that were skipped and why)."""
        return self.shared.declarations

    def _nested(self) -> SubagentsCore:
        raise NotImplementedError

    # ------------------------------------------------------------- records
    def book(self, state: AgentState) -> TaskBook:
        """The task records of a session (a copy: write back with ``set_section``)."""
        return TaskBook(self.section(state))

    async def tasks(self, ctx: RuntimeContext | None = None) -> list[TaskRecord]:
        """The task records of a session, as last saved (for the application)."""
        state = await self.host.read_state(ctx)
        return list(self.book(state).tasks.values())

    def apply_finished(self, book: TaskBook, owner: Owner, call: CallContext | None) -> bool:
        """Write the outcomes of this session's tasks that ended in this process into
        ``book`` (logging them with the running call)."""
        changed = False
        for running in self.shared.board.of(owner):
            outcome = running.outcome
            record = book.tasks.get(running.record.task_id, running.record)
            if outcome is None or record.ended:
                continue
            ended = book.finish(record, outcome, delivered=False)
            changed = True
            if call is not None:
                self.announce(call, ended, book)
        return changed

    def announce(self, call: CallContext, record: TaskRecord, book: TaskBook) -> None:
        payload = completed_payload(record)
        call.record(COMPLETED, payload)
        call.publish(
            CustomEvent(
                name="subagent_completed",
                data={
                    **payload,
                    "session_input_tokens": book.input_tokens,
                    "session_output_tokens": book.output_tokens,
                },
                run_id=call.run_id,
                session_id=call.session_id,
            )
        )

    def _persist_later(self, running: Running) -> None:
        board = self.shared.board
        if running.owner in board.persisters:
            return  # the session's worker picks this one up too
        worker = asyncio.create_task(self._persist(running.owner, running.parent_ctx))
        board.persisters[running.owner] = worker
        board.persisting.add(worker)
        worker.add_done_callback(board.persisting.discard)

    async def _persist(self, owner: Owner, ctx: RuntimeContext) -> None:
        """Save the outcomes of a parent session's finished tasks in its records, several at
        a time (waits for a running call of that session; what that call saved already is
        left as it is)."""
        board = self.shared.board
        try:
            while True:
                finished = [r for r in board.of(owner) if r.outcome is not None]
                if not finished:
                    return

                try:
                    await self.host.change_state(ctx, self._saving(finished))
                except Exception:
                    logger.exception("could not save finished sub-agent tasks of %s", owner)
                for running in finished:
                    board.running.pop(running.record.task_id, None)
                self._tell_watchers(owner, finished)
        finally:
            board.persisters.pop(owner, None)

    def _tell_watchers(self, owner: Owner, finished: list[Running]) -> None:
        for running in finished:
            outcome = running.outcome
            news = TaskFinished(
                *owner, running.record.task_id, outcome.status if outcome else "FAILED"
            )
            for watcher in list(self.shared.watchers):
                try:
                    watcher(news)
                except Exception:
                    logger.exception("a task watcher failed on %s", news)

    def _saving(self, finished: list[Running]) -> Change:
        def change(state: AgentState) -> list[tuple[str, dict[str, Any]]] | None:
            book = self.book(state)
            records: list[tuple[str, dict[str, Any]]] = []
            for running in finished:
                record = book.tasks.get(running.record.task_id, running.record)
                if record.ended or running.outcome is None:
                    continue
                ended = book.finish(record, running.outcome, delivered=False)
                records.append((COMPLETED, completed_payload(ended)))
            if not records:
                return None
            self.set_section(state, book.data())
            return records

        return change


def background(record: TaskRecord) -> TaskRecord:
    return dataclasses.replace(record, background=True)


def raw_tasks(section: Any) -> list[Mapping[str, Any]]:
    """The stored task records as they are (cheap checks before anything is parsed)."""
    tasks = section.get("tasks") if isinstance(section, Mapping) else None
    return [t for t in tasks if isinstance(t, Mapping)] if isinstance(tasks, list) else []


def is_ended(raw: Mapping[str, Any]) -> bool:
    return raw.get("status") in ENDED


ENDED = frozenset(s.value for s in TaskStatus if s.ended)


def owner_of(call: CallContext) -> Owner:
    return (call.agent_name, call.user_id, call.session_id)


def completed_payload(record: TaskRecord) -> dict[str, Any]:
    return {
        "task_id": record.task_id,
        "agent_key": record.agent_key,
        "child_session": record.child_session,
        "status": record.status.value,
        "error": record.error,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
    }
