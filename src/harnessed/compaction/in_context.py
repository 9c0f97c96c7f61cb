"""A summary request that repeats the conversation's cached prefix (``CompactionConfig(
in_context=True)``, the default).

A provider caches the prefix of each reasoning request: tool schemas, system message, history.
A summary request built from a separate transcript shares none of it and pays full price for
everything it reads. Built instead as the last reasoning request's own prefix — the same tools,
the same system message, the same history messages — followed by one instruction, it is served
from that cache (a tenth of the input price at Anthropic), and the model reads the messages
themselves rather than a clipped transcript.

It applies when the session's last reasoning request is known to the compiler, its history is
still the start of the current one and reaches at least to the cut, and the summary is written
by the agent's own model (a different model has no cache of this conversation). Otherwise, or
when the request is too large or the answer has no text, the caller falls back to the
transcript summary (:mod:`harnessed.compaction.summarize`).

The same request can carry memory's flush of the replaced part (a
:class:`~harnessed.capabilities.hooks.FactsRequest`): the model reads the conversation once and
answers with the note and then the facts in ``<memory_facts>`` tags. When the output room of
both does not fit, the summary is asked for alone and memory flushes on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harnessed.capabilities.hooks import FactsRequest, HistoryBudget
from harnessed.capabilities.seam import USAGE_SINK
from harnessed.compaction.prompts import FACTS_TAG, in_context_summary_prompt
from harnessed.compaction.summarize import EmptySummaryError, SummaryResult, summary_info
from harnessed.context.prefix import equal_prefix
from harnessed.messages import Msg
from harnessed.models.base import ModelRequest, collect

if TYPE_CHECKING:
    from harnessed.context.compiler import ContextCompiler

__all__ = ["summarize_in_context"]


async def summarize_in_context(
    compiler: ContextCompiler,
    history: Sequence[Msg],
    cut: int,
    budget: HistoryBudget,
    max_tokens: int,
    facts: FactsRequest | None = None,
) -> SummaryResult | None:
    """A summary of ``history[:cut]`` from a request that repeats the cached prefix, or
    ``None`` when the last request's prefix cannot be reused (see the module docstring).

    With ``facts`` the request asks for memory's facts of the same part too (after the note,
    in ``<memory_facts>`` tags, with room for both in its output); they come back in
    :attr:`SummaryResult.facts`, the note without them in ``text``.

    Raises what the request raises (a context overflow, a budget error, :class:`
    EmptySummaryError` for an answer without text); the caller falls back on those.
    """
    parent = budget.info
    last = compiler.last_prefix(parent)
    if last is None:
        return None
    stable = list(last.messages)
    head = 1 if stable and stable[0].role == "system" else 0
    sent = stable[head:]
    shown: Sequence[Msg] = history
    for view in compiler.views:  # what the model was shown of the history (same length)
        shown = view(shown, budget.state)
    if len(shown) != len(history) or len(sent) < cut or equal_prefix(sent, shown) < len(sent):
        return None  # the history was rewritten since, or the cut lies beyond what was sent
    model = parent.model
    info = summary_info(parent, model)
    meter = compiler.meter
    session = (parent.agent_name, parent.runtime.user_id, parent.runtime.session)
    prefix = meter.messages(stable) + meter.tools(last.tools)
    kept = len(sent) - cut
    for asked in (facts, None) if facts is not None else (None,):
        output = max_tokens + (asked.max_output_tokens if asked else 0)
        instruction = Msg.user(
            in_context_summary_prompt(kept, asked.instruction if asked else None)
        )
        size = meter.calibrated(prefix + meter.message(instruction), session)
        if size <= compiler.policy.input_limit(model.context_window, output):
            break  # fits (without the facts, memory flushes on its own)
    else:
        return None  # the last request left less room for output than a summary needs
    facts, max_tokens = asked, output
    draft = ModelRequest(
        messages=(*stable, instruction),
        tools=last.tools,
        max_output_tokens=max_tokens,
        purpose="summary",
        call_id=info.model_call_id,
        cache_key=last.cache_key,
        cache_points=(len(stable),),
    )
    request = await compiler(budget.state, draft, info)
    response = await collect(model, request)
    count = parent.run_cache.get(USAGE_SINK)
    if callable(count):  # the summary is paid for by the call it was made for
        count(response.usage, (response.model, model.name), getattr(model, "provider_name", None))
    text, found = _split(response.message.text) if facts else (response.message.text, None)
    text = text.strip()
    if not text:
        raise EmptySummaryError(
            f"the model {model.name!r} answered the summary request without text"
        )
    return SummaryResult(text, 1, in_context=True, facts=found)


_FACTS = re.compile(rf"<{FACTS_TAG}>(.*?)</{FACTS_TAG}>", re.DOTALL)


def _split(answer: str) -> tuple[str, str | None]:
    """The note and the facts part (``None`` when the answer has no complete one: a part cut
    off by the output limit is left out of the note too)."""
    parts = list(_FACTS.finditer(answer))
    if not parts:
        return answer.split(f"<{FACTS_TAG}>", 1)[0], None
    last = parts[-1]
    return answer[: last.start()] + answer[last.end() :], last[1].strip()
