"""Cache-aware pruning (BEHAVIOUR.md section 16): already-sent messages change only where the
provider's cached prefix changes anyway."""

from __future__ import annotations

import itertools

from harnessed import CompactionConfig, PruneConfig
from harnessed.models import ScriptedModel, ScriptedResponse
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
from tests.support.fixtures import CTX, call


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
