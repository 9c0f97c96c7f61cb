"""Cut points never separate a tool call from its results (BEHAVIOUR.md section 3)."""

from __future__ import annotations

import random

from harnessed import Msg, ToolUseBlock
from harnessed.compaction.cut import cut_for_messages, cut_for_tokens, last_group_start
from harnessed.compaction.transcript import chunk_entries, clip
from harnessed.context import tool_pair_problems
from harnessed.tokens import default_estimator
from tests.compaction.helpers import result, text_of

COUNT = default_estimator().count_message


def random_history(rng: random.Random) -> list[Msg]:
    history = [Msg.user("start")]
    for step in range(rng.randint(1, 25)):
        kind = rng.random()
        if kind < 0.15:
            history.append(Msg.user(f"more input {step}"))
        elif kind < 0.25:
            history.append(Msg.assistant(f"thinking aloud {step}"))
        else:
            ids = [f"s{step}c{i}" for i in range(rng.choice([1, 1, 2, 3, 5]))]
            history.append(Msg.assistant([ToolUseBlock(i, "fetch", {"q": i}) for i in ids]))
            history += [result(i, text_of(rng.randint(10, 600), i)) for i in ids]
    return history


def test_every_cut_keeps_whole_groups_on_both_sides() -> None:
    rng = random.Random(7)
    for _ in range(120):
        history = random_history(rng)
        cuts = [cut_for_messages(history, k) for k in range(1, len(history) + 2)]
        cuts += [cut_for_tokens(history, COUNT, k) for k in (0, 50, 300, 1_000, 5_000, 10**9)]
        cuts.append(last_group_start(history))
        for cut in cuts:
            prefix, tail = history[:cut], history[cut:]
            assert tail, "the last group is always kept"
            assert tool_pair_problems(prefix) == []
            assert tool_pair_problems(tail) == []
            assert tail[0].role != "tool"


def test_message_cuts_keep_at_least_what_was_asked_and_token_cuts_respect_the_budget() -> None:
    rng = random.Random(11)
    for _ in range(80):
        history = random_history(rng)
        last = last_group_start(history)
        for keep in range(1, len(history)):
            cut = cut_for_messages(history, keep)
            assert len(history) - cut >= min(keep, len(history)) or cut == 0
        for keep in (100, 1_000, 4_000):
            cut = cut_for_tokens(history, COUNT, keep)
            if cut < last:  # more than the last group kept: it must fit
                assert sum(COUNT(m) for m in history[cut:]) <= keep


def test_transcript_chunks_respect_their_budget() -> None:
    history = [Msg.user("go")]
    for i in range(40):
        history += [Msg.assistant([ToolUseBlock(f"c{i}", "fetch", {"q": "x" * 50})])]
        history += [result(f"c{i}", text_of(20_000, f"r{i}"))]
    count = default_estimator().count_text
    for budget in (300, 1_000, 5_000):
        chunks = chunk_entries(history, count, budget)
        assert sum(len(c) for c in chunks) == len(history)  # one entry per message, in order
        for chunk in chunks:
            assert sum(count(e) + 2 for e in chunk) <= budget or len(chunk) == 1
    assert clip("a" * 100, 200) == "a" * 100
    clipped = clip("".join(str(i % 10) for i in range(10_000)), 300)
    assert len(clipped) < 400 and "characters omitted" in clipped
