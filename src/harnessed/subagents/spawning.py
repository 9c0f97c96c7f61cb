"""Starting tasks on sub-agents: building the child, what it inherits, running it, and
forwarding its events to the parent's stream."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from harnessed.capabilities.base import CallContext, Capability
from harnessed.cost.meter import METER_KEY, UsageMeter
from harnessed.events import Event
from harnessed.log.record import NewRecord, RecordType
from harnessed.messages import new_id
from harnessed.models.base import Model
from harnessed.models.registry import resolve_model
from harnessed.permissions.forwarded import ForwardedLog
from harnessed.permissions.state import PERMISSIONS
from harnessed.plan.state import PLAN
from harnessed.questions import ASK_USER, AskUser
from harnessed.run.deps import MODE_KEY
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.subagents.board import Running, TaskBook
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
from harnessed.subagents.core import COMPLETED, SPAWNED, SubagentsCore, owner_of
from harnessed.subagents.delegate import Delegate
from harnessed.subagents.durable import TaskRunner, task_runner
from harnessed.subagents.records import TaskRecord, TaskStatus, child_session_id
from harnessed.subagents.routes import ForwardingRoutes
from harnessed.subagents.spec import SubagentSpec
from harnessed.tools.base import ToolError

__all__ = ["Spawning"]

logger = logging.getLogger(__name__)


class Spawning(SubagentsCore):
    """Starting and running sub-agent tasks (a part of the sub-agents capability)."""

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
        owner = owner_of(call)
        book = self.book(call.state)
        self.apply_finished(book, owner, call)
        child_session = child_session_id(call.session_id, spec.id, label)
        _check_free(book, f"{spec.id}:{label}")
        parent_link = link_of(call.runtime)
        depth = self._depth(parent_link)
        child = self._child(spec, call.user_id, child_session)
        record = TaskRecord(
            task_id=new_id("task_"),
            agent_id=spec.id,
            label=label,
            child_session=child_session,
            task=text,
            background=background,
            depth=depth,
        )
        path = record.agent_key if parent_link is None else f"{parent_link.path}/{record.agent_key}"
        link = ChildRun(record.task_id, depth, path)
        child_ctx = _child_context(call, child_session, link)
        book.put(record)  # claims the session before anything is awaited
        self.set_section(call.state, book.data())
        spawned = _spawned(record, child.name)
        await self._prepare_session(call, child, child_ctx, record, spawned)
        record = record.moved(TaskStatus.RUNNING)
        self._settle(call, record)
        call.record(SPAWNED, spawned)
        running = Running(record, owner, call.runtime, link, approvals=approvals_of(call, spec))
        runner = task_runner(self.host) if background else None
        if runner is not None:  # the runtime runs it, on any of its workers
            await self._start_durable(call, runner, record)
            return running
        self._launch(running, child, child_ctx, text)
        return running

    def _depth(self, parent_link: ChildRun | None) -> int:
        """The depth of a new sub-agent of the calling agent, within the depth limit."""
        depth = (parent_link.depth if parent_link is not None else 0) + 1
        if depth > self.shared.max_depth:
            raise ToolError(
                f"sub-agent depth limit reached: this agent is already at depth "
                f"{depth - 1} of {self.shared.max_depth}, so it cannot spawn further sub-agents; "
                "do the work yourself"
            )
        return depth

    async def _prepare_session(
        self,
        call: CallContext,
        child: Delegate,
        child_ctx: RuntimeContext,
        record: TaskRecord,
        spawned: dict[str, Any],
    ) -> None:
        """Give the child's session what it inherits and log the spawn in it; on a failure
        the task is recorded as failed and the tool call fails."""
        try:
            await self._inherit(child, child_ctx, call.state)
            await child.session_store.append(
                SessionRef(child.name, call.user_id, record.child_session),
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
        except Exception as exc:
            why = f"the sub-agent's session could not be prepared: {type(exc).__name__}: {exc}"
            self._settle(call, record.moved(TaskStatus.FAILED, error=why, delivered=True))
            raise ToolError(why) from exc

    async def _start_durable(
        self, call: CallContext, runner: TaskRunner, record: TaskRecord
    ) -> None:
        """Hand the background task to the runtime; if it cannot take it, the task is recorded
        as failed and the tool call fails."""
        try:
            await runner.start_task(self.host.name, call.user_id, call.session_id, record.to_dict())
        except Exception as exc:
            why = f"the background task could not be started: {type(exc).__name__}: {exc}"
            self._settle(call, record.moved(TaskStatus.FAILED, error=why, delivered=True))
            raise ToolError(why) from exc

    def _settle(self, call: CallContext, record: TaskRecord) -> None:
        """Write ``record`` into the live state (read afresh: other spawns of this step may
        have written theirs meanwhile)."""
        book = self.book(call.state)
        book.put(record)
        self.set_section(call.state, book.data())

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
        answerable = running.approvals == "forward"
        top = running.link.depth == 1  # nested ones reach the top through their parents
        log = ForwardedLog(self.host.session_store, running.owner) if top else None
        routes = ForwardingRoutes(
            self.host.approval_gate.forwarded, running.owner, key, log, running.record.task_id
        )

        def forward(event: Event) -> None:
            live = self._live.get(running.owner)
            if live is not None:
                live.publish(tagged(event, key, answerable=answerable))

        try:
            outcome = await run_child(
                child,
                ctx,
                text,
                forward,
                approvals=running.approvals,
                routes=routes if answerable else None,
            )
        except asyncio.CancelledError:
            if running.abandoned:  # the process is closing: resumed from the log next time
                raise
            outcome = ChildOutcome("CANCELLED", error=running.link.cancel_reason or "cancelled")
        meter = UsageMeter.of_parent(ctx)
        if meter is not None:  # what it spent after the parent's call ended is in the log
            await meter.settled()
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
                SessionRef(child.name, ctx.user_id, ctx.session),
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

    async def _inherit(self, child: Delegate, ctx: RuntimeContext, parent: AgentState) -> None:
        """The child's session gets the parent's deny rules, permission mode and plan mode."""
        settings = self.host.approval_gate.settings(parent)
        deny = [r.to_dict() for r in settings.rules if r.behavior == "deny"]
        mode = settings.mode.value if settings.mode is not None else None
        plan = parent.get(PLAN)

        def change(state: AgentState) -> list[tuple[str, dict[str, Any]]] | None:
            permissions: dict[str, Any] = {}
            if mode is not None:
                permissions["mode"] = mode
            if deny:
                permissions["rules"] = deny
            records: list[tuple[str, dict[str, Any]]] = []
            if permissions != state.get(PERMISSIONS):
                state.put(PERMISSIONS, permissions)
                records.append(
                    (
                        RecordType.PERMISSION_CHANGED,
                        {"action": "inherited", "mode": mode, "rules": deny},
                    )
                )
            if state.get(PLAN) != plan:
                state.put(PLAN, plan)
                records.append(
                    (RecordType.PLAN_CHANGED, {"action": "inherited", "plan": plan.to_dict()})
                )
            return records or None

        await child.change_state(ctx, change)

    def _model(self, spec: SubagentSpec) -> Model:
        if spec.model is None:
            return self.host.model
        models = self.shared.models
        if spec.id not in models:
            try:
                models[spec.id] = resolve_model(spec.model)
            except (ValueError, TypeError, ImportError) as exc:
                raise ToolError(f"sub-agent {spec.id!r}: its model cannot be used: {exc}") from None
        return models[spec.id]

    def _child(self, spec: SubagentSpec, user_id: str, child_session: str) -> Delegate:
        if spec.agent is not None:
            return spec.agent
        # by id and source: a user's own declaration of an id is another child than the shared one
        key = f"{spec.id}\x00{spec.source}"
        if spec.workspace == "shared" and key in self._children:
            return self._children[key]
        own = frozenset(t.name for t in self._tools)
        extra: list[Capability] = []
        if self.host.capability(AskUser) is not None:  # a question of its own, asked via the
            own, extra = own | {ASK_USER}, [AskUser()]  # child's permissions, forwarded up
        try:
            tools = parent_tools(self.host, spec, own)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        root = isolated_dir(self.host, user_id, child_session)
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        child = build_child(
            self.host,
            spec,
            tools,
            [self._nested(), *extra],
            model=self._model(spec),
            isolated_root=root,
        )
        if spec.workspace == "shared":
            self._children[key] = child
        return child


def _check_free(book: TaskBook, agent_key: str) -> None:
    """Refuse a new task for a sub-agent session that is still working on one."""
    busy = book.busy(agent_key)
    if busy is not None:
        raise ToolError(
            f"sub-agent {busy.agent_key} is still working on task {busy.task_id}; wait for "
            "it (task_output with block=true), cancel it, or use another label"
        )


def _child_context(call: CallContext, child_session: str, link: ChildRun) -> RuntimeContext:
    """The child run's context: the caller's extras (not its own link or meter), the calling
    tool's meter (the sub-agent's spending counts toward this call's) and the child's link."""
    extras = {k: v for k, v in call.runtime.extras.items() if k not in (LINK_KEY, METER_KEY)}
    if METER_KEY in call.values:
        extras[METER_KEY] = call.values[METER_KEY]
    return RuntimeContext(call.user_id, child_session, extras={**extras, LINK_KEY: link})


def _spawned(record: TaskRecord, child_agent: str) -> dict[str, Any]:
    """What the spawn record of a new task says."""
    return {
        "task_id": record.task_id,
        "agent_id": record.agent_id,
        "label": record.label,
        "agent_key": record.agent_key,
        "child_agent": child_agent,
        "child_session": record.child_session,
        "depth": record.depth,
        "background": record.background,
    }


def approvals_of(call: CallContext, spec: SubagentSpec) -> str:
    """What a task's requests become: the spec's ``on_approval``, except that forwarding
    needs someone who answers while the parent's call runs (a parent in ``call()`` parks)."""
    attended = call.values.get(MODE_KEY) == "wait"
    return "fail" if spec.on_approval == "forward" and not attended else spec.on_approval
