"""AgentHost: what every capability and the loop reach of an agent (a mixin of the agent).

It implements :class:`~harnessed.capabilities.CapabilityHost` (and the loop's
:class:`~harnessed.run.LoopHost` with the agent): plugging the capabilities in, the trusted
instructions and dynamic sources, state access, and the lookups that find a capability, a tool,
the approval gate and long-term memory.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from harnessed.capabilities.base import Capability
from harnessed.capabilities.hooks import MemoryFlusher
from harnessed.capabilities.registry import CapabilitySet
from harnessed.capabilities.seam import RequestPreparer
from harnessed.capabilities.sources import (
    ContextSource,
    SourceFailurePolicy,
    SourceFunction,
    SourceSet,
    validate_id,
)
from harnessed.compaction.requests import PreparerSummaries, SummaryRequests
from harnessed.compaction.wiring import HistoryTransforms
from harnessed.context.compiler import ContextCompiler
from harnessed.context.manifest import ContextManifest
from harnessed.cost.caching import cache_key
from harnessed.memory.capability import Memory
from harnessed.memory.manager import MemoryManager
from harnessed.messages import Msg
from harnessed.models.base import Model, ModelRequest
from harnessed.permissions.capability import Permissions
from harnessed.permissions.gate import ApprovalGate
from harnessed.run.approvals import Approvals
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.state.conversation import ConversationStore
from harnessed.state.editor import Change, StateEditor
from harnessed.state.store import AgentStateStore
from harnessed.stores.local.indexed import IndexedSessionLogStore
from harnessed.tokens import TokenEstimator
from harnessed.tools.base import Tool
from harnessed.tools.toolkit import Toolkit
from harnessed.workspace.layout import Workspace

__all__ = ["AgentHost"]

logger = logging.getLogger(__name__)
C = TypeVar("C", bound=Capability)
V = TypeVar("V")


class AgentHost:
    """The capability host side of :class:`~harnessed.HarnessAgent`."""

    name: str
    model: Model
    workspace: Workspace | None
    state_store: AgentStateStore
    session_store: IndexedSessionLogStore
    conversation: ConversationStore
    sources: SourceSet
    prepare: RequestPreparer
    compiler: ContextCompiler
    history_transforms: HistoryTransforms
    capabilities: CapabilitySet
    toolkit: Toolkit
    sys_prompt: str
    max_output_tokens: int | None
    _editor: StateEditor
    _flusher_override: MemoryFlusher | None = None

    def _plug_in(self, application_tools: frozenset[str]) -> None:
        """Set every capability up, then take what each contributes."""
        for capability in self.capabilities:
            capability.setup(self)
        owners: dict[str, str] = {}
        for capability in self.capabilities:
            name = capability.capability_name
            for tool in capability.tools():
                if tool.name in application_tools:
                    logger.info("the application's tool %r replaces the built-in one", tool.name)
                    continue
                if tool.name in owners:
                    raise ValueError(
                        f"capabilities {owners[tool.name]!r} and {name!r} both give a tool named "
                        f"{tool.name!r}"
                    )
                owners[tool.name] = name
                self.toolkit.add(tool)
            for key, text in capability.instructions().items():
                self.add_instruction(key, text)
            for spec in capability.context_sources():
                self.add_context_source(
                    spec.id, spec.source, timeout=spec.timeout, on_failure=spec.on_failure
                )
            self.compiler.views.extend(capability.history_views())
        if self.capabilities.state_block_providers:
            self.compiler.state_blocks = self.capabilities.state_blocks

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

    # ------------------------------------------------ the capability host
    @property
    def agent_name(self) -> str:
        return self.name

    @property
    def estimator(self) -> TokenEstimator:
        return self.compiler.meter.estimator

    @property
    def preparer(self) -> RequestPreparer:
        return self.prepare

    @property
    def summary_requests(self) -> SummaryRequests:
        """Who prepares compaction's summary requests: the compiler, or the preparer given as
        ``prepare=`` (which then sees every request the agent makes, summaries included)."""
        if self.prepare is self.compiler:
            return self.compiler
        policy = self.compiler.policy
        return PreparerSummaries(self.prepare, self.compiler.meter.estimator, policy.input_limit)

    async def read_state(self, ctx: RuntimeContext | None) -> AgentState:
        ctx = self._editor.resolve(ctx)
        return await self.conversation.load(SessionRef(self.name, ctx.user_id, ctx.session))

    async def change_state(self, ctx: RuntimeContext | None, change: Change) -> AgentState:
        return await self._editor.change(ctx, change)

    def capability(self, kind: type[C]) -> C | None:
        """The agent's first capability of type ``kind`` (or ``None``)."""
        return self.capabilities.find(kind)

    def query(self, view: type[V]) -> V | None:
        """The first read-only view of type ``view`` a capability answers with."""
        return self.capabilities.query(view)

    def tool(self, name: str) -> Tool | None:
        return self.toolkit.get(name)

    @property
    def approvals(self) -> Approvals:
        """Asks before tools run, for each run of the agent (the permissions capability)."""
        permissions = self.capability(Permissions)
        assert permissions is not None  # the shortcuts always install one
        return permissions

    @property
    def approval_gate(self) -> ApprovalGate:
        """Decides each step's tool calls before they run (the permissions capability's)."""
        permissions = self.capability(Permissions)
        assert permissions is not None  # the shortcuts always install one
        return permissions.gate

    @property
    def memory(self) -> MemoryManager | None:
        """Long-term memory (``None`` without the memory capability)."""
        found = self.capability(Memory)
        return found.manager if found is not None else None

    @property
    def memory_flusher(self) -> MemoryFlusher | None:
        """The flusher compaction awaits before summarizing (``None`` when turned off).

        Defaults to the agent's memory; assign another :class:`MemoryFlusher` to replace it.
        """
        if self._flusher_override is not None:
            return self._flusher_override
        memory = self.memory
        if memory is None or not memory.config.flush_before_compaction:
            return None
        return memory

    @memory_flusher.setter
    def memory_flusher(self, flusher: MemoryFlusher | None) -> None:
        self._flusher_override = flusher

    def models(self) -> list[Model]:
        """Every model the agent calls: its own, the summary model, the memory model."""
        found: list[Model] = [self.model]
        summarizer = getattr(self.history_transforms.compactor, "summarizer", None)
        if summarizer is not None and summarizer.model is not None:
            found.append(summarizer.model)
        if self.memory is not None:
            found.append(self.memory.aux.model)
        return list({id(m): m for m in found}.values())

    async def load_state(self, ctx: RuntimeContext | None = None) -> AgentState:
        """The state of a session (a fresh one when the session is new), with its working
        history as the session log has it."""
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        return await self.conversation.load(SessionRef(self.name, ctx.user_id, ctx.session))

    def draft_request(self, state: AgentState, model_call_id: str) -> ModelRequest:
        """The request before preparation: system prompt, working history and tool schemas."""
        system = [Msg.system(self.sys_prompt)] if self.sys_prompt else []
        return ModelRequest(
            messages=(*system, *state.history),
            tools=self.toolkit.schemas(),
            max_output_tokens=self.max_output_tokens,
            call_id=model_call_id,
            cache_key=cache_key(self.name, state.user_id, state.session_id),
        )
