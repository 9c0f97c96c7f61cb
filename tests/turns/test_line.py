"""The line of turns waiting for a session's lease, on every gate: first come, first served; a
holder asking again queues behind the waiters; a waiter that dies, hangs, gives up or is
cancelled does not hold up the ones behind it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harnessed.sessions import FileTurnGate, InMemoryTurnGate, SessionBusyError, TurnGate
from harnessed.stores.postgres import PostgresTurnGate
from tests.support.postgres import URL, postgres_store

ROOT = Path(__file__).resolve().parents[2]
GUARD = 60.0  # only a failing test waits this long (a lease here lasts 600 s)


class Waiters:
    """Sees which tasks wait for a gate's lease: a task counts once it has asked and found the
    session busy (then it has its ticket in line)."""

    def __init__(self, gate: Any) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()
        self.stuck: set[asyncio.Task[Any]] = set()
        self._changed = asyncio.Event()
        waiting = gate._waiting
        until = waiting.until

        async def watched(session: str, deadline: float | None, attempt: int) -> bool:
            task = asyncio.current_task()
            assert task is not None
            self.tasks.add(task)
            self._changed.set()
            if task in self.stuck:  # a waiter that hangs: alive, never asking again
                await asyncio.Event().wait()
            return bool(await until(session, deadline, attempt))

        waiting.until = watched

    async def queued(self, *tasks: asyncio.Task[Any]) -> None:
        while not all(task in self.tasks for task in tasks):
            for task in tasks:
                if task.done():
                    task.result()  # it failed (or got the lease) instead of waiting
            self._changed.clear()
            await asyncio.wait_for(self._changed.wait(), GUARD)


def start(gate: TurnGate, **options: Any) -> asyncio.Task[Any]:
    return asyncio.create_task(gate.acquire("s", **options))


@pytest.fixture(params=["file", "memory", "postgres"])
async def long_gate(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """Each gate with 600 s leases: a place in line held up by a waiter that is gone would
    block the test until its guard fails."""
    if request.param == "file":
        yield FileTurnGate(tmp_path / "turns", lease_seconds=600, poll_interval=0.02)
    elif request.param == "memory":
        yield InMemoryTurnGate(lease_seconds=600, poll_interval=0.02)
    else:
        async for store in postgres_store():
            yield PostgresTurnGate(store, lease_seconds=600, poll_interval=0.02)


async def test_a_holder_asking_again_queues_behind_the_waiter(long_gate: TurnGate) -> None:
    waiters = Waiters(long_gate)
    first = await long_gate.acquire("s")
    waiter = start(long_gate)
    await waiters.queued(waiter)
    await long_gate.release(first)
    with pytest.raises(SessionBusyError):  # free, but the waiter's (it may hold it already)
        await long_gate.acquire("s", wait=False)
    again = start(long_gate)
    served = await asyncio.wait_for(waiter, GUARD)
    await waiters.queued(again)
    assert not again.done()
    await long_gate.release(served)
    await long_gate.release(await asyncio.wait_for(again, GUARD))


async def test_waiters_are_served_in_the_order_they_came(long_gate: TurnGate) -> None:
    waiters = Waiters(long_gate)
    holder = await long_gate.acquire("s")
    line: list[asyncio.Task[Any]] = []
    for _ in range(4):
        line.append(start(long_gate))
        await waiters.queued(line[-1])
    with pytest.raises(SessionBusyError, match="4 more waiting"):
        await long_gate.acquire("s", wait=False)
    await long_gate.release(holder)
    for i, task in enumerate(line):
        lease = await asyncio.wait_for(task, GUARD)
        assert all(not later.done() for later in line[i + 1 :]), f"waiter {i} was passed over"
        await long_gate.release(lease)


async def test_a_waiter_that_gives_up_leaves_the_line(long_gate: TurnGate) -> None:
    waiters = Waiters(long_gate)
    holder = await long_gate.acquire("s")
    with pytest.raises(SessionBusyError, match="'s' is busy"):
        await long_gate.acquire("s", timeout=0.05)  # timed out: out of the line
    cancelled = start(long_gate)
    behind = start(long_gate)
    await waiters.queued(cancelled, behind)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    with pytest.raises(SessionBusyError, match="1 more waiting"):
        await long_gate.acquire("s", wait=False)  # only the one behind is left
    await long_gate.release(holder)
    await long_gate.release(await asyncio.wait_for(behind, GUARD))
    await long_gate.release(await long_gate.acquire("s", wait=False))  # nobody waits now


async def test_a_hung_waiter_loses_its_place_once_its_ticket_expires(gate: TurnGate) -> None:
    """A waiter that stops asking (alive, but hung) keeps its place for a lease's length
    (0.5 s here), then the line goes on without it."""
    waiters = Waiters(gate)
    holder = await gate.acquire("s")
    hung = start(gate)
    waiters.stuck.add(hung)
    await waiters.queued(hung)
    behind = start(gate)
    await waiters.queued(behind)
    await gate.release(holder)
    lease = await asyncio.wait_for(behind, GUARD)
    assert not hung.done()
    await gate.release(lease)
    hung.cancel()
    with pytest.raises(asyncio.CancelledError):
        await hung


async def test_renewing_and_notes_keep_the_line(long_gate: TurnGate) -> None:
    waiters = Waiters(long_gate)
    holder = await long_gate.acquire("s")
    waiter = start(long_gate)
    await waiters.queued(waiter)
    holder = await long_gate.renew(holder)
    notes: Any = long_gate
    assert (await notes.post("s", {"kind": "steer", "text": "hi"})).holder == holder.holder
    with pytest.raises(SessionBusyError, match="1 more waiting"):
        await long_gate.acquire("s", wait=False)
    await long_gate.release(holder)
    assert [n["text"] for n in await notes.collect(holder)] == ["hi"]
    served = await asyncio.wait_for(waiter, GUARD)
    assert (await notes.holder("s")).holder == served.holder
    await long_gate.release(served)


_QUEUE_AND_HANG = """
import asyncio, sys
from harnessed.sessions import FileTurnGate

async def main():
    where, _ = sys.argv[1], sys.argv[2]
    if where.startswith("postgres:"):
        from harnessed.stores.postgres import PostgresStore, PostgresTurnGate
        url, schema = where.removeprefix("postgres:").rsplit("|", 1)
        gate = PostgresTurnGate(PostgresStore(url, schema=schema), lease_seconds=600)
    else:
        gate = FileTurnGate(where, lease_seconds=600)
    until = gate._waiting.until
    async def queued(*args):
        print("queued", flush=True)
        return await until(*args)
    gate._waiting.until = queued
    await gate.acquire("s")
    print("served", flush=True)

asyncio.run(main())
"""


@pytest.fixture(params=["file", "postgres"])
async def shared_gate(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[Any, str]]:
    """A gate with 600 s leases that another process can use too, and where it is."""
    if request.param == "file":
        yield FileTurnGate(tmp_path / "turns", lease_seconds=600), str(tmp_path / "turns")
    else:
        async for store in postgres_store():
            await store.upgrade()
            where = f"postgres:{URL}|{store.schema}"
            yield PostgresTurnGate(store, lease_seconds=600, poll_interval=0.02), where


async def test_a_waiter_killed_in_line_does_not_block_the_line(
    shared_gate: tuple[Any, str],
) -> None:
    """A process killed with ``kill -9`` while it waited first in line: the waiter behind it
    is served as soon as the lease is free (not after the dead one's ticket expires, 600 s),
    still before a holder that asks again."""
    gate, where = shared_gate
    waiters = Waiters(gate)
    holder = await gate.acquire("s")
    proc = subprocess.Popen(
        [sys.executable, "-c", _QUEUE_AND_HANG, where, "s"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), GUARD)
        assert line.strip() == "queued"
        behind = start(gate)
        await waiters.queued(behind)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(GUARD)
    await gate.release(holder)
    with pytest.raises(SessionBusyError):  # free, but `behind`'s: the dead one is out of line
        await gate.acquire("s", wait=False)
    await gate.release(await asyncio.wait_for(behind, GUARD))


async def test_a_long_line_in_a_lease_file_is_read_whole(tmp_path: Path) -> None:
    """A line longer than one read of the file: the file is not mistaken for a torn one (which
    would make the lease free for anyone)."""
    gate = FileTurnGate(tmp_path, lease_seconds=600)
    holder = await gate.acquire("s")
    path = gate.path_for("s")
    data = json.loads(path.read_text())
    far = data["expires_at"]
    data["queue"] = [[f"another-host:1:{i}:{'0' * 40}", far] for i in range(2000)]
    path.write_text(json.dumps(data))
    assert path.stat().st_size > 1 << 17
    with pytest.raises(SessionBusyError, match="2000 more waiting"):
        await gate.acquire("s", wait=False)
    await gate.release(holder)
    with pytest.raises(SessionBusyError, match="2000 more waiting"):
        await gate.acquire("s", wait=False)
    data = json.loads(path.read_text())
    assert "holder" not in data and len(data["queue"]) == 2000


@pytest.mark.parametrize(
    "queue",
    [
        "not a list",
        [["x"], 5, None, ["a", "b"], [1, 2], ["someone", True], ["nan", float("nan")]],
        [["expired-host:1:2:ab", 1.0]],
    ],
    ids=["not-a-list", "malformed-tickets", "expired"],
)
async def test_a_line_that_holds_nobody_alive_does_not_block(tmp_path: Path, queue: Any) -> None:
    gate = FileTurnGate(tmp_path)
    path = gate.path_for("s")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"queue": queue}))
    await gate.release(await gate.acquire("s", wait=False))
