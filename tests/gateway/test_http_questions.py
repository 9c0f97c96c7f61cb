"""A question over HTTP: listed with its kind and details, answered with ``answer`` (a wrong
one is 422), the turn goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from harnessed import HarnessAgent
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.questions import ASK_USER, AskUser
from tests.gateway.helpers import ALICE, make_app, sse


def respond(request: ModelRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(f"Got it: {last.text}")
    return ScriptedResponse(
        tool_calls=[
            ScriptedToolCall(ASK_USER, {"question": "Which color?", "choices": ["red", "blue"]})
        ]
    )


async def test_a_question_is_answered_over_http(tmp_path: Path) -> None:
    agent = HarnessAgent(
        "asker",
        ScriptedModel(responder=respond),
        workspace=tmp_path,
        capabilities=[AskUser()],
        shell=False,
        memory=False,
    )
    transport = httpx.ASGITransport(app=make_app(agent))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        sid = (await client.post("/v1/sessions", json={}, headers=ALICE)).json()["session_id"]
        turn = asyncio.create_task(
            client.post(f"/v1/sessions/{sid}/messages", json={"text": "paint"}, headers=ALICE)
        )
        for _ in range(1000):
            listed = (await client.get(f"/v1/sessions/{sid}/confirmations", headers=ALICE)).json()
            if listed:
                break
            await asyncio.sleep(0.01)
        (question,) = listed
        assert question["kind"] == "question" and question["tool"] == ASK_USER
        assert question["details"]["choices"] == ["red", "blue"]
        url = f"/v1/sessions/{sid}/confirmations/{question['request_id']}"
        wrong = await client.post(url, json={"approved": True, "answer": "green"}, headers=ALICE)
        assert wrong.status_code == 422 and "one of" in wrong.json()["detail"]
        missing = await client.post(url, json={"approved": True}, headers=ALICE)
        assert missing.status_code == 422
        ok = await client.post(url, json={"approved": True, "answer": "blue"}, headers=ALICE)
        assert ok.status_code == 204
        frames = sse((await asyncio.wait_for(turn, 30)).text)
    assert frames[-1][1]["status"] == "completed"
    assert frames[-1][1]["reply"]["content"][0]["text"] == "Got it: The user answered: blue"
    asks = [d for k, d in frames if k == "confirmation_request"]
    assert asks[0]["details"]["question"] == "Which color?"


async def test_a_sub_agents_request_is_listed_and_answered_on_another_server(
    tmp_path: Path,
) -> None:
    """Two servers share the stores: the turn runs on the first, its sub-agent asks, and the
    second lists the request (with its source) and answers it; the sub-agent goes on."""
    from harnessed.subagents import Subagents, SubagentSpec
    from tests.subagents.helpers import calls, last_user_text, spawn, tool_results

    def child(request: ModelRequest) -> str | ScriptedResponse:
        results = tool_results(request)
        if results:
            return f"tool said: {results[-1]}"
        args = {"question": "Which region?", "choices": ["eu", "us"]}
        return ScriptedResponse(tool_calls=[ScriptedToolCall(ASK_USER, args)])

    def lead(request: ModelRequest) -> str | ScriptedResponse:
        if tool_results(request):
            return "The worker is done."
        return calls(spawn("worker", last_user_text(request)))

    spec = SubagentSpec("worker", "Works.", model=ScriptedModel(responder=child, name="child"))
    running = HarnessAgent(
        "lead",
        ScriptedModel(responder=lead),
        workspace=tmp_path,
        capabilities=[Subagents([spec]), AskUser()],
        shell=False,
        memory=False,
    )
    other = HarnessAgent("lead", ScriptedModel(), workspace=tmp_path, shell=False, memory=False)
    first = httpx.ASGITransport(app=make_app(running))
    second = httpx.ASGITransport(app=make_app(other))
    async with (
        httpx.AsyncClient(transport=first, base_url="http://a") as a,
        httpx.AsyncClient(transport=second, base_url="http://b") as b,
    ):
        sid = (await a.post("/v1/sessions", json={}, headers=ALICE)).json()["session_id"]
        turn = asyncio.create_task(
            a.post(f"/v1/sessions/{sid}/messages", json={"text": "pick a region"}, headers=ALICE)
        )
        for _ in range(3000):
            listed = (await b.get(f"/v1/sessions/{sid}/confirmations", headers=ALICE)).json()
            if listed:
                break
            await asyncio.sleep(0.01)
        (question,) = listed
        assert question["kind"] == "question" and question["details"]["source"] == "worker:1"
        url = f"/v1/sessions/{sid}/confirmations/{question['request_id']}"
        wrong = await b.post(url, json={"approved": True, "answer": "mars"}, headers=ALICE)
        assert wrong.status_code == 422
        ok = await b.post(url, json={"approved": True, "answer": "us"}, headers=ALICE)
        assert ok.status_code == 204
        frames = sse((await asyncio.wait_for(turn, 60)).text)
        assert (await b.get(f"/v1/sessions/{sid}/confirmations", headers=ALICE)).json() == []
    assert frames[-1][1]["status"] == "completed"
    asks = [d for k, d in frames if k == "confirmation_request"]
    assert [a["source"] for a in asks] == ["worker:1"]
    results = [d["result"]["content"] for k, d in frames if k == "tool_result" and not d["source"]]
    assert "tool said: The user answered: us" in results[-1]
    await running.close()
    await other.close()
