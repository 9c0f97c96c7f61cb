"""The AG-UI stream of the HTTP channel, checked against the protocol package's own event
types: a turn with text, a tool call and an approval, answered by a resumed run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui.core import Event, EventType, RunAgentInput
from pydantic import TypeAdapter

from harnessed.gateway import Gateway
from tests.gateway.channels.helpers import Gate, gateway_app, make_agent, serving
from tests.gateway.helpers import ALICE, BOB, Tools

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def frames(body: str) -> list[Any]:
    """Every ``data:`` frame, validated as an AG-UI event of the package."""
    out = []
    for chunk in body.split("\n\n"):
        data = [line[6:] for line in chunk.splitlines() if line.startswith("data: ")]
        if data:
            out.append(EVENTS.validate_json("\n".join(data)))
    return out


def run_input(thread: str, run: str, text: str | None = None, **extra: Any) -> dict[str, Any]:
    messages = [{"id": "u-" + run, "role": "user", "content": text}] if text else []
    raw = {"threadId": thread, "runId": run, "messages": messages, "tools": [], "context": []}
    raw.update(extra)
    RunAgentInput.model_validate(raw)  # what a real AG-UI client sends
    return raw


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Tools]]:
    tools = Tools()
    agent = make_agent(tmp_path, Gate(), tools)
    async with (
        serving(gateway_app(Gateway(agent), ag_ui=True)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as http,
    ):
        yield http, tools
    await agent.close()


def types(events: list[Any]) -> list[str]:
    return [e.type.value for e in events]


async def test_a_turn_with_text_a_tool_call_and_an_approval(
    client: tuple[httpx.AsyncClient, Tools],
) -> None:
    http, tools = client
    r = await http.post("/v1/ag-ui", json=run_input("t1", "r1", "deploy prod"), headers=ALICE)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    first = frames(r.text)
    kinds = types(first)
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert first[0].thread_id == "t1" and first[0].run_id == "r1"
    assert kinds.index("TEXT_MESSAGE_START") < kinds.index("TEXT_MESSAGE_CONTENT")
    assert kinds.index("TEXT_MESSAGE_END") < kinds.index("TOOL_CALL_START")
    assert (
        kinds.index("TOOL_CALL_START")
        < kinds.index("TOOL_CALL_ARGS")
        < kinds.index("TOOL_CALL_END")
    )
    text = "".join(e.delta for e in first if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text == "Deploying now."
    start = next(e for e in first if e.type == EventType.TOOL_CALL_START)
    assert start.tool_call_name == "deploy"
    args = "".join(e.delta for e in first if e.type == EventType.TOOL_CALL_ARGS)
    assert args == '{"target": "prod"}'
    # the run ends waiting for the approval: an interrupt naming the tool call
    outcome = first[-1].outcome
    assert outcome is not None and outcome.type == "interrupt"
    [interrupt] = outcome.interrupts
    assert interrupt.tool_call_id == start.tool_call_id and interrupt.reason == "tool_approval"
    assert tools.deployed == []
    assert kinds.count("STEP_STARTED") == kinds.count("STEP_FINISHED") == 1

    # another user cannot answer it (their thread of the same name is their own session)
    resume = {"interruptId": interrupt.id, "status": "resolved", "payload": {"approved": True}}
    other = await http.post("/v1/ag-ui", json=run_input("t1", "r2", resume=[resume]), headers=BOB)
    assert other.status_code == 409 and tools.deployed == []

    r = await http.post("/v1/ag-ui", json=run_input("t1", "r2", resume=[resume]), headers=ALICE)
    second = frames(r.text)
    kinds = types(second)
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    result = next(e for e in second if e.type == EventType.TOOL_CALL_RESULT)
    assert result.tool_call_id == start.tool_call_id and result.content == "deployed to prod"
    text = "".join(e.delta for e in second if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text == "Finished: deployed to prod"
    assert second[-1].outcome is None or second[-1].outcome.type == "success"
    assert tools.deployed == ["prod"]
    # the same turn as the HTTP API's: its history has it
    history = (await http.get("/v1/sessions/t1/messages", headers=ALICE)).json()["messages"]
    assert history[-1]["content"][0]["text"] == "Finished: deployed to prod"


async def test_same_auth_and_rude_input(client: tuple[httpx.AsyncClient, Tools]) -> None:
    http, _ = client
    assert (await http.post("/v1/ag-ui", json=run_input("t1", "r1", "hi"))).status_code == 401
    bad = {"Authorization": "Bearer wrong-token-000"}
    assert (
        await http.post("/v1/ag-ui", json=run_input("t1", "r1", "hi"), headers=bad)
    ).status_code == 401
    for body in (b"not json", b"{}", b'{"threadId": "../x", "runId": "r", "messages": []}'):
        r = await http.post("/v1/ag-ui", content=body, headers=ALICE)
        assert r.status_code == 422, body
    no_user = run_input("t1", "r1")
    assert (await http.post("/v1/ag-ui", json=no_user, headers=ALICE)).status_code == 422
    # a retried run (same runId) is the same turn, streamed again
    one = await http.post("/v1/ag-ui", json=run_input("t2", "rr", "hello"), headers=ALICE)
    two = await http.post("/v1/ag-ui", json=run_input("t2", "rr", "hello"), headers=ALICE)
    said = [
        "".join(e.delta for e in frames(r.text) if e.type == EventType.TEXT_MESSAGE_CONTENT)
        for r in (one, two)
    ]
    assert said[0] == said[1] == "You said: hello (message 1 here)"
    assert (
        await http.post("/v1/ag-ui", json=run_input("t2", "rr", "other"), headers=ALICE)
    ).status_code == 409
