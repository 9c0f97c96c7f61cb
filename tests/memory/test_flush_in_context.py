"""The flush before a summary written in context is a part of that summary request: the model
reads the conversation once, from the provider's cache, and answers with the note and then the
facts (BEHAVIOUR.md sections 3, 4 and 16). Every case where that cannot be done flushes from a
transcript, as before."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harnessed import CompactionConfig, Event, HarnessAgent
from harnessed.memory import MemoryConfig
from harnessed.memory.prompts import FLUSH_INSTRUCTIONS
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse
from tests.compaction.helpers import conversation, conversation_of, reasoning, seeded, summaries
from tests.compaction.test_prune import fetch
from tests.compaction.test_summary import SUMMARY_1
from tests.memory.helpers import Clock, ledger_path, memory_md
from tests.support.fixtures import CTX, call, collect

WIDE = 200_000
TIGHT = CompactionConfig(trigger_tokens=8_000, keep_tokens=3_000)
FACT = "The user's name is Zoltan and he wants metric units."


def with_facts(facts: str = f"- {FACT}") -> str:
    return f"{SUMMARY_1}\n\n<memory_facts>\n{facts}\n</memory_facts>"


def is_flush(request: ModelRequest) -> bool:
    """A flush that reads a transcript of its own (not part of a summary request)."""
    return FLUSH_INSTRUCTIONS.splitlines()[0] in request.messages[0].text


def fetching(summary: Callable[[ModelRequest], str], steps: int = 8) -> ScriptedModel:
    """Reads ``steps`` documents of 6,000 characters, one a step; ``summary`` answers the
    summary and memory requests."""
    taken = 0

    def respond(request: ModelRequest) -> str | ScriptedResponse:
        nonlocal taken
        if request.purpose == "summary":
            return summary(request)
        taken += 1
        if taken > steps:
            return "done"
        return ScriptedResponse(tool_calls=[call("fetch", f"c{taken}", q=f"d{taken}", size=6_000)])

    return ScriptedModel(responder=respond, context_window=WIDE)


def agent_with_memory(
    root: Path, model: ScriptedModel, memory_model: ScriptedModel | None = None, **config: Any
) -> HarnessAgent:
    agent = HarnessAgent(
        "mem",
        model,
        workspace=root,
        tools=[fetch],
        compaction=TIGHT,
        max_iters=20,
        memory=MemoryConfig(
            model=memory_model, timezone="UTC", maintenance_interval_minutes=None, **config
        ),
    )
    assert agent.memory is not None
    agent.memory.clock = Clock()
    return agent


def named(events: Sequence[Event], name: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in events if getattr(e, "name", None) == name]


def answer_facts_when_asked(request: ModelRequest) -> str:
    if "<memory_facts>" in request.messages[-1].text:
        return with_facts()
    return "NOTHING" if is_flush(request) else SUMMARY_1


async def test_the_summary_request_asks_for_the_facts_and_they_land_in_the_ledger(
    tmp_path: Path,
) -> None:
    memory_md(tmp_path, "u").parent.mkdir(parents=True)
    memory_md(tmp_path, "u").write_text("# Memory\n- The user prefers tea over coffee.\n")
    model = fetching(answer_facts_when_asked)
    agent = agent_with_memory(tmp_path, model)
    events = await collect(
        agent, "My name is Zoltan; I want metric units. Read the documents.", CTX
    )
    await agent.close()
    [first, *_] = summaries(model)
    before = model.requests[model.requests.index(first) - 1]
    assert before.purpose == "reasoning"
    # the prefix the provider cached, then one instruction asking for the note and the facts
    assert first.tools == before.tools and first.cache_key == before.cache_key
    assert first.messages[:-1] == before.messages[: before.cache_points[-1]]
    assert first.cache_points == (len(first.messages) - 1,)
    instruction = first.messages[-1].text
    assert "handover note" in instruction and "<memory_facts>" in instruction
    assert "The user prefers tea over coffee." in instruction  # what memory holds already
    # no flush request of its own: the memory facts came with the summary
    assert not any(is_flush(r) for r in model.requests)
    assert FACT in ledger_path(tmp_path, "u").read_text()
    flushes = named(events, "memory_flush")
    assert flushes and all(f["in_context"] and f["reason"] == "compaction" for f in flushes)
    assert flushes[0]["status"] == "written"
    ends = named(events, "compaction_end")
    assert ends and all(e["status"] == "completed" and e["in_context"] for e in ends)
    # the summary the next request starts from is the note alone
    after = reasoning(model)[reasoning(model).index(before) + 1]
    note = conversation_of(after)[0]
    assert "summary" in (note.name or "")
    assert "Check step 4." in note.text
    assert "memory_facts" not in note.text and FACT not in note.text


async def test_another_memory_model_flushes_a_transcript_and_the_summary_stays_in_context(
    tmp_path: Path,
) -> None:
    model = fetching(lambda request: SUMMARY_1)
    memory_model = ScriptedModel(responder=lambda request: f"- {FACT}")
    agent = agent_with_memory(tmp_path, model, memory_model)
    events = await collect(agent, "read the documents", CTX)
    await agent.close()
    assert all("<memory_facts>" not in r.messages[-1].text for r in summaries(model))
    assert memory_model.requests and all(is_flush(r) for r in memory_model.requests)
    assert FACT in ledger_path(tmp_path, "u").read_text()
    ends = named(events, "compaction_end")
    assert ends and all(e["in_context"] for e in ends)


async def test_a_missing_or_unreadable_facts_part_is_flushed_from_a_transcript(
    tmp_path: Path,
) -> None:
    for answer in (
        SUMMARY_1,
        with_facts("I could not find anything of the kind, sorry."),
        f"{SUMMARY_1}\n\n<memory_facts>\n- I could not find anything of",  # cut off
    ):
        root = tmp_path / str(len(answer))
        assert not root.exists()
        transcripts: list[ModelRequest] = []

        def respond(
            request: ModelRequest,
            answer: str = answer,
            transcripts: list[ModelRequest] = transcripts,
        ) -> str:
            if is_flush(request):
                transcripts.append(request)
                return f"- {FACT}"
            return answer

        model = fetching(respond)
        agent = agent_with_memory(root, model)
        events = await collect(agent, "read the documents", CTX)
        await agent.close()
        combined = [r for r in summaries(model) if "<memory_facts>" in r.messages[-1].text]
        compactions = named(events, "compaction_end")
        assert compactions and all(e["in_context"] for e in compactions)
        # every summary asked for the facts, and each time memory read a transcript after it
        assert len(combined) == len(compactions) and len(transcripts) >= len(compactions)
        flushes = named(events, "memory_flush")
        assert flushes and not any(f.get("in_context") for f in flushes)
        assert FACT in ledger_path(root, "u").read_text()
        # the summary is the note, without the unreadable part
        notes = [conversation_of(r)[0] for r in reasoning(model)]
        notes = [m for m in notes if "summary" in (m.name or "")]
        assert notes and all("could not find" not in m.text for m in notes)


async def test_when_the_summary_falls_back_to_a_transcript_memory_flushes_one_too(
    tmp_path: Path,
) -> None:
    answers = iter(["", SUMMARY_1] * 20)  # the in-context answer is empty: a transcript

    def respond(request: ModelRequest) -> str:
        if is_flush(request):
            return f"- {FACT}"
        return next(answers)

    model = fetching(respond)
    agent = agent_with_memory(tmp_path, model)
    events = await collect(agent, "read the documents", CTX)
    await agent.close()
    ends = named(events, "compaction_end")
    assert ends and all(e["status"] == "completed" and not e["in_context"] for e in ends)
    first, second, *_ = [r for r in summaries(model) if not is_flush(r)]
    assert first.cache_points and "<memory_facts>" in first.messages[-1].text
    assert not second.cache_points and "<transcript>" in second.messages[-1].text
    # one flush of its own per compaction, before the transcript summary
    flushes = [r for r in summaries(model) if is_flush(r)]
    assert len(flushes) == len(ends)
    assert model.requests.index(flushes[0]) < model.requests.index(second)
    assert FACT in ledger_path(tmp_path, "u").read_text()


async def test_without_room_for_both_outputs_the_summary_is_asked_for_alone(
    tmp_path: Path,
) -> None:
    # the output the facts may need leaves too little room for the conversation: the summary
    # alone still fits, and so does a flush of a short transcript
    model = fetching(lambda request: f"- {FACT}" if is_flush(request) else SUMMARY_1)
    agent = agent_with_memory(tmp_path, model, max_output_tokens=WIDE - 14_000)
    events = await collect(agent, "read the documents", CTX)
    await agent.close()
    in_context = [r for r in summaries(model) if r.cache_points]
    assert in_context and all("<memory_facts>" not in r.messages[-1].text for r in in_context)
    assert any(is_flush(r) for r in model.requests)
    assert FACT in ledger_path(tmp_path, "u").read_text()
    ends = named(events, "compaction_end")
    assert ends and all(e["in_context"] for e in ends)


async def test_without_a_last_request_to_repeat_both_read_transcripts(tmp_path: Path) -> None:
    # the session's history is over the trigger before this process sent any request for it
    def respond(request: ModelRequest) -> str:
        if request.purpose == "reasoning":
            return "ok"
        return f"- {FACT}" if is_flush(request) else SUMMARY_1

    model = ScriptedModel(responder=respond, context_window=WIDE)
    agent, _ = await seeded(
        conversation(6, output_chars=6_000),
        model,
        name="mem",
        workspace=tmp_path,
        compaction=CompactionConfig(trigger_tokens=6_000, keep_tokens=3_000),
        memory=MemoryConfig(timezone="UTC", maintenance_interval_minutes=None),
    )
    assert agent.memory is not None
    agent.memory.clock = Clock()
    await agent.call("next", CTX)
    await agent.close()
    flush, summary = summaries(model)
    assert is_flush(flush) and "step0" in flush.messages[-1].text
    assert not summary.cache_points and "<transcript>" in summary.messages[-1].text
    assert FACT in ledger_path(tmp_path, "u").read_text()
