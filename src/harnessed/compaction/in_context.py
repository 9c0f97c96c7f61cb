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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harnessed.capabilities.hooks import HistoryBudget
from harnessed.capabilities.seam import USAGE_SINK, PrepareInfo
from harnessed.compaction.prompts import in_context_summary_prompt
from harnessed.compaction.summarize import EmptySummaryError, SummaryResult
from harnessed.context.prefix import equal_prefix
from harnessed.messages import Msg, new_id
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
) -> SummaryResult | None:
    """A summary of ``history[:cut]`` from a request that repeats the cached prefix, or
    ``None`` when the last request's prefix cannot be reused (see the module docstring).

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
    info = PrepareInfo(
        agent_name=parent.agent_name,
        runtime=parent.runtime,
        model=model,
        model_call_id=new_id("mc_"),
        iteration=parent.iteration,
        purpose="summary",
        emit=parent.emit,
        run_cache=parent.run_cache,
    )
    instruction = Msg.user(in_context_summary_prompt(len(sent) - cut))
    meter = compiler.meter
    size = meter.messages(stable) + meter.tools(last.tools) + meter.message(instruction)
    session = (parent.agent_name, parent.runtime.user_id, parent.runtime.session)
    limit = compiler.policy.input_limit(model.context_window, max_tokens)
    if meter.calibrated(size, session) > limit:
        return None  # the last request left less room for output than a summary needs
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
    text = response.message.text.strip()
    if not text:
        raise EmptySummaryError(
            f"the model {model.name!r} answered the summary request without text"
        )
    return SummaryResult(text, 1, in_context=True)
