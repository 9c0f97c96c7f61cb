"""The hot message route's fast path: which requests it serves itself, that it hands every
other one to the framework app with its body intact, and that both give the same answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import HTTPException
from starlette.responses import PlainTextResponse, Response

from harnessed import HarnessAgent
from harnessed.gateway import BearerAuth, Gateway
from harnessed.gateway.fastpath import MessageFastPath
from harnessed.gateway.schemas import MessageIn
from harnessed.sessions import AgentSession
from tests.gateway.helpers import (
    ALICE,
    BOB,
    TOKENS,
    Tools,
    http_scope,
    make_agent,
    make_app,
    sse,
)


class Framework:
    """Stands for the framework app: records what reaches it and the body it reads."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await PlainTextResponse("framework")(scope, receive, send)


async def call(
    app: Any,
    path: str,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    *,
    query: bytes = b"",
    pieces: int = 1,
) -> tuple[int, bytes]:
    scope = http_scope(path, headers, query=query)
    size = max(1, -(-len(body) // pieces))
    messages = [
        {"type": "http.request", "body": body[i : i + size], "more_body": i + size < len(body)}
        for i in range(0, max(len(body), 1), size)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(app(scope, receive, send), 10)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


JSON = (b"content-type", b"application/json")
AUTH = (b"authorization", ALICE["Authorization"].encode())


@pytest.fixture
async def setup(tmp_path: Path) -> tuple[MessageFastPath, Framework, list[Any]]:
    gateway = Gateway(make_agent(tmp_path, Tools()))
    await gateway.open(gateway.session("alice", "s1"))
    framework = Framework()
    started: list[Any] = []

    async def start(session: AgentSession, body: MessageIn) -> Response:
        started.append((session.user_id, session.session_id, body.text, body.idempotency_key))
        if body.text == "refuse":
            raise HTTPException(409, "refused", headers={"X-Why": "test"})
        return PlainTextResponse("fast")

    fast = MessageFastPath(framework, gateway=gateway, auth=BearerAuth(TOKENS), start=start)
    return fast, framework, started


async def test_an_ordinary_message_is_served_without_the_framework(setup: Any) -> None:
    fast, framework, started = setup
    body = json.dumps({"text": "hi", "idempotency_key": "k1"}).encode()
    assert await call(fast, "/v1/sessions/s1/messages", body, [AUTH, JSON]) == (200, b"fast")
    # a body in pieces, a charset, a lower-case scheme: still ordinary
    lower = (b"authorization", b"bearer alice-token-123")
    charset = (b"content-type", b"application/json; charset=utf-8")
    status, _ = await call(fast, "/v1/sessions/s1/messages", body, [lower, charset], pieces=3)
    assert status == 200
    assert started == [("alice", "s1", "hi", "k1")] * 2 and framework.bodies == []


async def test_an_http_error_of_the_route_is_answered_like_the_framework(setup: Any) -> None:
    fast, framework, _ = setup
    body = json.dumps({"text": "refuse"}).encode()
    status, answer = await call(fast, "/v1/sessions/s1/messages", body, [AUTH, JSON])
    assert (status, json.loads(answer)) == (409, {"detail": "refused"})
    assert framework.bodies == []


P = "/v1/sessions/s1/messages"
HI = b'{"text": "hi"}'
WRONG = (b"authorization", b"Bearer nope-nope-1")
BASIC = (b"authorization", b"Basic abc")
OF_BOB = (b"authorization", BOB["Authorization"].encode())
TEXT = (b"content-type", b"text/plain")


@pytest.mark.parametrize(
    ("path", "body", "headers", "query"),
    [
        (P, HI, [JSON], b""),  # no token
        (P, HI, [WRONG, JSON], b""),
        (P, HI, [BASIC, JSON], b""),
        (P, HI, [AUTH, AUTH, JSON], b""),  # two tokens
        ("/v1/sessions/s2/messages", HI, [AUTH, JSON], b""),  # no such session
        (P, HI, [OF_BOB, JSON], b""),  # another user's
        (P, HI, [AUTH, JSON], b"agent=helper"),
        (P, HI, [AUTH, TEXT], b""),
        (P, HI, [AUTH], b""),  # no content type
        (P, b'{"text": ', [AUTH, JSON], b""),  # not JSON
        (P, b'{"text": ""}', [AUTH, JSON], b""),  # does not validate
        (P, b'{"text": "hi", "x": 1}', [AUTH, JSON], b""),
        (P, b'["hi"]', [AUTH, JSON], b""),
        (P, b"\xff\xfe", [AUTH, JSON], b""),  # not UTF-8
        ("/v1/sessions/s1/steer", HI, [AUTH, JSON], b""),  # another route
        ("/v1/sessions/-bad/messages", HI, [AUTH, JSON], b""),
    ],
)
async def test_anything_else_goes_to_the_framework_with_its_body(
    setup: Any, path: str, body: bytes, headers: list[tuple[bytes, bytes]], query: bytes
) -> None:
    fast, framework, started = setup
    assert await call(fast, path, body, headers, query=query, pieces=2) == (200, b"framework")
    assert framework.bodies == [body] and started == []


async def test_a_session_made_elsewhere_is_seen_and_a_missing_one_is_not_remembered(
    tmp_path: Path,
) -> None:
    """Another process (here another gateway on the same workspace) creates a session after
    this one answered 404 for it: the next message reaches it (absence is never cached)."""
    here = make_app(make_agent(tmp_path, Tools()))
    elsewhere = Gateway(make_agent(tmp_path, Tools()))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=here), base_url="http://test"
    ) as client:
        post = {"url": "/v1/sessions/later/messages", "json": {"text": "hi"}, "headers": ALICE}
        assert (await client.post(**post)).status_code == 404
        assert await elsewhere.open(elsewhere.session("alice", "later"), channel="test")
        r = await client.post(**post)
        assert r.status_code == 200 and sse(r.text)[-1][0] == "agent_end"


async def test_the_fast_path_and_the_framework_answer_alike(tmp_path: Path) -> None:
    """Each request twice: as is (the fast path serves ordinary ones) and with the default
    agent named in the query (always the framework route)."""
    agent: HarnessAgent = make_agent(tmp_path, Tools())
    app = make_app(agent, max_body_bytes=20_000)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test"
    ) as client:
        for sid in ("a", "b"):
            r = await client.post("/v1/sessions", json={"session_id": sid}, headers=ALICE)
            assert r.status_code == 201

        async def both(sid: str, body: Any, headers: dict[str, str]) -> list[tuple[int, Any]]:
            answers = []
            for query in ("", "?agent=helper"):
                r = await client.post(
                    f"/v1/sessions/{sid}/messages{query}", json=body, headers=headers
                )
                if r.headers["content-type"].startswith("text/event-stream"):
                    frames = sse(r.text)
                    answers.append((r.status_code, [kind for kind, _ in frames[1:]]))
                else:
                    answers.append((r.status_code, r.json()))
            return answers

        for sid, body, headers in [
            ("a", {"text": "hello"}, ALICE),
            ("b", {"text": "same", "idempotency_key": "k"}, ALICE),
            ("b", {"text": "other", "idempotency_key": "k"}, ALICE),  # 409: key reused
            ("a", {"text": ""}, ALICE),
            ("a", {"text": "hi", "wait": "maybe"}, ALICE),
            ("a", {"text": "x" * 30_000}, ALICE),  # 413: over the body limit
            ("zz", {"text": "hi"}, ALICE),
            ("a", {"text": "hi"}, BOB),
            ("a", {"text": "hi"}, {"Authorization": "Bearer wrong-token-9"}),
        ]:
            fast, framework = await both(sid, body, headers)
            assert fast == framework, (sid, body)
            assert fast[0] in (200, 401, 404, 409, 413, 422)
