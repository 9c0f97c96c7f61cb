"""Feishu/Lark end to end with no internet: a local server stands in for the open platform
(its event callbacks encrypted and signed as the platform does it; its IM API records the
messages sent)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from Crypto.Cipher import AES
from starlette.applications import Starlette

from harnessed.gateway import ChannelIdentity, Gateway
from harnessed.gateway.channels import FeishuChannel, FeishuConfig
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

APP_ID = "cli_test_app"
ENCRYPT_KEY = "feishu-encrypt-key-1"
TOKEN = "feishu-verification-token"


def encrypt(plain: bytes, key: str = ENCRYPT_KEY) -> str:
    """As the platform encrypts a callback: AES-256-CBC under SHA-256 of the key, a random
    IV in front, PKCS#7 padding, base64."""
    iv = os.urandom(16)
    pad = 16 - len(plain) % 16
    cipher = AES.new(hashlib.sha256(key.encode()).digest(), AES.MODE_CBC, iv)
    return base64.b64encode(iv + cipher.encrypt(plain + bytes([pad]) * pad)).decode()


def signature(timestamp: str, nonce: str, body: bytes, key: str = ENCRYPT_KEY) -> str:
    return hashlib.sha256((timestamp + nonce + key).encode() + body).hexdigest()


@dataclass
class Feishu:
    client: httpx.AsyncClient
    api: Recorder
    gate: Gate
    gateway: Gateway
    done: asyncio.Event
    count: int = 0

    def event(
        self, open_id: str, text: str, chat: str, chat_type: str = "p2p", **extra: Any
    ) -> dict[str, Any]:
        self.count += 1
        return {
            "schema": "2.0",
            "header": {
                "event_id": extra.pop("event_id", f"ev_{self.count}"),
                "token": extra.pop("token", TOKEN),
                "create_time": str(int(time.time() * 1000)),
                "event_type": "im.message.receive_v1",
                "tenant_key": "tenant-1",
                "app_id": APP_ID,
            },
            "event": {
                "sender": {
                    "sender_id": {"open_id": open_id, "union_id": "on_" + open_id, "user_id": "u"},
                    "sender_type": extra.pop("sender_type", "user"),
                    "tenant_key": "tenant-1",
                },
                "message": {
                    "message_id": f"om_{self.count}",
                    "chat_id": chat,
                    "chat_type": chat_type,
                    "message_type": "text",
                    "content": json.dumps({"text": text}),
                    "create_time": str(int(time.time() * 1000)),
                    **extra,
                },
            },
        }

    async def deliver(
        self,
        payload: dict[str, Any],
        *,
        key: str = ENCRYPT_KEY,
        timestamp: str | None = None,
        sign_with: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        body = json.dumps({"encrypt": encrypt(json.dumps(payload).encode(), key)}).encode()
        ts = timestamp or str(int(time.time()))
        nonce = "nonce-" + str(self.count)
        sent = {
            "Content-Type": "application/json",
            "X-Lark-Request-Timestamp": ts,
            "X-Lark-Request-Nonce": nonce,
            "X-Lark-Signature": signature(ts, nonce, body, sign_with or key),
        }
        if headers is not None:
            sent = headers
        return await self.client.post("/channels/feishu/events", content=body, headers=sent)

    def sent(self, chat: str | None = None) -> list[dict[str, Any]]:
        return [
            b for p, b in self.api.calls if "/im/v1/messages" in p and chat in (None, b["_chat"])
        ]

    async def wait_sent(self, count: int, chat: str | None = None) -> list[dict[str, Any]]:
        await self.api.wait_for(lambda _: len(self.sent(chat)) >= count)
        return self.sent(chat)


@pytest.fixture
async def feishu(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Feishu]:
    api = Recorder()
    messages: dict[str, str] = {}  # message id -> chat id, as the platform knows them

    async def token(request: Any) -> JSONResponse:
        body = await json_body(request)
        await api.add("token", body)
        if body.get("app_id") != APP_ID:
            return JSONResponse({"code": 10003, "msg": "invalid app"})
        return JSONResponse({"code": 0, "msg": "ok", "tenant_access_token": "t-1", "expire": 7200})

    async def im(request: Any) -> JSONResponse:
        if request.headers.get("authorization") != "Bearer t-1":
            return JSONResponse({"code": 99991663, "msg": "bad token"}, status_code=400)
        body = await json_body(request)
        path = request.url.path
        target = request.path_params.get("message_id")
        chat = body.get("receive_id") if target is None else messages.get(target, "?")
        new_id = f"om_bot_{len(messages) + 1}"
        messages[new_id] = chat
        body.update(
            _chat=chat, _method=request.method, _to=target, text=json.loads(body["content"])["text"]
        )
        await api.add(path, body)
        return JSONResponse(
            {"code": 0, "msg": "success", "data": {"message_id": new_id, "chat_id": chat}}
        )

    gate, tools, done = Gate(), Tools(), asyncio.Event()
    agent = make_agent(tmp_path, gate, tools, capabilities=[Subagents([researcher(done)])])
    platform = Starlette(
        routes=[
            Route("/open-apis/auth/v3/tenant_access_token/internal", token, methods=["POST"]),
            Route("/open-apis/im/v1/messages", im, methods=["POST"]),
            Route("/open-apis/im/v1/messages/{message_id}/reply", im, methods=["POST"]),
            Route("/open-apis/im/v1/messages/{message_id}", im, methods=["PUT"]),
        ]
    )
    async with serving(platform) as platform_url:
        channel = FeishuChannel(
            FeishuConfig(
                app_id=APP_ID,
                app_secret="secret",
                encrypt_key=ENCRYPT_KEY,
                verification_token=TOKEN,
                domain=platform_url,
                stream=getattr(request, "param", "final"),
                min_update_chars=8,
            )
        )
        gateway = Gateway(agent, channels=[channel])
        async with (
            serving(gateway_app(gateway)) as url,
            httpx.AsyncClient(base_url=url, timeout=60) as client,
        ):
            # the inbound message ids the platform knows (replies go to them)
            feishu = Feishu(client, api, gate, gateway, done)
            original = feishu.event

            def known(*a: Any, **kw: Any) -> dict[str, Any]:
                payload = original(*a, **kw)
                message = payload["event"]["message"]
                messages[message["message_id"]] = message["chat_id"]
                return payload

            feishu.event = known  # type: ignore[method-assign]
            yield feishu
    await agent.close()


async def test_messages_are_answered_in_their_chat_and_peers_have_their_own_sessions(
    feishu: Feishu,
) -> None:
    r = await feishu.deliver(feishu.event("ou_ann", "hello", "oc_ann"))
    assert r.status_code == 200, r.text
    [reply] = await feishu.wait_sent(1, "oc_ann")
    assert reply["text"] == "You said: hello (message 1 here)"
    assert reply["_to"] == "om_1" and reply["msg_type"] == "text"  # a reply to the message

    group = feishu.event(
        "ou_bob",
        "@_user_1 status?",
        "oc_team",
        "group",
        mentions=[{"key": "@_user_1", "id": {"open_id": "ou_bot"}, "name": "bot"}],
    )
    await feishu.deliver(group)
    [answer] = await feishu.wait_sent(1, "oc_team")
    assert answer["text"] == "You said: status? (message 1 here)"

    await feishu.deliver(feishu.event("ou_ann", "again", "oc_ann"))
    replies = await feishu.wait_sent(2, "oc_ann")
    assert replies[1]["text"] == "You said: again (message 2 here)"


async def test_bad_signatures_tokens_and_keys_are_refused(feishu: Feishu) -> None:
    payload = feishu.event("ou_eve", "deploy prod", "oc_eve")
    results = [
        await feishu.deliver(payload, sign_with="another-key"),
        await feishu.deliver(payload, timestamp=str(int(time.time()) - 3600)),
        await feishu.deliver(payload, headers={"Content-Type": "application/json"}),
        await feishu.deliver(payload, headers={"X-Lark-Signature": "00"}),
    ]
    assert [r.status_code for r in results] == [401, 401, 401, 401]
    # signed correctly but encrypted under another key, or with a wrong token inside
    wrong_key = await feishu.deliver(payload, key="someone-elses-key")
    assert wrong_key.status_code in (400, 401)
    bad_token = await feishu.deliver(feishu.event("ou_eve", "deploy prod", "oc_eve", token="nope"))
    assert bad_token.status_code == 400
    garbage = await feishu.client.post("/channels/feishu/events", content=b"\x00garbage")
    assert garbage.status_code == 401
    # the bot's own (app) messages start no turn; a good one does
    await feishu.deliver(feishu.event("ou_bot", "echo", "oc_eve", sender_type="app"))
    await feishu.deliver(feishu.event("ou_eve", "hi", "oc_eve"))
    sent = await feishu.wait_sent(1)
    assert [s["text"] for s in sent] == ["You said: hi (message 1 here)"]


async def test_url_verification_challenge(feishu: Feishu) -> None:
    plain = json.dumps({"challenge": "ch-7", "token": TOKEN, "type": "url_verification"})
    body = json.dumps({"encrypt": encrypt(plain.encode())}).encode()
    r = await feishu.client.post("/channels/feishu/events", content=body)
    assert r.status_code == 200 and r.json() == {"challenge": "ch-7"}
    wrong = json.dumps({"challenge": "ch-7", "token": "wrong", "type": "url_verification"})
    body = json.dumps({"encrypt": encrypt(wrong.encode())}).encode()
    assert (await feishu.client.post("/channels/feishu/events", content=body)).status_code == 400


async def test_a_slow_turn_is_acknowledged_at_once(feishu: Feishu) -> None:
    payload = feishu.event("ou_ann", "slow one", "oc_ann", event_id="ev_slow")
    r = await feishu.deliver(payload)
    assert r.status_code == 200 and r.json() == {"msg": "success"}
    await feishu.gate.reached.wait()
    assert feishu.sent() == []
    # the platform retries a callback it thinks went unanswered: the same event is one turn
    assert (await feishu.deliver(payload)).status_code == 200
    feishu.gate.open()
    await feishu.wait_sent(1)
    await feishu.deliver(feishu.event("ou_ann", "next", "oc_ann"))
    sent = await feishu.wait_sent(2)
    assert [s["text"].split(" (")[0] for s in sent] == ["You said: slow one", "You said: next"]


async def test_a_background_task_reaches_the_chat_after_the_user_left(feishu: Feishu) -> None:
    await feishu.deliver(feishu.event("ou_ann", "research tide pools", "oc_ann"))
    [started] = await feishu.wait_sent(1, "oc_ann")
    assert "background" in started["text"]
    feishu.done.set()
    sent = await feishu.wait_sent(2, "oc_ann")
    assert "Your background work is done" in sent[1]["text"]
    assert "Found three papers" in sent[1]["text"]
    # a pushed message goes to the chat itself
    assert await feishu.gateway.send(ChannelIdentity("feishu", APP_ID, "ou_ann"), "Report ready")
    sent = await feishu.wait_sent(3, "oc_ann")
    assert sent[2]["text"] == "Report ready" and sent[2]["_to"] is None
    assert sent[2]["receive_id"] == "oc_ann"


@pytest.mark.parametrize("feishu", ["edit"], indirect=True)
async def test_streaming_replies_once_and_updates_that_message(feishu: Feishu) -> None:
    await feishu.deliver(feishu.event("ou_ann", "tell me a longer story", "oc_ann"))
    final = "You said: tell me a longer story (message 1 here)"
    await feishu.api.wait_for(lambda _: bool(feishu.sent()) and feishu.sent()[-1]["text"] == final)
    sent = feishu.sent("oc_ann")
    first, edits = sent[0], sent[1:]
    assert first["_method"] == "POST" and first["_to"] == "om_1"  # the reply, then edits of it
    assert all(e["_method"] == "PUT" and e["_to"] == "om_bot_2" for e in edits)
    assert final.startswith(first["text"])


def test_config_is_checked() -> None:
    with pytest.raises(ValueError, match="encrypt_key"):
        FeishuConfig(app_id=APP_ID, app_secret="s", encrypt_key="", verification_token=TOKEN)
    with pytest.raises(ValueError, match="domain"):
        FeishuChannel(
            FeishuConfig(
                app_id=APP_ID,
                app_secret="s",
                encrypt_key=ENCRYPT_KEY,
                verification_token=TOKEN,
                domain="http://evil.example",
            )
        )
