"""Slack end to end with no internet: a local server stands in for Slack (the Events API
requests it sends are signed as Slack signs them; its Web API records chat.postMessage)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from harnessed.gateway import ChannelIdentity, Gateway
from harnessed.gateway.channels import SlackChannel, SlackConfig
from harnessed.subagents import Subagents
from tests.gateway.channels.helpers import (
    Gate,
    JSONResponse,
    Recorder,
    Route,
    gateway_app,
    json_body,
    make_agent,
    researcher,
    serving,
)
from tests.gateway.helpers import Tools

SIGNING_SECRET = "slack-signing-secret-42"
BOT_TOKEN = "xoxb-test-token-0001"


def slack_signature(body: bytes, timestamp: str, secret: str = SIGNING_SECRET) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


@dataclass
class Slack:
    """The fake Slack: sends signed events, records Web API calls."""

    client: httpx.AsyncClient
    web: Recorder
    gate: Gate
    gateway: Gateway
    done: asyncio.Event
    count: int = 0

    async def deliver(
        self,
        event: dict[str, Any],
        *,
        event_id: str | None = None,
        timestamp: str | None = None,
        secret: str = SIGNING_SECRET,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        self.count += 1
        body = json.dumps(
            {
                "token": "legacy",
                "team_id": "T1",
                "api_app_id": "A1",
                "type": "event_callback",
                "event_id": event_id or f"Ev{self.count}",
                "event_time": int(time.time()),
                "event": event,
            }
        ).encode()
        ts = timestamp or str(int(time.time()))
        sent = {
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": slack_signature(body, ts, secret),
            **(headers or {}),
        }
        return await self.client.post("/channels/slack/events", content=body, headers=sent)

    def dm(self, user: str, text: str, channel: str = "D1", **extra: Any) -> dict[str, Any]:
        self.count += 1
        return {
            "type": "message",
            "channel_type": "im",
            "channel": channel,
            "user": user,
            "text": text,
            "ts": f"1700000000.{self.count:06d}",
            **extra,
        }

    def posts(self, channel: str | None = None) -> list[dict[str, Any]]:
        return [
            b for b in self.web.bodies("chat.postMessage") if channel in (None, b.get("channel"))
        ]

    async def wait_posts(self, count: int, channel: str | None = None) -> list[dict[str, Any]]:
        await self.web.wait_for(lambda _: len(self.posts(channel)) >= count)
        return self.posts(channel)


@pytest.fixture
async def slack(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Slack]:
    web = Recorder()
    posted = 0

    async def api(request: Any) -> JSONResponse:
        nonlocal posted
        method = request.path_params["method"]
        if request.headers.get("authorization") != f"Bearer {BOT_TOKEN}":
            return JSONResponse({"ok": False, "error": "invalid_auth"})
        body = await json_body(request)
        await web.add(method, body)
        if method == "auth.test":
            return JSONResponse(
                {"ok": True, "team_id": "T1", "user_id": "UBOT", "bot_id": "BBOT", "team": "t"}
            )
        posted += 1
        return JSONResponse({"ok": True, "channel": body.get("channel"), "ts": f"99.{posted}"})

    gate, tools, done = Gate(), Tools(), asyncio.Event()
    agent = make_agent(tmp_path, gate, tools, capabilities=[Subagents([researcher(done)])])
    platform = Starlette(routes=[Route("/api/{method}", api, methods=["POST", "GET"])])
    async with serving(platform) as platform_url:
        channel = SlackChannel(
            SlackConfig(
                signing_secret=SIGNING_SECRET,
                bot_token=BOT_TOKEN,
                base_url=platform_url + "/api/",
                stream=getattr(request, "param", "final"),
                min_update_chars=8,
            )
        )
        gateway = Gateway(agent, channels=[channel])
        async with (
            serving(gateway_app(gateway)) as url,
            httpx.AsyncClient(base_url=url, timeout=60) as client,
        ):
            yield Slack(client, web, gate, gateway, done)
    await agent.close()


async def test_direct_messages_and_mentions_are_answered_where_they_were_said(
    slack: Slack,
) -> None:
    r = await slack.deliver(slack.dm("U1", "hello"))
    assert r.status_code == 200
    [reply] = await slack.wait_posts(1, "D1")
    assert reply["text"] == "You said: hello (message 1 here)" and "thread_ts" not in reply

    mention = {
        "type": "app_mention",
        "channel": "C9",
        "user": "U2",
        "text": "<@UBOT> what is up",
        "ts": "1700000001.000100",
    }
    await slack.deliver(mention)
    [threaded] = await slack.wait_posts(1, "C9")
    assert threaded["text"] == "You said: what is up (message 1 here)"
    assert threaded["thread_ts"] == "1700000001.000100"  # into the thread of the mention

    # another person's DM is a session of its own; the first person's continues
    await slack.deliver(slack.dm("U3", "hi", channel="D3"))
    [other] = await slack.wait_posts(1, "D3")
    assert other["text"] == "You said: hi (message 1 here)"
    await slack.deliver(slack.dm("U1", "again"))
    replies = await slack.wait_posts(2, "D1")
    assert replies[1]["text"] == "You said: again (message 2 here)"


async def test_bad_signatures_are_refused_and_bots_start_no_turn(slack: Slack) -> None:
    wrong = await slack.deliver(slack.dm("U1", "deploy prod"), secret="not-the-secret")
    stale = await slack.deliver(
        slack.dm("U1", "deploy prod"), timestamp=str(int(time.time()) - 3600)
    )
    unsigned = await slack.client.post(
        "/channels/slack/events", content=b'{"type":"event_callback"}'
    )
    garbage = await slack.client.post(
        "/channels/slack/events",
        content=b"\xff\xfe not json",
        headers={"X-Slack-Request-Timestamp": "x", "X-Slack-Signature": "v0=00"},
    )
    assert [wrong.status_code, stale.status_code, unsigned.status_code] == [401, 401, 401]
    assert garbage.status_code == 400
    # its own message and other bots' are ignored; a real one goes through
    await slack.deliver(slack.dm("UBOT", "I said this", bot_id="BBOT"))
    await slack.deliver(slack.dm("U1", "edited", subtype="message_changed"))
    await slack.deliver(slack.dm("U1", "real one"))
    posts = await slack.wait_posts(1)
    assert [p["text"] for p in posts] == ["You said: real one (message 1 here)"]


async def test_a_slow_turn_is_acknowledged_at_once_and_a_retry_is_no_second_turn(
    slack: Slack,
) -> None:
    event = slack.dm("U1", "slow please")
    r = await slack.deliver(event, event_id="EvSlow")
    assert r.status_code == 200
    await slack.gate.reached.wait()  # the turn runs, held, after Slack got its answer
    assert slack.posts() == []
    # Slack retries when it thinks it got no answer: the same event id is the same turn
    retry = await slack.deliver(event, event_id="EvSlow", headers={"X-Slack-Retry-Num": "1"})
    assert retry.status_code == 200
    slack.gate.open()
    await slack.wait_posts(1)
    await slack.deliver(slack.dm("U1", "after"))
    posts = await slack.wait_posts(2)
    assert [p["text"].split(" (")[0] for p in posts] == [
        "You said: slow please",
        "You said: after",
    ]


async def test_url_verification_is_answered(slack: Slack) -> None:
    body = json.dumps({"type": "url_verification", "challenge": "c-123", "token": "t"}).encode()
    ts = str(int(time.time()))
    r = await slack.client.post(
        "/channels/slack/events",
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": slack_signature(body, ts),
        },
    )
    assert r.status_code == 200 and "c-123" in r.text


async def test_a_background_task_reaches_the_slack_conversation_it_came_from(
    slack: Slack,
) -> None:
    await slack.deliver(slack.dm("U1", "research tide pools"))
    [started] = await slack.wait_posts(1, "D1")
    assert "background" in started["text"]
    slack.done.set()  # the person has gone; the task ends now
    posts = await slack.wait_posts(2, "D1")
    assert "Your background work is done" in posts[1]["text"]
    assert "Found three papers" in posts[1]["text"]
    # and the application can write to them there too
    assert await slack.gateway.send(ChannelIdentity("slack", "T1", "U1"), "Ping from the app")
    posts = await slack.wait_posts(3, "D1")
    assert posts[2]["text"] == "Ping from the app"


@pytest.mark.parametrize("slack", ["edit"], indirect=True)
async def test_streaming_posts_once_and_edits_that_message(slack: Slack) -> None:
    await slack.deliver(slack.dm("U1", "tell me a longer story"))
    final = "You said: tell me a longer story (message 1 here)"

    def shown(calls: list[tuple[str, dict[str, Any]]]) -> str | None:
        texts = [b.get("text") for m, b in calls if m in ("chat.postMessage", "chat.update")]
        return texts[-1] if texts else None

    await slack.web.wait_for(lambda calls: shown(calls) == final)
    [posted] = slack.posts("D1")  # one message, grown by edits as the text came
    assert final.startswith(posted["text"])
    updates = slack.web.bodies("chat.update")
    assert all(u["ts"] == "99.1" and u["channel"] == "D1" for u in updates)
    texts = [posted["text"]] + [u["text"] for u in updates]
    assert texts == sorted(texts, key=len) and len(set(texts)) == len(texts)


def test_config_is_checked() -> None:
    with pytest.raises(ValueError, match="signing_secret"):
        SlackConfig(signing_secret="", bot_token=BOT_TOKEN)
    with pytest.raises(ValueError, match="base_url"):
        SlackConfig(signing_secret=SIGNING_SECRET, bot_token=BOT_TOKEN, base_url="ftp://x")


_ = contextlib
