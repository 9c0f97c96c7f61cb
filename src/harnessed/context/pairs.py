"""Tool-call pairing: every call answered exactly once, right after it; no result without a call.

Providers reject a request whose tool calls and results do not pair up (the classic "400: tool
result without a matching call"). Harnessed never fabricates a result to repair a history; it
reports the problem instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.messages import Msg

__all__ = ["group_boundaries", "tool_pair_problems"]

_SHOWN = 60
"""Characters of an id quoted in a problem (a model chooses ids: one may be huge)."""


def _id(call_id: str) -> str:
    return repr(call_id if len(call_id) <= _SHOWN else call_id[:_SHOWN] + "…")


def tool_pair_problems(messages: Sequence[Msg], start: int = 0) -> list[str]:
    """Describe every pairing problem (ids only, never message text); empty when valid.

    The results of an assistant message's calls must be in the ``tool`` messages that directly
    follow it, each call answered exactly once. ``start`` says that ``messages[:start]`` was
    part of a history already found valid; checking restarts at the last message of that prefix
    that is not a tool result, so the group it opens is always checked whole.
    """
    start = min(start, len(messages))
    if start > 0:
        start -= 1
        while start > 0 and messages[start].role == "tool":
            start -= 1
    problems: list[str] = []
    open_calls: dict[str, str] = {}  # call id -> tool name, for the current assistant turn
    answered: set[str] = set()
    for index in range(start, len(messages)):
        message = messages[index]
        if message.role == "tool":
            for result in message.tool_results:
                cid = result.tool_use_id
                if cid in answered:
                    problems.append(f"tool result for call {_id(cid)} appears more than once")
                elif cid not in open_calls:
                    problems.append(
                        f"tool result for call {_id(cid)} (message {index}) has no call"
                    )
                else:
                    answered.add(cid)
            continue
        problems.extend(_unanswered(open_calls, answered))
        open_calls, answered = {}, set()
        if message.role == "assistant":
            for call in message.tool_uses:
                if call.id in open_calls:
                    problems.append(f"tool call id {_id(call.id)} is used twice in one message")
                open_calls[call.id] = call.name
    problems.extend(_unanswered(open_calls, answered))
    return problems


def _unanswered(open_calls: dict[str, str], answered: set[str]) -> list[str]:
    return [
        f"tool call {_id(cid)} ({name[:_SHOWN]}) has no result"
        for cid, name in open_calls.items()
        if cid not in answered
    ]


def group_boundaries(messages: Sequence[Msg]) -> list[int]:
    """Indexes where a history may be cut without separating a call from its results.

    An index ``i`` is a boundary when ``messages[i]`` is not a ``tool`` message: an assistant
    turn and the tool results after it always stay on the same side. ``len(messages)`` is
    always a boundary.
    """
    cuts = [i for i, m in enumerate(messages) if m.role != "tool"]
    cuts.append(len(messages))
    return cuts
