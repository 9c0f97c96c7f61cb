"""The signed webhook channel end to end: a local server stands in for the other system
(its requests signed, its callback endpoint recording), with no internet."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessed.gateway import ChannelIdentity, Gateway
from harnessed.gateway.channels import ADDRESS_RECORD, WebhookChannel, WebhookConfig
from harnessed.gateway.channels.signing import ReplayGuard, sign, signed_headers
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.subagents import Subagents
from harnessed.wakeups import Wakeups, WakeupsConfig
from tests.gateway.channels.helpers import (
    Gate,
    JSONResponse,
    Recorder,
    Route,
    deployer,
    gateway_app,
    json_body,
    make_agent,
    researcher,
    serving,
)
from tests.gateway.helpers import Tools

SECRET = "webhook-secret-0123456789"


@dataclass
class Setup:
    client: httpx.AsyncClient
    recorder: Recorder
    gate: Gate
    tools: Tools
    gateway: Gateway
    research_done: Any
    deploy_released: Any

    async def post(
        self, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> httpx.Response:
        raw = json.dumps(body).encode()
        return await self.client.post(
            "/channels/webhook",
            content=raw,
            headers=headers if headers is not None else signed_headers(SECRET, raw),
        )

    async def reply_to(
        self, peer: str, count: int = 1, kind: str = "reply"
    ) -> list[dict[str, Any]]:
        def have(_: object) -> bool:
            return len(self.of(peer, kind)) >= count

        await self.recorder.wait_for(have)
        return self.of(peer, kind)

    def of(self, peer: str, kind: str) -> list[dict[str, Any]]:
        return [
            b for b in self.recorder.bodies() if b.get("peer") == peer and b.get("kind") == kind
        ]


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    import asyncio

    recorder = Recorder()

    async def callback(request: Any) -> JSONResponse:
        raw = await request.body()
        # the callback is signed with the channel's secret, as the inbound requests are
        ReplayGuard(SECRET, 300).check(request.headers, raw)
        await recorder.add(request.url.path, await json_body(request))
        return JSONResponse({"ok": True})

    gate, tools, done, release = Gate(), Tools(), asyncio.Event(), asyncio.Event()
    agent = make_agent(
        tmp_path,
        gate,
        tools,
        capabilities=[
            Subagents([researcher(done), deployer(release)]),
            Wakeups(WakeupsConfig(min_delay=0, poll_seconds=0.05)),
        ],
    )
    async with serving_pair(callback) as (platform_url, make):
        channel = WebhookChannel(WebhookConfig(secret=SECRET, callback_url=platform_url + "/cb"))
        gateway = Gateway(agent, channels=[channel])
        async with (
            make(gateway_app(gateway)) as url,
            httpx.AsyncClient(base_url=url, timeout=60) as client,
        ):
            yield Setup(client, recorder, gate, tools, gateway, done, release)
    await agent.close()


@dataclass
class _Pair:
    pass


def serving_pair(callback: Any) -> Any:
    import contextlib

    from starlette.applications import Starlette

    @contextlib.asynccontextmanager
    async def both() -> AsyncIterator[tuple[str, Any]]:
        platform = Starlette(routes=[Route("/cb", callback, methods=["POST"])])
        async with serving(platform) as platform_url:
            yield platform_url, serving

    return both()


async def test_messages_in_replies_out_and_peers_never_share_a_session(setup: Setup) -> None:
    r = await setup.post({"peer": "ann", "text": "hello", "message_id": "m1"})
    assert r.status_code == 202 and r.json() == {"accepted": True}
    [reply] = await setup.reply_to("ann")
    assert reply["text"] == "You said: hello (message 1 here)"
    assert reply["account"] == "default"

    await setup.post({"peer": "bob", "text": "hi there"})
    [bob] = await setup.reply_to("bob")
    assert bob["text"] == "You said: hi there (message 1 here)"  # a session of his own

    await setup.post({"peer": "ann", "text": "again"})
    replies = await setup.reply_to("ann", 2)
    assert replies[1]["text"] == "You said: again (message 2 here)"

    # a retried delivery (same message id, freshly signed) is the same turn: no second reply
    await setup.post({"peer": "ann", "text": "hello", "message_id": "m1"})
    await setup.post({"peer": "ann", "text": "third"})
    replies = await setup.reply_to("ann", 3)
    assert [r["text"] for r in replies][2] == "You said: third (message 3 here)"
    assert len(setup.of("ann", "reply")) == 3


async def test_bad_signatures_are_refused(setup: Setup) -> None:
    body = {"peer": "mallory", "text": "deploy prod"}
    raw = json.dumps(body).encode()
    good = signed_headers(SECRET, raw)
    wrong_secret = signed_headers("another-secret-0123456789", raw)
    stale = signed_headers(SECRET, raw, now=1_000_000)
    future = signed_headers(SECRET, raw, now=4_000_000_000)
    tampered = dict(good)
    for headers in (
        {},
        wrong_secret,
        stale,
        future,
        {**good, "X-Harnessed-Signature": "v1=" + "0" * 64},
        {**good, "X-Harnessed-Timestamp": "not-a-number"},
    ):
        r = await setup.post(body, headers)
        assert r.status_code == 401, (headers, r.text)
    # a changed body under a good signature
    r = await setup.client.post(
        "/channels/webhook", content=raw.replace(b"prod", b"dev!"), headers=tampered
    )
    assert r.status_code == 401
    # the good one passes once; the same request again is a replay
    assert (
        await setup.client.post("/channels/webhook", content=raw, headers=good)
    ).status_code == 202
    replay = await setup.client.post("/channels/webhook", content=raw, headers=good)
    assert replay.status_code == 401 and "replay" in replay.json()["detail"]
    # garbage under a good signature is refused as such
    for junk in (
        b"not json",
        b"[1,2]",
        json.dumps({"peer": "x"}).encode(),
        json.dumps({"peer": 5, "text": "t"}).encode(),
    ):
        r = await setup.client.post(
            "/channels/webhook", content=junk, headers=signed_headers(SECRET, junk)
        )
        assert r.status_code == 422
    await setup.reply_to("mallory", kind="question")  # only the one good request started a turn
    assert len(setup.of("mallory", "question")) == 1
    assert setup.tools.deployed == []


async def test_a_slow_turn_is_acknowledged_before_it_runs(setup: Setup) -> None:
    r = await setup.post({"peer": "ann", "text": "slow answer please"})
    assert r.status_code == 202
    await setup.gate.reached.wait()  # the model is working on it, held
    assert setup.of("ann", "reply") == []
    setup.gate.open()
    [reply] = await setup.reply_to("ann")
    assert reply["text"].startswith("You said: slow answer please")


async def test_a_confirmation_is_asked_and_answered_in_the_conversation(setup: Setup) -> None:
    await setup.post({"peer": "ann", "text": "deploy prod"})
    [question] = await setup.reply_to("ann", kind="question")
    assert "deploy" in question["text"] and "yes" in question["text"]
    assert setup.tools.deployed == []
    await setup.post({"peer": "ann", "text": "yes"})
    [reply] = await setup.reply_to("ann")
    assert reply["text"] == "Finished: deployed to prod"
    assert setup.tools.deployed == ["prod"]


async def test_a_background_task_that_ends_after_the_user_left_reaches_the_channel(
    setup: Setup,
) -> None:
    await setup.post({"peer": "ann", "text": "research tide pools", "thread": "t-7"})
    [started] = await setup.reply_to("ann")
    assert "background" in started["text"] and started["thread"] == "t-7"
    setup.research_done.set()  # the user has left; the sub-agent finishes now
    replies = await setup.reply_to("ann", 2)
    assert "Your background work is done" in replies[1]["text"]
    assert "Found three papers" in replies[1]["text"]
    assert replies[1]["thread"] == "t-7"  # the same conversation it was started from


async def test_a_background_sub_agent_that_needs_a_person_is_told_to_the_channel(
    setup: Setup,
) -> None:
    await setup.post({"peer": "ann", "text": "ship it"})
    await setup.reply_to("ann")  # "started"
    # the sub-agent gets going once that turn is over (had it finished during the turn, the
    # turn's next request would have carried the news: the model tells the user itself)
    setup.deploy_released.set()
    replies = await setup.reply_to("ann", 2)  # then the news, unasked
    assert "Your background work is done" in replies[1]["text"]
    assert "needs the user's approval" in replies[1]["text"]
    assert setup.tools.deployed == []


async def test_gateway_send_reaches_the_address_the_session_was_reached_at(setup: Setup) -> None:
    ann = ChannelIdentity("webhook", "default", "ann")
    assert await setup.gateway.send(ann, "nobody talked to me yet") is False
    await setup.post({"peer": "ann", "text": "hello", "thread": "t-1"})
    await setup.reply_to("ann")
    assert await setup.gateway.send(ann, "Your report is ready.") is True
    [pushed] = await setup.reply_to("ann", kind="message")
    assert pushed["text"] == "Your report is ready." and pushed["thread"] == "t-1"
    # the address is kept in the session's log (another process reads it there)
    agent = setup.gateway.agent()
    session = setup.gateway.session_for(ann)
    records = await agent.session_store.tail(
        SessionRef(agent.name, session.user_id, session.session_id), 5, types=[ADDRESS_RECORD]
    )
    assert [r.payload["data"]["thread"] for r in records] == ["t-1"]


async def test_a_woken_turn_replies_where_the_session_was_reached(setup: Setup) -> None:
    ann = ChannelIdentity("webhook", "default", "ann")
    await setup.post({"peer": "ann", "text": "hello", "thread": "t-9"})
    await setup.reply_to("ann")
    agent = setup.gateway.agent()
    session = setup.gateway.session_for(ann)
    wakeups = agent.capability(Wakeups)
    assert wakeups is not None
    ctx = RuntimeContext(session.user_id, session.session_id)
    await wakeups.schedule(ctx, "check whether the build is green", after=0)
    # the server's dispatcher fires it; the woken turn's reply goes to ann's thread unasked
    replies = await setup.reply_to("ann", count=2)
    assert "check whether the build is green" in replies[1]["text"]
    assert replies[1]["thread"] == "t-9"
    assert await wakeups.pending(ctx) == []


def test_config_is_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="secret"):
        WebhookConfig(secret="short", callback_url="http://127.0.0.1/cb")
    with pytest.raises(ValueError, match="callback_url"):
        WebhookConfig(secret=SECRET, callback_url="file:///etc/passwd")
    with pytest.raises(ValueError, match="name"):
        WebhookConfig(name="Bad Name", secret=SECRET, callback_url="http://127.0.0.1/cb")
    assert sign(SECRET, "1", b"x").startswith("v1=")
