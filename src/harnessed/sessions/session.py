"""AgentSession: a session you can steer — submit turns, steer and interrupt the running one,
resume what was interrupted, follow the events and answer confirmations.

Turns of one session run one at a time, in order, in a background task of the session: a
reader that goes away (a closed browser tab) never stops the turn. Across processes the
agent's :class:`~harnessed.sessions.TurnGate` keeps turns from overlapping.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import weakref
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from harnessed.events import AgentEndEvent, Event
from harnessed.log.record import RecordType
from harnessed.messages import Msg, new_id
from harnessed.run.fair import checkpoint
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.sessions.turn import Turn
from harnessed.turns.control import steering_text
from harnessed.turns.feed import writer_for
from harnessed.turns.gate import SessionBusyError, TurnGate, TurnLease
from harnessed.turns.lease import keep_renewed
from harnessed.turns.notes import (
    Delivery,
    Note,
    late_steering,
    listen_for_notes,
    notes_of,
)

if TYPE_CHECKING:
    from harnessed.run.inputs import AgentInput
    from harnessed.sessions.deps import SessionHost

__all__ = [
    "AgentSession",
    "Delivery",
    "IdempotencyConflictError",
    "NothingToResumeError",
    "SessionIdleError",
    "TurnSlots",
    "open_session",
]

logger = logging.getLogger(__name__)

_RECENT_TURNS = 20
_RECENT_KEYS = 200


class TurnSlots:
    """A limit on how many turns run at once in one process; the others wait, queued (a
    bound on the work and memory one process takes on at a time)."""

    def __init__(self, limit: int) -> None:
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"the number of running turns must be at least 1, got {limit!r}")
        self.limit = limit
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    def get(self) -> asyncio.Semaphore:
        """The semaphore of the running event loop."""
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.limit)
        return semaphore


class IdempotencyConflictError(ValueError):
    """An idempotency key was used again with a different input."""


class SessionIdleError(RuntimeError):
    """Steering needs a running turn; none is running."""


class NothingToResumeError(RuntimeError):
    """``resume`` found no interrupted or waiting turn to continue."""


class AgentSession:
    """One session of one agent and user. Get it with :meth:`HarnessAgent.session`."""

    def __init__(self, agent: SessionHost, ctx: RuntimeContext, gate: TurnGate) -> None:
        self.agent = agent
        self.user_id = ctx.user_id
        self.session_id = ctx.session_id or agent.name
        self.extras = ctx.extras
        self.gate = gate
        self._notes = notes_of(gate)
        """The gate as :class:`TurnNotes` (``None`` when it carries no notes); checked once,
        a runtime protocol check costs several microseconds."""
        self.gate_key = SessionRef(agent.name, self.user_id, self.session_id).token
        self._queue: deque[Turn] = deque()
        self._recent: deque[Turn] = deque(maxlen=_RECENT_TURNS)
        self._by_key: OrderedDict[str, Turn] = OrderedDict()
        """Turns by idempotency key (the most recent ones; older keys are found in the log)."""
        self._current: Turn | None = None
        self._worker: asyncio.Task[None] | None = None
        self._listeners: set[asyncio.Queue[Event]] = set()
        self._closing = False
        self.slots: TurnSlots | None = None
        """A limit on turns running at once in this process (set by a gateway)."""

    def __repr__(self) -> str:
        return f"AgentSession({self.agent.name!r}, user={self.user_id!r}, {self.session_id!r})"

    @property
    def ctx(self) -> RuntimeContext:
        return RuntimeContext(self.user_id, self.session_id, extras=self.extras)

    # ------------------------------------------------------------ submitting
    async def submit(
        self,
        input: AgentInput,
        idempotency_key: str | None = None,
        *,
        wait: bool = True,
    ) -> Turn:
        """Queue a turn on ``input``; returns its :class:`Turn` at once.

        The same ``idempotency_key`` with the same input returns the turn already made (even
        after a restart: the key is kept in the session log); with another input it raises
        :class:`IdempotencyConflictError`. With ``wait=False`` a session that is busy (a turn
        running or queued here, or running in another process) raises
        :class:`SessionBusyError` instead of queueing.
        """
        from harnessed.run.inputs import input_messages

        if input is None:
            raise ValueError("submit needs input; use resume() to continue without input")
        messages = input_messages(input)
        fingerprint = None
        if idempotency_key is not None:
            fingerprint = _fingerprint(messages)
            if not isinstance(idempotency_key, str) or not 0 < len(idempotency_key) <= 200:
                raise ValueError("idempotency_key must be a string of 1 to 200 characters")
            known = self._by_key.get(idempotency_key) or await self._logged_turn(idempotency_key)
            if known is not None:
                if known.fingerprint != fingerprint:
                    raise IdempotencyConflictError(
                        f"idempotency key {idempotency_key!r} was used for a different input "
                        f"in session {self.session_id!r}"
                    )
                return known
            first = messages[0]
            messages[0] = first.replace(
                id=_key_message_id(idempotency_key),
                metadata={
                    **first.metadata,
                    "idempotency_key": idempotency_key,
                    "input_sha": fingerprint,
                },
            )
        turn = Turn(
            new_id("run_"), messages, idempotency_key=idempotency_key, fingerprint=fingerprint
        )
        await self._enqueue(turn, wait)
        if idempotency_key is not None:
            self._remember(idempotency_key, turn)
        return turn

    async def resume(self, *, wait: bool = True) -> Turn:
        """Queue a turn that continues the session without new input: an interrupted turn,
        or a step waiting for confirmations (answer them with :meth:`respond` first).

        Raises :class:`NothingToResumeError` when the session's last turn completed (or it
        has none) and no turn is queued or running here to continue after.
        """
        if self._current is None and not self._queue:
            key = SessionRef(self.agent.name, self.user_id, self.session_id)
            last = await self.agent.session_store.tail(
                key, 1, types=[RecordType.RUN_START, RecordType.RUN_END]
            )  # a start without its end: a stopped process left that turn unfinished
            if not last or (
                last[0].type == RecordType.RUN_END and last[0].payload.get("status") == "completed"
            ):
                raise NothingToResumeError(
                    f"nothing to resume in session {self.session_id!r}: "
                    + ("its last turn completed" if last else "it has no turn yet")
                )
        turn = Turn(new_id("run_"), None)
        await self._enqueue(turn, wait)
        return turn

    async def _enqueue(self, turn: Turn, wait: bool) -> None:
        if not wait:
            if self._current is not None or self._queue:
                raise SessionBusyError(
                    f"session {self.session_id!r} is busy: turn "
                    f"{(self._current or self._queue[0]).id} is running or queued"
                )
            turn.lease = await self.gate.acquire(self.gate_key, wait=False)
        self._queue.append(turn)
        self._recent.append(turn)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._work(), name=f"session:{self.session_id}")

    # -------------------------------------------------------- the running turn
    def steer(self, text: str) -> Msg:
        """Give the running turn a message it sees at its next reasoning step.

        Raises :class:`SessionIdleError` when no turn is running (submit instead). A message
        that arrives too late for the turn (it was ending) becomes the next turn's input, so
        nothing is lost.
        """
        turn = self._current
        if turn is None or turn.done:
            raise SessionIdleError(
                f"no turn is running in session {self.session_id!r}; submit a message instead"
            )
        return turn.control.steer(text)

    def interrupt(self) -> Turn | None:
        """Stop the running turn at its next safe point; returns it (``None`` when idle).

        What the turn did is saved; a tool call cut short gets an "interrupted" result.
        :meth:`resume` continues it. Queued turns still run.
        """
        turn = self._current
        if turn is None or turn.done:
            return None
        turn.control.interrupt()
        return turn

    async def send_steer(self, text: str) -> Delivery:
        """Steer the running turn wherever it runs: here as :meth:`steer` does; in another
        process (whose turn holds the session's lease) as a note it collects within
        :data:`~harnessed.turns.notes.NOTE_POLL_SECONDS` — the message keeps the id
        returned here. Raises :class:`SessionIdleError` when no turn runs anywhere (and
        ``ValueError`` for blank text)."""
        turn = self._current
        if turn is not None and not turn.done:
            return Delivery(turn.id, turn.control.steer(text).id, elsewhere=False)
        note = {"kind": "steer", "text": steering_text(text), "id": new_id("msg_")}
        if await self._post(note):
            return Delivery(None, note["id"], elsewhere=True)
        raise SessionIdleError(
            f"no turn is running in session {self.session_id!r}; submit a message instead"
        )

    async def send_interrupt(self) -> Delivery | None:
        """Interrupt the running turn wherever it runs (see :meth:`send_steer`); ``None``
        when no turn runs anywhere."""
        turn = self.interrupt()
        if turn is not None:
            return Delivery(turn.id, None, elsewhere=False)
        if await self._post({"kind": "interrupt", "reason": "the user stopped the turn"}):
            return Delivery(None, None, elsewhere=True)
        return None

    async def _post(self, note: Note) -> bool:
        """Leave ``note`` for the holder of the session's lease (``False``: nobody holds it,
        or the gate carries no notes)."""
        notes = self._notes
        return notes is not None and await notes.post(self.gate_key, note) is not None

    @property
    def running(self) -> Turn | None:
        """The turn running now in this process."""
        return self._current

    @property
    def tasks(self) -> list[Turn]:
        """This session's recent turns in this process (queued, running and ended)."""
        return list(self._recent)

    # ----------------------------------------------------------------- events
    async def events(self) -> AsyncIterator[Event]:
        """Every event of every turn of this session from now on (follows until closed)."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._listeners.add(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._listeners.discard(queue)

    async def respond(
        self, request_id: str, approved: bool, *, feedback: str | None = None, **answer: Any
    ) -> None:
        """Answer a confirmation request or question of this session (see
        :meth:`HarnessAgent.respond`; ``answer=`` for a question)."""
        await self.agent.respond(self.ctx, request_id, approved, feedback=feedback, **answer)

    async def history(self) -> list[Msg]:
        """Every message of the session as it happened."""
        return await self.agent.session_messages(self.ctx)

    async def wait_idle(self) -> None:
        """Wait until every queued turn has ended."""
        while self._worker is not None and not self._worker.done():
            await asyncio.shield(self._worker)

    async def close(self) -> None:
        """Interrupt the running turn, drop the queued ones and wait for the worker."""
        self._closing = True  # steering that comes as the turn ends starts no new turn
        try:
            for turn in self._queue:
                turn.finish(asyncio.CancelledError("the session was closed"))
            self._queue.clear()
            self.interrupt()
            worker = self._worker
            if worker is not None:
                with contextlib.suppress(BaseException):
                    await worker
        finally:
            self._closing = False

    # ----------------------------------------------------------------- worker
    async def _work(self) -> None:
        while self._queue:
            turn = self._queue[0]
            try:
                await checkpoint()  # a server keeps taking requests while turns start
                lease = turn.lease or await self.gate.acquire(self.gate_key)
            except BaseException as exc:
                if self._queue and self._queue[0] is turn:
                    self._queue.popleft()
                turn.finish(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            if not self._queue or self._queue[0] is not turn:  # close() dropped it meanwhile
                with contextlib.suppress(Exception):
                    await self.gate.release(lease)
                continue
            self._queue.popleft()
            self._current = turn
            try:
                await self._run(turn, lease)
            finally:
                self._current = None
                await self._give_back(lease)
            late = turn.control.take_steering() + await self._late_notes(lease)
            if late:  # steering that arrived as the turn ended becomes the next turn
                follow = Turn(new_id("run_"), late)
                self._recent.append(follow)
                if self._closing:
                    follow.finish(asyncio.CancelledError("the session was closed"))
                    logger.warning("%r closed: %d steering message(s) dropped", self, len(late))
                else:
                    self._queue.appendleft(follow)

    async def _give_back(self, lease: TurnLease) -> None:
        """Release ``lease`` before the last collect. While a failed release leaves it live,
        senders keep leaving notes for it: retry, and if it still fails wait until it has
        expired, so the last collect comes after every note it can get."""
        for delay in (0.05, 0.25, 1.0, None):
            try:
                await self.gate.release(lease)
                return
            except Exception:
                logger.warning("could not release the turn lease of %r", self, exc_info=True)
            if delay is not None:
                await asyncio.sleep(delay)
        await asyncio.sleep(self.gate.lease_seconds)

    async def _run(self, turn: Turn, lease: TurnLease) -> None:
        def lost() -> None:
            logger.error("%r lost its turn lease; interrupting turn %s", self, turn.id)
            turn.control.interrupt("the turn lease was lost")

        heartbeat = asyncio.create_task(keep_renewed(self.gate, lease, lost))
        notes, stop = self._notes, asyncio.Event()
        listener = (
            None
            if notes is None
            else asyncio.create_task(listen_for_notes(notes, lease, turn.control, stop))
        )
        ctx = RuntimeContext(self.user_id, self.session_id, run_id=turn.id, extras=self.extras)
        feed = writer_for(self, turn.id, lease)  # other servers follow the turn (shared store)
        error: BaseException | None = None
        slots = self.slots.get() if self.slots is not None else None
        try:
            if slots is not None:
                await slots.acquire()
            turn.status = "running"
            async for event in self.agent.stream_events(
                list(turn.messages) if turn.messages is not None else None,
                ctx,
                confirmations="wait",
                control=turn.control,
            ):
                turn.publish(event)
                if feed is not None:
                    feed.add(event)
                for queue in self._listeners:
                    queue.put_nowait(event)
        except BaseException as exc:
            error = exc
            if not isinstance(exc, Exception):
                raise
            logger.info("turn %s of %r failed: %s", turn.id, self, exc)
        finally:
            if slots is not None and turn.status != "queued":
                slots.release()
            heartbeat.cancel()
            stop.set()  # the listener ends after the collect it may be in (notes never lost)
            try:
                if listener is not None:
                    await asyncio.shield(listener)
            finally:
                turn.finish(error)
                if feed is not None:  # written before the lease is given back
                    await feed.close(turn)

    async def _late_notes(self, lease: TurnLease) -> list[Msg]:
        """Steering notes that came for the turn as it ended (collected after the lease was
        released, so none posted while it was held is missed); interrupts are stale now."""
        notes = self._notes
        if notes is None:
            return []
        try:
            return late_steering(await notes.collect(lease))
        except Exception:
            logger.warning("could not collect the notes of %r", self, exc_info=True)
            return []

    def _remember(self, key: str, turn: Turn) -> None:
        self._by_key[key] = turn
        if len(self._by_key) > _RECENT_KEYS:
            self._by_key.popitem(last=False)

    async def _logged_turn(self, key: str) -> Turn | None:
        """The turn a previous process made with this idempotency key, from the session log."""
        message_id = _key_message_id(key)
        records = await self.agent.session_log(
            self.ctx, types=[RecordType.MESSAGE, RecordType.RUN_END]
        )
        found: Msg | None = None
        run_id: str | None = None
        last: Msg | None = None
        end: dict[str, Any] | None = None
        for record in records:
            message = record.message
            if found is None:
                if message is not None and message.id == message_id:
                    found, run_id = message, record.run_id
                continue
            if record.run_id != run_id:
                continue
            if message is not None and message.role == "assistant":
                last = message
            elif record.type == RecordType.RUN_END:
                end = dict(record.payload)
        if found is None or run_id is None:
            return None
        turn = Turn(
            run_id,
            [found],
            idempotency_key=key,
            fingerprint=str(found.metadata.get("input_sha", "")),
        )
        if end is None:  # the run of that process never ended (it crashed): resume() it
            turn.finish(RuntimeError(f"turn {run_id} did not end; call resume() to continue"))
        else:
            turn.publish(
                AgentEndEvent(
                    reply=last or Msg.assistant("(no reply recorded)"),
                    status=end.get("status", "completed"),
                    iterations=int(end.get("iterations", 0)),
                    run_id=run_id,
                    session_id=self.session_id,
                )
            )
            turn.finish()
        self._remember(key, turn)
        return turn


_LIVE: weakref.WeakKeyDictionary[
    SessionHost, weakref.WeakValueDictionary[tuple[str, str], AgentSession]
] = weakref.WeakKeyDictionary()


def open_session(agent: SessionHost, ctx: RuntimeContext | None = None) -> AgentSession:
    """The steerable session of ``ctx`` with ``agent`` (``agent.session(ctx)``): the same
    object while anyone uses it (a running turn keeps it alive), so every caller in this
    process steers the same turns."""
    ctx = ctx or RuntimeContext()
    sessions = _LIVE.get(agent)
    if sessions is None:
        sessions = _LIVE[agent] = weakref.WeakValueDictionary()
    key = (ctx.user_id, ctx.session_id or agent.name)
    live = sessions.get(key)
    if live is None:
        live = AgentSession(agent, ctx, agent.turn_gate)
        sessions[key] = live
    return live


def _key_message_id(key: str) -> str:
    return "msg_idem_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def _fingerprint(messages: Sequence[Msg]) -> str:
    data = [
        {"role": m.role, "content": [b.__class__.__name__ + repr(b) for b in m.content]}
        for m in messages
    ]
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
