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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from harnessed.capabilities.base import CallContext, CallEnd, CapabilityHost, ModelCall
from harnessed.capabilities.state_blocks import StateBlock
from harnessed.models.base import ToolSchema
from harnessed.state.agent_state import AgentState
from harnessed.subagents.board import Owner
from harnessed.subagents.core import (
    MAX_DEPTH,
    Shared,
    TaskWatcher,
    is_ended,
    owner_of,
    raw_tasks,
)
from harnessed.subagents.declarations import Declarations, caller_ids
from harnessed.subagents.delegate import is_agent
from harnessed.subagents.records import TaskRecord
from harnessed.subagents.recovery import Recovery
from harnessed.subagents.spec import GENERAL_PURPOSE, SubagentSpec
from harnessed.subagents.texts import MAX_LISTED, available_block, reminder
from harnessed.subagents.tools import subagent_tools
from harnessed.tools.base import Tool

if TYPE_CHECKING:
    from harnessed.subagents.delegate import Delegate

__all__ = ["Subagents"]


TASK_TOOLS = frozenset({"agent_list", "agent_send", "task_output", "task_cancel", "task_list"})
"""The tools that act on tasks already started (left out while a session has none; the
sub-agents one can spawn are listed in the runtime state and in agent_spawn's description)."""


class Subagents(Recovery):
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
        self._shared: Shared | None = None
        self._live: dict[Owner, CallContext] = {}
        self._children: dict[str, Delegate] = {}
        self._tools: list[Tool] = []

    # ------------------------------------------------------------------ setup
    def setup(self, host: CapabilityHost) -> None:
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
            self._shared = Shared(declarations, max_depth=self._max_depth)
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

    def tools(self) -> Sequence[Tool]:
        return self._tools

    def on_task_finished(self, watcher: TaskWatcher) -> Callable[[], None]:
        """Call ``watcher`` (a plain function, quick: schedule any work) with a
        :class:`TaskFinished` each time a task of this agent's sessions (or their sub-agents')
        ended and its outcome was saved in the parent's records. Returns a function that
        stops the watching. A channel uses it to tell a user who has left (§13)."""
        watchers = self.shared.watchers
        watchers.append(watcher)

        def stop() -> None:
            if watcher in watchers:
                watchers.remove(watcher)

        return stop

    # ------------------------------------------------------------- per call
    async def before_call(self, call: CallContext) -> None:
        self._live[owner_of(call)] = call
        await self.declarations.all(*caller_ids(call))
        await self._recover(call)

    async def after_call(self, call: CallContext, end: CallEnd) -> None:
        owner = owner_of(call)
        if self._live.get(owner) is call:
            del self._live[owner]

    async def before_model_request(self, call: CallContext) -> None:
        owner = owner_of(call)
        raw = raw_tasks(self.section(call.state))
        finished_here = any(r.outcome is not None for r in self.shared.board.of(owner))
        if not finished_here and not any(is_ended(t) and not t.get("delivered") for t in raw):
            return  # the common case: nothing to tell, nothing parsed
        book = self.book(call.state)
        changed = self.apply_finished(book, owner, call)
        waiting = book.undelivered()
        if waiting:
            listed = waiting[:MAX_LISTED]
            call.add_messages(reminder(listed, len(waiting) - len(listed)))
            call.values[self.capability_name] = [r.task_id for r in listed]
        if changed:
            self.set_section(call.state, book.data())

    def filter_tools(self, call: CallContext, tools: Sequence[ToolSchema]) -> Sequence[ToolSchema]:
        # the task tools act on this session's tasks: offered once there is one
        if raw_tasks(self.section(call.state)) or self.shared.board.of(owner_of(call)):
            return tools
        return [t for t in tools if t.name not in TASK_TOOLS]

    async def after_model_request(self, call: CallContext, model_call: ModelCall) -> None:
        listed = call.values.pop(self.capability_name, None)
        if not listed or model_call.response is None:
            return  # a failed request: the same tasks are listed again next time
        book = self.book(call.state)
        if book.mark_delivered(listed):
            self.set_section(call.state, book.data())

    def state_blocks(self, state: AgentState) -> Sequence[StateBlock]:
        specs = self.declarations.loaded(state.agent_id, state.user_id, state.session_id)
        if specs is None:
            return ()
        running = [
            TaskRecord.from_dict(t) for t in raw_tasks(self.section(state)) if not is_ended(t)
        ]
        if not running and all(s.hidden or s.id == GENERAL_PURPOSE.id for s in specs.values()):
            return ()  # agent_spawn's own description names general-purpose: nothing to add
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
        models, self.shared.models = list(self.shared.models.values()), {}
        for model in models:
            closer = getattr(model, "aclose", None)
            if closer is not None and model is not self.host.model:
                await closer()


def _link(agent: Delegate) -> None:
    """Give an agent declared as a sub-agent the link that lets a cancel stop it."""
    from harnessed.subagents.child import ChildLink

    if agent.capability(ChildLink) is None:
        agent.capabilities.add(ChildLink())
