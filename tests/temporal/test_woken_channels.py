"""On Temporal, a woken turn's reply goes out through the channel its session was last reached
on: the worker (``harnessed worker --channels FILE``) calls the ``on_woken`` hooks once the
turn has ended, and a local fake platform records the signed webhook callback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from temporalio.testing import ActivityEnvironment

from harnessed import RuntimeContext
from harnessed.gateway.channels import Address
from harnessed.gateway.channels.addresses import AddressBook
from harnessed.gateway.channels.signing import ReplayGuard
from harnessed.messages import Msg
from harnessed.wakeups import Wakeups
from tests.gateway.channels.helpers import serving
from tests.temporal.conftest import Workers, durable_agent
from tests.temporal.test_runtime import _assert_clean, _log

SECRET = "webhook-secret-0123456789"


@pytest.fixture
def worker_count() -> int:
    return 0  # each test starts its one worker with the channels file


@dataclass
class Platform:
    """The other system: its callback endpoint checks the signature and records each body."""

    url: str
    bodies: list[dict[str, Any]] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    hold_first: asyncio.Event | None = None
    """Set: the first callback is kept waiting until it is set (its worker is killed)."""

    def replies(self) -> list[dict[str, Any]]:
        return [b for b in self.bodies if b.get("kind") == "reply"]

    async def wait_for(self, check: Callable[[], bool], timeout: float = 180.0) -> None:
        async with asyncio.timeout(timeout), self.changed:
            await self.changed.wait_for(check)


@pytest.fixture
async def platform() -> AsyncIterator[Platform]:
    found = Platform("")
    release = asyncio.Event()

    async def callback(request: Request) -> JSONResponse:
        raw = await request.body()
        ReplayGuard(SECRET, 300).check(request.headers, raw)
        async with found.changed:
            found.bodies.append(json.loads(raw))
            first = len(found.bodies) == 1
            found.changed.notify_all()
        if first and found.hold_first is not None:
            await release.wait()
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route("/cb", callback, methods=["POST"])])
    async with serving(app) as url:
        found.url = url
        try:
            yield found
        finally:
            release.set()


def _channels_file(tmp_path: Path, platform: Platform) -> str:
    path = tmp_path / "channels.toml"
    path.write_text(
        "[[channel]]\n"
        'type = "webhook"\n'
        f'secret = "{SECRET}"\n'
        f'callback_url = "{platform.url}/cb"\n'
        "callback_attempts = 1\n"
    )
    return str(path)


async def _reached_through_the_webhook(agent: Any, session_id: str) -> None:
    """Write the session's address record as the gateway does when a message comes in."""
    session = agent.session(RuntimeContext(session_id=session_id))
    address = Address("webhook", {"peer": "ann", "account": "default", "thread": "t-7"})
    assert await AddressBook().remember(session, address)


def _woken_records(records: list[Any]) -> list[Any]:
    from harnessed.temporal.woken_hooks import WOKEN_RECORD

    return [r for r in records if r.type == WOKEN_RECORD]


async def test_a_woken_turn_on_temporal_replies_through_the_workers_channel_once(
    workers: Workers, durable_env: dict[str, str], platform: Platform, tmp_path: Path
) -> None:
    from harnessed.temporal.wakeups import wakeup_workflow_id

    workers.start(1, "--channels", _channels_file(tmp_path, platform))
    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    ctx = RuntimeContext(session_id="hook-1")
    async with durable_agent() as agent:
        await _reached_through_the_webhook(agent, "hook-1")
        wakeups = agent.capability(Wakeups)
        wakeup = await wakeups.schedule(ctx, "tool woke-c1", after=1.5)

        await platform.wait_for(lambda: bool(platform.replies()))
        client = await agent.runtime.connect()
        firing = client.get_workflow_handle(
            wakeup_workflow_id(agent.name, "default", "hook-1", wakeup.id)
        )
        assert await firing.result() == "fired"  # its hooks ran: nothing more is sent

        (reply,) = platform.replies()
        assert reply["text"].startswith("done: tool woke-c1 effect woke-c1 made")
        assert (reply["peer"], reply["thread"]) == ("ann", "t-7")
        assert len(platform.bodies) == 1
        records = await _log(agent, "hook-1")
        _assert_clean(records)
        (woken,) = _woken_records(records)
        assert woken.payload["wakeup"] == wakeup.id
        assert len((marks / "effects-woke-c1").read_text().splitlines()) == 1
        assert await wakeups.pending(ctx) == []


async def test_a_worker_killed_while_sending_leaves_the_reply_to_the_next(
    workers: Workers, durable_env: dict[str, str], platform: Platform, tmp_path: Path
) -> None:
    """At least once: the worker dies after the platform has the reply but before the log
    says so; the retry on the next worker sends it again, and records it once."""
    from harnessed.temporal.wakeups import wakeup_workflow_id

    channels = _channels_file(tmp_path, platform)
    platform.hold_first = asyncio.Event()
    workers.start(1, "--channels", channels)
    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    async with durable_agent() as agent:
        await _reached_through_the_webhook(agent, "hook-2")
        wakeups = agent.capability(Wakeups)
        wakeup = await wakeups.schedule(RuntimeContext(session_id="hook-2"), "plain", after=1.5)

        await platform.wait_for(lambda: len(platform.replies()) == 1)
        (first,) = workers.procs
        first.kill()
        first.wait()
        workers.start(1, "--channels", channels)

        await platform.wait_for(lambda: len(platform.replies()) == 2)
        client = await agent.runtime.connect()
        firing = client.get_workflow_handle(
            wakeup_workflow_id(agent.name, "default", "hook-2", wakeup.id)
        )
        assert await firing.result() == "fired"
        texts = [r["text"] for r in platform.replies()]
        assert texts[0] == texts[1] and texts[0].startswith("done: plain")
        records = await _log(agent, "hook-2")
        _assert_clean(records)
        assert len(_woken_records(records)) == 1
        assert not list(marks.glob("effects-*"))


async def test_a_retried_hook_activity_calls_the_hooks_once(durable_env: dict[str, str]) -> None:
    """The activity itself, twice for one firing (as a retry after the record was written)."""
    from harnessed.temporal.activities import TurnActivities
    from harnessed.temporal.schema import TurnInput, TurnResult, WakeupFiring, WakeupWoken
    from harnessed.turns.ended import EndedTurn
    from harnessed.wakeups import Wakeup

    calls: list[tuple[Wakeup, Any]] = []

    async def hook(wakeup: Wakeup, turn: Any) -> None:
        calls.append((wakeup, turn))

    async def failing(wakeup: Wakeup, turn: Any) -> None:
        raise RuntimeError("the platform is down")

    async with durable_agent() as agent:
        wakeups = agent.capability(Wakeups)
        wakeups.on_woken = failing  # logged; the worker's own hook still runs
        wakeup = Wakeup("wk_1", agent.name, "default", "hook-3", "look again", 10.0, None, 1.0)
        reply = Msg.assistant("all green").to_dict()
        turn = TurnInput(agent.name, "default", "hook-3", "run_w1", "msg_1", [])
        woken = WakeupWoken(
            WakeupFiring(agent.name, "default", "hook-3", "wk_1"),
            wakeup.to_dict(),
            turn,
            TurnResult("completed", 1, reply),
        )
        activities = TurnActivities({agent.name: agent}, on_woken=hook)
        env = ActivityEnvironment()
        assert await env.run(activities.wakeup_woken, woken) is True
        assert await env.run(activities.wakeup_woken, woken) is False
        (got,) = calls
        assert got[0] == wakeup
        ended = got[1]
        assert isinstance(ended, EndedTurn) and ended.id == "run_w1"
        assert (await ended.result()).reply.text == "all green"
        assert [e.type for e in [e async for e in ended.events()]] == ["agent_end"]
        assert len(_woken_records(await _log(agent, "hook-3"))) == 1

        # a turn that failed: its hooks hear the error from result()
        second = TurnInput(agent.name, "default", "hook-3", "run_w2", "msg_2", [])
        failed = WakeupWoken(woken.firing, wakeup.to_dict(), second, error="terminated")
        assert await env.run(activities.wakeup_woken, failed) is True
        with pytest.raises(RuntimeError, match="terminated"):
            await calls[1][1].result()
