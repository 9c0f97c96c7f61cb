"""Notes that reach a session's turn as it ends: steering becomes the next turn, a stale
interrupt is dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnessed import RuntimeContext
from harnessed.log import RecordType
from harnessed.models import ScriptedModel
from harnessed.sessions import FileTurnGate, SessionIdleError, TurnLease
from tests.sessions.helpers import Blocker, make_agent, texts, tool_step

CTX = RuntimeContext("u", "late")


class RacingGate(FileTurnGate):
    """A gate where a sender in another process posts ``note`` just before the holder gives
    its lease back: after the turn's last collect, while the lease is still held."""

    def __init__(self, root: Path, note: dict[str, Any]) -> None:
        super().__init__(root)
        self.note: dict[str, Any] | None = note
        self.posted: TurnLease | None = None

    async def release(self, lease: TurnLease) -> None:
        if self.note is not None:
            self.posted = await self.post(lease.session, self.note)
            self.note = None
        await super().release(lease)


async def test_steering_that_arrives_as_the_turn_ends_becomes_the_next_turn(
    tmp_path: Path,
) -> None:
    note = {"kind": "steer", "text": "one more thing", "id": "msg_late"}
    gate = RacingGate(tmp_path / "turns", note)
    model = ScriptedModel(["first answer", "about that thing"])
    agent = make_agent(model, tmp_path)
    agent.turn_gate = gate
    session = agent.session(CTX)
    first = await session.submit("hello")
    assert (await first.result()).status == "completed"
    await session.wait_idle()
    assert gate.posted is not None  # it was sent while the turn still held the lease
    follow = session.tasks[-1]
    assert follow is not first and (await follow.result()).status == "completed"
    assert follow.messages is not None and [m.id for m in follow.messages] == ["msg_late"]
    assert texts(model.requests[1])[-1] == "one more thing"
    messages = await agent.session_messages(CTX)
    assert [m.id for m in messages].count("msg_late") == 1
    state = await agent.load_state(CTX)
    assert [m.id for m in state.history] == [m.id for m in messages]


async def test_an_interrupt_that_arrives_as_the_turn_ends_is_dropped(tmp_path: Path) -> None:
    gate = RacingGate(tmp_path / "turns", {"kind": "interrupt", "reason": "too late"})
    agent = make_agent(ScriptedModel(["first", "second"]), tmp_path)
    agent.turn_gate = gate
    session = agent.session(CTX)
    assert (await (await session.submit("a")).result()).status == "completed"
    await session.wait_idle()
    assert gate.posted is not None and len(session.tasks) == 1  # no turn made of it
    assert (await (await session.submit("b")).result()).status == "completed"
    ends = await agent.session_log(CTX, types=[RecordType.RUN_END])
    assert [e.payload["status"] for e in ends] == ["completed", "completed"]


async def test_steering_that_comes_as_a_closed_session_ends_starts_no_turn(
    tmp_path: Path,
) -> None:
    blocker = Blocker()
    model = ScriptedModel([tool_step("wait_here", label="x"), "an answer nobody asked for"])
    agent = make_agent(model, tmp_path, tools=[blocker.tool])
    agent.turn_gate = RacingGate(tmp_path / "turns", {"kind": "steer", "text": "hey", "id": "m"})
    session = agent.session(CTX)
    turn = await session.submit("start")
    await blocker.started.wait()
    await session.close()  # the server shuts down as the steering arrives
    assert (await turn.result()).status == "interrupted"
    assert len(model.requests) == 1  # no turn ran during or after the close
    assert session.tasks[-1].status == "cancelled"


class BlipGate(FileTurnGate):
    """Giving a lease back fails once (a database blip)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, lease_seconds=30)
        self.failures = 1

    async def release(self, lease: TurnLease) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("connection reset")
        await super().release(lease)


async def test_a_failed_release_is_retried_so_no_steering_is_sent_to_a_finished_turn(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(["first"])
    agent = make_agent(model, tmp_path)
    agent.turn_gate = gate = BlipGate(tmp_path / "turns")
    session = agent.session(CTX)
    assert (await (await session.submit("hi")).result()).status == "completed"
    await session.wait_idle()
    assert gate.failures == 0
    with pytest.raises(SessionIdleError):  # the lease is free: nobody would read a note
        await session.send_steer("one more thing")
