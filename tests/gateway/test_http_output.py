"""A typed agent over HTTP: the turn's agent_end carries the answer as JSON, and the answer's
JSON schema is a component of the OpenAPI document."""

from __future__ import annotations

from pathlib import Path

import httpx
import pydantic

from harnessed import HarnessAgent
from harnessed.models import ModelRequest, ScriptedModel
from tests.gateway.helpers import ALICE, make_app, sse


class Part(pydantic.BaseModel):
    sku: str
    count: int


class Order(pydantic.BaseModel):
    customer: str
    parts: list[Part]


def answer(request: ModelRequest) -> str:
    last = request.messages[-1]
    if last.metadata.get("harness") == "output_retry":
        return '{"customer": "ACME", "parts": [{"sku": "b-2", "count": 3}]}'
    return '{"customer": "ACME", "parts": [{"sku": "b-2", "count": "three"}]}'


async def test_the_typed_answer_is_json_on_agent_end_and_its_schema_is_in_openapi(
    tmp_path: Path,
) -> None:
    agent = HarnessAgent(
        "orders",
        ScriptedModel(responder=answer, structured_output="native"),
        workspace=tmp_path,
        shell=False,
        memory=False,
        output_type=Order,
    )
    transport = httpx.ASGITransport(app=make_app(agent))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        sid = (await client.post("/v1/sessions", json={}, headers=ALICE)).json()["session_id"]
        r = await client.post(
            f"/v1/sessions/{sid}/messages", json={"text": "order 3 b-2"}, headers=ALICE
        )
        frames = sse(r.text)
        end = frames[-1][1]
        assert frames[-1][0] == "agent_end" and end["status"] == "completed"
        assert end["output"] == {"customer": "ACME", "parts": [{"sku": "b-2", "count": 3}]}
        assert end["turn_id"]
        retries = [d for k, d in frames if k == "custom" and d["name"] == "output_retry"]
        assert len(retries) == 1 and "count" in retries[0]["data"]["errors"]
        document = (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    order = schemas["ordersOutput"]
    assert order["properties"]["parts"]["items"] == {"$ref": "#/components/schemas/Part"}
    assert schemas["Part"]["required"] == ["sku", "count"]
