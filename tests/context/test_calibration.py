"""Token counting: the estimator, exactness and calibration by reported usage (BEHAVIOUR.md §1)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from harnessed import (
    ContextBudgetExceededError,
    ContextPolicy,
    HarnessAgent,
    Msg,
    RuntimeContext,
)
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, Usage
from tests.support.fixtures import CTX


def reporting(agent_ref: list[HarnessAgent], factor: float):  # type: ignore[no-untyped-def]
    """A responder reporting ``factor`` times the compiler's own estimate as input usage."""

    def respond(request: ModelRequest) -> ScriptedResponse:
        manifest = agent_ref[0].last_manifest(CTX)
        if manifest is None or manifest.call_id != request.call_id:
            return ScriptedResponse("ok")  # another session: no usage reported
        reported = int(manifest.estimated_input_tokens * factor)
        return ScriptedResponse("ok", usage=Usage(input_tokens=reported, output_tokens=1))

    return respond


async def test_reported_usage_calibrates_the_next_estimate() -> None:
    ref: list[HarnessAgent] = []
    agent = HarnessAgent("cal", ScriptedModel(responder=reporting(ref, 2.0)))
    ref.append(agent)
    # an identical agent whose model reports nothing: its estimates stay raw
    twin = HarnessAgent("cal", ScriptedModel(responder=lambda r: "ok"))

    await agent.call("first question", CTX)
    await twin.call("first question", CTX)
    first = agent.last_manifest(CTX)
    assert first is not None and "calibrated" not in first.counting_method

    await agent.call("second question", CTX)
    await twin.call("second question", CTX)
    calibrated, raw = agent.last_manifest(CTX), twin.last_manifest(CTX)
    assert calibrated is not None and raw is not None
    assert "calibrated" in calibrated.counting_method
    assert "calibrated" not in raw.counting_method
    assert calibrated.estimated_input_tokens == pytest.approx(2 * raw.estimated_input_tokens, abs=2)
    assert calibrated.exact is False and raw.exact is False
    # calibration belongs to the session it was measured in
    await agent.call("elsewhere", RuntimeContext("u", "other"))
    other = agent.last_manifest(RuntimeContext("u", "other"))
    assert other is not None and "calibrated" not in other.counting_method


async def test_calibration_changes_what_fits() -> None:
    ref: list[HarnessAgent] = []
    probe = HarnessAgent("fit", ScriptedModel(["ok"]))
    await probe.call("question one", CTX)
    baseline = probe.last_manifest(CTX)
    assert baseline is not None
    limit = 2 * baseline.estimated_input_tokens  # fits easily by the raw estimate

    model = ScriptedModel(responder=reporting(ref, 3.0))
    agent = HarnessAgent("fit", model, context_policy=ContextPolicy(max_input_tokens=limit))
    ref.append(agent)
    await agent.call("question one", CTX)  # fits; the provider says it was 3x bigger
    with pytest.raises(ContextBudgetExceededError):
        await agent.call("question two", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "budget_exceeded"
    assert manifest.estimated_input_tokens > limit
    assert len(model.requests) == 1


class WordCounter:
    """A toy estimator that claims to be exact."""

    method = "words-exact"
    exact = True

    def count_text(self, text: str) -> int:
        return len(text.split())

    def count_message(self, message: Msg) -> int:
        return 1 + self.count_text(message.text)

    def count_messages(self, messages: Iterable[Msg]) -> int:
        return sum(self.count_message(m) for m in messages)


async def test_an_exact_estimator_is_reported_as_exact() -> None:
    model = ScriptedModel(["ok"])
    agent = HarnessAgent("exact", model, context_policy=ContextPolicy(estimator=WordCounter()))
    await agent.call("one two three", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert (manifest.counting_method, manifest.exact) == ("words-exact", True)
    expected = sum(WordCounter().count_message(m) for m in model.requests[0].messages)
    assert manifest.estimated_input_tokens == expected
