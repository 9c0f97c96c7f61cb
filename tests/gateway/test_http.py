"""The HTTP channel through the ASGI app: auth, per-user sessions (404, never 403), SSE turns,
idempotency, busy sessions, steering, interrupts, confirmations, limits, OpenAPI, the page."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessed import HarnessAgent
from harnessed.runtime import RuntimeContext
from tests.gateway.helpers import ALICE, BOB, Tools, http_scope, make_agent, make_app, sse


@pytest.fixture
def tools() -> Tools:
    return Tools()


@pytest.fixture
def agent(tmp_path: Path, tools: Tools) -> HarnessAgent:
    return make_agent(tmp_path, tools)


@pytest.fixture
async def client(agent: HarnessAgent) -> AsyncIterator[httpx.AsyncClient]:
    app = make_app(agent, max_body_bytes=20_000)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


async def new_session(client: httpx.AsyncClient, headers: dict[str, str], sid: str = "") -> str:
    body = {"session_id": sid} if sid else {}
    r = await client.post("/v1/sessions", json=body, headers=headers)
    assert r.status_code in (200, 201), r.text
    return str(r.json()["session_id"])


async def say(
    client: httpx.AsyncClient, sid: str, text: str, **extra: Any
) -> list[tuple[str, dict[str, Any]]]:
    r = await client.post(
        f"/v1/sessions/{sid}/messages", json={"text": text, **extra}, headers=ALICE
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    return sse(r.text)


async def test_requests_need_a_valid_bearer_token(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/sessions")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    r = await client.get("/v1/sessions", headers={"Authorization": "Bearer wrong-token-x"})
    assert r.status_code == 401
    assert (await client.get("/v1/agents", headers=ALICE)).json() == {
        "agents": ["helper"],
        "default": "helper",
    }


async def test_a_message_streams_its_turn_and_lands_in_history(client: httpx.AsyncClient) -> None:
    sid = await new_session(client, ALICE)
    frames = await say(client, sid, "hello")
    kinds = [k for k, _ in frames]
    assert kinds[0] == "turn" and kinds[1] == "agent_start" and kinds[-1] == "agent_end"
    text = "".join(d["text"] for k, d in frames if k == "text_delta")
    assert text == "You said: hello. Streaming this reply in pieces."
    assert kinds.count("text_delta") > 3
    assert frames[-1][1]["status"] == "completed"
    history = (await client.get(f"/v1/sessions/{sid}/messages", headers=ALICE)).json()
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert {m["run_id"] for m in history["messages"]} == {frames[0][1]["turn_id"]}
    listed = (await client.get("/v1/sessions", headers=ALICE)).json()["sessions"]
    assert [s["session_id"] for s in listed] == [sid]


async def test_users_never_see_each_others_sessions(client: httpx.AsyncClient) -> None:
    sid = await new_session(client, ALICE, "shared-name")
    await say(client, sid, "secret plans")
    for method, path, body in [
        ("GET", f"/v1/sessions/{sid}", None),
        ("GET", f"/v1/sessions/{sid}/messages", None),
        ("POST", f"/v1/sessions/{sid}/messages", {"text": "let me in"}),
        ("POST", f"/v1/sessions/{sid}/steer", {"text": "x"}),
        ("POST", f"/v1/sessions/{sid}/interrupt", None),
        ("POST", f"/v1/sessions/{sid}/resume", None),
        ("GET", f"/v1/sessions/{sid}/confirmations", None),
        ("POST", f"/v1/sessions/{sid}/confirmations/req_1", {"approved": True}),
    ]:
        r = await client.request(method, path, json=body, headers=BOB)
        assert r.status_code == 404, (method, path, r.status_code)
    assert (await client.get("/v1/sessions", headers=BOB)).json()["sessions"] == []
    # bob may use the same id: it is his own, separate session
    assert await new_session(client, BOB, "shared-name") == "shared-name"
    bob_history = (await client.get(f"/v1/sessions/{sid}/messages", headers=BOB)).json()
    assert bob_history["messages"] == []


async def test_same_idempotency_key_is_one_turn(
    client: httpx.AsyncClient, agent: HarnessAgent
) -> None:
    sid = await new_session(client, ALICE)
    first = await say(client, sid, "hi", idempotency_key="key-1")
    again = await say(client, sid, "hi", idempotency_key="key-1")
    assert first[0][1]["turn_id"] == again[0][1]["turn_id"]
    assert [k for k, _ in again] == [k for k, _ in first]  # the whole turn is replayed
    r = await client.post(
        f"/v1/sessions/{sid}/messages",
        json={"text": "other", "idempotency_key": "key-1"},
        headers=ALICE,
    )
    assert r.status_code == 409 and "key-1" in r.json()["detail"]
    assert len(agent.model.requests) == 1  # type: ignore[attr-defined]


async def test_steer_busy_and_interrupt_while_a_tool_runs(
    client: httpx.AsyncClient, tools: Tools
) -> None:
    sid = await new_session(client, ALICE)
    r = await client.post(f"/v1/sessions/{sid}/steer", json={"text": "x"}, headers=ALICE)
    assert r.status_code == 409  # nothing is running
    running = asyncio.create_task(say(client, sid, "wait for me"))
    while not tools.started.is_set():
        await asyncio.sleep(0.01)
    r = await client.post(
        f"/v1/sessions/{sid}/messages", json={"text": "now", "wait": False}, headers=ALICE
    )
    assert r.status_code == 409 and "busy" in r.json()["detail"]
    info = (await client.get(f"/v1/sessions/{sid}", headers=ALICE)).json()
    assert info["running_turn"]
    r = await client.post(f"/v1/sessions/{sid}/steer", json={"text": "hurry"}, headers=ALICE)
    assert r.status_code == 202 and r.json()["turn_id"] == info["running_turn"]
    r = await client.post(f"/v1/sessions/{sid}/interrupt", headers=ALICE)
    assert r.status_code == 202 and r.json() == {
        "interrupted": True,
        "turn_id": info["running_turn"],
    }
    frames = await asyncio.wait_for(running, 10)
    assert frames[-1][0] == "agent_end" and frames[-1][1]["status"] == "interrupted"
    turn_id = info["running_turn"]  # its events can be read again, from the start
    again = await client.get(f"/v1/sessions/{sid}/turns/{turn_id}/events", headers=ALICE)
    assert [k for k, _ in sse(again.text)] == [k for k, _ in frames]
    r = await client.get(f"/v1/sessions/{sid}/turns/run_nope/events", headers=ALICE)
    assert r.status_code == 404
    results = [d["result"] for k, d in frames if k == "tool_result"]
    assert results and "Interrupted" in results[0]["content"]
    # the steering message that arrived too late becomes the next turn; resume continues
    tools.release.set()
    frames = sse((await client.post(f"/v1/sessions/{sid}/resume", headers=ALICE)).text)
    assert frames[-1][1]["status"] == "completed"
    history = (await client.get(f"/v1/sessions/{sid}/messages", headers=ALICE)).json()
    assert "hurry" in [m["content"][0].get("text") for m in history["messages"]]


async def test_confirmations_are_answered_over_http(
    client: httpx.AsyncClient, tools: Tools
) -> None:
    sid = await new_session(client, ALICE)
    turn = asyncio.create_task(say(client, sid, "deploy prod"))
    for _ in range(500):
        pending = (await client.get(f"/v1/sessions/{sid}/confirmations", headers=ALICE)).json()
        if pending:
            break
        await asyncio.sleep(0.01)
    assert pending[0]["tool"] == "deploy" and pending[0]["arguments"] == {"target": "prod"}
    url = f"/v1/sessions/{sid}/confirmations/{pending[0]['request_id']}"
    r = await client.post(url, json={"approved": True}, headers=ALICE)
    assert r.status_code == 204
    frames = await asyncio.wait_for(turn, 10)
    assert "confirmation_request" in [k for k, _ in frames]
    assert frames[-1][1]["status"] == "completed" and tools.deployed == ["prod"]
    r = await client.post(url, json={"approved": False}, headers=ALICE)
    assert r.status_code in (404, 409)
    r = await client.post(
        f"/v1/sessions/{sid}/confirmations/nope", json={"approved": True}, headers=ALICE
    )
    assert r.status_code == 404


async def test_limits_and_bad_input(client: httpx.AsyncClient) -> None:
    sid = await new_session(client, ALICE)
    r = await client.post(
        f"/v1/sessions/{sid}/messages", json={"text": "x" * 30_000}, headers=ALICE
    )
    assert r.status_code == 413 and "20000 bytes" in r.json()["detail"]
    r = await client.post(f"/v1/sessions/{sid}/messages", json={"text": "   "}, headers=ALICE)
    assert r.status_code == 422 and "blank" in r.json()["detail"]
    r = await client.post(f"/v1/sessions/{sid}/messages", json={"txt": "a"}, headers=ALICE)
    assert r.status_code == 422
    r = await client.post("/v1/sessions", json={"session_id": "../etc"}, headers=ALICE)
    assert r.status_code == 422
    r = await client.get("/v1/sessions?agent=ghost", headers=ALICE)
    assert r.status_code == 404 and "ghost" in r.json()["detail"]
    r = await client.get("/v1/sessions/never-made", headers=ALICE)
    assert r.status_code == 404
    r = await client.post(f"/v1/sessions/{sid}/resume", headers=ALICE)
    assert r.status_code == 409 and "nothing to resume" in r.json()["detail"]
    r = await client.post(  # a lone surrogate cannot be stored: refused, not a crash
        f"/v1/sessions/{sid}/messages",
        content=b'{"text": "a\\ud800b"}',
        headers={**ALICE, "content-type": "application/json"},
    )
    assert r.status_code == 422 and "unicode" in r.json()["detail"][0]["msg"]
    r = await client.post(  # a NUL character is text like any other
        f"/v1/sessions/{sid}/messages",
        content=b'{"text": "nul \\u0000 here"}',
        headers={**ALICE, "content-type": "application/json"},
    )
    assert r.status_code == 200 and sse(r.text)[-1][1]["status"] == "completed"


async def test_openapi_schema_and_chat_page_are_served(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert "/v1/sessions/{session_id}/messages" in schema["paths"]
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    page = await client.get("/")
    assert page.status_code == 200 and '<script src="chat.js">' in page.text
    script = await client.get("/chat.js")
    assert script.headers["content-type"].startswith("text/javascript")


async def test_routes_to_agents_by_name(tmp_path: Path, tools: Tools) -> None:
    one = make_agent(tmp_path / "one", tools, name="one")
    two = make_agent(tmp_path / "two", tools, name="two")
    app = make_app(one, two)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        r = await c.post("/v1/sessions?agent=two", json={"session_id": "x"}, headers=ALICE)
        assert r.json()["agent"] == "two"
        r = await c.post("/v1/sessions/x/messages?agent=two", json={"text": "hi"}, headers=ALICE)
        assert sse(r.text)[-1][1]["status"] == "completed"
        assert (await c.get("/v1/sessions/x", headers=ALICE)).status_code == 404  # not on one
    assert len(two.model.requests) == 1 and not one.model.requests  # type: ignore[attr-defined]


async def test_the_turn_event_is_written_before_the_turn_starts_working(
    agent: HarnessAgent,
) -> None:
    """A busy server still tells the client at once that its turn was accepted: the head and
    the ``turn`` frame leave in the request's own task, before the turn asks for its lease."""
    gate = agent.turn_gate
    acquired: list[str] = []

    class Recording:
        lease_seconds = gate.lease_seconds

        async def acquire(self, session: str, **kw: Any) -> Any:
            acquired.append(session)
            return await gate.acquire(session, **kw)

        async def renew(self, lease: Any) -> Any:
            return await gate.renew(lease)

        async def release(self, lease: Any) -> None:
            await gate.release(lease)

    agent.turn_gate = Recording()
    app = make_app(agent)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test"
    ) as c:
        sid = await new_session(c, ALICE)
    body = b'{"text": "hello there"}'
    scope = http_scope(
        f"/v1/sessions/{sid}/messages",
        [
            (b"host", b"test"),
            (b"authorization", ALICE["Authorization"].encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    )
    received = False
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    chunks: list[bytes] = []
    acquired_at_first: list[str] | None = None

    async def send(message: dict[str, Any]) -> None:
        nonlocal acquired_at_first
        if message["type"] == "http.response.body":
            if acquired_at_first is None:
                acquired_at_first = list(acquired)
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                done.set()

    await asyncio.wait_for(app(scope, receive, send), 30)
    assert acquired_at_first == []  # the turn had not asked for its lease yet
    frames = sse(b"".join(chunks).decode())
    assert frames[0][0] == "turn" and sse(chunks[0].decode())[0][0] == "turn"
    assert frames[-1][0] == "agent_end" and len(acquired) == 1


async def stream_a_waiting_turn(
    client: httpx.AsyncClient, tools: Tools
) -> tuple[str, asyncio.Task[None], asyncio.Event, list[dict[str, Any]]]:
    """Drive the app by hand with a message whose turn waits in a tool; returns the session
    id, the request's task (once the turn waits), the event that makes the client leave and
    what was sent."""
    sid = await new_session(client, ALICE)
    app = client._transport.app  # type: ignore[attr-defined]
    gone = asyncio.Event()
    messages = [{"type": "http.request", "body": b'{"text": "wait for it"}', "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await gone.wait()
        return {"type": "http.disconnect"}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [
        (b"authorization", ALICE["Authorization"].encode()),
        (b"content-type", b"application/json"),
    ]
    scope = http_scope(f"/v1/sessions/{sid}/messages", headers)
    call = asyncio.create_task(app(scope, receive, send))
    await asyncio.wait_for(asyncio.to_thread(tools.started.wait, 10), 15)
    assert not call.done() and sse(sent[1]["body"].decode())[0][0] == "turn"
    return sid, call, gone, sent


async def test_a_client_that_leaves_ends_its_stream_and_the_turn_runs_on(
    client: httpx.AsyncClient, agent: HarnessAgent, tools: Tools
) -> None:
    """The stream of a client that went away stops at once (nothing more is written), while
    its turn goes on to its end."""
    sid, call, gone, sent = await stream_a_waiting_turn(client, tools)
    gone.set()
    await asyncio.wait({call}, timeout=5)
    assert call.done() and call.exception() is None  # the stream ended; the turn waits on
    written = len(sent)
    tools.release.set()
    session = agent.session(RuntimeContext("alice", sid))
    await asyncio.wait_for(session.wait_idle(), 10)
    assert session.tasks[-1].status == "completed" and len(sent) == written
    history = (await client.get(f"/v1/sessions/{sid}/messages", headers=ALICE)).json()
    assert history["messages"][-1]["content"][0]["text"].startswith("Finished: waited")


async def test_a_server_cancel_as_the_client_leaves_is_not_taken_for_the_leaving(
    client: httpx.AsyncClient, tools: Tools
) -> None:
    """The stream swallows only its own watcher's cancel: the server's cancel of the request
    (say, at shutdown) arriving with the client's leaving still cancels it."""
    _, call, gone, _ = await stream_a_waiting_turn(client, tools)
    gone.set()
    call.cancel()
    await asyncio.wait({call}, timeout=5)
    tools.release.set()
    assert call.cancelled()


async def lifespan_startup_freezes(app: Any) -> bool:
    """Start and stop ``app`` through the ASGI lifespan; whether starting froze objects."""
    gc.unfreeze()
    messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    frozen: list[int] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            frozen.append(gc.get_freeze_count())
        assert not message["type"].endswith(".failed"), message

    try:
        await asyncio.wait_for(
            app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send), 10
        )
    finally:
        gc.unfreeze()
    return frozen[0] > 0


async def test_starting_the_server_freezes_what_exists_then(agent: HarnessAgent) -> None:
    """A full garbage collection on a busy server scans only what came after the start."""
    assert await lifespan_startup_freezes(make_app(agent))
    assert not await lifespan_startup_freezes(make_app(agent, freeze_startup_objects=False))


async def test_the_session_view_says_what_the_session_spent(client: httpx.AsyncClient) -> None:
    sid = await new_session(client, ALICE)
    fresh = (await client.get(f"/v1/sessions/{sid}", headers=ALICE)).json()
    assert fresh["usage"]["requests"] == 0 and fresh["usage"]["cost_usd"] is None
    await say(client, sid, "hello")
    await say(client, sid, "again")
    info = (await client.get(f"/v1/sessions/{sid}", headers=ALICE)).json()
    usage = info["usage"]
    assert usage["requests"] == 2 and usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    # the scripted test model has no price: unknown, not zero
    assert usage["cost_usd"] is None and usage["unpriced_requests"] == 2
    listed = (await client.get("/v1/sessions", headers=ALICE)).json()["sessions"]
    assert listed[0]["usage"] is None  # only the view of one session reads its log for it
