"""Notes to a lease's holder (steering and interrupts from another process), on every gate."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path
from typing import Any

import pytest

from harnessed.sessions import FileTurnGate, InMemoryTurnGate, TurnLease, TurnNotes
from harnessed.stores.local import turn_gate
from harnessed.turns.gate import TurnGate


def steer(text: str) -> dict[str, Any]:
    return {"kind": "steer", "text": text, "id": f"msg_{text}"}


async def test_every_gate_here_carries_notes(gate: Any) -> None:
    assert isinstance(gate, TurnNotes)


async def test_holder_reports_the_live_lease_only(gate: Any) -> None:
    assert await gate.holder("s") is None
    lease = await gate.acquire("s")
    seen = await gate.holder("s")
    assert seen is not None and seen.holder == lease.holder and seen.session == "s"
    assert await gate.holder("t") is None
    await gate.release(lease)
    assert await gate.holder("s") is None  # released
    lease = await gate.acquire("s")
    await asyncio.sleep(0.6)
    assert await gate.holder("s") is None  # expired (nobody renewed it)
    await gate.release(lease)


async def test_notes_reach_the_holder_in_order_once(gate: Any) -> None:
    lease = await gate.acquire("s")
    assert await gate.collect(lease) == []  # none yet
    for text in ["one", "two", "three"]:
        posted = await gate.post("s", steer(text))
        assert posted is not None and posted.holder == lease.holder
    await gate.post("s", {"kind": "interrupt", "reason": "stop"})
    notes = await gate.collect(lease)
    assert notes == [
        steer("one"),
        steer("two"),
        steer("three"),
        {"kind": "interrupt", "reason": "stop"},
    ]
    assert await gate.collect(lease) == []  # collecting removed them
    await gate.post("s", steer("four"))
    assert await gate.collect(lease) == [steer("four")]
    await gate.release(lease)


async def test_without_a_live_lease_nothing_is_posted(gate: Any) -> None:
    assert await gate.post("s", steer("nobody")) is None
    lease = await gate.acquire("s")
    assert await gate.collect(lease) == []  # the note left for nobody never arrives later
    await gate.release(lease)


async def test_notes_of_one_session_never_reach_another(gate: Any) -> None:
    s = await gate.acquire("s")
    t = await gate.acquire("t")
    await gate.post("s", steer("for s"))
    await gate.post("t", steer("for t"))
    assert await gate.collect(t) == [steer("for t")]
    assert await gate.collect(s) == [steer("for s")]
    await gate.release(s)
    await gate.release(t)


async def test_notes_posted_while_held_are_collected_after_release(gate: Any) -> None:
    """A holder collects once more after giving its lease back: nothing posted to it is
    lost; a post after the release finds nobody."""
    lease = await gate.acquire("s")
    await gate.post("s", steer("late"))
    await gate.release(lease)
    assert await gate.post("s", steer("too late")) is None
    assert await gate.collect(lease) == [steer("late")]


async def test_a_note_for_one_holder_never_reaches_the_next(gate: Any) -> None:
    first = await gate.acquire("s")
    await gate.post("s", steer("for the first"))
    await gate.release(first)
    second = await gate.acquire("s")
    await gate.post("s", steer("for the second"))
    assert await gate.collect(second) == [steer("for the second")]
    # the next holder's collect leaves a recent note of the first alone: the first holder
    # collects once more after its release (late, under load) and still finds it
    assert await gate.collect(first) == [steer("for the first")]
    await gate.release(second)


async def test_old_notes_of_a_gone_holder_are_dropped(
    gate: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await gate.acquire("s")
    await gate.post("s", steer("never collected"))
    await gate.release(first)  # the first holder died before its last collect
    second = await gate.acquire("s")
    await gate.post("s", steer("for the second"))
    monkeypatch.setattr("harnessed.turns.gate.STALE_NOTE_SECONDS", 0.0)
    await asyncio.sleep(0.01)
    assert await gate.collect(second) == [steer("for the second")]
    monkeypatch.undo()
    assert await gate.collect(first) == []  # dropped by the second's collect
    await gate.release(second)


async def test_many_senders_at_once_lose_nothing(gate: Any) -> None:
    lease = await gate.acquire("s")
    collected: list[dict[str, Any]] = []

    async def send(sender: int) -> None:
        for i in range(10):
            assert await gate.post("s", steer(f"{sender}-{i}")) is not None

    async def collect() -> None:
        for _ in range(20):
            collected.extend(await gate.collect(lease))
            await asyncio.sleep(0)

    await asyncio.gather(*(send(n) for n in range(5)), collect())
    collected.extend(await gate.collect(lease))
    texts = [note["text"] for note in collected]
    assert sorted(texts) == sorted(f"{n}-{i}" for n in range(5) for i in range(10))
    for n in range(5):  # each sender's notes in the order sent
        assert [t for t in texts if t.startswith(f"{n}-")] == [f"{n}-{i}" for i in range(10)]
    await gate.release(lease)


@pytest.mark.parametrize(
    "note", [{"text": "no kind"}, {"kind": "steer", "text": object()}, ["not", "a", "dict"]]
)
async def test_a_bad_note_is_refused(gate: Any, note: Any) -> None:
    lease = await gate.acquire("s")
    with pytest.raises(ValueError, match="turn note"):
        await gate.post("s", note)
    assert await gate.collect(lease) == []
    await gate.release(lease)


async def test_collecting_no_notes_from_files_takes_no_lock(tmp_path: Path) -> None:
    """With no notes waiting, a collect is one stat: it does not wait for the lease file's
    lock even while another process holds it."""
    gate = FileTurnGate(tmp_path, lease_seconds=5)
    lease = await gate.acquire("s")
    fd = os.open(gate.path_for("s"), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another open file: the gate's own lock waits for it
        assert await asyncio.wait_for(gate.collect(lease), 1) == []
    finally:
        os.close(fd)
    await gate.post("s", steer("x"))
    assert gate.notes_path_for("s").exists()
    assert await gate.collect(lease) == [steer("x")]
    assert not gate.notes_path_for("s").exists()  # emptied: removed, so polls stay cheap
    await gate.release(lease)


async def test_torn_note_lines_are_skipped(tmp_path: Path) -> None:
    gate = FileTurnGate(tmp_path, lease_seconds=5)
    lease = await gate.acquire("s")
    await gate.post("s", steer("before"))
    with open(gate.notes_path_for("s"), "ab") as notes:
        notes.write(b'["half a li')  # a sender that died mid-write
    await gate.post("s", steer("after"))
    # every note starts on a line of its own: only the torn bytes are lost
    assert await gate.collect(lease) == [steer("before"), steer("after")]
    await gate.release(lease)


async def test_a_short_write_fails_the_post_and_loses_no_later_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = FileTurnGate(tmp_path, lease_seconds=5)
    lease = await gate.acquire("s")
    real_write = os.write
    writes: list[int] = []

    def disk_fills_up(fd: int, data: bytes) -> int:  # half a note, then no room at all
        writes.append(len(data))
        if len(writes) > 1:
            raise OSError(28, "No space left on device")
        return real_write(fd, bytes(data[: len(data) // 2]))

    monkeypatch.setattr(turn_gate.os, "write", disk_fills_up)
    with pytest.raises(OSError, match="No space"):
        await gate.post("s", steer("lost with the disk"))
    monkeypatch.setattr(turn_gate.os, "write", real_write)
    await gate.post("s", steer("after"))
    assert await gate.collect(lease) == [steer("after")]
    await gate.release(lease)


async def test_the_notes_file_stays_private_and_is_rewritten_only_when_it_changes(
    tmp_path: Path,
) -> None:
    gate = FileTurnGate(tmp_path, lease_seconds=5)
    first = await gate.acquire("s")
    await gate.post("s", steer("for the first holder"))
    await gate.release(first)  # its last collect has not come yet: the note is kept
    second = await gate.acquire("s")
    path = gate.notes_path_for("s")
    await gate.post("s", steer("for the second"))
    assert await gate.collect(second) == [steer("for the second")]
    assert path.stat().st_mode & 0o777 == 0o600  # rewritten, still private
    before = path.stat().st_mtime_ns
    assert await gate.collect(second) == []
    assert path.stat().st_mtime_ns == before  # nothing changed: not rewritten
    assert await gate.collect(first) == [steer("for the first holder")]
    assert not path.exists()
    await gate.release(second)


async def test_a_gate_without_notes_still_works() -> None:
    class PlainGate:
        def __init__(self) -> None:
            self.inner = InMemoryTurnGate()
            self.lease_seconds = self.inner.lease_seconds

        async def acquire(
            self, session: str, *, wait: bool = True, timeout: float | None = None
        ) -> TurnLease:
            return await self.inner.acquire(session, wait=wait, timeout=timeout)

        async def renew(self, lease: TurnLease) -> TurnLease:
            return await self.inner.renew(lease)

        async def release(self, lease: TurnLease) -> None:
            await self.inner.release(lease)

    gate = PlainGate()
    assert isinstance(gate, TurnGate) and not isinstance(gate, TurnNotes)
    from harnessed import RuntimeContext
    from harnessed.sessions import SessionIdleError
    from tests.sessions.helpers import DrippingModel, make_agent

    agent = make_agent(DrippingModel(["a slow reply of several words", "next"], gap=0.05))
    agent.turn_gate = gate
    session = agent.session(RuntimeContext("u", "plain"))
    with pytest.raises(SessionIdleError):
        await session.send_steer("nobody listens")
    assert await session.send_interrupt() is None
    turn = await session.submit("go")
    while turn.status != "running":
        await asyncio.sleep(0.01)
    sent = await session.send_steer("here")
    assert not sent.elsewhere and sent.turn_id == turn.id
    assert (await session.send_interrupt()) is not None
    assert (await turn.result()).status == "interrupted"


def test_the_largest_message_the_http_channel_takes_fits_in_a_note() -> None:
    from harnessed.gateway.schemas import MAX_TEXT
    from harnessed.turns.notes import encode_note

    widest = "\U0001f600" * MAX_TEXT  # every character escaped: 12 bytes each
    assert len(encode_note({"kind": "steer", "text": widest, "id": "m1"})) > 12 * MAX_TEXT
