"""Per-call instructions and condensable materials in the compiler's fitting step."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harnessed import ContextBudgetExceededError, ContextPolicy, HarnessAgent
from harnessed.context import Material, PrepareInfo
from harnessed.models import ScriptedModel
from tests.support.fixtures import CTX


class Glossary:
    """An instruction of terms whose explanations can go before the terms."""

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

    async def __call__(self, info: PrepareInfo) -> list[Material]:
        self.loads += 1
        return [self.material(len(self.terms))]


def agent_with(glossary: Glossary, limit: int, model: ScriptedModel) -> HarnessAgent:
    agent = HarnessAgent(
        "a", model, context_policy=ContextPolicy(max_input_tokens=limit), memory=False
    )
    agent.compiler.instruction_loaders.append(glossary)
    return agent


async def test_a_fitting_instruction_is_kept_whole_and_loaded_once_per_call() -> None:
    glossary = Glossary(4)
    model = ScriptedModel(["ok"])
    agent = agent_with(glossary, 50_000, model)
    await agent.call("hi", CTX)
    assert "term3: a long explanation" in model.requests[0].messages[0].text
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.transforms == ()
    assert any(i.id == "instruction/glossary" for i in manifest.items)
    assert glossary.loads == 1


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


async def test_a_loader_may_not_place_material_outside_the_system_message() -> None:
    async def wrong(info: PrepareInfo) -> list[Material]:
        return [Material("x/y", "reference", "app", "y", "reference", "text")]

    agent = HarnessAgent("a", ScriptedModel(["ok"]), memory=False)
    agent.compiler.instruction_loaders.append(wrong)
    with pytest.raises(ValueError, match="placed in 'system'"):
        await agent.call("hi", CTX)
