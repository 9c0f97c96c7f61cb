"""ContextCompiler: rebuilds, fits, validates and describes every model request.

For a reasoning request: instructions → workspace references (once per call) → dynamic
sources (every request) → eviction → optional materials dropped until the request fits →
compaction within the history budget → layout → tool-pair and budget validation → conflict
check → commit of the candidate history. Every preparation, failed or not, yields a
:class:`ContextManifest` for the observer, the event stream and the session log.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from harnessed.capabilities.hooks import HistoryBudget, HistoryTransform, HistoryView, unchanged
from harnessed.capabilities.seam import PrepareInfo
from harnessed.capabilities.sources import ContextRequest, SourceSet
from harnessed.capabilities.state_blocks import StateBlock
from harnessed.context.errors import (
    ContextBudgetExceededError,
    ContextConflictError,
    ContextError,
    ToolPairingError,
)
from harnessed.context.manifest import ContextManifest, ManifestItem
from harnessed.context.materials import Material, instruction_materials, source_materials
from harnessed.context.meter import HistoryMemo, Meter
from harnessed.context.pairs import tool_pair_problems
from harnessed.context.policy import ContextPolicy
from harnessed.context.prefix import LastPrefix, PrefixMemo
from harnessed.context.render import render_references, render_state, render_system
from harnessed.context.selection import drop_order
from harnessed.context.workspace_refs import WorkspaceRefs
from harnessed.messages import Msg
from harnessed.models.base import Model, ModelRequest, ModelResponse
from harnessed.models.windows import window_source
from harnessed.state.agent_state import AgentState
from harnessed.tokens import default_estimator

__all__ = ["ContextCompiler", "ManifestSink"]

logger = logging.getLogger(__name__)

ManifestSink = Callable[[ContextManifest, PrepareInfo], Awaitable[None] | None]
RefsLoader = Callable[[PrepareInfo], Awaitable[WorkspaceRefs]]

_CONFLICT_RETRIES = 2
_LAST_KEPT = 2_048


@dataclass(slots=True)
class _Build:
    """Working data of one preparation, kept for the manifest when it fails midway."""

    limit: int = -1
    raw_estimate: int = -1
    items: list[Material] = field(default_factory=list)
    transforms: list[str] = field(default_factory=list)
    breakdown: dict[str, int] = field(default_factory=dict)
    history_messages: int = 0
    cached_prefix: int = 0


class ContextCompiler:
    """The :class:`~harnessed.capabilities.seam.RequestPreparer` of a :class:`HarnessAgent`."""

    def __init__(
        self,
        *,
        sys_prompt: str = "",
        instructions: dict[str, str] | None = None,
        policy: ContextPolicy | None = None,
        sources: SourceSet | None = None,
        refs_loader: RefsLoader | None = None,
        evictor: HistoryTransform | None = None,
        compactor: HistoryTransform | None = None,
        views: Sequence[HistoryView] = (),
        conventions: bool = True,
    ) -> None:
        self.sys_prompt = sys_prompt
        self.instructions = dict(instructions or {})
        self.policy = policy or ContextPolicy()
        self.sources = sources if sources is not None else SourceSet()
        self.refs_loader = refs_loader
        self.evictor: HistoryTransform = evictor or unchanged
        self.compactor: HistoryTransform = compactor or unchanged
        self.views: list[HistoryView] = list(views)
        """Request-only projections of the history, applied after validation (never stored)."""
        self.conventions = conventions
        self.state_blocks: Callable[[AgentState], Sequence[StateBlock]] = _no_blocks
        """The ``TASK_STATE`` / ``RUNTIME_STATE`` texts of a state (the agent's capabilities)."""
        self.meter = Meter(self.policy.estimator or default_estimator())
        self.sinks: list[ManifestSink] = []
        self._last: OrderedDict[tuple[str, ...], ContextManifest] = OrderedDict()
        self._memos: OrderedDict[tuple[str, ...], HistoryMemo] = OrderedDict()
        self._prefixes = PrefixMemo()

    # ------------------------------------------------------------ the seam
    async def __call__(
        self, state: AgentState, request: ModelRequest, info: PrepareInfo
    ) -> ModelRequest:
        for attempt in range(_CONFLICT_RETRIES + 1):
            build = _Build()
            try:
                prepared = await self._prepare(state, request, info, build)
            except ContextConflictError as exc:
                await self._publish(self._manifest(state, info, build, exc.validation), info, exc)
                if attempt == _CONFLICT_RETRIES:
                    raise
                continue
            except Exception as exc:
                validation = exc.validation if isinstance(exc, ContextError) else "build_failed"
                await self._publish(self._manifest(state, info, build, validation), info, exc)
                raise
            await self._publish(self._manifest(state, info, build, "passed"), info, None)
            return prepared
        raise AssertionError("unreachable")  # pragma: no cover

    def after_response(self, info: PrepareInfo, response: ModelResponse) -> None:
        """Calibrate estimates with the provider's reported input size."""
        if response.usage is not None:
            self.meter.observe(info.model_call_id, response.usage.input_tokens)

    # ------------------------------------------ summary requests (compaction's protocol)
    def count_text(self, text: str) -> int:
        """Tokens of ``text`` with the compiler's estimator (cached)."""
        return self.meter.text(text)

    def summary_room(self, model: Model, max_output_tokens: int) -> int:
        """What a summary request to ``model`` may use besides the instructions it gets."""
        limit = self.policy.input_limit(model.context_window, max_output_tokens)
        instructions = self.meter.text(self.sys_prompt) + sum(
            self.meter.text(t) for t in self.instructions.values()
        )
        return limit - instructions

    async def prepare_summary(
        self, state: AgentState, draft: ModelRequest, info: PrepareInfo
    ) -> ModelRequest:
        """A summary request: the instructions and its own messages (see the module doc)."""
        return await self(state, draft, info)

    def _memo(self, session: tuple[str, ...]) -> HistoryMemo:
        memo = self._memos.get(session)
        if memo is None:
            memo = self._memos[session] = HistoryMemo()
        self._memos.move_to_end(session)
        while len(self._memos) > _LAST_KEPT:
            self._memos.popitem(last=False)
        return memo

    def last_prefix(self, info: PrepareInfo) -> LastPrefix | None:
        """The stable prefix (tools, system message, history) of the session's last reasoning
        request: what a provider's prompt cache holds for the session."""
        return self._prefixes.last((info.agent_name, info.runtime.user_id, info.runtime.session))

    def last_manifest(self, agent_id: str, user_id: str, session_id: str) -> ContextManifest | None:
        return self._last.get((agent_id, user_id, session_id))

    # ------------------------------------------------------------- building
    async def _prepare(
        self, state: AgentState, request: ModelRequest, info: PrepareInfo, build: _Build
    ) -> ModelRequest:
        """The phases: materials → measure → evict → fit → compact → validate → assemble."""
        task_rev, history_rev = state.task_revision, state.history_revision
        session = (info.agent_name, info.runtime.user_id, info.runtime.session)
        refs = await self._workspace_refs(info)
        system_items = instruction_materials(
            self.sys_prompt, refs.agents_md, self.instructions, self.conventions
        )
        if info.purpose == "summary":  # of the workspace material, only AGENTS.md is sent
            build.transforms.extend(refs.instruction_transforms)
            return self._summary_request(request, system_items, session, info, build)
        build.transforms.extend(refs.transforms)
        optional_pool = [*refs.materials, *await self._source_materials(info, build)]
        system_items = [*system_items, *info.instructions]

        build.limit = self.policy.input_limit(
            info.model.context_window, request.max_output_tokens or info.model.max_output_tokens
        )
        raw_limit = int(build.limit / self.meter.ratio(session))
        state_msg = render_state(self.state_blocks(state), state.task_revision)
        fixed = {
            "system": 0,
            "state": self._tokens(state_msg),
            "tools": self.meter.tools(request.tools),
        }
        if request.output is not None:  # the native structured output's schema is sent too
            fixed["output"] = self.meter.output(request.output)
        history = await self._evict(state, info, raw_limit, build)
        memo = self._memo(session)
        history_tokens = self.meter.history(memo, history)

        system_msg, refs_msg = self._fit(
            system_items, optional_pool, fixed, history_tokens, raw_limit, build
        )
        fixed_total = self._check_fixed(fixed, history_tokens, raw_limit, session, build)
        history = await self._compact(history, state, info, raw_limit - fixed_total, memo, build)
        history_tokens = self.meter.history(memo, history)
        build.breakdown = {**fixed, "history": history_tokens}
        build.history_messages = len(history)
        build.raw_estimate = fixed_total + history_tokens
        self._validate(history, memo, history_tokens, raw_limit, session, build)
        _check_unchanged(state, task_rev, history_rev)
        return self._assemble(
            state, request, info, history, (system_msg, state_msg, refs_msg), fixed, build
        )

    async def _source_materials(self, info: PrepareInfo, build: _Build) -> list[Material]:
        """The dynamic sources' blocks, loaded for every reasoning request."""
        context_request = ContextRequest(
            info.agent_name,
            info.runtime.user_id,
            info.runtime.session,
            info.model_call_id,
            extras=info.runtime.extras,
        )
        outcomes = await self.sources.load_all(context_request)
        build.transforms.extend(
            f"source_unavailable:source/{o.source_id}/:{o.unavailable}"
            for o in outcomes
            if o.unavailable
        )
        return source_materials(outcomes)

    async def _evict(
        self, state: AgentState, info: PrepareInfo, raw_limit: int, build: _Build
    ) -> list[Msg]:
        """The history with large tool results moved out (before anything is measured)."""
        budget = HistoryBudget(raw_limit, self.meter.message, info, state)
        evicted = await self.evictor(state.history, budget)
        build.transforms.extend(evicted.transforms)
        return list(evicted.history)

    def _fit(
        self,
        system_items: list[Material],
        kept: list[Material],
        fixed: dict[str, int],
        history_tokens: int,
        raw_limit: int,
        build: _Build,
    ) -> tuple[Msg | None, Msg | None]:
        """Condense or drop optional materials (in drop order) until the request fits; fills
        ``fixed["system"]`` and ``fixed["references"]`` and returns the two rendered messages."""
        system_msg, refs_msg = render_system(system_items), render_references(kept)
        fixed["system"] = self._tokens(system_msg)
        refs_tokens = self._tokens(refs_msg)
        pending = drop_order(
            [m for m in (*system_items, *kept) if not m.required or m.condense is not None],
            self.policy.selection_policy,
        )
        while (excess := sum(fixed.values()) + refs_tokens + history_tokens - raw_limit) > 0:
            if not pending:
                break
            victim = pending.pop(0)
            group = system_items if victim.placement == "system" else kept
            if not self._shrink(victim, excess, group, pending, build):
                continue
            if group is kept:
                refs_msg = render_references(kept)
                refs_tokens = self._tokens(refs_msg)
            else:
                system_msg = render_system(system_items)
                fixed["system"] = self._tokens(system_msg)
        build.transforms.extend(
            f"omitted_for_budget:{part}" for m in (*system_items, *kept) for part in m.omits
        )
        fixed["references"] = refs_tokens
        build.items = [*system_items, *kept]
        return system_msg, refs_msg

    def _shrink(
        self,
        victim: Material,
        excess: int,
        group: list[Material],
        pending: list[Material],
        build: _Build,
    ) -> bool:
        """Condense ``victim`` in ``group`` or drop it; ``False`` when it has to stay as is."""
        smaller = victim.condense(excess, self.meter.text) if victim.condense else None
        if smaller is not None:
            group[group.index(victim)] = smaller
            pending.insert(0, smaller)
        elif not victim.required:
            group.remove(victim)
            build.transforms.extend(f"omitted_for_budget:{part}" for part in victim.omits)
            build.transforms.append(f"omitted_for_budget:{victim.id}")
        else:
            return False
        return True

    def _check_fixed(
        self,
        fixed: dict[str, int],
        history_tokens: int,
        raw_limit: int,
        session: tuple[str, ...],
        build: _Build,
    ) -> int:
        """The tokens of everything but the history; raises when they alone are too many."""
        fixed_total = sum(fixed.values())
        if fixed_total > raw_limit:
            build.raw_estimate = fixed_total + history_tokens
            build.breakdown = {**fixed, "history": history_tokens}
            estimate = self.meter.calibrated(build.raw_estimate, session)
            raise ContextBudgetExceededError(
                f"system instructions, required material, state and tool schemas alone need "
                f"about {self.meter.calibrated(fixed_total, session)} tokens (the whole request "
                f"about {estimate}) but the input limit is {build.limit}",
                estimate=estimate,
                limit=build.limit,
            )
        return fixed_total

    async def _compact(
        self,
        history: list[Msg],
        state: AgentState,
        info: PrepareInfo,
        room: int,
        memo: HistoryMemo,
        build: _Build,
    ) -> list[Msg]:
        """The history within ``room`` tokens (the compactor: pruning, summaries)."""
        compacted = await self.compactor(
            history,
            HistoryBudget(
                room,
                self.meter.message,
                info,
                state,
                info.force_compaction,
                lambda h: self.meter.history(memo, h),
            ),
        )
        build.transforms.extend(compacted.transforms)
        return list(compacted.history)

    def _validate(
        self,
        history: list[Msg],
        memo: HistoryMemo,
        history_tokens: int,
        raw_limit: int,
        session: tuple[str, ...],
        build: _Build,
    ) -> None:
        """Every tool call keeps its result (only the new part is checked) and the request
        fits its limit."""
        problems = tool_pair_problems(history, start=memo.pairs_checked)
        if problems:
            raise ToolPairingError(problems)
        memo.pairs_checked = len(history)
        if build.raw_estimate > raw_limit:
            estimate = self.meter.calibrated(build.raw_estimate, session)
            raise ContextBudgetExceededError(
                f"the request needs about {estimate} tokens after compaction but the input "
                f"limit is {build.limit} (history {history_tokens} of them)",
                estimate=estimate,
                limit=build.limit,
            )

    def _assemble(
        self,
        state: AgentState,
        request: ModelRequest,
        info: PrepareInfo,
        history: list[Msg],
        rendered: tuple[Msg | None, Msg | None, Msg | None],
        fixed: dict[str, int],
        build: _Build,
    ) -> ModelRequest:
        """The request: system, the history as the views show it, state and references; the
        candidate history is committed to the state; cache points are placed."""
        system_msg, state_msg, refs_msg = rendered
        session = (info.agent_name, info.runtime.user_id, info.runtime.session)
        shown: Sequence[Msg] = history
        for view in self.views:
            shown = view(shown, state)
        head = () if system_msg is None else (system_msg,)
        tail = tuple(m for m in (state_msg, refs_msg) if m is not None)
        messages = (*head, *shown, *tail)  # built in C: the history is not walked in Python
        if history != state.history:
            state.replace_history(history)
        self.meter.expect(info.model_call_id, session, build.raw_estimate)
        stable = len(head) + len(shown)
        shared, build.cached_prefix = self._prefixes.shared(
            session,
            request.tools,
            messages[:stable],
            fixed["tools"],
            self.meter,
            cache_key=request.cache_key,
        )
        build.cached_prefix = self.meter.calibrated(build.cached_prefix, session)
        points = tuple(p for p in (shared, stable) if p > 0)
        return ModelRequest(
            messages=messages,
            tools=request.tools,
            max_output_tokens=request.max_output_tokens,
            purpose="reasoning",
            call_id=info.model_call_id,
            metadata=request.metadata,
            cache_key=request.cache_key,
            cache_points=tuple(sorted(set(points))),
            output=request.output,
        )

    def _tokens(self, message: Msg | None) -> int:
        return self.meter.message(message) if message else 0

    def _summary_request(
        self,
        request: ModelRequest,
        system_items: list[Material],
        session: tuple[str, ...],
        info: PrepareInfo,
        build: _Build,
    ) -> ModelRequest:
        """Auxiliary requests get the instructions and their own messages, nothing else. A
        request that comes with cache points continues a prefix already sent (its system
        message included) and is passed on as it is, so that the provider's cache serves it."""
        build.limit = self.policy.input_limit(
            info.model.context_window, request.max_output_tokens or info.model.max_output_tokens
        )
        own_system = [m for m in request.messages if m.role == "system"]
        # a summary written in context repeats the last request whole, its system message
        # included (its cache points are on it): it passes through unchanged
        system_items = [] if request.cache_points else _with_own_system(request, system_items)
        system_msg = render_system(system_items)
        if request.cache_points and own_system:
            system_msg = own_system[0]
        body = [m for m in request.messages if m.role != "system"]
        build.items = list(system_items)
        build.breakdown = {
            "system": self.meter.message(system_msg) if system_msg else 0,
            "history": self.meter.messages(body),
            "tools": self.meter.tools(request.tools),
        }
        build.history_messages = len(body)
        build.raw_estimate = sum(build.breakdown.values())
        problems = tool_pair_problems(body)
        if problems:
            raise ToolPairingError(problems)
        estimate = self.meter.calibrated(build.raw_estimate, session)
        if estimate > build.limit:
            raise ContextBudgetExceededError(
                f"the {info.purpose} request needs about {estimate} tokens but the input limit "
                f"is {build.limit}",
                estimate=estimate,
                limit=build.limit,
            )
        messages = (system_msg, *body) if system_msg else tuple(body)
        return ModelRequest(
            messages=messages,
            tools=request.tools,
            max_output_tokens=request.max_output_tokens,
            purpose=info.purpose,
            call_id=info.model_call_id,
            metadata=request.metadata,
            cache_key=request.cache_key,
            cache_points=request.cache_points,
        )

    async def _workspace_refs(self, info: PrepareInfo) -> WorkspaceRefs:
        """Workspace files are read once per call; edits during the call show up next call."""
        if self.refs_loader is None:
            return WorkspaceRefs()
        cached = info.run_cache.get("workspace_refs")
        if isinstance(cached, WorkspaceRefs):
            return cached
        refs = await self.refs_loader(info)
        info.run_cache["workspace_refs"] = refs
        return refs

    # ------------------------------------------------------------- manifest
    def _manifest(
        self, state: AgentState, info: PrepareInfo, build: _Build, validation: str
    ) -> ContextManifest:
        session = (info.agent_name, info.runtime.user_id, info.runtime.session)
        counted = build.raw_estimate >= 0 and build.limit >= 0
        return ContextManifest(
            call_id=info.model_call_id,
            purpose=info.purpose,
            model=info.model.name,
            policy_version=self.policy.version,
            estimated_input_tokens=self.meter.calibrated(build.raw_estimate, session)
            if counted
            else -1,
            input_limit=build.limit if counted else -1,
            counting_method=self.meter.method(session) if counted else "unavailable",
            exact=bool(self.meter.estimator.exact) and self.meter.ratio(session) == 1.0 and counted,
            task_revision=state.task_revision,
            items=tuple(_item(m, self.meter) for m in build.items),
            transforms=tuple(build.transforms),
            validation=validation,  # type: ignore[arg-type]
            breakdown={k: self.meter.calibrated(v, session) for k, v in build.breakdown.items()},
            history_messages=build.history_messages,
            context_window=info.model.context_window,
            window_source=window_source(info.model),
            delegated_usage=delegated_usage(state),
            cached_prefix_tokens=build.cached_prefix,
        )

    async def _publish(
        self, manifest: ContextManifest, info: PrepareInfo, error: BaseException | None
    ) -> None:
        key = (info.agent_name, info.runtime.user_id, info.runtime.session)
        self._last[key] = manifest
        self._last.move_to_end(key)
        while len(self._last) > _LAST_KEPT:
            self._last.popitem(last=False)
        if self.policy.observer is not None:
            try:
                self.policy.observer(manifest)
            except Exception:
                logger.exception("context observer failed (ignored)")
        info.emit(
            "context_build",
            {
                "model_call_id": info.model_call_id,
                "purpose": info.purpose,
                "status": "passed" if error is None else "failed",
                "context_manifest": manifest.to_dict(),
                "error_type": type(error).__name__ if error is not None else None,
            },
        )
        for sink in self.sinks:
            try:
                result = sink(manifest, info)
                if result is not None:
                    await result
            except Exception:
                logger.exception("manifest sink failed (ignored)")


def _with_own_system(request: ModelRequest, system_items: list[Material]) -> list[Material]:
    """The instructions, then the system text the auxiliary request brought itself."""
    own_system = "\n\n".join(m.text for m in request.messages if m.role == "system")
    if own_system.strip():
        system_items = [
            *system_items,
            Material(
                "request/system",
                "request",
                "request",
                "system",
                "system",
                own_system,
                required=True,
            ),
        ]
    return system_items


def _no_blocks(state: AgentState) -> Sequence[StateBlock]:
    return ()


def _item(material: Material, meter: Meter) -> ManifestItem:
    return ManifestItem(
        source_type=material.source_type,
        source_id=material.source_id,
        content_hash=material.content_hash,
        revision=material.revision,
        placement=material.placement,
        required=material.required,
        priority=material.priority,
        id=material.id,
        tokens=meter.text(material.text),
    )


def _check_unchanged(state: AgentState, task_rev: int, history_rev: int) -> None:
    if state.task_revision != task_rev:
        raise ContextConflictError(
            "task or plan state changed while the request was being prepared; nothing was "
            "committed",
            validation="state_conflict",
        )
    if state.history_revision != history_rev:
        raise ContextConflictError(
            "the history changed while the request was being prepared; nothing was committed",
            validation="history_conflict",
        )


def delegated_usage(state: AgentState) -> dict[str, int]:
    """The token usage capabilities report in their state sections (a ``usage`` mapping, e.g.
    the sub-agents' tokens), added up."""
    total: dict[str, int] = {}
    for section in state.sections.values():
        usage = section.get("usage") if isinstance(section, Mapping) else None
        if isinstance(usage, Mapping):
            for key, value in usage.items():
                if isinstance(value, int) and value:
                    total[str(key)] = total.get(str(key), 0) + value
    return total
