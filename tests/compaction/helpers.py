"""Shared helpers for the compaction tests (BEHAVIOUR.md sections 2 and 3)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harnessed import CustomEvent, Event, HarnessAgent, Msg, ToolUseBlock
from harnessed.context import tool_pair_problems
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.runtime import SessionRef
from harnessed.state import AgentState, InMemoryStateStore
from tests.support.fixtures import CTX


def text_of(size: int, seed: str = "log") -> str:
    """Deterministic, log-like text of exactly ``size`` characters."""
    line_no = 0
    parts: list[str] = []
    total = 0
    while total < size:
        line = f"{seed} {line_no:06d}: status=ok value={line_no * 7919 % 10007} path=/srv/app\n"
        parts.append(line)
        total += len(line)
        line_no += 1
    return "".join(parts)[:size]


def use(call_id: str, name: str = "fetch", **args: object) -> Msg:
    return Msg.assistant([ToolUseBlock(call_id, name, dict(args) or {"q": call_id})])


def uses(*call_ids: str, name: str = "fetch") -> Msg:
    """One assistant message with parallel calls."""
    return Msg.assistant([ToolUseBlock(c, name, {"q": c}) for c in call_ids])


def result(call_id: str, text: str, name: str = "fetch") -> Msg:
    return Msg.tool_result(call_id, text, name=name)


def conversation(steps: int, output_chars: int = 200, name: str = "fetch") -> list[Msg]:
    """A user message followed by ``steps`` tool steps (2 messages each)."""
    history = [Msg.user("Please look through the service logs and report what you find.")]
    for i in range(steps):
        history.append(use(f"c{i}", name))
        history.append(result(f"c{i}", text_of(output_chars, f"step{i}"), name))
    return history


async def seeded(
    history: Sequence[Msg], model: ScriptedModel, name: str = "agent", **kwargs: Any
) -> tuple[HarnessAgent, InMemoryStateStore]:
    """An agent whose session (CTX) already holds ``history``."""
    store = InMemoryStateStore()
    state = AgentState.new(SessionRef(name, CTX.user_id, CTX.session_id or name))
    state.append(*history)
    await store.save(state)
    agent = HarnessAgent(name, model, state_store=store, **kwargs)
    return agent, store


def custom(events: Sequence[Event], name: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in events if isinstance(e, CustomEvent) and e.name == name]


def reasoning(model: ScriptedModel) -> list[ModelRequest]:
    return [r for r in model.requests if r.purpose == "reasoning"]


def summaries(model: ScriptedModel) -> list[ModelRequest]:
    return [r for r in model.requests if r.purpose == "summary"]


def conversation_of(request: ModelRequest) -> list[Msg]:
    """The stored-history part of a prepared request (no system or projection messages)."""
    return [
        m for m in request.messages if m.role != "system" and "harness_projection" not in m.metadata
    ]


def assert_valid_pairs(request: ModelRequest) -> None:
    problems = tool_pair_problems(list(request.messages))
    assert problems == [], problems


def dump(messages: Sequence[Msg]) -> str:
    return json.dumps([m.to_dict() for m in messages], ensure_ascii=False)
