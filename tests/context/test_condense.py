"""Per-call instructions (``Capability.call_instructions``) and condensable materials in the
compiler's fitting step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from harnessed import (
    CallContext,
    Capability,
    ContextBudgetExceededError,
    ContextPolicy,
    HarnessAgent,
    RuntimeContext,
)
from harnessed.context import Material, PrepareInfo
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.state import AgentState
from harnessed.tools import Tool, tool
from tests.support.fixtures import CTX


@tool(read_only=True)
def echo(text: str) -> str:
    """Say it back."""
    return text


class Glossary(Capability):
    """An instruction of terms whose explanations can go before the terms."""

    name = "glossary"

    def __init__(self, terms: int, *, required: bool = False) -> None:
        self.terms = [f"term{i}" for i in range(terms)]
        self.required = required
        self.loads = 0

    def material(self, explained: int) -> Material:
        lines = [
            f"{t}: " + "a long explanation of this term " * 6 if i < explained else t
            for i, t in enumerate(self.terms)
        ]

        def condense(excess: int, count: Callable[[str], int]) -> Material | None:
            return self.material(explained // 2) if explained else None

        return Material(
            "instruction/glossary",
            "glossary",
            "app",
            "glossary",
            "system",
            "\n".join(lines),
            required=self.required,
            condense=condense if explained else None,
            omits=tuple(f"glossary/{t}" for t in self.terms[explained:]),
        )

    async def call_instructions(self, call: CallContext) -> Material:
        self.loads += 1
        return self.material(len(self.terms))


def agent_with(
    glossary: Glossary, limit: int, model: ScriptedModel, tools: Sequence[Tool] = ()
) -> HarnessAgent:
    return HarnessAgent(
        "a",
        model,
        context_policy=ContextPolicy(max_input_tokens=limit),
        memory=False,
        capabilities=[glossary],
        tools=tools,
    )


async def test_a_fitting_instruction_is_kept_whole_and_loaded_once_per_call() -> None:
    glossary = Glossary(4)
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("echo", {"text": "x"})]), "ok", "ok"]
    )
    agent = agent_with(glossary, 50_000, model, tools=[echo])
    await agent.call("hi", CTX)
    assert len(model.requests) == 2
    for request in model.requests:  # the same system message at every step of the call
        assert "term3: a long explanation" in request.messages[0].text
    assert model.requests[0].messages[0] == model.requests[1].messages[0]
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.transforms == ()
    assert any(i.id == "instruction/glossary" for i in manifest.items)
    assert glossary.loads == 1
    await agent.call("again", CTX)  # asked again for the next call
    assert glossary.loads == 2


async def test_details_go_first_and_each_is_recorded() -> None:
    glossary = Glossary(40)
    model = ScriptedModel(["ok"])
    agent = agent_with(glossary, 900, model)
    await agent.call("hi", CTX)
    system = model.requests[0].messages[0].text
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert "term39" in system and "term39: a long" not in system
    omitted = [t for t in manifest.transforms if t.startswith("omitted_for_budget:glossary/")]
    assert omitted and "omitted_for_budget:glossary/term39" in omitted
    assert "omitted_for_budget:instruction/glossary" not in manifest.transforms
    assert manifest.estimated_input_tokens <= manifest.input_limit


async def test_an_optional_instruction_goes_whole_when_its_core_does_not_fit() -> None:
    glossary = Glossary(400)
    model = ScriptedModel(["ok"])
    agent = agent_with(glossary, 400, model)
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert "omitted_for_budget:instruction/glossary" in manifest.transforms
    assert "term0" not in model.requests[0].messages[0].text


async def test_a_required_instruction_stays_at_its_smallest_or_the_build_fails() -> None:
    glossary = Glossary(400, required=True)
    agent = agent_with(glossary, 400, ScriptedModel(["ok"]))
    with pytest.raises(ContextBudgetExceededError):
        await agent.call("hi", CTX)


async def test_a_capability_may_not_place_material_outside_the_system_message() -> None:
    class Wrong(Capability):
        async def call_instructions(self, call: CallContext) -> Material:
            return Material("x/y", "reference", "app", "y", "reference", "text")

    agent = HarnessAgent("a", ScriptedModel(["ok"]), memory=False, capabilities=[Wrong()])
    with pytest.raises(ValueError, match=r"capability 'wrong' .* placed in 'system'"):
        await agent.call("hi", CTX)


async def test_a_text_instruction_depends_on_the_caller_and_a_custom_preparer_gets_it() -> None:
    class Greeting(Capability):
        async def call_instructions(self, call: CallContext) -> str | None:
            return f"The user is {call.user_id}." if call.user_id != "anonymous" else None

    seen: list[tuple[str, ...]] = []

    async def prepare(state: AgentState, request: ModelRequest, info: PrepareInfo) -> ModelRequest:
        seen.append(tuple(m.text for m in info.instructions))
        return request

    model = ScriptedModel(["ok", "ok"])
    agent = HarnessAgent("a", model, memory=False, capabilities=[Greeting()])
    await agent.call("hi", RuntimeContext("ann", "s1"))
    system = model.requests[0].messages[0].text
    assert "The user is ann." in system
    manifest = agent.last_manifest(RuntimeContext("ann", "s1"))
    assert manifest is not None
    item = next(i for i in manifest.items if i.id == "instruction/greeting")
    assert item.required and item.source_type == "capability"

    custom = HarnessAgent(
        "b", ScriptedModel(["ok"]), memory=False, capabilities=[Greeting()], prepare=prepare
    )
    await custom.call("hi", RuntimeContext("bob", "s1"))
    assert seen == [("The user is bob.",)]


async def test_call_instructions_must_be_text_or_material() -> None:
    class Wrong(Capability):
        async def call_instructions(self, call: CallContext) -> Any:
            return ["a list"]

    agent = HarnessAgent("a", ScriptedModel(["ok"]), memory=False, capabilities=[Wrong()])
    with pytest.raises(TypeError, match="call_instructions of capability 'wrong'"):
        await agent.call("hi", CTX)
