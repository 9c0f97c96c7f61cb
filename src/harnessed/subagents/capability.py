"""Subagents: the capability that lets an agent delegate work to sub-agents.

It gives the model ``agent_spawn``, ``agent_send``, ``agent_list``, ``task_output``,
``task_cancel`` and ``task_list`` (:mod:`harnessed.subagents.tools`), keeps the task records
in its section of the session's state, forwards the sub-agents' events into the parent's
stream (tagged with ``source``), tells the model about tasks that finished in the background
with one reminder before its next reasoning step, and after a restart resumes the tasks that
were running (or marks them failed with the reason).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from harnessed.capabilities.base import CallContext, CallEnd, Capability, CapabilityHost, ModelCall
from harnessed.context.state_blocks import StateBlock
from harnessed.events import CustomEvent, Event
from harnessed.messages import new_id
from harnessed.permissions.pending import PENDING_KEY
from harnessed.runtime import RuntimeContext
from harnessed.session.record import NewRecord, RecordType, SessionKey
from harnessed.state.agent_state import AgentState
from harnessed.state.editor import Change
from harnessed.subagents.board import Board, Owner, Running, TaskBook
from harnessed.subagents.child import (
    LINK_KEY,
    ChildOutcome,
    ChildRun,
    build_child,
    isolated_dir,
    link_of,
    parent_tools,
    run_child,
    tagged,
)
from harnessed.subagents.declarations import Declarations
from harnessed.subagents.delegate import is_agent
from harnessed.subagents.records import TaskRecord, TaskStatus, child_session_id
from harnessed.subagents.spec import SubagentSpec
from harnessed.subagents.texts import MAX_LISTED, available_block, reminder
from harnessed.tools.base import Tool, ToolError

if TYPE_CHECKING:
    from harnessed.subagents.delegate import Delegate

__all__ = ["SPAWNED", "COMPLETED", "Subagents"]

logger = logging.getLogger(__name__)

SPAWNED = "subagent/spawned"
COMPLETED = "subagent/completed"
RESUMED = "subagent/resumed"
MAX_DEPTH = 3


@dataclass(slots=True)
class _Shared:
    """What a parent and the sub-agents built for it share."""

    declarations: Declarations
    board: Board = field(default_factory=Board)
    max_depth: int = MAX_DEPTH


class Subagents(Capability):
    """Sub-agents and background tasks (BEHAVIOUR.md §11).

    Args:
        agents: Declarations in code: :class:`SubagentSpec` objects and/or
            :class:`~harnessed.HarnessAgent` instances (an agent's name is its id).
        general_purpose: Offer the built-in ``general-purpose`` sub-agent (the parent's model
            and tools, the shared workspace).
        workspace_files: Read ``subagents/<id>.md`` declarations from the workspace.
        max_depth: How deep sub-agents may nest (a sub-agent of a sub-agent is depth 2).
    """

    name = "subagents"

    def __init__(
        self,
        agents: Sequence[SubagentSpec | Delegate] = (),
        *,
        general_purpose: bool = True,
        workspace_files: bool = True,
        max_depth: int = MAX_DEPTH,
    ) -> None:
        if not isinstance(max_depth, int) or not 1 <= max_depth <= 10:
            raise ValueError(f"Subagents max_depth must be 1 to 10, got {max_depth!r}")
        self._agents = tuple(agents)
        self._general = general_purpose
        self._files = workspace_files
        self._max_depth = max_depth
        self._shared: _Shared | None = None
        self._live: dict[Owner, CallContext] = {}
        self._children: dict[str, Delegate] = {}
        self._tools: list[Tool] = []

    # ------------------------------------------------------------------ setup
    def setup(self, host: CapabilityHost) -> None:
        from harnessed.subagents.tools import subagent_tools

        if not is_agent(host):
            raise ValueError("Subagents must be set up on a HarnessAgent")
        self.host = cast("Delegate", host)
        if self._shared is None:
            declarations = Declarations(
                self._agents,
                general_purpose=self._general,
                workspace=host.workspace,
                load_files=self._files,
            )
            self._shared = _Shared(declarations, max_depth=self._max_depth)
        for spec in self._agents:
            if isinstance(spec, SubagentSpec) and spec.agent is not None:
                _link(spec.agent)
            elif is_agent(spec):
                _link(cast("Delegate", spec))
        self._tools = subagent_tools(self)

    def _nested(self) -> Subagents:
        """The capability of a sub-agent built here: same declarations and task board."""
        nested = Subagents(max_depth=self._max_depth)
        nested._shared = self.shared
        return nested

    @property
    def shared(self) -> _Shared:
        if self._shared is None:
            raise RuntimeError("the Subagents capability is not set up on an agent yet")
        return self._shared

    @property
    def declarations(self) -> Declarations:
        """What may be spawned (``await subagents.declarations.all()``; ``.problems`` lists
        workspace files that were skipped and why)."""
        return self.shared.declarations

    def tools(self) -> Sequence[Tool]:
        return self._tools

    # ------------------------------------------------------------- per call
    async def before_call(self, call: CallContext) -> None:
        self._live[_owner(call)] = call
        await self.declarations.all()
        await self._recover(call)

    async def after_call(self, call: CallContext, end: CallEnd) -> None:
        owner = _owner(call)
        if self._live.get(owner) is call:
            del self._live[owner]

    async def before_model_request(self, call: CallContext) -> None:
        owner = _owner(call)
        raw = _raw_tasks(self.section(call.state))
        finished_here = any(r.outcome is not None for r in self.shared.board.of(owner))
        if not finished_here and not any(_ended(t) and not t.get("delivered") for t in raw):
            return  # the common case: nothing to tell, nothing parsed
        book = self.book(call.state)
        changed = self._apply_finished(book, owner, call)
        waiting = book.undelivered()
        if waiting:
            listed = waiting[:MAX_LISTED]
            call.add_messages(reminder(listed, len(waiting) - len(listed)))
            call.values[self.capability_name] = [r.task_id for r in listed]
        if changed:
            self.set_section(call.state, book.data())

    async def after_model_request(self, call: CallContext, model_call: ModelCall) -> None:
        listed = call.values.pop(self.capability_name, None)
        if not listed or model_call.response is None:
            return  # a failed request: the same tasks are listed again next time
        book = self.book(call.state)
        if book.mark_delivered(listed):
            self.set_section(call.state, book.data())

    def state_blocks(self, state: AgentState) -> Sequence[StateBlock]:
        specs = self.declarations.loaded()
        if specs is None:
            return ()
        running = [
            TaskRecord.from_dict(t) for t in _raw_tasks(self.section(state)) if not _ended(t)
        ]
        return (StateBlock("RUNTIME_STATE", available_block(specs, running)),)

    async def close(self) -> None:
        """Stop this process's sub-agent tasks without marking them ended: a task still
        running is resumed from its log when its parent session is used again."""
        board = self.shared.board
        for running in list(board.running.values()):
            if running.owner[0] == self.host.name and running.task is not None:
                running.abandoned = True
                running.task.cancel()
        tasks = [r.task for r in board.running.values() if r.task is not None]
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        pending = list(board.persisting)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    # ------------------------------------------------------------- records
    def book(self, state: AgentState) -> TaskBook:
        """The task records of a session (a copy: write back with ``set_section``)."""
        return TaskBook(self.section(state))

    async def tasks(self, ctx: RuntimeContext | None = None) -> list[TaskRecord]:
        """The task records of a session, as last saved (for the application)."""
        state = await self.host.read_state(ctx)
        return list(self.book(state).tasks.values())

    def _apply_finished(self, book: TaskBook, owner: Owner, call: CallContext | None) -> bool:
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
                self._announce(call, ended, book)
        return changed

    def _announce(self, call: CallContext, record: TaskRecord, book: TaskBook) -> None:
        payload = _completed_payload(record)
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

    # --------------------------------------------------------------- spawning
    async def start(
        self,
        call: CallContext,
        spec: SubagentSpec,
        label: str,
        text: str,
        *,
        background: bool,
    ) -> Running:
        """Start ``text`` on the sub-agent session ``spec.id:label`` of the calling session."""
        owner = _owner(call)
        book = self.book(call.state)
        self._apply_finished(book, owner, call)
        child_session = child_session_id(call.session_id, spec.id, label)
        busy = book.busy(f"{spec.id}:{label}")
        if busy is not None:
            raise ToolError(
                f"sub-agent {busy.agent_key} is still working on task {busy.task_id}; wait for "
                "it (task_output with block=true), cancel it, or use another label"
            )
        parent_link = link_of(call.runtime)
        depth = (parent_link.depth if parent_link is not None else 0) + 1
        if depth > self.shared.max_depth:
            raise ToolError(
                f"sub-agent depth limit reached: this agent is already at depth "
                f"{depth - 1} of {self.shared.max_depth}, so it cannot spawn further sub-agents; "
                "do the work yourself"
            )
        child = self._child(spec, call.user_id, child_session)
        task_id = new_id("task_")
        record = TaskRecord(
            task_id=task_id,
            agent_id=spec.id,
            label=label,
            child_session=child_session,
            task=text,
            background=background,
            depth=depth,
        )
        path = record.agent_key if parent_link is None else f"{parent_link.path}/{record.agent_key}"
        link = ChildRun(task_id, depth, path)
        extras = {k: v for k, v in call.runtime.extras.items() if k != LINK_KEY}
        child_ctx = RuntimeContext(call.user_id, child_session, extras={**extras, LINK_KEY: link})
        await self._inherit(child, child_ctx, call.state)
        record = record.moved(TaskStatus.RUNNING)
        book.put(record)
        self.set_section(call.state, book.data())
        spawned = {
            "task_id": task_id,
            "agent_id": spec.id,
            "label": label,
            "agent_key": record.agent_key,
            "child_agent": child.name,
            "child_session": child_session,
            "depth": depth,
            "background": background,
        }
        call.record(SPAWNED, spawned)
        await child.session_store.append(
            SessionKey(child.name, call.user_id, child_session),
            [
                NewRecord(
                    SPAWNED,
                    {
                        **spawned,
                        "parent_agent": self.host.name,
                        "parent_session": call.session_id,
                        "parent_run_id": call.run_id,
                    },
                )
            ],
        )
        running = Running(record, owner, call.runtime, link)
        self._launch(running, child, child_ctx, text)
        return running

    def _launch(
        self, running: Running, child: Delegate, ctx: RuntimeContext, text: str | None
    ) -> None:
        board = self.shared.board
        board.running[running.record.task_id] = running
        running.task = asyncio.create_task(self._run(running, child, ctx, text))

    async def _run(
        self, running: Running, child: Delegate, ctx: RuntimeContext, text: str | None
    ) -> ChildOutcome:
        key = running.record.agent_key

        def forward(event: Event) -> None:
            live = self._live.get(running.owner)
            if live is not None:
                live.publish(tagged(event, key))

        try:
            outcome = await run_child(child, ctx, text, forward)
        except asyncio.CancelledError:
            if running.abandoned:  # the process is closing: resumed from the log next time
                raise
            outcome = ChildOutcome("CANCELLED", error=running.link.cancel_reason or "cancelled")
        running.outcome = outcome
        running.done.set()
        await self._log_child_end(child, ctx, running)
        self._persist_later(running)
        return outcome

    async def _log_child_end(self, child: Delegate, ctx: RuntimeContext, running: Running) -> None:
        outcome = running.outcome
        assert outcome is not None
        try:
            await child.session_store.append(
                SessionKey(child.name, ctx.user_id, ctx.session),
                [
                    NewRecord(
                        COMPLETED,
                        {
                            "task_id": running.record.task_id,
                            "status": outcome.status,
                            "error": outcome.error,
                            "parent_agent": self.host.name,
                            "parent_session": running.owner[2],
                        },
                    )
                ],
            )
        except Exception:
            logger.exception("could not log the end of sub-agent task %s", running.record.task_id)

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
        finally:
            board.persisters.pop(owner, None)

    def _saving(self, finished: list[Running]) -> Change:
        def change(state: AgentState) -> list[tuple[str, dict[str, Any]]] | None:
            book = self.book(state)
            records: list[tuple[str, dict[str, Any]]] = []
            for running in finished:
                record = book.tasks.get(running.record.task_id, running.record)
                if record.ended or running.outcome is None:
                    continue
                ended = book.finish(record, running.outcome, delivered=False)
                records.append((COMPLETED, _completed_payload(ended)))
            if not records:
                return None
            self.set_section(state, book.data())
            return records

        return change

    async def _inherit(self, child: Delegate, ctx: RuntimeContext, parent: AgentState) -> None:
        """The child's session gets the parent's deny rules, permission mode and plan mode."""
        settings = self.host.approval_gate.settings(parent)
        deny = [r.to_dict() for r in settings.rules if r.behavior == "deny"]
        mode = settings.mode.value if settings.mode is not None else None
        plan = parent.plan

        def change(state: AgentState) -> list[tuple[str, dict[str, Any]]] | None:
            permissions: dict[str, Any] = {
                k: v for k, v in state.permissions.items() if k in (PENDING_KEY,)
            }
            if mode is not None:
                permissions["mode"] = mode
            if deny:
                permissions["rules"] = deny
            records: list[tuple[str, dict[str, Any]]] = []
            if permissions != state.permissions:
                state.set_permissions(permissions)
                records.append(
                    (
                        RecordType.PERMISSION_CHANGED,
                        {"action": "inherited", "mode": mode, "rules": deny},
                    )
                )
            if state.plan != plan:
                state.set_plan(plan)
                records.append(
                    (RecordType.PLAN_CHANGED, {"action": "inherited", "plan": plan.to_dict()})
                )
            return records or None

        await child.change_state(ctx, change)

    def _child(self, spec: SubagentSpec, user_id: str, child_session: str) -> Delegate:
        if spec.agent is not None:
            return spec.agent
        if spec.workspace == "shared" and spec.id in self._children:
            return self._children[spec.id]
        own = frozenset(t.name for t in self._tools)
        try:
            tools = parent_tools(self.host, spec, own)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        root = isolated_dir(self.host, user_id, child_session)
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        child = build_child(self.host, spec, tools, [self._nested()], isolated_root=root)
        if spec.workspace == "shared":
            self._children[spec.id] = child
        return child

    # --------------------------------------------------------------- restart
    async def _recover(self, call: CallContext) -> None:
        """Tasks the saved records call running but no task of this process runs: resume each
        from its sub-agent's log, or mark it failed with the reason."""
        board = self.shared.board
        raw = _raw_tasks(self.section(call.state))
        if all(_ended(t) or t.get("task_id") in board.running for t in raw):
            return
        book = self.book(call.state)
        stale = [r for r in book.tasks.values() if not r.ended and r.task_id not in board.running]
        specs = await self.declarations.all()
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
                call.record(COMPLETED, _completed_payload(failed))
        self.set_section(call.state, book.data())

    async def _resume(
        self, call: CallContext, book: TaskBook, record: TaskRecord, spec: SubagentSpec | None
    ) -> None:
        if spec is None:
            raise LookupError(f"the sub-agent {record.agent_id!r} is no longer declared")
        child = self._child(spec, call.user_id, record.child_session)
        link = ChildRun(record.task_id, record.depth, record.agent_key)
        extras = {k: v for k, v in call.runtime.extras.items() if k != LINK_KEY}
        ctx = RuntimeContext(call.user_id, record.child_session, extras={**extras, LINK_KEY: link})
        state = await child.read_state(ctx)
        started = any(m.role == "user" and m.text == record.task for m in state.history)
        record = _background(record)
        book.put(record)
        running = Running(record, _owner(call), call.runtime, link)
        last = state.history[-1] if state.history else None
        call.record(RESUMED, {"task_id": record.task_id, "child_session": record.child_session})
        if started and last is not None and last.role == "assistant" and not last.tool_uses:
            # it had finished; only its parent never heard
            outcome = ChildOutcome("COMPLETED", result=last.text.strip(), reply=last)
            call.record(
                COMPLETED, _completed_payload(book.finish(record, outcome, delivered=False))
            )
            return
        self._launch(running, child, ctx, None if started else record.task)


def _background(record: TaskRecord) -> TaskRecord:
    return dataclasses.replace(record, background=True)


def _raw_tasks(section: Any) -> list[Mapping[str, Any]]:
    """The stored task records as they are (cheap checks before anything is parsed)."""
    tasks = section.get("tasks") if isinstance(section, Mapping) else None
    return [t for t in tasks if isinstance(t, Mapping)] if isinstance(tasks, list) else []


def _ended(raw: Mapping[str, Any]) -> bool:
    return raw.get("status") in _ENDED


_ENDED = frozenset(s.value for s in TaskStatus if s.ended)


def _owner(call: CallContext) -> Owner:
    return (call.agent_name, call.user_id, call.session_id)


def _completed_payload(record: TaskRecord) -> dict[str, Any]:
    return {
        "task_id": record.task_id,
        "agent_key": record.agent_key,
        "child_session": record.child_session,
        "status": record.status.value,
        "error": record.error,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
    }


def _link(agent: Delegate) -> None:
    """Give an agent declared as a sub-agent the link that lets a cancel stop it."""
    from harnessed.subagents.child import ChildLink

    if agent.capability(ChildLink) is None:
        agent.capabilities.add(ChildLink())
