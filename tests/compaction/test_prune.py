"""Pruning old tool output (BEHAVIOUR.md section 3, step 1)."""

from __future__ import annotations

import pytest

from harnessed import Msg, PruneConfig, tool
from harnessed.compaction import OFFLOAD_KEY, PRUNED_KEY, prune_tool_output
from harnessed.models import ScriptedModel, ScriptedResponse
from harnessed.tokens import default_estimator
from tests.compaction.helpers import conversation, conversation_of, result, seeded, text_of, use
from tests.support.fixtures import CTX, call

WIDE = 1_000_000  # a window large enough that only pruning changes anything
COUNT = default_estimator().count_message


@tool(read_only=True)
def fetch(q: str = "", size: int = 20_000) -> str:
    """Fetch a document.

    Args:
        q: What to fetch.
        size: How many characters.
    """
    return text_of(size, q or "doc")


def tool_texts(messages: list[Msg]) -> list[str]:
    return [m.text for m in messages if m.role == "tool"]


def newest_within(history: list[Msg], protect: int) -> int:
    """How many of the newest tool results are protected: whole results are kept until they
    reach ``protect`` tokens, the one crossing the line included."""
    total = 0
    kept = 0
    for message in reversed(history):
        if message.role != "tool":
            continue
        if total >= protect:
            break
        total += COUNT(message)
        kept += 1
    return kept


async def test_pruning_keeps_the_newest_40000_tokens_of_tool_output() -> None:
    steps = [ScriptedResponse(tool_calls=[call("fetch", f"c{i}", q=f"s{i}")]) for i in range(16)]
    model = ScriptedModel([*steps, "done"], context_window=WIDE)
    agent, _ = await seeded(
        [],
        model,
        tools=[fetch],
        compaction=None,
        max_iters=30,
        prune=PruneConfig(cache_aware=False),
    )
    await agent.call("read all sixteen documents", CTX)

    logged = await agent.session_messages(CTX)
    original = [m for m in logged if m.role == "tool"]
    by_id = {m.id: m for m in original}
    saw_pruning = False
    for request in model.requests:
        sent = [m for m in conversation_of(request) if m.role == "tool"]
        protected = newest_within([by_id[m.id] for m in sent], 40_000)
        # the newest 40,000 tokens of output are always intact
        assert all(m.text == by_id[m.id].text for m in sent[len(sent) - protected :])
        older = sent[: len(sent) - protected]
        waiting = [m for m in older if PRUNED_KEY not in m.metadata]
        # older output is either pruned or waits for a batch worth the minimum (20,000 tokens)
        assert sum(COUNT(m) for m in waiting) < 20_000
        for m in older:
            if PRUNED_KEY in m.metadata:
                saw_pruning = True
                before = by_id[m.id].text
                assert len(m.text) < 2_300 and "chars pruned" in m.text
                assert m.text.startswith(before[:1_000]) and m.text.endswith(before[-1_000:])
    assert saw_pruning
    assert all(len(m.text) == 20_000 for m in original)  # the log keeps the full output
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    builds = await agent.session_log(CTX, types=["context/build"])
    prunes = ["tool_output_prune" in b.payload["context_manifest"]["transforms"] for b in builds]
    assert prunes.count(True) >= 1 and not prunes[0]


async def test_old_output_is_pruned_only_in_batches_of_the_minimum() -> None:
    one = COUNT(result("c0", text_of(20_000, "step0")))  # every result here costs the same
    # the second newest result crosses the protected line and is kept whole with the newest
    config = PruneConfig(
        protect_tokens=2 * one - 10, minimum_tokens=4 * one - 10, cache_aware=False
    )
    history = conversation(4, output_chars=20_000)
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[call("fetch", "c4", q="step4")]),
            ScriptedResponse(tool_calls=[call("fetch", "c5", q="step5")]),
            "done",
        ],
        context_window=WIDE,
    )
    agent, _ = await seeded(history, model, tools=[fetch], compaction=None, prune=config)
    await agent.call("continue", CTX)
    pruned_counts = [
        sum("chars pruned" in t for t in tool_texts(conversation_of(r))) for r in model.requests
    ]
    # 2 results are protected; 2 and then 3 older ones stay below the minimum; at 4 they reach
    # it and are pruned together.
    assert pruned_counts == [0, 0, 4]


async def test_excluded_tools_and_short_results_are_never_pruned() -> None:
    history: list[Msg] = [Msg.user("read things")]
    for i in range(12):
        name = "read_file" if i % 2 == 0 else "fetch"
        history += [use(f"c{i}", name), result(f"c{i}", text_of(20_000, f"s{i}"), name)]
    history += [use("tiny", "fetch"), result("tiny", "short output", "fetch")]
    model = ScriptedModel(["done"], context_window=WIDE)
    agent, _ = await seeded(
        history,
        model,
        compaction=None,
        prune=PruneConfig(protect_tokens=0, minimum_tokens=0, cache_aware=False),
    )
    await agent.call("and?", CTX)
    sent = conversation_of(model.requests[0])
    by_id = {m.tool_results[0].tool_use_id: m.text for m in sent if m.role == "tool"}
    for i in range(12):
        original = text_of(20_000, f"s{i}")
        if i % 2 == 0:
            assert by_id[f"c{i}"] == original  # read_file output is what the agent looked up
        else:
            assert "chars pruned" in by_id[f"c{i}"]
    assert by_id["tiny"] == "short output"


async def test_pruning_off_and_the_default_config() -> None:
    history = conversation(16, output_chars=20_000)
    model = ScriptedModel(["done"], context_window=WIDE)
    agent, _ = await seeded(history, model, compaction=None, prune=None)
    await agent.call("and?", CTX)
    assert tool_texts(conversation_of(model.requests[0])) == tool_texts(history)
    assert PruneConfig() == PruneConfig(40_000, 20_000, 2_000)


def test_an_evicted_result_shrinks_to_the_pointer_to_its_file() -> None:
    notice = "[saved to large_tool_results/a/u/c1-0123456789abcdef] " + "preview " * 600
    evicted = result("c1", notice).replace(
        metadata={
            OFFLOAD_KEY: {"c1": {"path": "large_tool_results/a/u/c1-0123456789abcdef", "chars": 9}}
        }
    )
    history = [Msg.user("go"), use("c1"), evicted]
    pruned = prune_tool_output(history, PruneConfig(protect_tokens=0, minimum_tokens=0), COUNT)
    assert pruned.results == 1
    text = pruned.history[2].text
    assert "large_tool_results/a/u/c1-0123456789abcdef" in text and "read_file" in text
    assert "preview" not in text and len(text) < 300
    assert pruned.history[2].metadata[PRUNED_KEY] == {"c1": 9}
    assert pruned.history[2].metadata[OFFLOAD_KEY] == evicted.metadata[OFFLOAD_KEY]
    # pruning again changes nothing
    assert prune_tool_output(pruned.history, PruneConfig(0, 0), COUNT).results == 0


def test_the_result_crossing_the_protected_line_stays_whole() -> None:
    history: list[Msg] = [Msg.user("go")]
    for i in range(3):
        history += [use(f"c{i}"), result(f"c{i}", text_of(9_000, f"s{i}"))]
    one = COUNT(history[-1])  # every result here costs the same

    def pruned_ids(protect: int) -> list[str]:
        config = PruneConfig(protect_tokens=protect, minimum_tokens=0)
        out = prune_tool_output(history, config, COUNT).history
        return [m.tool_results[0].tool_use_id for m in out if "chars pruned" in m.text]

    # the newest result stays under the line; the second crosses it and is kept whole too
    assert pruned_ids(one + 1) == ["c0"]
    # the newest result alone reaches the line exactly: everything older is prunable
    assert pruned_ids(one) == ["c0", "c1"]
    assert pruned_ids(2 * one + 1) == []  # the third crosses: all three are protected


def test_parallel_results_of_one_step_are_pruned_individually() -> None:
    step = Msg.assistant([use("a").tool_uses[0], use("b").tool_uses[0]])
    history = [
        Msg.user("go"),
        step,
        result("a", text_of(9_000, "a")),
        result("b", "short"),
        use("c"),
        result("c", text_of(9_000, "c")),
    ]
    config = PruneConfig(protect_tokens=2_000, minimum_tokens=0)
    pruned = prune_tool_output(history, config, COUNT)
    # the newest result (~2.9k tokens) crosses the line and stays protected whole; of the older
    # step only the long one shrinks
    assert pruned.results == 1
    assert "chars pruned" in pruned.history[2].text
    assert pruned.history[3] is history[3] and pruned.history[5] is history[5]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"protect_tokens": -1}, "protect_tokens"),
        ({"minimum_tokens": 1.5}, "minimum_tokens"),
        ({"max_output_chars": 5}, "max_output_chars"),
        ({"excluded_tools": [""]}, "excluded_tools"),
    ],
)
def test_config_validation_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        PruneConfig(**kwargs)  # type: ignore[arg-type]
