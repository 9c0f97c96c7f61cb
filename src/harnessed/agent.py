"""HarnessAgent: configuration and the ReAct loop behind ``call`` and ``stream_events``.

One agent object is configured once and shared by every session. A call loads the session's
:class:`~harnessed.state.AgentState`, appends the input, and loops: prepare the request →
stream the model → run the requested tools → prepare again ..., until the model answers without
tool calls or ``max_iters`` model requests were made. State is saved after every completed step,
so a failure never leaves half a step (a tool call without its result) behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence

from harnessed.compaction import (
    CompactionConfig,
    PruneConfig,
    ToolResultEvictionConfig,
    history_transforms,
)
from harnessed.context.compiler import ContextCompiler
from harnessed.context.hooks import MemoryFlusher
from harnessed.context.manifest import ContextManifest
from harnessed.context.policy import ContextPolicy
from harnessed.context.seam import PrepareInfo, RequestPreparer
from harnessed.context.sources import (
    ContextSource,
    SourceFailurePolicy,
    SourceFunction,
    SourceSet,
    validate_id,
)
from harnessed.context.workspace_refs import WorkspaceRefs, load_workspace_refs
from harnessed.controls import SessionControls
from harnessed.events import (
    AgentEndEvent,
    Event,
)
from harnessed.loop import AgentRun
from harnessed.memory import AuxiliaryModel, MemoryConfig, MemoryManager
from harnessed.messages import Msg, TextBlock
from harnessed.models.base import (
    Model,
    ModelRequest,
)
from harnessed.models.registry import resolve_model
from harnessed.permissions import (
    ConfirmationMode,
    PermissionMode,
    PermissionRule,
    ToolPermissionCheck,
)
from harnessed.runtime import RuntimeContext, SessionLocks
from harnessed.session import (
    IndexedSessionLogStore,
    RecordType,
    SessionInfo,
    SessionKey,
    SessionLogStore,
    SessionRecord,
)
from harnessed.session.defaults import default_search_index, default_session_store
from harnessed.session.search import MatchMode, SearchHit, SearchIndex, SearchOrder
from harnessed.state.agent_state import AgentState, StateKey
from harnessed.state.store import AgentStateStore, InMemoryStateStore, JsonFileStateStore
from harnessed.state.task import TaskContractConfig
from harnessed.tools.base import Tool
from harnessed.tools.files import file_tools as make_file_tools
from harnessed.tools.memory import memory_tools as make_memory_tools
from harnessed.tools.session import session_tools as make_session_tools
from harnessed.tools.shell import ShellConfig, shell_tools
from harnessed.tools.toolkit import ToolGuard, Toolkit
from harnessed.workspace import Filesystem, IsolationScope, Workspace

__all__ = ["AgentInput", "HarnessAgent"]

logger = logging.getLogger(__name__)

AgentInput = str | Msg | Sequence[Msg] | None

_STATE_DIR = (".harnessed", "state")

# Default history transforms (frozen configs, safe to share).
_DEFAULT_COMPACTION = CompactionConfig()
_DEFAULT_EVICTION = ToolResultEvictionConfig()
_DEFAULT_PRUNE = PruneConfig()


class HarnessAgent(SessionControls):
    """A long-running agent: a model, tools, and a harness around every request.

    Args:
        name: The agent's id (also the default session id). Letters, digits, ``_.-``.
        model: A :class:`~harnessed.models.Model` or a string such as ``"openai:gpt-4.1-mini"``.
        sys_prompt: The agent's role and rules, sent as system instructions.
        tools: Tools made with :func:`harnessed.tool`.
        workspace: The agent's files: a directory, an fsspec URL (``s3://bucket/prefix``), a
            :class:`~harnessed.workspace.Filesystem` or a :class:`~harnessed.workspace.Workspace`.
            State and session logs are kept under a local workspace by default.
        isolation_scope: How runtime data (memory, session logs, large tool results) is
            separated: per ``"user"`` (default), ``"session"``, ``"agent"`` or ``"global"``.
        file_tools: Register the built-in file tools when there is a workspace (default on).
        shell: The built-in ``execute`` tool: ``None`` (default) = on for a local workspace,
            ``True`` = on (a local workspace is required), ``False`` = off, or a
            :class:`~harnessed.tools.shell.ShellConfig`.
        state_store: Where :class:`AgentState` is kept (default: JSON files in the workspace,
            or memory when there is no workspace).
        session_store: Where the append-only session log is kept (default: JSONL files in the
            workspace under ``agents/``; segment files for memory and object-store workspaces;
            memory when there is no workspace).
        search_index: The full-text index of the session log (default: SQLite FTS5 beside
            the logs of a local workspace, else scanning the logs).
        memory: Long-term memory (needs a workspace): ``True`` (default) for
            :class:`MemoryConfig` defaults, a :class:`MemoryConfig`, or ``False`` for none.
        memory_tools: Register the memory and session tools when there is a workspace
            (default on).
        readable_session_agents: Other agents whose sessions (of the same user, in the same
            session store) the session tools may read with ``agent_id``; default none: only
            this agent's own.
        max_iters: The most model requests one call may make (default 10).
        max_output_tokens: Limit on generated tokens per request (default: the model's).
        prepare: The step that turns state into each model request (the context compiler).
        tool_guard: The application's own check before each tool call (after plan mode and
            permissions); returns ``None`` or the text of an error result.
        compaction: When and how the earlier history is summarized (on by default; ``None``
            turns summaries and provider-overflow recovery off).
        tool_result_eviction: Tool results too large for the context go to workspace files
            (on by default; needs a workspace; ``None`` turns it off).
        prune: Old, long tool output is shortened to previews (on by default; ``None`` = off).
        enable_task_list: Give the model ``todo_write``; the list is shown in ``TASK_STATE``.
        enable_plan_mode: Give the model ``plan_enter``, ``plan_write`` and ``plan_exit``
            (needs a workspace: the plan is ``plans/PLAN.md``).
        task_contract: What ``TASK_STATE`` shows of the task contract, and whether the model
            may propose requirements (:class:`~harnessed.state.task.TaskContractConfig`).
        permission_mode: ``default``, ``accept_edits``, ``explore``, ``bypass`` or
            ``dont_ask``; ``None`` with no rules leaves permissions off.
        permission_rules: :class:`~harnessed.permissions.PermissionRule` allow/deny/ask rules.
        permission_checks: Extra per-tool permission checks (tool name → check).
        confirmation_timeout: Seconds ``stream_events`` waits for answers before the call
            ends as ``pending`` (``None``: wait as long as the stream is read).
    """

    def __init__(
        self,
        name: str,
        model: Model | str,
        *,
        sys_prompt: str = "",
        tools: Iterable[Tool] = (),
        workspace: str | os.PathLike[str] | Workspace | Filesystem | None = None,
        isolation_scope: IsolationScope = "user",
        file_tools: bool = True,
        shell: bool | ShellConfig | None = None,
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
        compaction: CompactionConfig | None = _DEFAULT_COMPACTION,
        tool_result_eviction: ToolResultEvictionConfig | None = _DEFAULT_EVICTION,
        prune: PruneConfig | None = _DEFAULT_PRUNE,
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
    ) -> None:
        if (
            not isinstance(name, str)
            or not name
            or not all(c.isalnum() or c in "_.-" for c in name)
        ):
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
        self.workspace = _as_workspace(workspace, isolation_scope)
        self.toolkit = Toolkit(tools)
        for builtin in _builtin_tools(self.workspace, file_tools, shell):
            if builtin.name in self.toolkit:
                logger.info("the application's tool %r replaces the built-in one", builtin.name)
            else:
                self.toolkit.add(builtin)
        local_root = self.workspace.local_root if self.workspace is not None else None
        if state_store is None:
            state_store = (
                JsonFileStateStore(local_root.joinpath(*_STATE_DIR))
                if local_root is not None
                else InMemoryStateStore()
            )
        self.state_store = state_store
        self.max_iters = max_iters
        self.max_output_tokens = max_output_tokens
        self.max_context_tokens = max_context_tokens
        self.context_files = tuple(context_files)
        self.sources = SourceSet()
        # History transforms (eviction, pruning, summaries) plugged into the compiler.
        self.compaction = compaction
        self.tool_result_eviction = tool_result_eviction
        self.prune = prune
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
            sources=self.sources,
            refs_loader=self._load_workspace_refs if self.workspace is not None else None,
            evictor=transforms.evictor,
            compactor=transforms.compactor,
        )
        for key, text in (instructions or {}).items():
            self.add_instruction(key, text)
        self.prepare: RequestPreparer = prepare or self.compiler
        self.tool_guard = tool_guard
        self._locks = SessionLocks()
        # --- session search and long-term memory (issue 5) ---
        store = default_session_store(self.workspace) if session_store is None else session_store
        if isinstance(store, IndexedSessionLogStore):
            if search_index is not None:
                raise ValueError("pass search_index or an already indexed session_store, not both")
            self.session_store = store
        else:
            index = search_index or default_search_index(self.workspace, store)
            self.session_store = IndexedSessionLogStore(store, index)
        self.memory: MemoryManager | None = self._make_memory(memory)
        self._flusher_override: MemoryFlusher | None = None
        if memory_tools and self.workspace is not None:
            extra = make_session_tools(self.session_store, readable_agents=readable_session_agents)
            extra += make_memory_tools(self.memory) if self.memory is not None else []
            for builtin in extra:
                if builtin.name not in self.toolkit:
                    self.toolkit.add(builtin)
        # task list, plan mode, task contract and permissions (harnessed.controls)
        self._setup_controls(
            enable_task_list=enable_task_list,
            enable_plan_mode=enable_plan_mode,
            task_contract=task_contract,
            permission_mode=permission_mode,
            permission_rules=permission_rules,
            permission_checks=permission_checks,
            confirmation_timeout=confirmation_timeout,
        )

    # -------------------------------------------------------- configuration
    def add_instruction(self, instruction_id: str, text: str) -> None:
        """Add a trusted business rule to the system instructions (at start-up)."""
        validate_id(instruction_id, "instruction id")
        if instruction_id in self.compiler.instructions:
            raise ValueError(f"an instruction with id {instruction_id!r} is already registered")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"instruction {instruction_id!r} must be non-blank text")
        self.compiler.instructions[instruction_id] = text

    def add_context_source(
        self,
        source_id: str,
        source: ContextSource | SourceFunction,
        *,
        timeout: float = 5.0,
        on_failure: SourceFailurePolicy = SourceFailurePolicy.FAIL,
    ) -> None:
        """Register a dynamic source, loaded before every reasoning request (never here)."""
        self.sources.add(source_id, source, timeout=timeout, on_failure=on_failure)

    def last_manifest(self, ctx: RuntimeContext | None = None) -> ContextManifest | None:
        """The manifest of the most recent request preparation of a session."""
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        return self.compiler.last_manifest(self.name, ctx.user_id, ctx.session)

    def _make_memory(self, memory: MemoryConfig | bool) -> MemoryManager | None:
        if memory is False:
            return None
        if self.workspace is None:
            if isinstance(memory, MemoryConfig):
                raise ValueError("memory needs a workspace: pass workspace=... to HarnessAgent")
            return None
        config = memory if isinstance(memory, MemoryConfig) else MemoryConfig()
        model = resolve_model(config.model) if config.model is not None else self.model
        return MemoryManager(
            self.workspace,
            agent_name=self.name,
            aux=AuxiliaryModel(self.name, model, self.compiler),
            config=config,
            session_store=self.session_store,
            estimator=self.compiler.meter.estimator,
        )

    @property
    def memory_flusher(self) -> MemoryFlusher | None:
        """The flusher compaction awaits before summarizing (``None`` when turned off).

        Defaults to the agent's memory; assign another :class:`MemoryFlusher` to replace it.
        """
        if self._flusher_override is not None:
            return self._flusher_override
        if self.memory is None or not self.memory.config.flush_before_compaction:
            return None
        return self.memory

    @memory_flusher.setter
    def memory_flusher(self, flusher: MemoryFlusher | None) -> None:
        self._flusher_override = flusher

    async def _load_workspace_refs(self, info: PrepareInfo) -> WorkspaceRefs:
        ws = self.workspace
        assert ws is not None
        scoped = ws.memory_file(
            agent_id=self.name, user_id=info.runtime.user_id, session_id=info.runtime.session
        )
        return await load_workspace_refs(
            ws.fs,
            self.compiler.meter.estimator,
            memory_files=tuple(dict.fromkeys((ws.MEMORY_MD, scoped))),
            max_context_tokens=self.max_context_tokens,
            context_files=self.context_files,
        )

    # ------------------------------------------------------------ public API
    async def call(self, input: AgentInput, ctx: RuntimeContext | None = None) -> Msg:
        """Run the agent on ``input`` and return its final reply."""
        reply: Msg | None = None
        async for event in self.stream_events(input, ctx, confirmations="park"):
            if isinstance(event, AgentEndEvent):
                reply = event.reply
        if reply is None:  # pragma: no cover - stream_events always ends with agent_end or raises
            raise RuntimeError("agent run ended without a reply")
        return reply

    def call_sync(self, input: AgentInput, ctx: RuntimeContext | None = None) -> Msg:
        """Blocking form of :meth:`call` for scripts (not for use inside an event loop).

        It also waits for the call's background memory work, which would otherwise end with
        the event loop.
        """

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
    ) -> AsyncIterator[Event]:
        """Run the agent on ``input``, yielding typed events as the work happens.

        The last event is :class:`AgentEndEvent` on success; on failure an
        :class:`ErrorEvent` is yielded and the exception is raised. When a tool call needs the
        user's approval a :class:`ConfirmationRequestEvent` is yielded and, with
        ``confirmations="wait"``, the run waits for :meth:`respond`; with ``"park"`` (what
        :meth:`call` uses) the call ends at once with status ``pending``.
        """
        messages = _input_messages(input)
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        key = StateKey(self.name, ctx.user_id, ctx.session)
        async with self._locks.hold(key.agent_id, key.user_id, key.session_id):
            state = await self.load_state(ctx)
            run = AgentRun(self, ctx, state, confirmations)
            async with contextlib.aclosing(run.execute(messages)) as events:
                async for event in events:
                    yield event
            if self.memory is not None:  # background flush / maintenance (issue 5)
                self.memory.after_call(ctx, state.history)

    def models(self) -> list[Model]:
        """Every model the agent calls: its own, the summary model, the memory model."""
        found: list[Model] = [self.model]
        compactor = self.compiler.compactor
        summarizer = getattr(compactor, "summarizer", None)
        if summarizer is not None and summarizer.model is not None:
            found.append(summarizer.model)
        if self.memory is not None:
            found.append(self.memory.aux.model)
        unique: dict[int, Model] = {id(m): m for m in found}
        return list(unique.values())

    async def close(self) -> None:
        """Wait for background memory work, then release what the agent holds (index files,
        the HTTP clients of its models)."""
        if self.memory is not None:
            await self.memory.wait_idle()
        await self.session_store.close()
        for model in self.models():
            closer = getattr(model, "aclose", None)
            if closer is not None:
                await closer()

    async def __aenter__(self) -> HarnessAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def session_log(
        self,
        ctx: RuntimeContext | None = None,
        *,
        types: Sequence[str] | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """The full, never-compacted record of a session (optionally of some record types)."""
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        key = SessionKey(self.name, ctx.user_id, ctx.session)
        return await self.session_store.read(key, types=types, after_seq=after_seq, limit=limit)

    async def session_messages(self, ctx: RuntimeContext | None = None) -> list[Msg]:
        """Every message of a session as it happened (full tool output, nothing summarized)."""
        records = await self.session_log(ctx, types=[RecordType.MESSAGE])
        return [m for m in (r.message for r in records) if m is not None]

    async def sessions(self, user_id: str = "default") -> list[SessionInfo]:
        """The sessions a user has with this agent, most recent first."""
        return await self.session_store.sessions(self.name, user_id)

    async def session_search(
        self,
        query: str,
        user_id: str = "default",
        *,
        max_results: int = 10,
        match: MatchMode = "phrase",
        order: SearchOrder = "recent",
        session_id: str | None = None,
    ) -> list[SearchHit]:
        """Search the messages of a user's sessions (newest first by default)."""
        return await self.session_store.search(
            self.name,
            user_id,
            query,
            max_results=max_results,
            match=match,
            order=order,
            session_id=session_id,
        )

    async def load_state(self, ctx: RuntimeContext | None = None) -> AgentState:
        """The stored state of a session (a fresh one when the session is new)."""
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        key = StateKey(self.name, ctx.user_id, ctx.session)
        state = await self.state_store.load(key)
        return state if state is not None else AgentState.new(key)

    def draft_request(self, state: AgentState, model_call_id: str) -> ModelRequest:
        """The request before preparation: system prompt, working history and tool schemas."""
        messages: list[Msg] = []
        if self.sys_prompt:
            messages.append(Msg.system(self.sys_prompt))
        messages.extend(state.history)
        return ModelRequest(
            messages=tuple(messages),
            tools=self.toolkit.schemas(),
            max_output_tokens=self.max_output_tokens,
            call_id=model_call_id,
        )


def _as_workspace(
    workspace: str | os.PathLike[str] | Workspace | Filesystem | None, scope: IsolationScope
) -> Workspace | None:
    if workspace is None or isinstance(workspace, Workspace):
        return workspace
    return Workspace(workspace, scope=scope)


def _builtin_tools(
    workspace: Workspace | None, files: bool, shell: bool | ShellConfig | None
) -> list[Tool]:
    if workspace is None:
        if shell:
            raise ValueError("shell needs a workspace: pass workspace=... to HarnessAgent")
        return []
    tools = make_file_tools(workspace) if files else []
    local = workspace.local_root is not None
    if shell is True and not local:
        raise ValueError(
            "shell=True needs a workspace on local disk; this workspace is "
            f"{workspace!r} (commands cannot run inside a remote filesystem)"
        )
    if isinstance(shell, ShellConfig) or shell is True or (shell is None and local):
        config = shell if isinstance(shell, ShellConfig) else None
        tools += shell_tools(workspace, config=config)
    return tools


def _input_messages(input: AgentInput) -> list[Msg]:
    if input is None:
        return []
    if isinstance(input, str):
        if not input.strip():
            raise ValueError("agent input must not be blank")
        return [Msg.user(input)]
    messages = [input] if isinstance(input, Msg) else list(input)
    for m in messages:
        if not isinstance(m, Msg):
            raise TypeError(f"agent input must be a str, a Msg or a list of Msg, got {m!r}")
        if m.role == "system":
            raise ValueError(
                "agent input must not be a system message: instructions belong in sys_prompt, "
                "instructions= or add_instruction() (the request has one system message)"
            )
        if not m.content or (
            m.role == "user"
            and not m.text.strip()
            and all(isinstance(b, TextBlock) for b in m.content)
        ):
            raise ValueError(f"agent input message {m.id} is blank")
    return messages
