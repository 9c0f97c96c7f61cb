"""The incremental paths of pruning and eviction decide exactly like a full scan."""

from __future__ import annotations

import random

from harnessed.compaction import PruneConfig
from harnessed.compaction.prune import PruneMemo, prune_tool_output
from harnessed.messages import Msg, ToolUseBlock
from harnessed.tokens import default_estimator

COUNT = default_estimator().count_message


def step(rng: random.Random, i: int) -> list[Msg]:
    tool = rng.choice(["execute", "execute", "grep", "read_file"])
    size = rng.choice([100, 1_500, 2_500, 9_000, 30_000])
    call = f"c{i}"
    return [
        Msg.assistant([ToolUseBlock(call, tool, {"n": i})]),
        Msg.tool_result(call, f"line {i} " * (size // 7), name=tool),
    ]


def test_memo_never_changes_the_decision_over_a_growing_history() -> None:
    config = PruneConfig(protect_tokens=6_000, minimum_tokens=4_000)
    pruned_steps = 0
    for seed in range(12):
        rng = random.Random(seed)
        memo = PruneMemo()
        history: list[Msg] = [Msg.user("start")]
        for i in range(60):
            history += step(rng, i)
            full = prune_tool_output(history, config, COUNT)
            quick = prune_tool_output(history, config, COUNT, memo=memo)
            assert quick.results == full.results, (seed, i)
            pruned_steps += full.results > 0
            assert [m.to_dict() for m in quick.history] == [m.to_dict() for m in full.history]
            history = list(full.history)  # keep going from the pruned history, as an agent does
    assert pruned_steps > 20  # the runs really prune, so a wrong shortcut would show
