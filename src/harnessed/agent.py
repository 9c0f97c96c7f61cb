"""HarnessAgent: the loop and the context compiler, with capabilities plugged in.

One agent object is configured once and shared by every session. Everything beyond the loop and
the compiler — tools of the workspace, the task list, plan mode, permissions, memory, the
application's own extensions — is a :class:`~harnessed.capabilities.Capability`; the keyword
shortcuts only build capabilities (see :mod:`harnessed.builtins`). A call runs as an
:class:`~harnessed.run.AgentRun` under the session's lock.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, Unpack

from harnessed._internal.forward import forward
from harnessed.agent_calls import ResultCalls
from harnessed.agent_host import AgentHost
from harnessed.agent_log import SessionQueries
from harnessed.agent_options import FEATURES_OFF, SHORTCUT_OPTIONS, AgentOptions, check_arguments
from harnessed.agent_sessions import SessionAccess
from harnessed.builtins import Shortcuts, SkillsArg
from harnessed.capabilities.base import Capability
from harnessed.capabilities.registry import CapabilitySet
from harnessed.capabilities.seam import RequestPreparer
from harnessed.compaction import (
    CompactionConfig,
    PruneConfig,
    ToolResultEvictionConfig,
    history_transforms,
)
from harnessed.context.compiler import ContextCompiler
from harnessed.context.policy import ContextPolicy
from harnessed.context.workspace_refs import WorkspaceRefsLoader
from harnessed.contract.controls import TaskControls
from harnessed.contract.verification import VerificationService
from harnessed.cost.limits import DEFAULT, Unset, UsageLimits
from harnessed.cost.meter import UsageMeter
from harnessed.cost.prices import PriceTable, default_prices
from harnessed.events import Event
from harnessed.memory import MemoryConfig
from harnessed.models.base import Model
from harnessed.models.registry import resolve_model
from harnessed.models.windows import discover_windows
from harnessed.output.spec import output_spec
from harnessed.permissions import ConfirmationMode
from harnessed.permissions.controls import PermissionControls
from harnessed.plan.controls import PlanControls
from harnessed.run import AgentRun
from harnessed.run.inputs import AgentInput, input_messages
from harnessed.runtime import RuntimeContext, SessionLocks
from harnessed.state.conversation import ConversationStore
from harnessed.state.editor import StateEditor
from harnessed.stores.choice import SharedStore, agent_stores
from harnessed.tools.base import Tool
from harnessed.tools.toolkit import Toolkit
from harnessed.turns.control import TurnControl
from harnessed.workspace import Filesystem, Workspace

if TYPE_CHECKING:
    from harnessed.compaction.manual import CompactionReport
    from harnessed.turns.gate import TurnGate  # loaded with the first turn

__all__ = ["AgentInput", "HarnessAgent"]


# Default history transforms (frozen configs, safe to share).
_COMPACTION = CompactionConfig()
_EVICTION = ToolResultEvictionConfig()
_PRUNE = PruneConfig()
_NOT_CLONED = frozenset({"self", "name", "model", "options"})


class HarnessAgent(AgentHost):
    """A long-running agent: a model, tools, capabilities, and a harness around every request.

    Args:
        name: The agent's id (also the default session id). Letters, digits, ``_.-``.
        model: A :class:`~harnessed.models.Model` or a string such as ``"openai:gpt-4.1-mini"``.
        sys_prompt: The agent's role and rules, sent as system instructions.
        tools: Tools made with :func:`harnessed.tool` (they win over capabilities' tools).
        capabilities: :class:`~harnessed.Capability` objects, after the built-in ones.
        workspace: A directory, an fsspec URL, a :class:`~harnessed.workspace.Filesystem` or a
            :class:`~harnessed.workspace.Workspace`.
        instructions / context_policy: The context compiler's trusted text and budget.
        store: ``"postgresql://..."``: sessions shared by app servers (:mod:`harnessed.stores`).
        max_iters: The most model requests per call.
        compaction / tool_result_eviction: History transforms (``None`` = off).
        enable_task_list / memory / skills: Built-in features (:mod:`harnessed.builtins`);
            skills (like sub-agents and ``web_fetch``) are on by default with a workspace.
        **options: Everything else, typed and documented in
            :class:`~harnessed.agent_options.AgentOptions`.
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
        instructions: Mapping[str, str] | None = None,
        store: str | SharedStore | None = None,
        max_iters: int = 10,
        context_policy: ContextPolicy | None = None,
        compaction: CompactionConfig | None = _COMPACTION,
        tool_result_eviction: ToolResultEvictionConfig | None = _EVICTION,
        enable_task_list: bool = False,
        memory: MemoryConfig | bool = True,
        skills: SkillsArg = None,
        **options: Unpack[AgentOptions],
    ) -> None:
        check_arguments(name, max_iters, options)
        # what clone() builds from: the parameters as given (locals() holds only them here)
        self._arguments = {k: v for k, v in locals().items() if k not in _NOT_CLONED} | options
        max_output_tokens = options.get("max_output_tokens")
        max_context_tokens = options.get("max_context_tokens", 8_000)
        prune = options.get("prune", _PRUNE)
        self.name = name
        self.runtime = options.get("runtime")
        self.output_retries: int = options.get("output_retries", 2)
        self.output = output_spec(options.get("output_type"), self.output_retries)
        """The agent's typed final answer (``None``: free text)."""
        self._calls = ResultCalls(self)
        self.model: Model = resolve_model(model)
        self.sys_prompt = sys_prompt
        self.workspace = (
            workspace
            if workspace is None or isinstance(workspace, Workspace)
            else Workspace(workspace, scope=options.get("isolation_scope", "user"))
        )
        self._stores = agent_stores(
            self.workspace,
            store,
            options.get("state_store"),
            options.get("session_store"),
            options.get("search_index"),
        )
        self.store, self.state_store = self._stores.shared, self._stores.state
        self.session_store = self._stores.sessions
        self.conversation = ConversationStore(self.session_store, self.state_store)  # history
        self.max_iters, self.max_output_tokens = max_iters, max_output_tokens
        self.usage_limits = options.get("usage_limits")
        self.session_usage_limits = options.get("session_usage_limits")
        self.prices: PriceTable = options.get("prices") or default_prices()
        self.compaction = compaction
        self.tool_result_eviction, self.prune = tool_result_eviction, prune
        self._build_context(sys_prompt, context_policy, prune, max_context_tokens, options)
        for key, text in (instructions or {}).items():
            self.add_instruction(key, text)
        self.prepare: RequestPreparer = options.get("prepare") or self.compiler
        self.tool_guard = options.get("tool_guard")
        self._build_parts()
        shortcuts = Shortcuts(
            memory=memory,
            enable_task_list=enable_task_list,
            **{k: v for k, v in options.items() if k in SHORTCUT_OPTIONS},  # type: ignore[arg-type]
        )
        given = Shortcuts.given_capabilities(
            capabilities, skills, options.get("subagents"), self.workspace, options.get("web")
        )
        self.capabilities = CapabilitySet(shortcuts.capabilities(self.workspace, given))
        self.skills = Shortcuts.skills_of(self.capabilities)
        """Agent Skills (``skills=`` or a :class:`~harnessed.skills.Skills` capability)."""
        self.toolkit = Toolkit(tools)
        self._plug_in(frozenset(self.toolkit.names))

    def _build_context(
        self,
        sys_prompt: str,
        context_policy: ContextPolicy | None,
        prune: PruneConfig | None,
        max_context_tokens: int,
        options: AgentOptions,
    ) -> None:
        """The history transforms and the context compiler, from the configuration."""
        transforms = history_transforms(
            agent_name=self.name,
            workspace=self.workspace,
            eviction=self.tool_result_eviction,
            prune=prune,
            compaction=self.compaction,
            summaries=lambda: self.summary_requests,
            flusher=lambda: self.memory_flusher,
        )
        self.history_transforms = transforms
        """The evictor and the compactor built from the configuration: the compiler runs them;
        a preparer given as ``prepare=`` may run them itself."""
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
                self.name,
                self.compiler.meter.estimator,
                max_context_tokens=max_context_tokens,
                context_files=options.get("context_files", ()),
            )

    def _build_parts(self) -> None:
        """The parts whose methods the agent offers (see the forwards below)."""
        self._locks = SessionLocks()
        self._editor = StateEditor(self.name, self.state_store, self.session_store, self._locks)
        self.verification = VerificationService(self._editor)
        self._tasks = TaskControls(self._editor, self.verification)
        self._plan = PlanControls(self.name, self._editor, self.capability)
        self._permissions = PermissionControls(self.name, self._editor, lambda: self.approval_gate)
        self._log = SessionQueries(self.name, self.session_store)
        self._sessions = SessionAccess(self, self.name, self.workspace)
        if self._stores.gate is not None:
            self._sessions.turn_gate = self._stores.gate

    # ----------------------------------------------- the parts' methods, forwarded
    task_state = forward("_tasks", TaskControls.task_state)
    begin_task = forward("_tasks", TaskControls.begin_task)
    add_requirement = forward("_tasks", TaskControls.add_requirement)
    confirm_requirement = forward("_tasks", TaskControls.confirm_requirement)
    reject_requirement = forward("_tasks", TaskControls.reject_requirement)
    set_task_subject = forward("_tasks", TaskControls.set_task_subject)
    end_task = forward("_tasks", TaskControls.end_task)
    enter_plan_mode = forward("_plan", PlanControls.enter_plan_mode)
    exit_plan_mode = forward("_plan", PlanControls.exit_plan_mode)
    set_permission_mode = forward("_permissions", PermissionControls.set_permission_mode)
    set_permission_rules = forward("_permissions", PermissionControls.set_permission_rules)
    pending_confirmations = forward("_permissions", PermissionControls.pending_confirmations)
    respond = forward("_permissions", PermissionControls.respond)
    session_log = forward("_log", SessionQueries.session_log)
    session_messages = forward("_log", SessionQueries.session_messages)
    sessions = forward("_log", SessionQueries.sessions)
    session_search = forward("_log", SessionQueries.session_search)
    session_usage = forward("_log", SessionQueries.session_usage)
    session = forward("_sessions", SessionAccess.session)

    @property
    def turn_gate(self) -> TurnGate:
        """Keeps one turn per session running at a time, across processes (see
        :attr:`SessionAccess.turn_gate`); assign another before the first turn."""
        return self._sessions.turn_gate

    @turn_gate.setter
    def turn_gate(self, gate: TurnGate) -> None:
        self._sessions.turn_gate = gate

    # ------------------------------------------------------------ public API
    call = forward("_calls", ResultCalls.call)
    call_sync = forward("_calls", ResultCalls.call_sync)

    async def stream_events(
        self,
        input: AgentInput,
        ctx: RuntimeContext | None = None,
        *,
        confirmations: ConfirmationMode = "wait",
        control: TurnControl | None = None,
        usage_limits: UsageLimits | Unset | None = DEFAULT,
        session_usage_limits: UsageLimits | Unset | None = DEFAULT,
        output_type: Any = None,
    ) -> AsyncIterator[Event]:
        """Run the agent on ``input``, yielding typed events as the work happens.

        The last event is :class:`AgentEndEvent` on success; on failure an
        :class:`ErrorEvent` is yielded and the exception is raised. When a tool call needs the
        user's approval a :class:`ConfirmationRequestEvent` is yielded and, with
        ``confirmations="wait"``, the run waits for :meth:`respond`; with ``"park"`` (what
        :meth:`call` uses) the call ends at once with status ``pending``. ``control`` steers.
        ``usage_limits`` / ``session_usage_limits`` replace the agent's for this call
        (``None``: no limit); one reached ends the call with status ``limit``.
        ``output_type`` overrides the agent's typed final answer (``AgentEndEvent.output``).
        """
        output = (
            self.output if output_type is None else output_spec(output_type, self.output_retries)
        )
        messages = input_messages(input)
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        if self.runtime is not None:  # the turn runs elsewhere (a Temporal workflow)
            async with contextlib.aclosing(
                self.runtime.stream(self, messages, ctx, control)
            ) as out:
                async for event in out:
                    yield event
            return
        await discover_windows(self.models())  # self-hosted servers tell their window once
        lease = self._sessions.call_lease(ctx, control)  # first: across processes, then this one
        async with lease, self._locks.hold(self.name, ctx.user_id, ctx.session):
            meter = UsageMeter.for_call(
                (self.usage_limits, self.session_usage_limits),
                (usage_limits, session_usage_limits),
                ctx,
                self.prices,
            )
            run = AgentRun(self, ctx, confirmations, control, meter=meter, output=output)
            async with contextlib.aclosing(run.execute(messages)) as events:
                async for event in events:
                    yield event

    async def compact(self, ctx: RuntimeContext | None = None) -> CompactionReport:
        """Summarize the session's earlier history now, as the automatic compaction does when
        its trigger is reached: everything before the tail the ``compaction`` configuration
        keeps (before the last user message when that keeps it all) becomes one summary message.

        Waits for a running turn of the session to end (and keeps the next from starting until
        done). The session log records it as it records an automatic compaction and keeps every
        original message; a summary that fails changes nothing (status ``failed``). Returns a
        :class:`~harnessed.compaction.CompactionReport`: what was summarized, and the working
        history's messages and estimated tokens before and after.
        """
        from harnessed.compaction.manual import compact_session
        from harnessed.compaction.pipeline import HistoryCompactor

        ctx = (ctx or RuntimeContext()).resolved(self.name)
        compactor = self.compiler.compactor
        async with (
            self._sessions.call_lease(ctx, None),
            self._locks.hold(self.name, ctx.user_id, ctx.session),
        ):
            return await compact_session(
                compactor if isinstance(compactor, HistoryCompactor) else None,
                self.compiler,
                self.conversation,
                self.model,
                self.name,
                ctx,
            )

    async def close(self) -> None:
        """Close the capabilities (memory waits for its background work), then release what
        the agent holds (index files, the HTTP clients of its models)."""
        await self.capabilities.close()
        await self._stores.close()
        for model in self.models():
            closer = getattr(model, "aclose", None)
            if closer is not None:
                await closer()

    def clone(self, *, features: bool = True, shared_stores: bool = False, **changes: Any) -> Self:
        """A new agent of the same class, built with this one's arguments except ``changes``
        (``agent.clone(name="reviewer", sys_prompt="...")``). Nothing is shared but what
        the arguments themselves hold (a store object, a model).

        ``features=False``: none of this agent's tools, capabilities, instructions or built-in
        features (memory, skills, web, file and shell tools, task list, plan mode, task
        contract, permission settings, sub-agents, MCP servers, typed output) are carried
        over — each is off unless ``changes`` turns it on (``agent_options.FEATURES_OFF``);
        the model, prompt, limits and context settings are. ``shared_stores=True``: the clone
        keeps its sessions in this agent's state and session log stores (the objects, not new
        ones) and takes their turn leases from this agent's turn gate."""
        arguments: dict[str, Any] = {"name": self.name, "model": self.model, **self._arguments}
        if not features:
            arguments.update(FEATURES_OFF)
        if shared_stores:
            arguments.update(
                store=None,
                search_index=None,
                state_store=self.state_store,
                session_store=self.session_store,
            )
        clone = type(self)(**(arguments | changes))
        if shared_stores:  # its turns exclude other processes' turns as this agent's do
            clone.turn_gate = self.turn_gate
        return clone

    async def __aenter__(self) -> HarnessAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
