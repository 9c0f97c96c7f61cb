"""``MemoryManager``: an agent's long-term memory — flushes, consolidation, maintenance.

It is the agent's :class:`~harnessed.capabilities.hooks.MemoryFlusher`. A flush for compaction is
awaited by the caller, or asked for in the summary request itself when that is written in
context with memory's model (:meth:`MemoryManager.facts_request`); the end-of-call flush is
background work scheduled by :meth:`after_call`: one flush per session in flight and at most one
queued (a newer call replaces the queued messages), throttled by
``MemoryConfig.flush_after_call``, followed by maintenance when it is due. Background errors are
logged and recorded, never raised into a call; :meth:`wait_idle` (called by ``agent.close()``)
waits until all of it is done.

Appends to one scope's ledger are serialized (only the append: a flush's model call never holds
up a ``memory_save``), so flushes of several sessions of one user never interleave their
entries; consolidation and maintenance take a second lock of their own. Ledger appends and a
consolidation may overlap safely: consolidation moves the watermark only past the text it read.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from harnessed.capabilities.hooks import FactsRequest
from harnessed.capabilities.seam import PrepareInfo
from harnessed.cost.meter import UsageMeter
from harnessed.log.record import NewRecord, RecordType
from harnessed.log.store import SessionLogStore
from harnessed.memory.auxiliary import AuxiliaryModel, Emit, counting
from harnessed.memory.config import MemoryConfig
from harnessed.memory.consolidate import (
    ConsolidationResult,
    MaintenanceResult,
    consolidate,
    maintain,
)
from harnessed.memory.flush import FlushResult, facts_in_context, flush_windows, run_flush
from harnessed.memory.ledger import Ledger, MemoryPlace
from harnessed.memory.lookup import MemoryMatch, read_memory, search_memory
from harnessed.messages import Msg
from harnessed.runtime import RuntimeContext, SessionLocks, SessionRef
from harnessed.tokens import TokenEstimator, default_estimator
from harnessed.workspace.layout import Workspace

__all__ = ["MemoryManager"]

logger = logging.getLogger(__name__)

_REMEMBERED = 4_096
_EVENT_RECORDS = {
    "context_build": RecordType.CONTEXT_BUILD,
    "memory_flush": RecordType.MEMORY_FLUSH,
    "memory_flushed": RecordType.MEMORY_FLUSHED,
}
_DONE = ("written", "nothing", "empty")


@dataclass(slots=True)
class _Lane:
    """Background work of one session: the running task and the queued messages."""

    task: asyncio.Task[None] | None = None
    queued: list[Msg] | None = None
    queued_ctx: RuntimeContext | None = None
    maintain: bool = False
    usage: UsageMeter | None = None
    """The meter of the call that started the work: what it spends counts for the session."""


@dataclass(slots=True)
class _Recorder:
    """Collects the events of background work for the session log."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __call__(self, name: str, data: Mapping[str, Any]) -> None:
        self.events.append((name, dict(data)))


class MemoryManager:
    """Long-term memory of one agent in its workspace.

    Args:
        workspace: Where the ledgers and ``MEMORY.md`` live (placed by its isolation scope).
        agent_name: The agent's id.
        aux: Sends the flush and consolidation requests (prepared as ``summary`` requests).
        config: See :class:`MemoryConfig`.
        session_store: Where background work records what it did (``memory/flush``).
        estimator: Token estimator (default: harnessed's).
        clock: Returns the current time (aware); for tests.
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        agent_name: str,
        aux: AuxiliaryModel,
        config: MemoryConfig | None = None,
        session_store: SessionLogStore | None = None,
        estimator: TokenEstimator | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.workspace = workspace
        self.agent_name = agent_name
        self.aux = aux
        self.config = config or MemoryConfig()
        self.session_store = session_store
        self.estimator = estimator or default_estimator()
        self.clock = clock or (lambda: datetime.now(UTC))
        self._zone = ZoneInfo(self.config.timezone) if self.config.timezone else None
        self._writes = SessionLocks()
        self._lanes: dict[SessionRef, _Lane] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_flush: OrderedDict[SessionRef, float] = OrderedDict()
        self._flushed_upto: OrderedDict[SessionRef, str] = OrderedDict()
        self._maintenance_checked: OrderedDict[str, float] = OrderedDict()

    # ------------------------------------------------------------ places
    def place(self, user_id: str, session_id: str) -> MemoryPlace:
        """The memory files of a user's (or session's) scope."""
        return MemoryPlace.of(self.workspace, self.agent_name, user_id, session_id)

    def ledger(self, user_id: str, session_id: str) -> Ledger:
        return Ledger(self.workspace.fs, self.place(user_id, session_id))

    def _now(self) -> datetime:
        now = self.clock()
        return now.astimezone(self._zone) if self._zone else now.astimezone()

    def _runtime(self, ctx: RuntimeContext | None) -> RuntimeContext:
        return (ctx or RuntimeContext()).resolved(self.agent_name)

    # ------------------------------------------------------------ flushing
    async def flush(self, messages: Sequence[Msg], info: PrepareInfo, *, reason: str) -> None:
        """The :class:`MemoryFlusher` hook: flush ``messages`` now (errors are logged)."""
        if reason == "compaction" and not self.config.flush_before_compaction:
            return
        if reason != "compaction":
            await self.flush_messages(
                messages, info.runtime, reason=reason, emit=info.emit, run_cache=info.run_cache
            )
            return
        # The whole prefix is about to be summarized: read all of it, oldest first.
        for window in flush_windows(messages, self.config.flush_window_tokens, self.estimator):
            await self.flush_messages(
                window, info.runtime, reason=reason, emit=info.emit, run_cache=info.run_cache
            )

    async def facts_request(self, info: PrepareInfo) -> FactsRequest | None:
        """The :class:`~harnessed.capabilities.hooks.FactsInContext` hook: the flush before
        compaction as part of the summary request written in context, or ``None`` when memory
        uses another model than the summary (it has no cache of the conversation) or does not
        flush before compaction. Reading what memory holds may fail (raised; the caller then
        flushes from a transcript)."""
        if not self.config.flush_before_compaction or self.aux.model is not info.model:
            return None
        runtime = self._runtime(info.runtime)
        ledger = self.ledger(runtime.user_id, runtime.session)
        return await facts_in_context(
            ledger=ledger,
            config=self.config,
            estimator=self.estimator,
            runtime=runtime,
            clock=self._now,
            emit=info.emit,
            write_lock=lambda: self._writes.hold(ledger.place.ledger_dir, "ledger"),
        )

    async def flush_messages(
        self,
        messages: Sequence[Msg],
        ctx: RuntimeContext | None = None,
        *,
        reason: str = "manual",
        emit: Emit | None = None,
        run_cache: MutableMapping[str, Any] | None = None,
    ) -> FlushResult:
        """Extract durable facts of ``messages`` into today's ledger and say what happened.

        A failure (model, budget, storage) is logged and returned as status ``failed``;
        nothing is written then.
        """
        runtime = self._runtime(ctx)
        ledger = self.ledger(runtime.user_id, runtime.session)
        send: Emit = emit or (lambda name, data: None)
        try:
            result = await run_flush(
                messages,
                ledger=ledger,
                aux=self.aux,
                config=self.config,
                estimator=self.estimator,
                runtime=runtime,
                clock=self._now,
                reason=reason,
                emit=send,
                write_lock=lambda: self._writes.hold(ledger.place.ledger_dir, "ledger"),
                run_cache=run_cache,
            )
        except Exception as exc:
            logger.warning(
                "memory flush (%s) of session %s failed; nothing was written",
                reason,
                runtime.session,
                exc_info=True,
            )
            result = FlushResult("failed", error=type(exc).__name__)
        send("memory_flush", result.payload(reason, runtime.session))
        if reason == "call_end" and result.status in _DONE and messages:
            send("memory_flushed", {"through": messages[-1].id, "at": self.clock().timestamp()})
        return result

    def after_call(
        self, ctx: RuntimeContext, history: Sequence[Msg], usage: UsageMeter | None = None
    ) -> None:
        """Schedule the end-of-call work of a session (returns at once). Its model requests
        count on ``usage``, the meter of the call that ended (written to the session log as
        spending after the call)."""
        runtime = self._runtime(ctx)
        key = SessionRef(self.agent_name, runtime.user_id, runtime.session)
        messages = self._due_messages(key, history)
        maintenance = self._maintenance_due(runtime)
        if messages is None and not maintenance:
            return
        lane = self._lanes.get(key)
        if lane is not None and lane.task is not None and not lane.task.done():
            lane.maintain = lane.maintain or maintenance
            if messages is not None:  # one flush queued, reading everything not yet read
                seen = {m.id for m in lane.queued or []}
                lane.queued = [*(lane.queued or []), *(m for m in messages if m.id not in seen)]
                lane.queued_ctx = runtime
            return
        lane = self._lanes[key] = _Lane(maintain=maintenance, usage=usage)
        task = asyncio.get_running_loop().create_task(
            self._run_lane(key, lane, runtime, messages), name=f"memory:{runtime.session}"
        )
        lane.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _due_messages(self, key: SessionRef, history: Sequence[Msg]) -> list[Msg] | None:
        """The messages an end-of-call flush should read now, or ``None`` (throttled/none)."""
        interval = self.config.flush_interval_seconds
        if interval is None:
            return None
        now = self.clock().timestamp()
        if interval and now - self._last_flush.get(key, float("-inf")) < interval:
            return None
        upto = self._flushed_upto.get(key)
        ids = [m.id for m in history]
        fresh = list(history[ids.index(upto) + 1 :]) if upto in ids else list(history)
        if not fresh:
            return None
        _remember(self._last_flush, key, now)
        _remember(self._flushed_upto, key, history[-1].id)
        return fresh

    def _maintenance_due(self, runtime: RuntimeContext) -> bool:
        minutes = self.config.maintenance_interval_minutes
        if minutes is None:
            return False
        home = self.place(runtime.user_id, runtime.session).ledger_dir
        now = self.clock().timestamp()
        if now - self._maintenance_checked.get(home, float("-inf")) < minutes * 60:
            return False
        _remember(self._maintenance_checked, home, now)
        return True

    async def _run_lane(
        self,
        key: SessionRef,
        lane: _Lane,
        runtime: RuntimeContext,
        messages: list[Msg] | None,
    ) -> None:
        usage = lane.usage
        with counting(usage.add if usage is not None else None):
            await self._lane_work(key, lane, runtime, messages)
        if usage is not None:
            await usage.settled()

    async def _lane_work(
        self,
        key: SessionRef,
        lane: _Lane,
        runtime: RuntimeContext,
        messages: list[Msg] | None,
    ) -> None:
        try:
            while messages is not None:
                messages = await self._after_mark(key, messages)
                if messages is None:  # throttled or nothing new: the queued call may differ
                    messages, lane.queued = lane.queued, None
                    continue
                recorder = _Recorder()
                flushing = self.flush_messages(messages, runtime, reason="call_end", emit=recorder)
                await self._guarded(runtime, "flush", flushing, recorder)
                queued, lane.queued = lane.queued, None
                if not any(name == "memory_flushed" for name, _ in recorder.events):
                    # Failed: forget the in-process position; the next flush reads these again.
                    self._last_flush.pop(key, None)
                    self._flushed_upto.pop(key, None)
                    if queued is not None:
                        seen = {m.id for m in queued}
                        queued = [*(m for m in messages if m.id not in seen), *queued]
                messages = queued
                runtime = lane.queued_ctx or runtime
            if lane.maintain:
                recorder = _Recorder()
                await self._guarded(
                    runtime, "maintenance", self.maintain(runtime, emit=recorder), recorder
                )
        finally:
            if self._lanes.get(key) is lane:
                del self._lanes[key]

    async def _after_mark(self, key: SessionRef, messages: list[Msg]) -> list[Msg] | None:
        """``messages`` without what any server already flushed (the session log's last
        ``memory/flushed`` record), or ``None`` when that flush is within the throttle."""
        if self.session_store is None:
            return messages
        try:
            marks = await self.session_store.tail(key, 1, types=[RecordType.MEMORY_FLUSHED])
        except Exception:
            logger.warning("could not read the memory flush position; not flushing", exc_info=True)
            self._last_flush.pop(key, None)
            self._flushed_upto.pop(key, None)
            return None
        if not marks:
            return messages
        through = str(marks[-1].payload.get("through", ""))
        at = float(marks[-1].payload.get("at", float("-inf")))
        interval = self.config.flush_interval_seconds or 0.0
        if self.clock().timestamp() - at < interval:
            # Another server (or an earlier process) flushed recently: wait for the interval.
            _remember(self._last_flush, key, at)
            _remember(self._flushed_upto, key, through)
            return None
        ids = [m.id for m in messages]
        fresh = messages[ids.index(through) + 1 :] if through in ids else messages
        return fresh or None

    async def _guarded(
        self, runtime: RuntimeContext, what: str, work: Awaitable[Any], recorder: _Recorder
    ) -> None:
        """Await background work: errors are logged and recorded, never raised."""
        try:
            await work
        except Exception as exc:
            logger.warning(
                "background memory %s of session %s failed", what, runtime.session, exc_info=True
            )
            recorder("memory_error", {"work": what, "error_type": type(exc).__name__})
        await self._record(runtime, recorder)

    async def _record(self, runtime: RuntimeContext, recorder: _Recorder) -> None:
        if self.session_store is None or not recorder.events:
            return
        records = [
            NewRecord(
                _EVENT_RECORDS.get(name, "custom"),
                data if name in _EVENT_RECORDS else {"name": name, "data": data},
                runtime.run_id,
            )
            for name, data in recorder.events
        ]
        key = SessionRef(self.agent_name, runtime.user_id, runtime.session)
        try:
            await self.session_store.append(key, records)
        except Exception:
            logger.warning("could not record background memory work", exc_info=True)

    async def wait_idle(self) -> None:
        """Wait until every background flush and maintenance has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # ------------------------------------------------------------ consolidation
    async def consolidate(
        self, ctx: RuntimeContext | None = None, *, emit: Emit | None = None
    ) -> ConsolidationResult:
        """Merge the scope's pending ledger entries into its ``MEMORY.md`` now.

        Raises :class:`~harnessed.memory.ConsolidationError` (nothing changed) when the
        answer cannot be used, and the model's errors as they are.
        """
        runtime = self._runtime(ctx)
        ledger = self.ledger(runtime.user_id, runtime.session)
        async with self._writes.hold(ledger.place.ledger_dir, "curated"):
            return await consolidate(
                ledger,
                aux=self.aux,
                config=self.config,
                estimator=self.estimator,
                runtime=runtime,
                emit=emit or (lambda name, data: None),
                now=self._now().timestamp(),
            )

    async def maintain(
        self, ctx: RuntimeContext | None = None, *, force: bool = False, emit: Emit | None = None
    ) -> MaintenanceResult | None:
        """Archive old ledgers and consolidate, unless maintenance ran less than
        ``maintenance_interval_minutes`` ago (``force=True`` runs it anyway)."""
        runtime = self._runtime(ctx)
        ledger = self.ledger(runtime.user_id, runtime.session)
        now = self._now()
        async with self._writes.hold(ledger.place.ledger_dir, "curated"):
            minutes = self.config.maintenance_interval_minutes or 0.0
            state = await ledger.state()
            if not force and now.timestamp() - state.maintained_at < minutes * 60:
                return None
            return await maintain(
                ledger,
                today=now.date(),
                now=now.timestamp(),
                aux=self.aux,
                config=self.config,
                estimator=self.estimator,
                runtime=runtime,
                emit=emit or (lambda name, data: None),
            )

    # ------------------------------------------------------------ tool backends
    async def search(
        self, ctx: RuntimeContext, query: str, *, max_results: int = 20
    ) -> tuple[list[MemoryMatch], bool]:
        runtime = self._runtime(ctx)
        return await search_memory(
            self.ledger(runtime.user_id, runtime.session), query, max_results=max_results
        )

    async def get(
        self, ctx: RuntimeContext, path: str, start_line: int = 1, end_line: int | None = None
    ) -> str:
        runtime = self._runtime(ctx)
        return await read_memory(
            self.ledger(runtime.user_id, runtime.session), path, start_line, end_line
        )

    async def save(self, ctx: RuntimeContext, content: str) -> str:
        """Append a note to today's ledger; returns the ledger's path."""
        lines = [" ".join(line.split()) for line in content.splitlines()]
        facts = [line.lstrip("-*• ").strip() for line in lines if line.strip("-*• ")]
        if not facts:
            raise ValueError("memory_save needs some text to save")
        runtime = self._runtime(ctx)
        ledger = self.ledger(runtime.user_id, runtime.session)
        now = self._now()
        async with self._writes.hold(ledger.place.ledger_dir, "ledger"):
            heading = f"{now:%H:%M} · session {runtime.session} · saved"
            return await ledger.append(now.date(), heading, facts)


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _REMEMBERED:
        cache.popitem(last=False)
