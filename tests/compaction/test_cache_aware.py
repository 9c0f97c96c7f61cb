"""Cache-aware pruning (BEHAVIOUR.md section 16): already-sent messages change only where the
provider's cached prefix changes anyway."""

from __future__ import annotations

import itertools

from harnessed import CompactionConfig, PruneConfig
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse
from tests.compaction.helpers import (
    conversation,
    conversation_of,
    reasoning,
    seeded,
    summaries,
    text_of,
)
from tests.compaction.test_prune import WIDE, fetch
from tests.compaction.test_summary import SUMMARY_1
from tests.support.fixtures import CTX, call, collect
from tests.todos.test_receipts import todos


def steps(n: int) -> list[ScriptedResponse | str]:
    return [
        *(ScriptedResponse(tool_calls=[call("fetch", f"c{i}", q=f"s{i}")]) for i in range(n)),
        "done",
    ]


async def test_by_default_old_output_is_not_pruned_step_by_step() -> None:
    pruned_requests: dict[bool, int] = {}
    for cache_aware in (True, False):
        model = ScriptedModel(steps(16), context_window=WIDE)
        agent, _ = await seeded(
            [],
            model,
            tools=[fetch],
            compaction=None,
            max_iters=30,
            prune=PruneConfig(cache_aware=cache_aware),
        )
        await agent.call("read all sixteen documents", CTX)
        pruned_requests[cache_aware] = sum(
            any("chars pruned" in m.text for m in conversation_of(r)) for r in reasoning(model)
        )
        # every request repeats the one before it whole, or the prefix broke
        manifests = [
            b.payload["context_manifest"]
            for b in await agent.session_log(CTX, types=["context/build"])
        ]
        shared = [m["cached_prefix_tokens"] for m in manifests]
        grows = all(b >= a for a, b in itertools.pairwise(shared))
        assert grows is cache_aware
    assert pruned_requests[True] == 0
    assert pruned_requests[False] > 0


async def test_the_part_a_summary_replaces_is_pruned_before_it_is_summarized() -> None:
    history = conversation(6, output_chars=6_000)
    model = ScriptedModel([SUMMARY_1, "ok"])
    agent, _ = await seeded(
        history, model, compaction=CompactionConfig(trigger_tokens=6_000, keep_tokens=3_000)
    )
    await agent.call("next", CTX)
    [summary] = summaries(model)
    transcript = "\n".join(m.text for m in summary.messages)
    assert "chars pruned" in transcript
    assert text_of(6_000, "step0") not in transcript  # only its preview went to the summary
    sent = conversation_of(reasoning(model)[0])
    assert "summary" in (sent[0].name or "")
    # the kept tail is whole, and the log keeps everything whole
    logged = [m for m in await agent.session_messages(CTX) if m.role == "tool"]
    assert all(len(m.text) == 6_000 for m in logged)
    tail = [m for m in sent if m.role == "tool"]
    assert tail and all("chars pruned" not in m.text for m in tail)


async def test_the_manifest_says_how_much_of_the_request_the_previous_one_shared() -> None:
    model = ScriptedModel(steps(3), context_window=WIDE)
    agent, _ = await seeded([], model, tools=[fetch], compaction=None, max_iters=10)
    await agent.call("read three documents", CTX)
    builds = await agent.session_log(CTX, types=["context/build"])
    manifests = [b.payload["context_manifest"] for b in builds]
    shared = [m["cached_prefix_tokens"] for m in manifests]
    assert shared[0] == 0  # nothing before the first request
    assert all(
        0 < s < m["estimated_input_tokens"] for s, m in zip(shared[1:], manifests[1:], strict=True)
    )
    assert shared == sorted(shared)  # the history only grew: each repeats the last whole
    last = agent.last_manifest(CTX)
    assert last is not None and last.cached_prefix_tokens == shared[-1]


def fetching(summary: str = SUMMARY_1) -> ScriptedModel:
    """A model that fetches 6,000-character documents until told to stop, and summarizes."""
    taken = 0

    def respond(request: ModelRequest) -> str | ScriptedResponse:
        nonlocal taken
        if request.purpose == "summary":
            return summary
        taken += 1
        if taken > 8:
            return "done"
        return ScriptedResponse(tool_calls=[call("fetch", f"c{taken}", q=f"d{taken}", size=6_000)])

    return ScriptedModel(responder=respond, context_window=WIDE)


TIGHT = CompactionConfig(trigger_tokens=8_000, keep_tokens=3_000)


async def test_a_summary_repeats_the_prefix_of_the_last_request_and_ends_with_the_instruction() -> (
    None
):
    model = fetching()
    agent, _ = await seeded([], model, tools=[fetch], compaction=TIGHT, max_iters=20)
    events = await collect(agent, "read the documents", CTX)
    [first, *_] = summaries(model)
    assert first.cache_points == (len(first.messages) - 1,)
    index = model.requests.index(first)
    before = model.requests[index - 1]
    assert before.purpose == "reasoning"
    stable = before.messages[: before.cache_points[-1]]
    # the very tools, system message and history the provider cached, then one instruction
    assert first.tools == before.tools and first.cache_key == before.cache_key
    assert first.messages[:-1] == stable
    assert first.messages[-1].role == "user"
    assert "handover note" in first.messages[-1].text
    ends = [e.data for e in events if getattr(e, "name", None) == "compaction_end"]
    assert ends and all(e["status"] == "completed" and e["in_context"] for e in ends)
    # the request after the summary carries it, and the manifest of the summary is recorded
    after = reasoning(model)[reasoning(model).index(before) + 1]
    assert "summary" in (conversation_of(after)[0].name or "")
    builds = await agent.session_log(CTX, types=["context/build"])
    assert any(b.payload["purpose"] == "summary" for b in builds)


async def test_in_context_false_or_another_summary_model_summarizes_a_transcript() -> None:
    for config in (
        CompactionConfig(trigger_tokens=8_000, keep_tokens=3_000, in_context=False),
        CompactionConfig(
            trigger_tokens=8_000, keep_tokens=3_000, model=ScriptedModel([SUMMARY_1] * 10)
        ),
    ):
        model = fetching()
        agent, _ = await seeded([], model, tools=[fetch], compaction=config, max_iters=20)
        events = await collect(agent, "read the documents", CTX)
        ends = [e.data for e in events if getattr(e, "name", None) == "compaction_end"]
        assert ends and all(e["status"] == "completed" and not e["in_context"] for e in ends)
        for request in summaries(model):
            assert not request.cache_points and "<transcript>" in request.messages[-1].text


async def test_an_empty_in_context_answer_falls_back_to_a_transcript() -> None:
    answers = iter(["", SUMMARY_1] * 20)
    model = fetching()
    respond = model.responder
    assert respond is not None

    def flaky(request: ModelRequest) -> str | ScriptedResponse:
        return next(answers) if request.purpose == "summary" else respond(request)

    model.responder = flaky
    agent, _ = await seeded([], model, tools=[fetch], compaction=TIGHT, max_iters=20)
    events = await collect(agent, "read the documents", CTX)
    ends = [e.data for e in events if getattr(e, "name", None) == "compaction_end"]
    assert ends and all(e["status"] == "completed" and not e["in_context"] for e in ends)
    kinds = [bool(r.cache_points) for r in summaries(model)]
    assert kinds[:2] == [True, False]  # tried in context, then a transcript


async def test_a_summary_is_in_context_when_a_history_view_changed_what_was_shown() -> None:
    script = iter(
        [
            ScriptedResponse(tool_calls=[todos(("read", "in_progress"))]),
            ScriptedResponse(tool_calls=[call("fetch", "c1", q="d1", size=6_000)]),
            ScriptedResponse(tool_calls=[todos(("read", "completed"), ("sum up", "in_progress"))]),
            *(
                ScriptedResponse(tool_calls=[call("fetch", f"c{i}", q=f"d{i}", size=9_000)])
                for i in range(2, 7)
            ),
        ]
    )

    def respond(request: ModelRequest) -> str | ScriptedResponse:
        if request.purpose == "summary":
            return SUMMARY_1
        return next(script, "done")

    model = ScriptedModel(responder=respond, context_window=WIDE)
    agent, _ = await seeded(
        [], model, tools=[fetch], compaction=TIGHT, max_iters=20, enable_task_list=True
    )
    events = await collect(agent, "read the documents", CTX)
    ends = [e.data for e in events if getattr(e, "name", None) == "compaction_end"]
    # the first receipt is shown superseded: the request differs from the stored history, and
    # the summary still repeats what was sent
    assert any("[superseded" in m.text for r in reasoning(model) for m in r.messages)
    assert ends and all(e["status"] == "completed" and e["in_context"] for e in ends)
