"""Provider overflow recovery (BEHAVIOUR.md section 3, step 4) in ``call`` and ``stream_events``.

The scripted models here report a window the compiler trusts but reject requests above
``overflow_at_tokens``, as a provider whose tokenizer counts more than our estimate would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from harnessed import (
    AgentEndEvent,
    CompactionConfig,
    ContextOverflowError,
    ErrorEvent,
    ModelCallStartEvent,
    Msg,
    tool,
)
from harnessed.compaction import is_summary
from harnessed.models import (
    ModelEvent,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ScriptedResponse,
    TextDelta,
)
from tests.compaction.helpers import (
    assert_valid_pairs,
    conversation,
    conversation_of,
    custom,
    reasoning,
    seeded,
    summaries,
    text_of,
)
from tests.support.fixtures import CTX, call, collect

NO_TRIGGER = CompactionConfig(trigger_messages=10_000)  # only overflow recovery compacts here
SUMMARY = "## Session intent\nInvestigate the outage.\n## Next steps\nRead the newest log."


class Counter:
    def __init__(self) -> None:
        self.runs = 0


def log_tool(counter: Counter, size: int):  # type: ignore[no-untyped-def]
    @tool(read_only=True)
    def read_log(log: str) -> str:
        """Read a service log.

        Args:
            log: The log's name.
        """
        counter.runs += 1
        return text_of(size, log)

    return read_log


def respond(final: str = "the outage was caused by a full disk", read_first: bool = False):  # type: ignore[no-untyped-def]
    """Summaries for summary requests; otherwise (optionally) read the newest log, then answer."""

    def answer(request: ModelRequest) -> str | ScriptedResponse:
        if request.purpose == "summary":
            return SUMMARY
        done = any(r.tool_use_id == "fresh" for m in request.messages for r in m.tool_results)
        if read_first and not done:
            return ScriptedResponse(tool_calls=[call("read_log", "fresh", log="newest")])
        return final

    return answer


@pytest.mark.parametrize("seeded_messages", [5, 60])
@pytest.mark.parametrize("mode", ["call", "stream_events"])
async def test_an_overflow_is_recovered_once_without_rerunning_tools(
    seeded_messages: int, mode: str
) -> None:
    counter = Counter()
    history = conversation((seeded_messages - 1) // 2, output_chars=2_000)
    if len(history) < seeded_messages:
        history.append(Msg.assistant("I have read every log so far."))
    assert len(history) == seeded_messages
    model = ScriptedModel(
        responder=respond(read_first=True), context_window=200_000, overflow_at_tokens=3_000
    )
    agent, _ = await seeded(history, model, tools=[log_tool(counter, 5_000)], compaction=NO_TRIGGER)
    user_input = "Why did the service go down?"
    if mode == "call":
        reply = await agent.call(user_input, CTX)
        events = []
    else:
        events = await collect(agent, user_input, CTX)
        assert not any(isinstance(e, ErrorEvent) for e in events)
        [end] = [e for e in events if isinstance(e, AgentEndEvent)]
        reply = end.reply
    assert reply.text == "the outage was caused by a full disk"
    assert counter.runs == 1  # the tool ran once, before the overflow; never again

    requests = reasoning(model)
    # 5 messages: the first request fits; the second (with the new tool output) overflows.
    # 60 messages: the first request already overflows.
    overflowed = [r for r in requests if model.estimate(r) > 3_000]
    assert len(overflowed) == 1
    retry = requests[requests.index(overflowed[0]) + 1]
    assert model.estimate(retry) <= 3_000
    assert_valid_pairs(retry)
    sent = conversation_of(retry)
    assert is_summary(sent[0])
    # the summary requests go to the same model; the ones it rejects are retried in smaller
    # chunks (never the same transcript twice) until the whole prefix is summarized
    summary_requests = summaries(model)
    assert summary_requests and model.estimate(summary_requests[-1]) <= 3_000
    transcripts = [r.messages[-1].text for r in summary_requests]
    assert len(set(transcripts)) == len(transcripts)
    texts = [m.text for m in sent]
    if seeded_messages == 5:
        # the last message group is the step that just ran: kept, with its result
        assert sent[-1].role == "tool" and sent[-1].tool_results[0].tool_use_id == "fresh"
        assert sum(user_input in t for t in texts) == 0  # summarized, not re-added
    else:
        assert texts[-1] == user_input  # the last message group: the input, sent once
    assert all(user_input not in t for t in texts[:-1])

    state = await agent.load_state(CTX)
    assert state is not None and is_summary(state.history[0])
    assert state.history[-1].text == reply.text
    logged = await agent.session_messages(CTX)
    assert sum(m.text == user_input for m in logged) == 1
    if mode == "stream_events":
        starts = [e for e in events if isinstance(e, ModelCallStartEvent)]
        assert len(starts) == len(requests)
        [recovery] = custom(events, "overflow_recovery")
        assert "context_length_exceeded" in recovery["error"]
        [start] = custom(events, "compaction_start")
        assert start["reason"] == "overflow"
        [end_data] = custom(events, "compaction_end")
        assert end_data["status"] == "completed"


async def test_a_second_overflow_surfaces_as_a_clear_error() -> None:
    counter = Counter()
    history = conversation(4, output_chars=2_000)
    model = ScriptedModel(responder=respond(), context_window=200_000, overflow_at_tokens=300)
    summarizer = ScriptedModel(responder=respond())
    agent, _ = await seeded(
        history,
        model,
        tools=[log_tool(counter, 10)],
        compaction=CompactionConfig(trigger_messages=10_000, model=summarizer),
    )
    events: list[object] = []
    with pytest.raises(ContextOverflowError, match="recovery was attempted") as caught:
        async for event in agent.stream_events("a long question " * 60, CTX):
            events.append(event)
    assert "context_length_exceeded" in str(caught.value)  # the provider's words are kept
    assert len(reasoning(model)) == 2  # the request and exactly one retry
    assert len(summarizer.requests) == 1
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.error_type for e in errors] == ["ContextOverflowError"]
    stored = await agent.load_state(CTX)
    # the history is unchanged but for the user's input, which is never lost (BEHAVIOUR.md §8)
    assert stored is not None and [m.id for m in stored.history[:-1]] == [m.id for m in history]
    assert stored.history[-1].text == "a long question " * 60


async def test_when_nothing_can_shrink_there_is_no_pointless_retry() -> None:
    model = ScriptedModel(responder=respond(), context_window=200_000, overflow_at_tokens=100)
    agent, _ = await seeded([], model, compaction=NO_TRIGGER)
    with pytest.raises(ContextOverflowError, match="could not make the history any smaller"):
        await agent.call("please summarise this: " + "lorem ipsum " * 100, CTX)
    assert len(model.requests) == 1


async def test_without_compaction_the_overflow_surfaces_as_is() -> None:
    model = ScriptedModel(["never"], context_window=200_000, overflow_at_tokens=500)
    agent, _ = await seeded(conversation(10, output_chars=2_000), model, compaction=None)
    with pytest.raises(ContextOverflowError) as caught:
        await agent.call("go", CTX)
    assert "recovery" not in str(caught.value)
    assert len(model.requests) == 1


class HalfThenOverflow:
    """Streams some text, then fails with a context-length error (a broken stream)."""

    name = "half"
    context_window = 200_000
    max_output_tokens = None

    def __init__(self) -> None:
        self.requests = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests += 1
        yield TextDelta("Partial answer")
        raise ContextOverflowError("maximum context length exceeded")
        yield ModelResponse(Msg.assistant("unreachable"))  # pragma: no cover


async def test_an_overflow_after_output_started_is_not_retried() -> None:
    model = HalfThenOverflow()
    agent, _ = await seeded(conversation(3), model)  # type: ignore[arg-type]
    with pytest.raises(ContextOverflowError, match="maximum context length exceeded"):
        await agent.call("go", CTX)
    assert model.requests == 1
