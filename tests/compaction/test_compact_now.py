"""``agent.compact(ctx)``: a summary on request, recorded as an automatic one (BEHAVIOUR.md §3)."""

from __future__ import annotations

from pathlib import Path

from harnessed import CompactionConfig, HarnessAgent, ModelError
from harnessed.compaction import SUMMARY_KEY, CompactionReport, is_summary
from harnessed.log.record import RecordType
from harnessed.models import ScriptedModel
from tests.compaction.helpers import conversation_of, reasoning, summaries, text_of
from tests.support.fixtures import CTX

KEEP_FOUR = CompactionConfig(trigger_messages=1_000, keep_messages=4, keep_tokens=0)
SUMMARY = "## Session intent\nTalk about the weather.\n## Next steps\nAnswer the next question."


async def _talked(tmp_path: Path, model: ScriptedModel, turns: int = 4) -> HarnessAgent:
    agent = HarnessAgent("a", model, workspace=tmp_path, compaction=KEEP_FOUR, memory=False)
    for i in range(turns):
        await agent.call(f"question {i}: " + text_of(400, f"q{i}"), CTX)
    return agent


async def test_compact_summarizes_now_and_logs_it_like_an_automatic_compaction(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(["a0", "a1", "a2", "a3", SUMMARY, "a4"])
    agent = await _talked(tmp_path, model)
    try:
        report = await agent.compact(CTX)
        assert isinstance(report, CompactionReport)
        assert report.status == "compacted", report
        assert (report.messages_before, report.messages_after) == (8, 5)
        assert report.summarized_messages == 4
        assert report.tokens_after < report.tokens_before
        [summary_request] = summaries(model)
        # written in context: the last request repeated (cached), then the instruction
        *repeated, instruction = summary_request.messages
        assert instruction.text.startswith("[Context compaction")
        assert [m.text for m in repeated[-8:]] == [
            m.text for m in reasoning(model)[-1].messages[-8:]
        ]
        assert any("question 0" in m.text for m in repeated)

        types = [r.type for r in await agent.session_log(CTX)]
        start = types.index(RecordType.COMPACTION_START)
        assert types[start + 1 :].count(RecordType.COMPACTION_END) == 1
        assert types[start - 1] == RecordType.CHECKPOINT  # one batch, the checkpoint first
        [end] = await agent.session_log(CTX, types=[RecordType.COMPACTION_END])
        assert end.payload["status"] == "completed" and end.payload["reason"] == "manual"

        await agent.call("question 4", CTX)
        sent = conversation_of(reasoning(model)[-1])
        assert is_summary(sent[0]) and SUMMARY in sent[0].text
        assert sent[0].metadata[SUMMARY_KEY]["reason"] == "manual"
        assert [m.text[:10] for m in sent[1:]] == [
            "question 2",
            "a2",
            "question 3",
            "a3",
            "question 4",
        ]
        assert len(await agent.session_messages(CTX)) == 10  # the log keeps every message
    finally:
        await agent.close()


async def test_a_failed_summary_loses_nothing(tmp_path: Path) -> None:
    model = ScriptedModel(["a0", "a1", "a2", "a3", ModelError("summary model down"), "a4"])
    agent = await _talked(tmp_path, model)
    try:
        before = [m.id for m in (await agent.load_state(CTX)).history]
        report = await agent.compact(CTX)
        assert report.status == "failed" and "summary model down" in (report.error or "")
        assert report.messages_after == report.messages_before == 8
        assert [m.id for m in (await agent.load_state(CTX)).history] == before
        [end] = await agent.session_log(CTX, types=[RecordType.COMPACTION_END])
        assert end.payload["status"] == "failed"
        assert RecordType.CHECKPOINT not in [r.type for r in await agent.session_log(CTX)]
        await agent.call("question 4", CTX)
        sent = conversation_of(reasoning(model)[-1])
        assert len(sent) == 9 and not any(is_summary(m) for m in sent)
    finally:
        await agent.close()


async def test_nothing_to_summarize_and_compaction_off_say_so(tmp_path: Path) -> None:
    model = ScriptedModel(["a0"])
    agent = await _talked(tmp_path, model, turns=1)
    try:
        report = await agent.compact(CTX)
        assert report.status == "unchanged" and "nothing to summarize" in report.note
        assert summaries(model) == []
    finally:
        await agent.close()
    off = HarnessAgent("b", ScriptedModel(["x"]), compaction=None, memory=False)
    await off.call("hi", CTX)
    report = await off.compact(CTX)
    assert report.status == "unchanged" and "off" in report.note
    assert report.messages_before == 2
