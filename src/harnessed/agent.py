"""HarnessAgent: the loop and the context compiler, with capabilities plugged in.

One agent object is configured once and shared by every session. Everything beyond the loop and
the compiler — workspace tools, task list, plan mode, permissions, memory, skills, sub-agents,
the application's own — is a :class:`~harnessed.capabilities.Capability`; the keywords only
build capabilities (:mod:`harnessed.shortcuts`). A call is an :class:`~harnessed.loop.AgentRun`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence

from harnessed import shortcuts as kw
from harnessed.capabilities.base import Capability
from harnessed.capabilities.registry import CapabilitySet
from harnessed.compaction import (
    CompactionConfig,
    PruneConfig,
    ToolResultEvictionConfig,
    history_transforms,
)
from harnessed.context.compiler import ContextCompiler
from harnessed.context.policy import ContextPolicy
from harnessed.context.seam import RequestPreparer
from harnessed.context.workspace_refs import WorkspaceRefsLoader
from harnessed.events import AgentEndEvent, Event
from harnessed.host import AgentHost
from harnessed.inputs import AgentInput, input_messages
from harnessed.loop import AgentRun
from harnessed.memory import MemoryConfig
from harnessed.messages import Msg
from harnessed.models.base import Model, ModelRequest
from harnessed.models.registry import resolve_model
from harnessed.models.windows import discover_windows
from harnessed.permissions import ConfirmationMode, PermissionMode, PermissionRule
from harnessed.permissions.controls import PermissionControls
from harnessed.permissions.policy import ToolPermissionCheck
from harnessed.plan.controls import PlanControls
from harnessed.runtime import RuntimeContext, SessionLocks
from harnessed.session import SessionLogStore
from harnessed.session.search import SearchIndex
from harnessed.sessions.access import SessionAccess
from harnessed.sessions.control import TurnControl
from harnessed.shortcuts import MCPResources, MCPServers, Sandbox, Shortcuts, SkillsArg
from harnessed.state.agent_state import AgentState, StateKey
from harnessed.state.conversation import ConversationStore
from harnessed.state.editor import StateEditor
from harnessed.state.store import AgentStateStore
from harnessed.state.task import TaskContractConfig
from harnessed.state.verification import VerificationService
from harnessed.stores.choice import SharedStore, agent_stores
from harnessed.tasks.controls import TaskControls
from harnessed.tools.base import Tool
from harnessed.tools.shell import ShellConfig
from harnessed.tools.toolkit import ToolGuard, Toolkit
from harnessed.workspace import Filesystem, IsolationScope, Workspace

__all__ = ["AgentInput", "HarnessAgent"]

# Default history transforms (frozen configs, safe to share).
_COMPACTION = CompactionConfig()
_EVICTION = ToolResultEvictionConfig()
_PRUNE = PruneConfig()


class HarnessAgent(AgentHost, TaskControls, PlanControls, PermissionControls, SessionAccess):
    """A long-running agent: a model, tools, capabilities, and a harness around every request.

    Args:
        name: The agent's id (also the default session id). Letters, digits, ``_.-``.
        model: A :class:`~harnessed.models.Model` or a string such as ``"openai:gpt-4.1-mini"``.
        sys_prompt: The agent's role and rules, sent as system instructions.
        tools: Tools made with :func:`harnessed.tool` (they win over capabilities' tools).
        capabilities: :class:`~harnessed.Capability` objects, after the built-in ones.
        workspace: A directory, an fsspec URL, a :class:`~harnessed.workspace.Filesystem` or a
            :class:`~harnessed.workspace.Workspace` (``isolation_scope`` separates runtime data
            per ``"user"``, ``"session"``, ``"agent"`` or ``"global"``).
        store: ``"postgresql://..."``: sessions shared by app servers (:mod:`harnessed.stores`).
        state_store / session_store / search_index: Where state, the session log and its index
            are kept (defaults: files in the workspace, else memory). The working history is
            the session log's; the state store keeps the structured parts.
        max_iters / max_output_tokens: The most model requests per call; tokens per request.
        instructions / context_policy / max_context_tokens / context_files / prepare: The
            context compiler's configuration (``prepare`` replaces the compiler).
        tool_guard: Checks each tool call last; returns ``None`` or an error result's text.
        compaction / tool_result_eviction / prune: History transforms (``None`` = off).
        file_tools, shell, memory, memory_tools, readable_session_agents, enable_task_list,
        enable_plan_mode, task_contract, permission_mode, permission_rules, permission_checks,
        confirmation_timeout, mcp_servers, mcp_resources: Shortcuts (:mod:`harnessed.shortcuts`).
        skills / subagents / web: on by default with a workspace; ``False`` turns one off.
    """

    def __init__(
        self,
        name: str,
        model: Model | str,
        *,
        sys_prompt: str = "",
        tools: Iterable[Tool] = (),
        capabilities: Sequence[Capability] = (),
        workspace: str | os.PathLike[str] | Workspace | Filesystem | None = None,
        isolation_scope: IsolationScope = "user",
        file_tools: bool = True,
        shell: bool | ShellConfig | Sandbox | None = None,
        state_store: AgentStateStore | None = None,
        session_store: SessionLogStore | None = None,
        max_iters: int = 10,
        max_output_tokens: int | None = None,
        instructions: Mapping[str, str] | None = None,
        context_policy: ContextPolicy | None = None,
        max_context_tokens: int = 8_000,
        context_files: Sequence[str] = (),
        prepare: RequestPreparer | None = None,
        tool_guard: ToolGuard | None = None,
        compaction: CompactionConfig | None = _COMPACTION,
        tool_result_eviction: ToolResultEvictionConfig | None = _EVICTION,
        prune: PruneConfig | None = _PRUNE,
        enable_task_list: bool = False,
        enable_plan_mode: bool = False,
        task_contract: TaskContractConfig | None = None,
        permission_mode: PermissionMode | str | None = None,
        permission_rules: Sequence[PermissionRule] = (),
        permission_checks: Mapping[str, ToolPermissionCheck] | None = None,
        confirmation_timeout: float | None = None,
        search_index: SearchIndex | None = None,
        memory: MemoryConfig | bool = True,
        memory_tools: bool = True,
        readable_session_agents: Sequence[str] = (),
        skills: SkillsArg = None,
        subagents: kw.SubagentsArg = None,
        web: kw.WebArg = None,
        mcp_servers: MCPServers = (),
        mcp_resources: MCPResources = (),
        store: str | SharedStore | None = None,
    ) -> None:
        if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+", name):  # \w: isalnum, _
            raise ValueError(
                f"HarnessAgent name must be non-empty letters, digits, '_', '.' or '-': {name!r}"
            )
        if max_iters < 1:
            raise ValueError(f"HarnessAgent max_iters must be at least 1, got {max_iters}")
        if max_output_tokens is not None and max_output_tokens <= 0:
            raise ValueError("HarnessAgent max_output_tokens must be positive")
        if max_context_tokens <= 0:
            raise ValueError("HarnessAgent max_context_tokens must be positive")
        self.name = name
        self.model: Model = resolve_model(model)
        self.sys_prompt = sys_prompt
        self.workspace = (
            workspace
            if workspace is None or isinstance(workspace, Workspace)
            else Workspace(workspace, scope=isolation_scope)
        )
        self._stores = agent_stores(self.workspace, store, state_store, session_store, search_index)
        self.store, self.state_store = self._stores.shared, self._stores.state
        self.session_store, self._turn_gate = self._stores.sessions, self._stores.gate
        self.conversation = ConversationStore(self.session_store, self.state_store)  # history
        self.max_iters, self.max_output_tokens = max_iters, max_output_tokens
        self.compaction = compaction
        self.tool_result_eviction, self.prune = tool_result_eviction, prune
        transforms = history_transforms(
            agent_name=name,
            workspace=self.workspace,
            eviction=tool_result_eviction,
            prune=prune,
            compaction=compaction,
            compiler=lambda: self.compiler,
            flusher=lambda: self.memory_flusher,
        )
        self.compiler = ContextCompiler(
            sys_prompt=sys_prompt,
            policy=context_policy,
            evictor=transforms.evictor,
            compactor=transforms.compactor,
        )
        self.sources = self.compiler.sources
        if self.workspace is not None:
            self.compiler.refs_loader = WorkspaceRefsLoader(
                self.workspace,
                name,
                self.compiler.meter.estimator,
                max_context_tokens=max_context_tokens,
                context_files=context_files,
            )
        for key, text in (instructions or {}).items():
            self.add_instruction(key, text)
        self.prepare: RequestPreparer = prepare or self.compiler
        self.tool_guard = tool_guard
        self._locks = SessionLocks()
        self._editor = StateEditor(name, self.state_store, self.session_store, self._locks)
        self.verification = VerificationService(self._editor)
        shortcuts = Shortcuts(
            file_tools=file_tools,
            shell=shell,
            memory=memory,
            memory_tools=memory_tools,
            readable_session_agents=readable_session_agents,
            enable_task_list=enable_task_list,
            enable_plan_mode=enable_plan_mode,
            task_contract=task_contract,
            permission_mode=permission_mode,
            permission_rules=permission_rules,
            permission_checks=permission_checks,
            confirmation_timeout=confirmation_timeout,
            mcp_servers=mcp_servers,
            mcp_resources=mcp_resources,
        )
        given = Shortcuts.given_capabilities(capabilities, skills, subagents, self.workspace, web)
        self.capabilities = CapabilitySet(shortcuts.capabilities(self.workspace, given))
        self.skills = Shortcuts.skills_of(self.capabilities)
        """Agent Skills (``skills=`` or a :class:`~harnessed.skills.Skills` capability)."""
        self.toolkit = Toolkit(tools)
        self._plug_in(frozenset(self.toolkit.names))

    # ------------------------------------------------------------ public API
    async def call(self, input: AgentInput, ctx: RuntimeContext | None = None) -> Msg:
        """Run the agent on ``input`` and return its final reply."""
        reply: Msg | None = None
        async for event in self.stream_events(input, ctx, confirmations="park"):
            if isinstance(event, AgentEndEvent) and event.source is None:
                reply = event.reply
        if reply is None:  # pragma: no cover - stream_events always ends with agent_end or raises
            raise RuntimeError("agent run ended without a reply")
        return reply

    def call_sync(self, input: AgentInput, ctx: RuntimeContext | None = None) -> Msg:
        """Blocking form of :meth:`call` for scripts (not for use inside an event loop); it
        also waits for the call's background memory work."""

        async def settled() -> Msg:
            try:
                return await self.call(input, ctx)
            finally:
                if self.memory is not None:
                    await self.memory.wait_idle()

        return asyncio.run(settled())

    async def stream_events(
        self,
        input: AgentInput,
        ctx: RuntimeContext | None = None,
        *,
        confirmations: ConfirmationMode = "wait",
        control: TurnControl | None = None,
    ) -> AsyncIterator[Event]:
        """Run the agent on ``input``, yielding typed events as the work happens.

        The last event is :class:`AgentEndEvent` on success; on failure an
        :class:`ErrorEvent` is yielded and the exception is raised. When a tool call needs the
        user's approval a :class:`ConfirmationRequestEvent` is yielded and, with
        ``confirmations="wait"``, the run waits for :meth:`respond`; with ``"park"`` (what
        :meth:`call` uses) the call ends at once with status ``pending``. ``control`` steers.
        """
        messages = input_messages(input)
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        await discover_windows(self.models())  # self-hosted servers tell their window once
        lease = self._call_lease(ctx, control)  # first: across processes, then this one
        async with lease, self._locks.hold(self.name, ctx.user_id, ctx.session):
            run = AgentRun(self, ctx, confirmations, control)
            async with contextlib.aclosing(run.execute(messages)) as events:
                async for event in events:
                    yield event

    async def close(self) -> None:
        """Close the capabilities (memory waits for its background work), then release what
        the agent holds (index files, the HTTP clients of its models)."""
        await self.capabilities.close()
        await self._stores.close()
        for model in self.models():
            closer = getattr(model, "aclose", None)
            if closer is not None:
                await closer()

    async def __aenter__(self) -> HarnessAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def load_state(self, ctx: RuntimeContext | None = None) -> AgentState:
        """The state of a session (a fresh one when the session is new), with its working
        history as the session log has it."""
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        return await self.conversation.load(StateKey(self.name, ctx.user_id, ctx.session))

    def draft_request(self, state: AgentState, model_call_id: str) -> ModelRequest:
        """The request before preparation: system prompt, working history and tool schemas."""
        system = [Msg.system(self.sys_prompt)] if self.sys_prompt else []
        return ModelRequest(
            messages=(*system, *state.history),
            tools=self.toolkit.schemas(),
            max_output_tokens=self.max_output_tokens,
            call_id=model_call_id,
        )
