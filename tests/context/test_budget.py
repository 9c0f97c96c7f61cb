"""Input limit and fitting (BEHAVIOUR.md §1 "Input limit" and "Fitting")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from harnessed import (
    ContextBlock,
    ContextBudgetExceededError,
    ContextPolicy,
    ContextRequest,
    HarnessAgent,
    Msg,
    tool,
)
from harnessed.context import HistoryBudget, HistoryOutcome, Material
from harnessed.models import ScriptedModel
from tests.context.helpers import (
    builds,
    collect_failing,
    context_text,
)
from tests.support.fixtures import CTX


def write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def words(label: str, count: int) -> str:
    """Roughly ``count * 2.5`` tokens of prose tagged with ``label``."""
    return " ".join(f"{label} sentence {i} about the project." for i in range(count))


# ------------------------------------------------------------ input limit


@pytest.mark.parametrize(
    ("window", "model_max_out", "agent_max_out", "policy", "expected"),
    [
        (100_000, None, None, ContextPolicy(), 100_000 - 4_096 - 2_000),
        (16_000, None, None, ContextPolicy(), 16_000 - 2_000 - 320),  # W/8 < 4096
        (100_000, None, 8_000, ContextPolicy(), 100_000 - 8_000 - 2_000),
        (100_000, 10_000, None, ContextPolicy(), 100_000 - 10_000 - 2_000),
        (100_000, None, 1_000, ContextPolicy(), 100_000 - 4_096 - 2_000),  # raised, not lowered
        (None, None, None, ContextPolicy(), 64_000),
        (None, None, None, ContextPolicy(max_input_tokens=10_000), 10_000),
        (100_000, None, None, ContextPolicy(max_input_tokens=50_000), 50_000),
        (100_000, None, None, ContextPolicy(max_input_tokens=500_000), 93_904),
        (
            100_000,
            None,
            None,
            ContextPolicy(reserved_output_tokens=1_000, safety_margin_tokens=500),
            98_500,
        ),
        (100_000, None, None, ContextPolicy(reserved_output_tokens=1_000), 97_000),
        (100_000, None, None, ContextPolicy(safety_margin_tokens=100), 95_804),
    ],
    ids=[
        "default",
        "small-window",
        "request-max-output",
        "model-max-output",
        "smaller-max-output",
        "no-window",
        "no-window-capped",
        "capped",
        "cap-above",
        "overrides",
        "reserved-override",
        "margin-override",
    ],
)
async def test_input_limit(
    window: int | None,
    model_max_out: int | None,
    agent_max_out: int | None,
    policy: ContextPolicy,
    expected: int,
) -> None:
    model = ScriptedModel(["ok"], context_window=window, max_output_tokens=model_max_out)
    agent = HarnessAgent("lim", model, max_output_tokens=agent_max_out, context_policy=policy)
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert manifest.input_limit == expected


def test_policy_values_are_validated() -> None:
    for field in ("max_input_tokens", "reserved_output_tokens", "safety_margin_tokens"):
        with pytest.raises(ValueError, match=field):
            ContextPolicy(**{field: -1})
    with pytest.raises(TypeError, match="observer"):
        ContextPolicy(observer="print")  # type: ignore[arg-type]


async def test_tool_schemas_count_toward_the_input() -> None:
    @tool
    def big_tool(query: str, limit: int = 10) -> str:
        """Search the archive. This description is deliberately long so that its schema
        weighs a lot: it explains filters, ranking, pagination, languages, date ranges,
        field boosts, synonyms, stemming, typo tolerance, facets and highlighting, and
        each of those features is described again here in some detail so the schema is
        clearly larger than the conversation itself, which is only two words long.

        Args:
            query: The search query, in any language, with optional field filters.
            limit: The most results to return.
        """
        return query

    plain_model, tool_model = ScriptedModel(["ok"]), ScriptedModel(["ok"])
    plain = HarnessAgent("plain", plain_model)
    with_tool = HarnessAgent("tooled", tool_model, tools=[big_tool])
    await plain.call("hi", CTX)
    await with_tool.call("hi", CTX)
    without, withs = plain.last_manifest(CTX), with_tool.last_manifest(CTX)
    assert without is not None and withs is not None
    assert withs.breakdown["tools"] > 60
    assert (
        withs.estimated_input_tokens - without.estimated_input_tokens == (withs.breakdown["tools"])
    )
    # and the schema alone can push a request over the limit
    limit = without.estimated_input_tokens + 20
    tight = HarnessAgent(
        "tight",
        ScriptedModel(["ok"]),
        tools=[big_tool],
        context_policy=ContextPolicy(max_input_tokens=limit),
    )
    with pytest.raises(ContextBudgetExceededError):
        await tight.call("hi", CTX)


# ---------------------------------------------------------------- fitting


async def test_memory_is_dropped_before_the_users_request_is_touched(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", words("MEMORY", 400))  # ~1,000+ tokens
    write(tmp_path, "knowledge/KNOWLEDGE.md", "KNOWLEDGE-INDEX: small")
    write(tmp_path, "docs/spec.md", "SPEC-TEXT: small and required")
    request_text = "please fix the login bug " + words("USER", 60)
    model = ScriptedModel(["on it"])
    agent = HarnessAgent(
        "fit",
        model,
        workspace=tmp_path,
        file_tools=False,  # budgets here leave no room for tool schemas
        shell=False,
        memory_tools=False,
        subagents=False,
        web=False,
        context_files=["docs/spec.md"],
        max_context_tokens=50_000,
        context_policy=ContextPolicy(max_input_tokens=1_000),
    )
    await agent.call(request_text, CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "passed"
    assert manifest.transforms == ("omitted_for_budget:workspace/MEMORY.md",)
    assert manifest.item("workspace/MEMORY.md") is None
    assert manifest.item("workspace/knowledge") is not None  # dropping stops once it fits
    assert manifest.item("workspace/docs/spec.md") is not None  # required: never dropped
    assert manifest.estimated_input_tokens <= manifest.input_limit
    sent = model.requests[0]
    assert "MEMORY sentence" not in context_text(sent)
    assert "KNOWLEDGE-INDEX" in context_text(sent) and "SPEC-TEXT" in context_text(sent)
    assert next(m.text for m in sent.messages if m.role == "user") == request_text
    stored = await agent.load_state(CTX)
    assert [(m.role, m.text) for m in stored.history] == [
        ("user", request_text),
        ("assistant", "on it"),
    ]


async def test_memory_goes_before_knowledge(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", words("MEMORY", 200))
    write(tmp_path, "knowledge/KNOWLEDGE.md", words("KNOWLEDGE", 200))
    agent = HarnessAgent(
        "order",
        ScriptedModel(["ok"]),
        workspace=tmp_path,
        file_tools=False,  # budgets here leave no room for tool schemas
        shell=False,
        memory_tools=False,
        subagents=False,
        web=False,
        context_policy=ContextPolicy(max_input_tokens=400),
    )
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert manifest.transforms == (
        "omitted_for_budget:workspace/MEMORY.md",
        "omitted_for_budget:workspace/knowledge",
    )


@pytest.mark.parametrize(
    ("selection", "dropped", "kept"),
    [
        (None, "workspace/MEMORY.md", "workspace/knowledge"),
        (lambda items: ["workspace/knowledge"], "workspace/knowledge", "workspace/MEMORY.md"),
    ],
    ids=["default-order", "selection-policy"],
)
async def test_a_selection_policy_can_change_the_drop_order(
    tmp_path: Path, selection: object, dropped: str, kept: str
) -> None:
    write(tmp_path, "MEMORY.md", words("MEMORY", 200))
    write(tmp_path, "knowledge/KNOWLEDGE.md", words("KNOWLEDGE", 200))
    seen: list[list[str]] = []

    def recording(items: Sequence[Material]) -> Sequence[str]:
        seen.append([m.id for m in items])
        return selection(items) if callable(selection) else []

    probe = HarnessAgent(
        "probe",
        ScriptedModel(["ok"]),
        workspace=tmp_path,
        file_tools=False,
        shell=False,
        memory_tools=False,
        subagents=False,
        web=False,
    )
    await probe.call("hi", CTX)
    full = probe.last_manifest(CTX)
    assert full is not None
    one_item = max(i.tokens for i in full.items if i.placement == "reference")
    limit = full.estimated_input_tokens - one_item // 2  # room for all but one of them
    agent = HarnessAgent(
        "order",
        ScriptedModel(["ok"]),
        workspace=tmp_path,
        file_tools=False,  # budgets here leave no room for tool schemas
        shell=False,
        memory_tools=False,
        subagents=False,
        web=False,
        context_policy=ContextPolicy(max_input_tokens=limit, selection_policy=recording),
    )
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert manifest.transforms == (f"omitted_for_budget:{dropped}",)
    assert manifest.item(kept) is not None
    # the policy is only offered optional material
    assert sorted(seen[0]) == ["workspace/MEMORY.md", "workspace/knowledge"]


@pytest.mark.parametrize("named", ["workspace/docs/spec.md", "instruction/sys_prompt"])
async def test_a_selection_policy_naming_a_required_or_system_item_raises(
    tmp_path: Path, named: str
) -> None:
    write(tmp_path, "MEMORY.md", "MEMORY-FACT")
    write(tmp_path, "docs/spec.md", "SPEC-TEXT")
    model = ScriptedModel(["never"])
    agent = HarnessAgent(
        "sel",
        model,
        sys_prompt="Be helpful.",
        workspace=tmp_path,
        file_tools=False,  # budgets here leave no room for tool schemas
        shell=False,
        memory_tools=False,
        subagents=False,
        web=False,
        context_files=["docs/spec.md"],
        context_policy=ContextPolicy(selection_policy=lambda items: [named]),
    )
    events, error = await collect_failing(agent, "hi", CTX)
    assert isinstance(error, ValueError)
    assert named in str(error)
    assert model.requests == []
    [build] = builds(events)
    assert build["status"] == "failed" and build["error_type"] == "ValueError"


async def test_drop_order_is_memory_then_knowledge_then_lowest_priority_then_id(
    tmp_path: Path,
) -> None:
    write(tmp_path, "MEMORY.md", words("MEMORY", 60))
    write(tmp_path, "knowledge/KNOWLEDGE.md", words("KNOWLEDGE", 60))

    async def docs(request: ContextRequest) -> list[ContextBlock]:
        return [
            ContextBlock.reference("b", words("B", 60)),
            ContextBlock.reference("a", words("A", 60)),
            ContextBlock.reference("z", words("Z", 60)).with_priority(-1),
            ContextBlock.runtime("m", words("M", 60)).with_priority(5),
        ]

    agent = HarnessAgent(
        "drops",
        ScriptedModel(["ok"]),
        workspace=tmp_path,
        file_tools=False,  # budgets here leave no room for tool schemas
        shell=False,
        memory_tools=False,
        subagents=False,
        web=False,
        context_policy=ContextPolicy(max_input_tokens=400),
    )
    agent.add_context_source("docs", docs)
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "passed"
    assert manifest.transforms == (
        "omitted_for_budget:workspace/MEMORY.md",
        "omitted_for_budget:workspace/knowledge",
        "omitted_for_budget:source/docs/z",
        "omitted_for_budget:source/docs/a",
        "omitted_for_budget:source/docs/b",
        "omitted_for_budget:source/docs/m",
    )


async def test_required_source_blocks_are_never_dropped(tmp_path: Path) -> None:
    async def docs(request: ContextRequest) -> list[ContextBlock]:
        return [
            ContextBlock.reference("must", "MUST-KEEP " + words("R", 5)).required(),
            ContextBlock.reference("may", "MAY-DROP " + words("O", 60)),
        ]

    model = ScriptedModel(["ok"])
    agent = HarnessAgent("req", model, context_policy=ContextPolicy(max_input_tokens=420))
    agent.add_context_source("docs", docs)
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert manifest.transforms == ("omitted_for_budget:source/docs/may",)
    assert "MUST-KEEP" in context_text(model.requests[0])


async def test_a_tiny_window_with_a_large_instruction_raises_naming_estimate_and_limit() -> None:
    model = ScriptedModel(["never"], context_window=100)
    agent = HarnessAgent("tiny", model, instructions={"rules": "RULES: " + words("Rule", 20)})
    events, error = await collect_failing(agent, "hi", CTX)
    assert isinstance(error, ContextBudgetExceededError)
    assert error.limit == 100 - 12 - 2
    assert error.estimate > error.limit
    assert str(error.estimate) in str(error) and str(error.limit) in str(error)
    assert model.requests == []
    [build] = builds(events)
    assert build["status"] == "failed"
    assert build["error_type"] == "ContextBudgetExceededError"
    manifest = build["context_manifest"]
    assert manifest["validation"] == "budget_exceeded"
    assert manifest["input_limit"] == error.limit
    assert manifest["estimated_input_tokens"] > manifest["input_limit"]
    # only the user's input is kept (BEHAVIOUR.md §8)
    assert [m.text for m in (await agent.load_state(CTX)).history] == ["hi"]


async def test_required_material_that_cannot_fit_raises_after_optional_is_dropped(
    tmp_path: Path,
) -> None:
    write(tmp_path, "MEMORY.md", "MEMORY-FACT")
    write(tmp_path, "docs/huge.md", words("HUGE", 400))
    agent = HarnessAgent(
        "huge",
        ScriptedModel(["never"]),
        workspace=tmp_path,
        file_tools=False,  # budgets here leave no room for tool schemas
        shell=False,
        memory_tools=False,
        subagents=False,
        web=False,
        context_files=["docs/huge.md"],
        context_policy=ContextPolicy(max_input_tokens=800),
    )
    with pytest.raises(ContextBudgetExceededError, match="800"):
        await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "budget_exceeded"
    assert "omitted_for_budget:workspace/MEMORY.md" in manifest.transforms


async def test_a_history_that_does_not_fit_raises_and_stores_nothing() -> None:
    model = ScriptedModel(["never"])
    agent = HarnessAgent("long", model, context_policy=ContextPolicy(max_input_tokens=500))
    with pytest.raises(ContextBudgetExceededError):
        await agent.call(words("LONG", 400), CTX)
    assert model.requests == []
    # only the user's input is kept (BEHAVIOUR.md §8)
    assert [m.text for m in (await agent.load_state(CTX)).history] == [words("LONG", 400)]
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "budget_exceeded"


async def test_compaction_gets_the_budget_left_after_system_state_references_and_tools(
    tmp_path: Path,
) -> None:
    write(tmp_path, "MEMORY.md", "MEMORY-FACT: likes tea")
    budgets: list[int] = []

    async def compactor(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        budgets.append(budget.tokens)
        return HistoryOutcome(history)

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    agent = HarnessAgent(
        "hb",
        ScriptedModel(["ok"], context_window=50_000),
        workspace=tmp_path,
        file_tools=False,  # budgets here leave no room for tool schemas
        shell=False,
        memory_tools=False,
        subagents=False,
        web=False,
        tools=[lookup],
        sys_prompt="You help.",
    )
    agent.compiler.compactor = compactor
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    fixed = sum(manifest.breakdown[k] for k in ("system", "state", "references", "tools"))
    assert manifest.breakdown["tools"] > 0 and manifest.breakdown["references"] > 0
    assert budgets == [manifest.input_limit - fixed]
