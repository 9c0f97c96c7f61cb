"""The answer's schema counts toward the input: the ``final_result`` tool with the other tool
schemas, a native output schema as its own part of the manifest; with a small window the
request is fitted with it (optional material dropped, or a clear error before sending)."""

from __future__ import annotations

import json

import pydantic
import pytest

from harnessed import (
    ContextBlock,
    ContextBudgetExceededError,
    ContextPolicy,
    ContextRequest,
    HarnessAgent,
)
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.output import FINAL_TOOL
from tests.support.fixtures import CTX


class Report(pydantic.BaseModel):
    """An incident report with many documented fields (a schema that weighs a lot)."""

    title: str = pydantic.Field(description="A one-line summary of the incident for the index.")
    severity: int = pydantic.Field(description="1 (cosmetic) to 5 (outage of every region).")
    services: list[str] = pydantic.Field(description="Every service the incident touched.")
    timeline: list[str] = pydantic.Field(description="What happened, in order, with times.")
    cause: str = pydantic.Field(description="The root cause as the post-mortem states it.")
    actions: list[str] = pydantic.Field(description="Follow-up actions with their owners.")
    customers: int = pydantic.Field(description="How many customers saw errors or delays.")
    region: str = pydantic.Field(description="The region where the incident began first.")


ANSWER = {
    "title": "t",
    "severity": 2,
    "services": [],
    "timeline": [],
    "cause": "c",
    "actions": [],
    "customers": 0,
    "region": "eu",
}


def final() -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(FINAL_TOOL, ANSWER)])


async def docs(request: ContextRequest) -> list[ContextBlock]:
    filler = " ".join(f"Note {i} about the deploy pipeline." for i in range(60))
    return [ContextBlock.reference("notes", "NOTES " + filler)]


def agent_with(model: ScriptedModel, limit: int | None = None, **kw: object) -> HarnessAgent:
    policy = ContextPolicy(max_input_tokens=limit) if limit else ContextPolicy()
    agent = HarnessAgent("budget", model, context_policy=policy, memory=False, **kw)  # type: ignore[arg-type]
    agent.add_context_source("docs", docs)
    return agent


async def test_the_final_answer_tool_counts_with_the_tool_schemas() -> None:
    plain = agent_with(ScriptedModel(["free text"]))
    typed = agent_with(ScriptedModel([final()]), output_type=Report)
    await plain.call("report", CTX)
    assert (await typed.call("report", CTX)).output.region == "eu"
    without, withs = plain.last_manifest(CTX), typed.last_manifest(CTX)
    assert without is not None and withs is not None
    schema_tokens = withs.breakdown["tools"] - without.breakdown["tools"]
    assert schema_tokens > 100
    assert withs.estimated_input_tokens - without.estimated_input_tokens == schema_tokens
    assert "output" not in withs.breakdown


async def test_a_native_output_schema_is_its_own_part_of_the_input() -> None:
    plain = agent_with(ScriptedModel(["free text"], structured_output="native"))
    model = ScriptedModel([ScriptedResponse(json.dumps(ANSWER))], structured_output="native")
    typed = agent_with(model, output_type=Report)
    await plain.call("report", CTX)
    assert (await typed.call("report", CTX)).output.severity == 2
    without, withs = plain.last_manifest(CTX), typed.last_manifest(CTX)
    assert without is not None and withs is not None
    assert withs.breakdown["output"] > 100
    assert withs.breakdown["tools"] == without.breakdown["tools"]
    assert (
        withs.estimated_input_tokens - without.estimated_input_tokens == withs.breakdown["output"]
    )
    assert model.requests[0].output is not None  # and it is sent


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_a_small_window_is_fitted_with_the_schema_in_it(mode: str) -> None:
    """A limit that holds the request with the notes but without the schema: with the schema
    the notes are dropped to make room, so what is sent fits."""
    plain = agent_with(ScriptedModel(["free text"], structured_output=mode))  # type: ignore[arg-type]
    await plain.call("report", CTX)
    roomy = plain.last_manifest(CTX)
    assert roomy is not None and roomy.transforms == ()
    limit = roomy.estimated_input_tokens + 40  # the schema needs far more than 40 tokens

    answer = final() if mode == "tool" else ScriptedResponse(json.dumps(ANSWER))
    model = ScriptedModel([answer], structured_output=mode, overflow_at_tokens=limit)  # type: ignore[arg-type]
    typed = agent_with(model, limit, output_type=Report)
    result = await typed.call("report", CTX)
    assert result.output.title == "t"
    manifest = typed.last_manifest(CTX)
    assert manifest is not None
    assert "omitted_for_budget:source/docs/notes" in manifest.transforms
    assert manifest.estimated_input_tokens <= limit
    assert model.estimate(model.requests[0]) <= limit  # what the model received fits


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_a_schema_larger_than_the_window_fails_before_sending(mode: str) -> None:
    model = ScriptedModel(["never"], structured_output=mode)  # type: ignore[arg-type]
    typed = agent_with(model, 150, output_type=Report)
    with pytest.raises(ContextBudgetExceededError, match="tool schemas"):
        await typed.call("report", CTX)
    assert model.requests == []
