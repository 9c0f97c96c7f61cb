"""The turn gate: one lease per session, busy errors, expiry and take-over."""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harnessed.sessions import (
    FileTurnGate,
    InMemoryTurnGate,
    LeaseLostError,
    SessionBusyError,
    TurnGate,
    TurnLease,
)


async def test_of_many_asking_at_once_exactly_one_gets_the_lease(gate: TurnGate) -> None:
    async def ask() -> TurnLease | None:
        try:
            return await gate.acquire("race", wait=False)
        except SessionBusyError:
            return None

    got = [lease for lease in await asyncio.gather(*(ask() for _ in range(20))) if lease]
    assert len(got) == 1
    await gate.release(got[0])
    again = await gate.acquire("race", wait=False)
    await gate.release(again)


async def test_one_lease_per_session(gate: TurnGate) -> None:
    lease = await gate.acquire("s")
    other = await gate.acquire("t", wait=False)  # other sessions are independent
    with pytest.raises(SessionBusyError, match="'s' is busy"):
        await gate.acquire("s", wait=False)
    with pytest.raises(SessionBusyError):
        await gate.acquire("s", timeout=0.05)
    waiter = asyncio.create_task(gate.acquire("s"))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await gate.release(lease)
    second = await asyncio.wait_for(waiter, 2)
    assert second.holder != lease.holder
    await gate.release(second)
    await gate.release(other)


async def test_an_unrenewed_lease_expires_and_its_renewal_fails(gate: TurnGate) -> None:
    lease = await gate.acquire("s")
    renewed = await gate.renew(lease)
    assert renewed.expires_at >= lease.expires_at
    await asyncio.sleep(0.6)
    taker = await gate.acquire("s", wait=False)
    with pytest.raises(LeaseLostError):
        await gate.renew(renewed)
    await gate.release(renewed)  # releasing a lost lease leaves the new holder alone
    with pytest.raises(SessionBusyError):
        await gate.acquire("s", wait=False)
    await gate.release(taker)


def test_bad_lease_length_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lease_seconds"):
        FileTurnGate(tmp_path, lease_seconds=0)
    with pytest.raises(ValueError, match="lease_seconds"):
        InMemoryTurnGate(lease_seconds=-1)


def test_a_torn_lease_file_counts_as_free(tmp_path: Path) -> None:
    gate = FileTurnGate(tmp_path)
    path = gate.path_for("s")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"holder": "x", "expi')
    lease = asyncio.run(gate.acquire("s", wait=False))
    assert lease.session == "s"


async def test_a_lease_file_locked_by_another_process_is_waited_for_off_the_loop(
    tmp_path: Path,
) -> None:
    """While another process holds a lease file's lock (here another open file, which flock
    treats alike), acquire, renew and release wait for it without stopping the event loop,
    and finish once the lock is let go."""
    gate = FileTurnGate(tmp_path / "turns", lease_seconds=5)
    lease = await gate.acquire("s")
    fd = os.open(gate.path_for("s"), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        renewing = asyncio.create_task(gate.renew(lease))
        ticks = 0
        for _ in range(20):  # the loop keeps running while the renewal waits for the lock
            await asyncio.sleep(0.005)
            ticks += 1
        assert ticks == 20 and not renewing.done()
    finally:
        os.close(fd)  # lets the lock go
    renewed = await asyncio.wait_for(renewing, 5)
    assert renewed.holder == lease.holder and renewed.expires_at >= lease.expires_at
    await gate.release(renewed)
    again = await gate.acquire("s", wait=False)
    assert again.holder != lease.holder


async def test_lease_files_come_back_when_their_folder_is_removed(tmp_path: Path) -> None:
    gate = FileTurnGate(tmp_path / "turns")
    await gate.release(await gate.acquire("s"))
    shutil.rmtree(tmp_path / "turns")
    lease = await gate.acquire("s", wait=False)
    assert gate.path_for("s").exists() and lease.session == "s"


_HOLD_AND_EXIT = """
import asyncio, os, sys
from harnessed.sessions import FileTurnGate

async def main():
    gate = FileTurnGate(sys.argv[1], lease_seconds=600)
    await gate.acquire("s")
    print("held", flush=True)
    if sys.argv[2] == "exit":
        os._exit(0)  # gone without giving the lease back, as a killed process would be
    await asyncio.sleep(600)

asyncio.run(main())
"""


def _holder(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    import sys

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_AND_EXIT, str(tmp_path), mode],
        env={**os.environ, "PYTHONPATH": str(root / "src")},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


async def test_the_lease_of_a_process_that_is_gone_is_taken_at_once(tmp_path: Path) -> None:
    """A holder killed mid-turn does not block its session until the lease expires (600 s
    here): a holder process of this host that no longer exists gives up its lease."""
    _holder(tmp_path, "exit").wait(10)
    gate = FileTurnGate(tmp_path, lease_seconds=600)
    lease = await gate.acquire("s", wait=False)
    await gate.release(lease)


async def test_a_live_holder_in_another_process_keeps_its_lease(tmp_path: Path) -> None:
    proc = _holder(tmp_path, "stay")
    try:
        gate = FileTurnGate(tmp_path, lease_seconds=600)
        with pytest.raises(SessionBusyError):
            await gate.acquire("s", wait=False)
    finally:
        proc.kill()
        proc.wait(10)
    lease = await FileTurnGate(tmp_path).acquire("s", wait=False)  # and once it is gone
    assert lease.session == "s"


@pytest.mark.parametrize(
    "holder",
    [
        "another-host:4026531836:1234:abcdef",  # another machine sharing the folder
        "{host}:999:{dead}:abcdef",  # another pid namespace: its pids mean other processes
        "{host}:{ns}:{me}:abcdef",  # this process: a live holder
        "old-format:1234:abcdef",
        42,
    ],
)
def test_holders_that_cannot_be_known_to_be_gone_count_as_alive(holder: object) -> None:
    from harnessed.turns.gate import holder_id, holder_is_gone

    host, ns, _, _ = holder_id().split(":")
    dead = subprocess.Popen(["true"])
    dead.wait(10)
    if isinstance(holder, str):
        holder = holder.format(host=host, ns=ns, me=os.getpid(), dead=dead.pid)
    assert not holder_is_gone(holder)
    assert holder_is_gone(f"{host}:{ns}:{dead.pid}:abcdef")
