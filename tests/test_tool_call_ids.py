"""harnessed.tool_call_ids: the id index, a response's ids and the repair of a history."""

from __future__ import annotations

from harnessed.context.pairs import tool_pair_problems
from harnessed.messages import Msg, ToolResultBlock, ToolUseBlock
from harnessed.tool_call_ids import (
    RENAMED_KEY,
    CallIdIndex,
    ResponseIds,
    repair_call_ids,
    well_formed,
)


def step(*ids: str) -> list[Msg]:
    """An assistant message calling ``echo`` once per id, and one result per call."""
    calls = Msg.assistant([ToolUseBlock(cid, "echo", {"n": n}) for n, cid in enumerate(ids)])
    results = [
        Msg("tool", (ToolResultBlock(cid, f"result {n}", name="echo"),))
        for n, cid in enumerate(ids)
    ]
    return [calls, *results]


def test_well_formed() -> None:
    assert well_formed("call_abc-1") and well_formed("x" * 40)
    for bad in ("", "x" * 41, "a b", "a/b", "é", "a\x00", "call_\ud800", 5, None):
        assert not well_formed(bad)


def test_index_follows_a_growing_list_and_a_replaced_one() -> None:
    history = [Msg.user("hi"), *step("a", "b")]
    index = CallIdIndex().sync(history)
    assert "a" in index and "b" in index and index.sound and len(index) == 2
    history.extend(step("a"))  # the same list, grown: only the new end is read
    assert not index.sync(history).sound
    replaced = history[:3]  # another list (compaction): what it dropped is forgotten
    assert index.sync(replaced).sound and "b" in index
    assert index.sync([Msg.user("x")]).sound and len(index) == 0
    assert not index.sync([*step("")]).sound  # an empty id
    assert index.sync([*step("ok")]).sound


def test_index_notices_a_list_edited_in_place_at_its_end() -> None:
    history = [Msg.user("go"), step("a")[0]]
    index = CallIdIndex().sync(history)
    history[-1] = step("z")[0]  # not how a harness history changes, but still seen
    history.append(Msg.user("more"))
    index.sync(history)
    assert "z" in index and "a" not in index


def test_response_ids_keep_good_ids_and_give_the_others_new_ones() -> None:
    taken = CallIdIndex().sync(step("old"))
    ids = ResponseIds(taken, {"unwritten"})
    sent = [ToolUseBlock(cid, "echo", {}) for cid in ("fresh", "fresh", "old", "unwritten", "")]
    streamed = [ids.call(c) for c in sent]
    assert streamed[0] is sent[0]  # kept, same object
    assert len({c.id for c in streamed}) == 5 and all(well_formed(c.id) for c in streamed)
    final = ids.message(Msg.assistant(sent))
    assert [c.id for c in final.tool_uses] == [c.id for c in streamed]
    renamed = final.metadata[RENAMED_KEY]
    assert sorted(renamed.values()) == ["", "fresh", "old", "unwritten"]
    plain = Msg.assistant([ToolUseBlock("new", "echo", {})])
    assert ResponseIds(taken).message(plain) is plain  # nothing to change: the same message


def test_a_final_message_with_calls_that_were_not_streamed() -> None:
    ids = ResponseIds(set())
    message = Msg.assistant([ToolUseBlock("d", "echo", {}), ToolUseBlock("d", "echo", {})])
    fixed = ids.message(message)
    assert fixed.tool_uses[0].id == "d" and fixed.tool_uses[1].id != "d"


def test_repair_renames_calls_and_their_results_in_order_and_is_deterministic() -> None:
    history = [Msg.user("go"), *step("dup", "dup", ""), *step("dup"), Msg.assistant("done")]
    assert tool_pair_problems(history)
    repaired = repair_call_ids(history)
    assert repaired is not None
    fixed, rows = repaired
    assert tool_pair_problems(fixed) == []
    every = [c.id for m in fixed for c in m.tool_uses]
    assert len(set(every)) == 4 and all(map(well_formed, every))
    assert every[0] == "dup"  # the first good use keeps its id
    # each result still answers the call it answered (the n-th with that id)
    calls = {c.id: c.input["n"] for m in fixed for c in m.tool_uses}
    for message in fixed:
        for result in message.tool_results:
            assert result.content == f"result {calls[result.tool_use_id]}"
    assert [row[1] for row in rows] == ["dup", "", "dup"]
    again = repair_call_ids(history)
    assert again is not None and [m.to_dict() for m in again[0]] == [m.to_dict() for m in fixed]
    assert repair_call_ids(fixed) is None  # repaired once


def test_repair_leaves_a_skipped_message_alone() -> None:
    history = [Msg.user("go"), *step("x", "x")]
    assert repair_call_ids(history, skip=history[1].id) is None


def test_repair_moves_compaction_markers_to_the_new_ids() -> None:
    first = step("c1")
    again = step("c1")  # an id reused by a later response
    offloaded = again[1].replace(
        metadata={"harness_offload": {"c1": {"path": "x"}}, "other": {"c1": 1}}
    )
    cut = again[0].replace(metadata={"harness_args_truncated": {"c1": ["n"]}})
    history = [*first, cut, offloaded]
    repaired = repair_call_ids(history)
    assert repaired is not None
    fixed = repaired[0]
    new = fixed[2].tool_uses[0].id
    assert new != "c1" and fixed[3].tool_results[0].tool_use_id == new
    assert fixed[2].metadata["harness_args_truncated"] == {new: ["n"]}
    assert fixed[3].metadata["harness_offload"] == {new: {"path": "x"}}
    assert fixed[3].metadata["other"] == {new: 1}
    assert fixed[1].metadata == {}  # the first use is untouched
